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
import os
import sys
from fractions import Fraction
from pathlib import Path

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
    """Keep the raw text; ``parse_rho`` validates it (a number or census:LEVEL)."""
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
    from dprisk.models.census import CENSUS_DELTA, CENSUS_LEVELS, CENSUS_RHO_TOTAL
    from dprisk.models.privacy import zcdp_to_dp

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


def _require(args, form: str, **allowed: str) -> None:
    """Exit-2 style check that every option a form needs was given."""
    for dest, description in allowed.items():
        if getattr(args, dest) is None:
            flag = "--" + dest.replace("_", "-")
            raise ValueError(f"{flag} is required for the {form} form ({description})")


def _show(value) -> str:
    """Compact human rendering of a JSON value (nested dicts inline, floats to 6 digits)."""
    if isinstance(value, dict):
        items = list(value.items())
        shown = ", ".join(f"{k}: {_show(v)}" for k, v in items[:12])
        return "{" + shown + (", …" if len(items) > 12 else "") + "}"
    if isinstance(value, float):
        return _fmt(value)
    return str(value)


def _payload_lines(title: str, payload: dict) -> list[str]:
    return [title] + [f"  {key:<24} {_show(value)}" for key, value in payload.items()]


def _cmd_posterior(args) -> int:
    if args.rhos is not None:
        return _cmd_posterior_multilevel(args)
    if args.rho2 is not None:
        return _cmd_posterior_hierarchical(args)
    from dprisk.inference import single_level
    from dprisk.models.census import parse_rho

    _require(args, "single-level", rho1="a rho > 0 or census:LEVEL",
             x1_star="the released block count, an integer")
    rho1 = parse_rho(args.rho1, "rho1")
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


_POSTERIOR_METHODS = {"exact": "exact", "gibbs": "gibbs", "pymc": "pymc"}


def _cmd_posterior_hierarchical(args) -> int:
    from dprisk.inference.sampling import posterior_summary
    from dprisk.models.census import parse_rho

    _require(args, "hierarchical", rho1="a rho > 0 or census:LEVEL", d="an integer >= 1",
             x1_star="an integer", x2_star="an integer", y1_star="an integer")
    rho1 = parse_rho(args.rho1, "rho1")
    rho2 = parse_rho(args.rho2, "rho2")
    if args.method not in _POSTERIOR_METHODS:
        raise ValueError(f"method must be one of exact, gibbs, pymc, got {args.method!r}")
    payload = posterior_summary(
        args.x1_star, args.x2_star, args.y1_star, rho1=rho1, rho2=rho2, d=args.d, p=args.p,
        known=args.known, prior=args.prior, method=_POSTERIOR_METHODS[args.method],
        draws=args.draws, chains=args.chains, random_seed=args.seed,
    )
    title = (f"two levels: rho1 = {_fmt(rho1)}, rho2 = {_fmt(rho2)}, d = {args.d}, "
             f"D = ({args.x1_star}, {args.x2_star}, {args.y1_star}), p = {_fmt(args.p)}, "
             f"known m = {args.known}, prior {args.prior}")
    _emit(args, payload, _payload_lines(title, payload))
    return EXIT_OK


def _cmd_posterior_multilevel(args) -> int:
    from dprisk.inference.multilevel import parse_multilevel_args, posterior_summary

    _require(args, "multi-level", siblings="d_2,...,d_h", stars="x1*,...,xh*,y1*,...")
    spec = parse_multilevel_args(args.rhos, args.siblings, args.stars)
    payload = posterior_summary(**spec, p=args.p, known=args.known, prior=args.prior,
                                method=args.method, draws=args.draws, chains=args.chains,
                                random_seed=args.seed)
    title = f"{len(spec['rhos'])} nested levels: rhos = {args.rhos}, siblings = {args.siblings}"
    _emit(args, payload, _payload_lines(title, payload))
    return EXIT_OK


def _cmd_marginal(args) -> int:
    if args.rhos is not None:
        return _cmd_marginal_unique_levels(args)
    if args.rho2 is not None:
        return _cmd_marginal_hierarchical(args)
    from dprisk.inference import single_level
    from dprisk.models.census import parse_rho

    _require(args, "single-level", rho1="a rho > 0 or census:LEVEL")
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


def _cmd_marginal_hierarchical(args) -> int:
    from dprisk.inference.studies import marginal_summary
    from dprisk.models.census import parse_rho

    _require(args, "hierarchical", rho1="a rho > 0 or census:LEVEL", d="an integer >= 1",
             x2="the true block-group count, an integer >= 0")
    rho1 = parse_rho(args.rho1, "rho1")
    rho2 = parse_rho(args.rho2, "rho2")
    if args.method not in ("exact", "mc"):
        raise ValueError(f"method must be one of exact, mc, got {args.method!r}")
    payload = marginal_summary(
        rho1=rho1, rho2=rho2, d=args.d, x2=args.x2, x1=args.x1, p=args.p, known=args.known,
        prior=args.prior, method=args.method, datasets=args.datasets, draws=args.draws,
        seed=args.seed,
    )
    truth = f"x1 = {args.x1 if args.x1 is not None else args.known + 1}, x2 = {args.x2}"
    title = (f"two levels: rho1 = {_fmt(rho1)}, rho2 = {_fmt(rho2)}, d = {args.d}, {truth}, "
             f"p = {_fmt(args.p)}, prior {args.prior}, method {args.method}")
    _emit(args, payload, _payload_lines(title, payload))
    return EXIT_OK


def _cmd_marginal_unique_levels(args) -> int:
    from dprisk.validation.supplement import parse_rhos, unique_levels_summary

    rhos = parse_rhos(args.rhos)
    payload = unique_levels_summary(rhos, p=args.p, known=args.known)
    title = f"target unique at {len(rhos)} levels: rhos = {', '.join(_fmt(r) for r in rhos)}"
    _emit(args, payload, _payload_lines(title, payload))
    return EXIT_OK


def _cmd_sweep(args) -> int:
    from dprisk.inference.sweeps import parse_grid, sweep, sweep_records

    out = Path(args.out)
    if out.suffix != ".nc":
        raise ValueError(f"--out must be a netCDF path ending in .nc, got {args.out!r}")
    _check_writable_dir(out, "--out")
    grids = {
        "rho1": parse_grid(args.rho1, "rho1", kind=float),
        "rho2": parse_grid(args.rho2, "rho2", kind=float),
        "d": parse_grid(args.d, "d", kind=int),
        "x2": parse_grid(args.x2, "x2", kind=int),
        "p": parse_grid(args.p, "p", kind=float),
        "known": parse_grid(args.known, "known", kind=int),
    }
    priors = [item for item in args.prior.split(",") if item]
    if not priors:
        raise ValueError("prior must name at least one prior SPEC")
    dataset = sweep(**grids, prior=priors if len(priors) > 1 else priors[0], out=str(out),
                    client=args.scheduler, progress=not args.json)
    payload = {
        "out": str(out),
        "dims": {name: int(size) for name, size in dataset.sizes.items()},
        "records": sweep_records(dataset),
    }
    lines = [f"sweep written to {out}", f"  dims: {payload['dims']}"]
    lines += [f"  {record}" for record in payload["records"][:20]]
    if len(payload["records"]) > 20:
        lines.append(f"  … {len(payload['records']) - 20} more")
    _emit(args, payload, lines)
    return EXIT_OK


def _check_writable_dir(path: Path, option: str) -> None:
    """Raise ValueError unless ``path``'s nearest existing ancestor is a writable directory."""
    probe = path.parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {str(path)!r} cannot be created: {str(probe)!r} is not a "
                         "writable directory")


def _cmd_reproduce(args) -> int:
    from dprisk.validation.report import write_report

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {args.out!r} exists and is not a directory")
    _check_writable_dir(out, "--out")

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


def _add_model_options(sub, *, methods: str, draws: int = 5000) -> None:
    sub.add_argument("--prior", default="improper",
                     help="X2 prior SPEC: improper | truncated:U | point:K | PATH.py:NAME")
    sub.add_argument("--method", default="exact", help=methods)
    sub.add_argument("--draws", type=_integer, default=draws, help="MC draws (per chain)")
    sub.add_argument("--chains", type=_integer, default=4, help="number of chains")
    sub.add_argument("--seed", type=_integer, default=None, help="random seed")


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

    post = subs.add_parser(
        "posterior",
        help="posterior P[X1 = m+1 | release] and risk R'",
        description="Single level: --rho1 --x1-star. Two levels (when --rho2 is given): also "
        "--d --x2-star --y1-star. Nested levels: --rhos --siblings --stars.",
    )
    post.add_argument("--rho1", type=_rho, default=None, help="block-level rho (> 0)")
    post.add_argument("--x1-star", type=_integer, default=None, help="released block count x1*")
    _add_prior_options(post)
    hier = post.add_argument_group("two levels (used when --rho2 is given)")
    hier.add_argument("--rho2", type=_rho, default=None, help="block-group rho (> 0)")
    hier.add_argument("--d", type=_integer, default=None, help="number of other blocks (>= 1)")
    hier.add_argument("--x2-star", type=_integer, default=None, help="released block-group x2*")
    hier.add_argument("--y1-star", type=_integer, default=None, help="released other-blocks y1*")
    _add_model_options(post, methods="exact | gibbs | pymc")
    multi = post.add_argument_group("nested levels (used when --rhos is given)")
    multi.add_argument("--rhos", default=None, help="rho_1,...,rho_h (census:LEVEL allowed)")
    multi.add_argument("--siblings", default=None, help="d_2,...,d_h sibling units per level")
    multi.add_argument("--stars", default=None, help="x1*,...,xh*,y1*,...,y(h-1)*")
    _add_common(post)
    post.set_defaults(func=_cmd_posterior)

    marg = subs.add_parser(
        "marginal",
        help="marginal posterior, risk R and P[correct decision]",
        description="Single level: --rho1. Two levels (when --rho2 is given): also --d --x2 "
        "[--x1]. Target unique at several levels: --rhos R1,R2,... or census:N.",
    )
    marg.add_argument("--rho1", type=_rho, default=None, help="block-level rho (> 0)")
    _add_prior_options(marg)
    mhier = marg.add_argument_group("two levels (used when --rho2 is given)")
    mhier.add_argument("--rho2", type=_rho, default=None, help="block-group rho (> 0)")
    mhier.add_argument("--d", type=_integer, default=None, help="number of other blocks (>= 1)")
    mhier.add_argument("--x2", type=_integer, default=None, help="true block-group count")
    mhier.add_argument("--x1", type=_integer, default=None, help="true block count (default m+1)")
    mhier.add_argument("--datasets", type=_integer, default=20_000,
                       help="simulated releases for --method mc")
    _add_model_options(marg, methods="exact | mc", draws=1000)
    marg.add_argument("--rhos", default=None,
                      help="target unique at several levels: R1,R2,... or census:N")
    _add_common(marg)
    marg.set_defaults(func=_cmd_marginal)

    swp = subs.add_parser(
        "sweep",
        help="P[correct decision] over parameter grids (xarray/netCDF, optionally on Dask)",
        description="Each swept option takes a comma list (1,2,5) or a range (1:10).",
    )
    swp.add_argument("--rho1", required=True, help="grid of block rho")
    swp.add_argument("--rho2", required=True, help="grid of block-group rho")
    swp.add_argument("--d", required=True, help="grid of the number of other blocks")
    swp.add_argument("--x2", required=True, help="grid of the true block-group count")
    swp.add_argument("--p", default="0.5", help="grid of the prior P[X1 = m+1]")
    swp.add_argument("--known", default="0", help="grid of m")
    swp.add_argument("--prior", default="improper", help="comma list of X2 prior SPECs")
    swp.add_argument("--out", required=True, help="output netCDF file (.nc)")
    swp.add_argument("--scheduler", default=None, help="Dask scheduler address")
    _add_common(swp)
    swp.set_defaults(func=_cmd_sweep)

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
