"""``dprisk help [COMMAND]``: the help of one subcommand, or of ``dprisk`` itself.

``dprisk help posterior`` prints what ``dprisk posterior --help`` prints and exits 0;
``dprisk help`` prints the top-level help (``dprisk --help``); ``dprisk help population risk``
the help of a command's own subcommand (``dprisk population risk --help``). An unknown COMMAND
or SUBCOMMAND is bad input: exit status 2, one stderr line with the nearest name
(``did you mean ...?``).
"""

from __future__ import annotations

import argparse

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
    sub.add_argument("subtopic", nargs="?", default=None, metavar="SUBCOMMAND",
                     help="a subcommand of COMMAND, for the commands that have them "
                     "(population: synth, measure, risk)")
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
    parser = subparser(build_parser([topic]), topic)
    subtopic = getattr(args, "subtopic", None)
    if subtopic is not None:
        parser = _nested(parser, topic, subtopic)
    parser.print_help()
    return common.EXIT_OK


def _nested(parser, topic: str, subtopic: str):
    """The parser of ``dprisk TOPIC SUBTOPIC``; ValueError naming SUBCOMMAND if none."""
    names = next((tuple(action.choices) for action in parser._actions
                  if isinstance(action, argparse._SubParsersAction)), ())
    if not names:
        raise ValueError(f"SUBCOMMAND: dprisk {topic} has no subcommands, got {subtopic!r}")
    if subtopic not in names:
        guess = nearest(subtopic, names)
        hint = f"; did you mean {guess}?" if guess else ""
        raise ValueError(f"SUBCOMMAND of {topic} must be one of {', '.join(names)}, "
                         f"got {subtopic!r}{hint}")
    return subparser(parser, subtopic)
