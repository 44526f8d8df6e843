"""``dprisk product``: risk of the post-processed product beside the noisy measurements.

``dprisk product --rho1 R --rho2 R --others Y1,...,Yd --m M --p P --invariant
none|block-group [--block-group-total N] [--method exact|mc [--datasets N --seed S]]
[--json]`` prints the product's marginal posterior, P[correct] (truth m+1) and
prior-weighted accuracy, the same three for the noisy measurements, and the neglected
probability. ``--method exact`` (default) enumerates the noise
(:func:`dprisk.inference.product.exact.product_risk`; refused, naming ``--others``, when the
enumeration is above the memory or work limit); ``--method mc`` simulates ``--datasets``
releases per truth and computes each one's likelihood exactly
(:func:`dprisk.inference.product.monte_carlo_risk.product_risk_mc`), adding the keys
``method``, ``datasets``, ``seed`` and ``mcse``. ``--block-group-total N`` states the
published invariant (with ``--invariant block-group``): refused unless feasible, it adds
``block_group_total`` and ``invariant_posterior``. Bad input exits 2 with one stderr line
naming the option; nothing is printed on stdout.
"""

from __future__ import annotations

import contextlib
import re

from dprisk.cli import common
from dprisk.cli.common import fmt, given
from dprisk.runtime.ascii_numbers import ascii_number

__all__ = ["DEFAULTS", "FORM", "add_parser", "parse_others", "run"]

#: Defaults applied when an option is not given.
DEFAULTS = {"m": 0, "p": 0.5, "invariant": "none", "datasets": 20_000}
#: The API's parameter names and their options.
_OPTIONS = {"rho1": "--rho1", "rho2": "--rho2", "others": "--others", "m": "--m", "p": "--p",
            "invariant": "--invariant", "datasets": "--datasets",
            "block_group_total": "--block-group-total", "random_seed": "--seed"}
#: The one form of ``dprisk product``: ``--datasets`` and ``--seed`` apply to mc only.
FORM = common.Form("product", "always",
                   frozenset({"rho1", "rho2", "others", "m", "p", "invariant", "method",
                              "block_group_total"}),
                   methods=("exact", "mc"), sampling=("mc",),
                   sampled=frozenset({"datasets", "seed"}))


def add_parser(subs) -> None:
    """Register ``dprisk product``."""
    sub = subs.add_parser(
        "product", help=common.SUBCOMMAND_HELP["product"],
        description="One block group over the target's block and d other blocks whose counts "
        "the adversary knows. The product: the block-group total max(0, x2*) (or held exact "
        "with --invariant block-group), the blocks projected onto non-negative counts adding "
        "to it and rounded by largest remainders (ties broken at random). --method exact: "
        "every noise value enumerated, neglected probability < 1e-12 (the work grows as "
        "(noise window)^d; above the memory or work limit it is refused, naming --others). "
        "--method mc: --datasets releases simulated per truth, each one's likelihood exact, "
        "the product's three measures with their MCSE (the noisy measurements' stay "
        "exact). An invariant is confidential data, not post-processing: with "
        "block-group and known others the product reveals the target.")
    sub.add_argument("--rho1", default=None, help="block rho, 0 < rho <= 1e100, or "
                     "census:LEVEL (required)")
    sub.add_argument("--rho2", default=None, help="block-group rho, 0 < rho <= 1e100, or "
                     "census:LEVEL (required)")
    sub.add_argument("--others", default=None, help="Y1,...,Yd: the other blocks' counts, "
                     "integers >= 0, d >= 1, m + 1 + sum <= 2**53 (exact: d <= 3 runs in "
                     "about a second at Census rho, larger d is refused when the enumeration "
                     "is above the memory or work limit; mc: up to d = 999) (required)")
    sub.add_argument("--m", type=common.integer, default=None, help=common.with_default(
        "the target block's count without the target, an integer >= 0", DEFAULTS["m"]))
    sub.add_argument("--p", type=common.number, default=None, help=common.with_default(
        "prior P[X1 = m+1], 0 < p < 1 (fractions accepted)", DEFAULTS["p"]))
    sub.add_argument("--invariant", default=None, help=common.with_default(
        "none | block-group (the block-group total held exact)", DEFAULTS["invariant"]))
    sub.add_argument("--block-group-total", type=common.integer, default=None,
                     help="N, the published (invariant) block-group total, with --invariant "
                     "block-group only; feasible values: m + sum(others) (truth m) or "
                     "m + 1 + sum(others) (truth m+1), anything else is refused; adds the "
                     "JSON keys block_group_total and invariant_posterior (P[X1 = m+1 | N])")
    sub.add_argument("--method", default=None, help=common.with_default(
        "exact | mc (Monte Carlo over releases, each release's likelihood exact)", "exact"))
    sub.add_argument("--datasets", type=common.integer, default=None, help=common.with_default(
        "releases simulated per truth (mc only; 2 <= N; 2 x N releases whose likelihoods "
        "cost about (noise window) x (d + 1)^2 each, at most DPRISK_WORK_LIMIT = 1e12 steps "
        "by default)", DEFAULTS["datasets"]))
    sub.add_argument("--seed", type=common.integer, default=None,
                     help=f"{common.SEED_HELP}; mc only")
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
            values.append(int(ascii_number(item.strip())))
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


def _invariant_posterior(args, others: list[int]) -> tuple[dict, list[str]]:
    """``--block-group-total N``: refused unless feasible; the posterior it implies.

    :func:`dprisk.inference.product.exact.invariant_posterior` (with the others known, ``N``
    reveals the target's block count).
    """
    if not given(args, "block_group_total"):
        return {}, []
    from dprisk.inference.product.exact import invariant_posterior

    total = args.block_group_total
    if args.invariant != "block-group":
        known = args.m + sum(others)
        raise ValueError("--block-group-total applies only with --invariant block-group (the "
                         "published total held exact); allowed values: m + sum(others) = "
                         f"{known} or m + 1 + sum(others) = {known + 1}")
    k, posterior = invariant_posterior(total, others, args.m)
    lines = [f"  published block-group total N = {total}: reveals k = {k}, "
             f"P[X1 = m+1 | N] = {posterior:g}"]
    return {"block_group_total": total, "invariant_posterior": posterior}, lines


def run(args) -> int:
    """Check the options, compute (exact or Monte Carlo), print."""
    return common.run_form(args, "product", [FORM], DEFAULTS, {FORM: _compute})


def _compute(args, method: str, seed: int | None) -> tuple[dict, list[str]]:
    from dprisk.models.census.allocation import parse_rho

    common.require(args, "product", rho1="a rho > 0 or census:LEVEL",
                   rho2="a rho > 0 or census:LEVEL", others="Y1,...,Yd")
    rho1 = parse_rho(args.rho1, "--rho1")
    rho2 = parse_rho(args.rho2, "--rho2")
    others = parse_others(args.others)
    with _naming_options():
        from dprisk.inference.product.exact import check_product_inputs

        check_product_inputs(rho1, rho2, others, args.m, args.invariant)
        invariant_keys, invariant_lines = _invariant_posterior(args, others)
        if method == "mc":
            risk, extra = _monte_carlo(args, rho1, rho2, others, seed)
        else:
            risk, extra = _exact(args, rho1, rho2, others), {}
    payload = {
        "marginal_posterior": risk.marginal_posterior,
        "p_correct": risk.p_correct,
        "accuracy": risk.accuracy,
        "noisy_marginal_posterior": risk.noisy_marginal_posterior,
        "noisy_p_correct": risk.noisy_p_correct,
        "noisy_accuracy": risk.noisy_accuracy,
        "neglected_mass": risk.neglected_mass,
        **extra,
        **invariant_keys,
    }
    mcse = extra.get("mcse", {})

    def row(label: str, key: str) -> str:
        error = f"   product MCSE {mcse[key]:.2g}" if key in mcse else ""
        return (f"  {label:<32} {payload[key]:>10.6f} {payload['noisy_' + key]:>10.6f}"
                f"{error}")

    lines = [
        f"product vs noisy measurements: rho1 = {fmt(rho1)}, rho2 = {fmt(rho2)}, "
        f"others = {','.join(map(str, others))} (known), m = {args.m}, p = {fmt(args.p)}, "
        f"invariant = {args.invariant}, method = {method}",
        f"  {'':<32} {'product':>10} {'noisy':>10}",
        row("marginal posterior (truth m+1)", "marginal_posterior"),
        row("P[correct] (truth m+1)", "p_correct"),
        row("accuracy (prior-weighted)", "accuracy"),
        f"  neglected probability ({'likelihood windows' if method == 'mc' else 'enumeration'})"
        f": {risk.neglected_mass:.3g}",
    ]
    if method == "mc":
        lines.append(f"  product by Monte Carlo: {args.datasets} releases per truth (the noisy "
                     f"column is exact)")
    lines += invariant_lines
    if args.invariant != "none":
        lines.append("  the invariant is confidential data, not post-processing: the "
                     "data-processing bound does not apply")
    return payload, lines


def _exact(args, rho1, rho2, others):
    from dprisk.inference.product.exact import product_risk

    try:
        with common.elapsed_progress(args, "exact enumeration"):
            return product_risk(rho1, rho2, others, args.m, args.p, args.invariant)
    except ValueError as err:
        if str(err).startswith("others"):
            raise ValueError(f"{err}; or use --method mc (Monte Carlo over releases, any d up "
                             f"to 999)") from None
        raise


def _monte_carlo(args, rho1, rho2, others, seed):
    from dprisk.inference.product.monte_carlo_risk import product_risk_mc

    risk = product_risk_mc(rho1, rho2, others, args.m, args.p, args.invariant,
                           datasets=args.datasets, random_seed=seed,
                           progress=common.show_progress(args))
    extra = {"method": "mc", "datasets": risk.datasets,
             "mcse": {"marginal_posterior": risk.mcse_marginal_posterior,
                      "p_correct": risk.mcse_p_correct, "accuracy": risk.mcse_accuracy}}
    return risk, extra
