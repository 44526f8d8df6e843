"""The report's figures and their captions."""
