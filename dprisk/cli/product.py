"""``dprisk product``: risk of the post-processed product beside the noisy measurements.

``dprisk product --rho1 R --rho2 R --others Y1,...,Yd --m M --p P --invariant
none|block-group [--json]`` prints the product's marginal posterior, P[correct] (truth m+1)
and prior-weighted accuracy, the same three for the noisy measurements, and the neglected
probability of the exact enumeration
(:func:`dprisk.inference.product.exact.product_risk`). Bad input exits 2 with one stderr
line naming the option; nothing is printed on stdout.
"""

from __future__ import annotations

import contextlib
import re

from dprisk.cli import common
from dprisk.cli.common import fmt

__all__ = ["DEFAULTS", "add_parser", "parse_others", "run"]

#: Defaults applied when an option is not given.
DEFAULTS = {"m": 0, "p": 0.5, "invariant": "none"}
#: The API's parameter names and their options.
_OPTIONS = {"rho1": "--rho1", "rho2": "--rho2", "others": "--others", "m": "--m", "p": "--p",
            "invariant": "--invariant"}


def add_parser(subs) -> None:
    """Register ``dprisk product``."""
    sub = subs.add_parser(
        "product", help=common.SUBCOMMAND_HELP["product"],
        description="One block group over the target's block and d other blocks whose counts "
        "the adversary knows. The product: the block-group total max(0, x2*) (or held exact "
        "with --invariant block-group), the blocks projected onto non-negative counts adding "
        "to it and rounded by largest remainders (ties broken at random). Exact enumeration, "
        "neglected probability < 1e-12. An invariant is confidential data, not "
        "post-processing: with block-group and known others the product reveals the target.")
    sub.add_argument("--rho1", default=None, help="block rho, 0 < rho <= 1e100, or "
                     "census:LEVEL (required)")
    sub.add_argument("--rho2", default=None, help="block-group rho, 0 < rho <= 1e100, or "
                     "census:LEVEL (required)")
    sub.add_argument("--others", default=None, help="Y1,...,Yd: the other blocks' counts, "
                     "integers >= 0, 1 <= d (d <= 3 runs in about a second at Census rho; "
                     "larger d is refused when the enumeration is too big) (required)")
    sub.add_argument("--m", type=common.integer, default=None, help=common.with_default(
        "the target block's count without the target, an integer >= 0", DEFAULTS["m"]))
    sub.add_argument("--p", type=common.number, default=None, help=common.with_default(
        "prior P[X1 = m+1], 0 < p < 1 (fractions accepted)", DEFAULTS["p"]))
    sub.add_argument("--invariant", default=None, help=common.with_default(
        "none | block-group (the block-group total held exact)", DEFAULTS["invariant"]))
    common.add_json(sub)
    sub.set_defaults(func=run)


def parse_others(text) -> list[int]:
    """``--others``: a comma list of ``d >= 1`` integers (range checked by the API)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"--others must be a comma-separated list Y1,...,Yd of counts >= 0, "
                         f"got {text!r}")
    values = []
    for item in text.split(","):
        try:
            values.append(int(item.strip()))
        except ValueError:
            raise ValueError(f"--others must be a comma-separated list Y1,...,Yd of integers "
                             f">= 0, got {text!r}") from None
    return values


@contextlib.contextmanager
def _naming_options():
    """Turn the API's parameter names at the start of a refusal into option spellings."""
    try:
        yield
    except ValueError as err:
        message = str(err)
        for name, option in _OPTIONS.items():
            if re.match(rf"{name}\b", message):
                message = option + message[len(name):]
                break
        raise ValueError(message) from None


def run(args) -> int:
    """Check the options, compute exactly, print."""
    from dprisk.inference.product.exact import product_risk
    from dprisk.models.census.allocation import parse_rho

    common.require(args, "product", rho1="a rho > 0 or census:LEVEL",
                   rho2="a rho > 0 or census:LEVEL", others="Y1,...,Yd")
    common.apply_defaults(args, DEFAULTS)
    rho1 = parse_rho(args.rho1, "--rho1")
    rho2 = parse_rho(args.rho2, "--rho2")
    others = parse_others(args.others)
    with _naming_options():
        risk = product_risk(rho1, rho2, others, args.m, args.p, args.invariant)
    payload = {
        "marginal_posterior": risk.marginal_posterior,
        "p_correct": risk.p_correct,
        "accuracy": risk.accuracy,
        "noisy_marginal_posterior": risk.noisy_marginal_posterior,
        "noisy_p_correct": risk.noisy_p_correct,
        "noisy_accuracy": risk.noisy_accuracy,
        "neglected_mass": risk.neglected_mass,
    }
    lines = [
        f"product vs noisy measurements: rho1 = {fmt(rho1)}, rho2 = {fmt(rho2)}, "
        f"others = {','.join(map(str, others))} (known), m = {args.m}, p = {fmt(args.p)}, "
        f"invariant = {args.invariant}",
        f"  {'':<32} {'product':>10} {'noisy':>10}",
        f"  {'marginal posterior (truth m+1)':<32} {risk.marginal_posterior:>10.6f} "
        f"{risk.noisy_marginal_posterior:>10.6f}",
        f"  {'P[correct] (truth m+1)':<32} {risk.p_correct:>10.6f} "
        f"{risk.noisy_p_correct:>10.6f}",
        f"  {'accuracy (prior-weighted)':<32} {risk.accuracy:>10.6f} "
        f"{risk.noisy_accuracy:>10.6f}",
        f"  neglected probability of the enumeration: {risk.neglected_mass:.3g}",
    ]
    if args.invariant != "none":
        lines.append("  the invariant is confidential data, not post-processing: the "
                     "data-processing bound does not apply")
    common.emit(args, payload, lines)
    return common.EXIT_OK
