"""``dprisk help [COMMAND]``: the help of one subcommand, or of ``dprisk`` itself.

``dprisk help posterior`` prints what ``dprisk posterior --help`` prints and exits 0;
``dprisk help`` prints the top-level help (``dprisk --help``). An unknown COMMAND is bad
input: exit status 2, one stderr line with the nearest subcommand (``did you mean ...?``).
"""

from __future__ import annotations

from dprisk.cli import common
from dprisk.cli.parsers import nearest, subparser

__all__ = ["add_parser", "run"]


def add_parser(subs) -> None:
    """Register ``dprisk help``."""
    sub = subs.add_parser("help", help=common.SUBCOMMAND_HELP["help"],
                          description="Print the help of COMMAND (every option and its "
                          "default), or of dprisk when no COMMAND is given.")
    sub.add_argument("topic", nargs="?", default=None, metavar="COMMAND",
                     help="a subcommand: " + ", ".join(common.SUBCOMMAND_HELP))
    sub.set_defaults(func=run)


def run(args) -> int:
    """Print the requested help on stdout."""
    from dprisk.cli.main import build_parser

    topic = args.topic
    if topic is None:
        build_parser([]).print_help()
        return common.EXIT_OK
    if topic not in common.SUBCOMMAND_HELP:
        guess = nearest(topic, common.SUBCOMMAND_HELP)
        hint = f"; did you mean {guess}?" if guess else ""
        raise ValueError(f"COMMAND must be one of {', '.join(common.SUBCOMMAND_HELP)}, "
                         f"got {topic!r}{hint}")
    subparser(build_parser([topic]), topic).print_help()
    return common.EXIT_OK
