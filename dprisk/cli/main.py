"""The ``dprisk`` command line: the parser of every subcommand and the dispatch.

Subcommands print a human-readable summary, or exactly one JSON object with ``--json``.
Bad input exits with status 2 and one line on stderr naming the parameter and its allowed
range (no traceback); the same checks raise ``ValueError`` in the Python API. An option that
does not apply to the requested computation is bad input too. A random result reports its
seed (JSON key ``seed``), drawn when ``--seed`` is not given.

Exit statuses: 0 success, 2 bad input (also a missing command), 1 an unexpected failure
while computing.
"""

from __future__ import annotations

import argparse
import os
import sys

from dprisk.cli import budget, census, epsilon, marginal, posterior, reproduce, sweep
from dprisk.cli.common import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Parser, TopParser

__all__ = ["build_parser", "main"]

_SUBCOMMANDS = (census, posterior, marginal, sweep, reproduce, epsilon, budget)


def build_parser() -> argparse.ArgumentParser:
    """Return the ``dprisk`` parser: census, posterior, marginal, sweep, reproduce."""
    from dprisk import __version__

    parser = TopParser(
        prog="dprisk",
        description="Bayesian disclosure risk of discrete-Gaussian (zCDP) count releases.",
        epilog="Wherever a rho is asked for, a Census level is accepted too: census:block, "
        "census:block-group, census:tract, census:county, census:state, census:us. "
        "Probabilities accept fractions (1/864). An option that does not apply to the "
        "requested computation is refused. Exit status: 0 ok, 2 bad input (also when no "
        "command is given), 1 failure.",
    )
    parser.add_argument("--version", action="version", version=f"dprisk {__version__}")
    subs = parser.add_subparsers(dest="command", required=True, parser_class=Parser,
                                 title="commands")
    for subcommand in _SUBCOMMANDS:
        subcommand.add_parser(subs)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status (also used by the console script)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if getattr(args, "seed", None) is not None and args.seed < 0:
            raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")
        status = args.func(args)
    except (ValueError, TypeError) as err:
        print(f"dprisk {args.command}: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # e.g. `dprisk sweep ... | head`: the reader left; not an error
        sys.stdout = open(os.devnull, "w")  # silence the interpreter's final flush
        return EXIT_OK
    except KeyboardInterrupt:
        print(f"dprisk {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # a failure while computing: one line, non-zero
        print(f"dprisk {args.command}: failed: {type(err).__name__}: {err}", file=sys.stderr)
        return EXIT_FAILURE
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
