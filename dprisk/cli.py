"""The ``dprisk`` command line.

Subcommands print a human-readable summary, or exactly one JSON object with ``--json``.
Bad input exits with status 2 and one line on stderr naming the parameter and its allowed
range (no traceback); the same checks raise ``ValueError`` in the Python API.

Exit statuses: 0 success, 2 bad input, 1 an unexpected failure while computing.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from fractions import Fraction

__all__ = ["main"]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line on stderr and exit status 2."""

    def error(self, message: str):  # pragma: no cover - exercised through the CLI tests
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


# --------------------------------------------------------------------------- argument types
def _number(text: str) -> float:
    """Parse a float or a fraction such as ``1/864``."""
    try:
        return float(Fraction(text.strip())) if "/" in text else float(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None


def _integer(text: str) -> int:
    """Parse an integer; integer-valued decimals such as ``3.0`` are accepted."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value != int(value):
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}")
    return int(value)


def _rho(text: str) -> float | str:
    """Keep the raw text; ``models.census.parse_rho`` validates it (number or census:LEVEL)."""
    return text


# --------------------------------------------------------------------------- output helpers
def _emit(args, payload: dict, lines: list[str]) -> None:
    if args.json:
        print(json.dumps(payload))
    else:
        print("\n".join(lines))


def _fmt(value: float) -> str:
    return f"{value:.6g}"


# --------------------------------------------------------------------------- subcommands
def _cmd_census(args) -> int:
    from models.census import CENSUS_DELTA, CENSUS_LEVELS, CENSUS_RHO_TOTAL
    from models.privacy import zcdp_to_dp

    epsilon = float(zcdp_to_dp(float(CENSUS_RHO_TOTAL), CENSUS_DELTA))
    levels = [{"level": level.name, "rho": level.rho} for level in CENSUS_LEVELS]
    payload = {
        "rho_total": float(CENSUS_RHO_TOTAL),
        "delta": CENSUS_DELTA,
        "epsilon": epsilon,
        "levels": levels,
    }
    lines = [
        "2020 Census GVHR query, zCDP allocation (paper Table 2)",
        f"  total rho = {float(CENSUS_RHO_TOTAL)}, delta = {CENSUS_DELTA:g}, "
        f"epsilon = {epsilon:.4f}",
        f"  {'level':<12} {'geolevel share':>15} {'query share':>12} {'rho':>10}",
    ]
    for level in CENSUS_LEVELS:
        lines.append(
            f"  {level.name:<12} {level.geolevel_share!s:>15} {level.query_share!s:>12} "
            f"{level.rho:>10.5f}"
        )
    _emit(args, payload, lines)
    return EXIT_OK


def _cmd_posterior(args) -> int:
    from inference import single_level
    from models.census import parse_rho

    rho1 = parse_rho(args.rho1, "rho1")
    if args.rho2 is not None:
        return _cmd_posterior_hierarchical(args, rho1)
    posterior = float(single_level.posterior(args.x1_star, rho1, args.p, args.known))
    risk = float(single_level.risk(args.x1_star, rho1, args.p, args.known))
    payload = {"posterior": posterior, "risk": risk}
    lines = [
        f"single level: rho1 = {_fmt(rho1)}, x1* = {args.x1_star}, p = {_fmt(args.p)}, "
        f"known m = {args.known}",
        f"  P[X1 = m+1 | x1*] = {_fmt(posterior)}",
        f"  R'(x1*)           = {_fmt(risk)}",
    ]
    _emit(args, payload, lines)
    return EXIT_OK


def _cmd_posterior_hierarchical(args, rho1: float) -> int:
    from inference import hierarchical_cli

    payload, lines = hierarchical_cli.posterior(args, rho1)
    _emit(args, payload, lines)
    return EXIT_OK


def _cmd_marginal(args) -> int:
    from inference import single_level
    from models.census import parse_rho

    rho1 = parse_rho(args.rho1, "rho1")
    marginal = float(single_level.marginal_posterior(rho1, args.p, args.known))
    marginal_risk = float(single_level.marginal_risk(rho1, args.p, args.known))
    p_correct = float(single_level.p_correct(rho1, args.p, args.known))
    threshold = int(single_level.decision_threshold(rho1, args.p, args.known))
    payload = {
        "marginal_posterior": marginal,
        "marginal_risk": marginal_risk,
        "p_correct": p_correct,
        "threshold": threshold,
    }
    lines = [
        f"single level: rho1 = {_fmt(rho1)}, p = {_fmt(args.p)}, known m = {args.known}, "
        f"truth x1 = m+1",
        f"  marginal posterior P[X1 = x1 | x1]   = {_fmt(marginal)}",
        f"  marginal risk R                      = {_fmt(marginal_risk)}",
        f"  decision threshold (decide m+1 iff x1* >= threshold) = {threshold}",
        f"  P[correct decision]                  = {_fmt(p_correct)}",
    ]
    _emit(args, payload, lines)
    return EXIT_OK


def _cmd_reproduce(args) -> int:
    from validation.report import write_report

    summary = write_report(args.out, paper_scale=args.paper_scale, progress=not args.quiet)
    payload = summary
    lines = [
        f"report written to {summary['out']}",
        f"  {summary['n_records']} published numbers compared: "
        + ", ".join(f"{k} {v}" for k, v in summary["status_counts"].items()),
        f"  {summary['n_figures']} figures, {summary['seconds']:.1f} s",
    ]
    _emit(args, payload, lines)
    return EXIT_OK


# --------------------------------------------------------------------------- parser
def _add_common(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def _add_prior_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--p",
        type=_number,
        default=0.5,
        help="adversary's prior P[X1 = m+1], 0 < p < 1 (fractions like 1/864 accepted)",
    )
    sub.add_argument(
        "--known",
        type=_integer,
        default=0,
        help="m, the adversary's known count of the others in the block (integer >= 0)",
    )


def build_parser() -> argparse.ArgumentParser:
    """Return the ``dprisk`` parser: census, posterior, marginal, reproduce subcommands."""
    parser = _Parser(
        prog="dprisk",
        description="Bayesian disclosure risk of discrete-Gaussian (zCDP) count releases.",
        epilog="Wherever a rho is asked for, a Census level is accepted too: census:block, "
        "census:block-group, census:tract, census:county, census:state, census:us. "
        "Exit status: 0 ok, 2 bad input, 1 failure.",
    )
    subs = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    census = subs.add_parser("census", help="the 2020 Census rho allocation and its epsilon")
    _add_common(census)
    census.set_defaults(func=_cmd_census)

    post = subs.add_parser("posterior", help="posterior P[X1 = m+1 | release] and risk R'")
    post.add_argument("--rho1", type=_rho, required=True, help="block-level rho (> 0)")
    post.add_argument("--x1-star", type=_integer, required=True, help="released noisy count x1*")
    _add_prior_options(post)
    hier = post.add_argument_group("hierarchical form (used when --rho2 is given)")
    hier.add_argument("--rho2", type=_rho, default=None, help="block-group rho (> 0)")
    hier.add_argument("--d", type=_integer, default=None, help="number of other blocks (>= 1)")
    hier.add_argument("--x2-star", type=_integer, default=None, help="released x2*")
    hier.add_argument("--y1-star", type=_integer, default=None, help="released y1*")
    hier.add_argument("--prior", default="improper", help="X2 prior SPEC")
    hier.add_argument("--method", default="exact", help="exact | gibbs | pymc")
    hier.add_argument("--draws", type=_integer, default=5000, help="draws per chain")
    hier.add_argument("--chains", type=_integer, default=4, help="number of chains")
    hier.add_argument("--seed", type=_integer, default=None, help="random seed")
    _add_common(post)
    post.set_defaults(func=_cmd_posterior)

    marg = subs.add_parser("marginal", help="marginal posterior, risk R and P[correct decision]")
    marg.add_argument("--rho1", type=_rho, required=True, help="block-level rho (> 0)")
    _add_prior_options(marg)
    _add_common(marg)
    marg.set_defaults(func=_cmd_marginal)

    rep = subs.add_parser("reproduce", help="reproduce the paper's tables and figures")
    rep.add_argument("--out", required=True, help="output directory (written atomically)")
    rep.add_argument("--paper-scale", action="store_true", help="use the paper's MC budgets")
    rep.add_argument("--quiet", action="store_true", help="no progress display")
    _add_common(rep)
    rep.set_defaults(func=_cmd_reproduce)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status (also used by the console script)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = args.func(args)
    except (ValueError, TypeError) as err:
        print(f"dprisk {args.command}: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"dprisk {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # a failure while computing: one line, non-zero
        print(f"dprisk {args.command}: failed: {type(err).__name__}: {err}", file=sys.stderr)
        return EXIT_FAILURE
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
