"""The subcommands of ``dprisk``: one module per subcommand, and their registry.

``dprisk NAME`` is the module ``dprisk.cli.commands.NAME`` (``dprisk population NAME``: the
module ``population_NAME``, registered by :mod:`dprisk.cli.commands.population`). Each
defines ``add_parser(subs)`` (its parser, with ``help=SUBCOMMAND_HELP["NAME"]``, ending with
``set_defaults(func=run)``) and ``run(args) -> int``: it parses, checks the options, calls
public functions below the command line and formats their answers. The helpers the
subcommands share live beside this folder, in :mod:`dprisk.cli` (``common``, ``parsers``,
``main``, ``stopping``, ...).

:data:`SUBCOMMAND_HELP` is the registry. :func:`dprisk.cli.main.build_parser` imports a
subcommand's module (:func:`load`) only when that subcommand runs; the others are listed by
their one-line help.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["SUBCOMMAND_HELP", "load"]

#: The subcommands, in the order ``dprisk --help`` lists them, with their one-line help.
SUBCOMMAND_HELP = {
    "summary": "what an adversary learns at an allocation: posterior, risk, Bayes and "
               "worst-case accuracy for five priors, epsilon three ways",
    "census": "the 2020 Census rho allocation and its epsilon",
    "posterior": "posterior P[X1 = m+1 | release] and risk R'",
    "marginal": "marginal posterior, risk R and P[correct decision]",
    "sweep": "P[correct decision] over parameter grids (xarray/netCDF, optionally on Dask)",
    "reproduce": "reproduce the paper's tables and figures",
    "epsilon": "epsilon of a rho-zCDP release (Bun-Steinke and CKS), or the rho of an epsilon",
    "budget": "the privacy budget meeting a disclosure-risk target (epsilon-DP profile, zCDP rho)",
    "attribute": "the target's whole record: its cell among K from every noisy cell",
    "prior": "check an X2 prior file: support, mass, and how it moves the Census posterior",
    "help": "show the help of COMMAND (dprisk help COMMAND), or this help",
    "product": "risk of the post-processed (TopDown-style) product beside the noisy measurements",
    "explore": "serve the live what-if explorer in the browser (Panel)",
    "population": "every person of a population: synthetic persons, noisy measurements, "
                  "each person's risk by block size (dprisk population COMMAND)",
}


def load(name: str) -> ModuleType:
    """The module of the subcommand ``name`` of :data:`SUBCOMMAND_HELP` (imported on first use)."""
    if name not in SUBCOMMAND_HELP:
        raise KeyError(f"no subcommand {name!r}; the subcommands: {', '.join(SUBCOMMAND_HELP)}")
    return importlib.import_module(f"{__name__}.{name}")
