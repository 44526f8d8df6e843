"""``dprisk population COMMAND``: every person of a population (issue 34; docs/population.md).

The subcommand has subcommands of its own, each in its module ``population_NAME.py`` here
(``synth``, ``measure``, ``risk``; a name whose module is not installed is not offered). Each
such module defines

* ``HELP``: its one-line help (shown by ``dprisk population --help``);
* ``add_arguments(parser)``: adds its options to its parser (``--json`` included);
* ``run(args) -> int``: runs it and returns the exit status (a ``ValueError`` is bad input:
  exit status 2, one stderr line, as for every subcommand, so it should name the option).

Only ``dprisk population`` imports them (each imports its heavy libraries inside ``run``).
A mistyped option is reported with the sub-subcommand's usage and its nearest option.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util

from dprisk.cli.common import SUBCOMMAND_HELP, Parser

__all__ = ["COMMANDS", "add_parser", "available_commands"]

#: The sub-subcommands, in the order the help lists them.
COMMANDS = ("synth", "measure", "risk")


def available_commands() -> list[str]:
    """The names of :data:`COMMANDS` whose module ``dprisk.cli.commands.population_NAME`` exists."""
    return [name for name in COMMANDS
            if importlib.util.find_spec(f"dprisk.cli.commands.population_{name}") is not None]


def _unknown_options(inner: dict, words: list[str]) -> list[str]:
    """Unknown long options of the sub-subcommand named first in ``words``.

    Checked by :func:`dprisk.cli.main.main` before parsing (the ``population`` parser itself
    has no options); no sub-subcommand named: none (argparse names the missing or mistyped
    command).
    """
    if not words or words[0] not in inner:
        return []
    unknown = inner[words[0]].unknown_options(words[1:])
    if unknown:  # reported by the sub-subcommand's parser: its usage, its nearest option
        inner[words[0]].unrecognized(unknown)
    return unknown


def add_parser(subs) -> None:
    """Register ``dprisk population`` and every available sub-subcommand."""
    names = available_commands()
    population = subs.add_parser(
        "population", help=SUBCOMMAND_HELP["population"],
        description="Every person of a population (docs/population.md). Run dprisk "
        "population COMMAND --help for a command's options.")
    inner_subs = population.add_subparsers(dest="population_command", required=True,
                                           parser_class=Parser, title="commands",
                                           metavar="{" + ",".join(names) + "}")
    inner = {}
    for name in names:
        module = importlib.import_module(f"dprisk.cli.commands.population_{name}")
        sub = inner_subs.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        # messages and stop lines name the command as typed: "dprisk population risk: ..."
        sub.set_defaults(func=module.run, command=f"population {name}")
        inner[name] = sub
    population.unknown_options = functools.partial(_unknown_options, inner)
