"""The adversary who does not know everyone in the block."""
