"""The ``dprisk`` command line: parsing, option checks and printed summaries, nothing else.

The subcommands and their registry are in :mod:`dprisk.cli.commands` (one module per
subcommand); the helpers they share are the modules of this folder.
"""

from dprisk.cli.main import main

__all__ = ["main"]
