"""What a ``--rho...`` option means, stated once for every subcommand's help.

This project's rho (the paper's) is zCDP under add/remove-one neighbours, one count getting
DG(0, 1/(2 rho)); the 2020 DAS's query rho is replace-one, noise variance 1/rho
(docs/noise-conventions.md). :func:`state_rho_convention` appends :data:`RHO_CONVENTION` to the
help of every ``--rho...`` option, present and future.
"""

from __future__ import annotations

import argparse

__all__ = ["RHO_CONVENTION", "state_rho_convention"]

#: What every ``--rho...`` option means, stated in its help by :func:`state_rho_convention`
#: (the paper's convention; the 2020 DAS's query rho is replace-one: docs/noise-conventions.md).
RHO_CONVENTION = ("[rho-zCDP under add/remove-one neighbours: a count gets noise "
                  "DG(0, 1/(2 rho)), the paper's convention; the 2020 DAS's query rho is "
                  "replace-one, noise variance 1/rho]")


def state_rho_convention(parser: argparse.ArgumentParser) -> None:
    """Append :data:`RHO_CONVENTION` to the help of every ``--rho...`` option of ``parser``.

    Called once per subcommand parser by :func:`dprisk.cli.main.build_parser`, so every rho
    option, present and future, says which rho it is; an option already stating it is left.
    """
    for action in parser._actions:
        if (any(option.startswith("--rho") for option in action.option_strings)
                and action.help and RHO_CONVENTION not in action.help):
            action.help = f"{action.help} {RHO_CONVENTION}"
