"""The ``dprisk`` command line: parsing, option checks and printed summaries, nothing else."""

from dprisk.cli.main import main

__all__ = ["main"]
