"""The reproduction report: building it, its page and findings, where it goes, screenshots."""
