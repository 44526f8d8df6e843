"""``dprisk epsilon``: the (epsilon, delta)-DP guarantee of rho-zCDP, and its inverse.

Two forms: ``--rho R [--delta D]`` gives epsilon by Bun–Steinke (the paper's Theorem 1), by
the tighter Canonne–Kamath–Steinke conversion, and (``epsilon_pld_lower``,
``epsilon_pld_upper``) the PLD bracket of one discrete Gaussian query of that rho, sensitivity
1 (add or remove one person); ``--epsilon E [--delta D]`` gives the
largest rho whose guarantee is at most E, by each conversion.
"""

from __future__ import annotations

from dprisk.cli import common
from dprisk.cli.common import fmt

__all__ = ["DEFAULTS", "FORMS", "add_parser", "run"]

FORWARD = common.Form("rho-to-epsilon", "--rho given", frozenset({"rho", "delta"}),
                      usage="--rho R [--delta D]")
INVERSE = common.Form("epsilon-to-rho", "--epsilon given", frozenset({"epsilon", "delta"}),
                      usage="--epsilon E [--delta D]", selected_by="epsilon")
#: The forms of ``dprisk epsilon``.
FORMS = [FORWARD, INVERSE]
#: Defaults applied after the checks (the Census Bureau's delta).
DEFAULTS = {"delta": 1e-10}

DESCRIPTION = common.describe(
    FORMS, "epsilon_bun_steinke = rho + 2 sqrt(rho log(1/delta)) (the paper's Theorem 1); "
    "epsilon_cks is the tighter Canonne-Kamath-Steinke conversion (dp-accounting), the one "
    "the Census Bureau states.")


def add_parser(subs) -> None:
    """Register ``dprisk epsilon``."""
    sub = subs.add_parser("epsilon", help=common.SUBCOMMAND_HELP["epsilon"],
                          description=DESCRIPTION)
    sub.add_argument("--rho", default=None,
                     help="zCDP rho, 0 < rho <= 1e100, or census:LEVEL; selects epsilon from "
                     "rho (the CKS epsilon needs its optimal Renyi order in [1.01, 1e12] and a "
                     "bound above 0: at delta 1e-10 about 1.36e-20 < rho <= 2.3e5, the range "
                     "at another delta stated when refused; outside, exit status 2)")
    sub.add_argument("--epsilon", type=common.number, default=None,
                     help="target epsilon, 0 < epsilon <= 1e100, large enough that rho >= "
                     "2.2e-308 (at delta 1e-10: epsilon >= 1.45e-153) and small enough for the "
                     "CKS conversion's optimal Renyi order to be >= 1.01 (at delta 1e-10: "
                     "epsilon <= about 2.34e5, the range at another delta stated when "
                     "refused); selects the largest rho")
    sub.add_argument("--delta", type=common.number, default=None,
                     help=common.with_default("delta, 0 < delta < 1 (the CKS conversion needs "
                                              "delta >= 2.2250738585072014e-308, the smallest "
                                              "normal double)", DEFAULTS["delta"]))
    common.add_json(sub)
    sub.set_defaults(func=run)


def run(args) -> int:
    """Check the options against the chosen form, compute, print."""
    return common.run_form(args, "epsilon", FORMS, DEFAULTS,
                           {FORWARD: _forward, INVERSE: _inverse})


def _forward(args, method: str, seed: None) -> tuple[dict, list[str]]:
    from dprisk.inference.privacy.accounting import epsilon_bun_steinke, epsilon_cks
    from dprisk.models.census.allocation import parse_rho

    common.require(args, "rho-to-epsilon", rho="a rho > 0 or census:LEVEL")
    rho = parse_rho(args.rho, "--rho")
    _check_delta(args.delta)
    payload = {
        "rho": rho,
        "delta": args.delta,
        "epsilon_bun_steinke": epsilon_bun_steinke(rho, args.delta),
        "epsilon_cks": epsilon_cks(rho, args.delta),
    }
    bracket = _pld_bracket(rho, args.delta)
    payload["epsilon_pld_lower"], payload["epsilon_pld_upper"] = bracket
    lines = [
        f"rho-zCDP with rho = {fmt(rho)} is (epsilon, delta = {args.delta:g})-DP with",
        f"  epsilon (Bun-Steinke, the paper's Theorem 1)   = {payload['epsilon_bun_steinke']:.6f}",
        f"  epsilon (Canonne-Kamath-Steinke, tighter)      = {payload['epsilon_cks']:.6f}",
    ]
    if not PLD_RHO_RANGE[0] <= rho <= PLD_RHO_RANGE[1]:
        lines.append(f"  epsilon of one discrete Gaussian query (PLD): not computed outside "
                     f"{PLD_RHO_RANGE[0]:g} <= rho <= {PLD_RHO_RANGE[1]:g}")
    elif None in bracket:
        lines.append("  epsilon of one discrete Gaussian query (PLD): not resolved at this rho "
                     "and delta (dp-accounting's PLD needs delta >= 1e-20 and epsilon + "
                     "log(1/delta) < 700)")
    else:
        lines.append(f"  epsilon of one discrete Gaussian query, PLD   in [{bracket[0]:.6f}, "
                     f"{bracket[1]:.6f}] (sensitivity 1)")
    return payload, lines


#: The rhos for which ``--rho`` reports the PLD bracket of one discrete Gaussian query (a tiny
#: rho has a support too wide to enumerate); outside, the keys are null.
PLD_RHO_RANGE = (1e-4, 1e4)


def _pld_bracket(rho: float, delta: float) -> tuple[float | None, float | None]:
    """Optimistic and pessimistic PLD epsilon of one DG query of ``rho`` (or Nones).

    ``None`` outside :data:`PLD_RHO_RANGE`, and where ``dp-accounting`` does not resolve the
    bracket (:mod:`dprisk.inference.privacy.accounting_limits`: a delta below 1e-20, e.g.
    1e-300, where its truncated noise tail is not negligible, or an epsilon near 700, where
    its sums underflow; there it once gave ends excluding the exact epsilon).
    """
    from dprisk.inference.privacy.accounting import epsilon_pld_bracket

    if not PLD_RHO_RANGE[0] <= rho <= PLD_RHO_RANGE[1]:
        return None, None
    try:
        return epsilon_pld_bracket([rho], delta)
    except ValueError:  # delta and rho were checked: the accountant's range, not an input's
        return None, None


def _inverse(args, method: str, seed: None) -> tuple[dict, list[str]]:
    from dprisk.inference.privacy.accounting import rho_bun_steinke, rho_cks
    from dprisk.models.checks import check_rho

    check_rho(args.epsilon, "--epsilon")
    _check_delta(args.delta)
    payload = {
        "epsilon": args.epsilon,
        "delta": args.delta,
        "rho_bun_steinke": rho_bun_steinke(args.epsilon, args.delta),
    }
    try:
        payload["rho_cks"] = rho_cks(args.epsilon, args.delta)
    except ValueError as err:  # the rho sought, not one given: the refusal names --epsilon
        message = str(err)
        if message.startswith("rho = "):
            raise ValueError(f"--epsilon {args.epsilon!r} with delta = {args.delta!r}: its "
                             f"largest rho is out of the CKS conversion's reach ({message})"
                             ) from None
        raise
    lines = [
        f"largest rho whose zCDP guarantee is (epsilon = {fmt(args.epsilon)}, "
        f"delta = {args.delta:g})-DP",
        f"  rho (Bun-Steinke)                = {payload['rho_bun_steinke']:.8g}",
        f"  rho (Canonne-Kamath-Steinke)     = {payload['rho_cks']:.8g}",
    ]
    return payload, lines


def _check_delta(delta: float) -> None:
    """--delta must lie in (0, 1); the message names the option."""
    from dprisk.models.checks import check_probability

    check_probability(delta, "--delta")
