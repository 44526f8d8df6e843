"""``dprisk budget``: the privacy budget that meets a disclosure-risk target.

Two forms. ``--pure-dp``: Kazan & Reiter's risk-profile method for epsilon-DP, with the
profile r*(p) = max(R, A/(p q)) given by ``--max-ratio R --max-posterior A`` and the prior on
the sensitive value ``--q Q`` (1 by default; ``any`` minimises over q too). ``--measure``:
the largest single-level discrete Gaussian rho whose marginal risk or marginal posterior
stays at most ``--target`` at every prior of ``--p``, with its certificate.
"""

from __future__ import annotations

from dprisk.cli import common
from dprisk.cli.common import fmt

__all__ = ["DEFAULTS", "FORMS", "add_parser", "run"]

PURE_DP = common.Form("pure-dp", "--pure-dp", frozenset({"pure_dp", "max_ratio",
                                                          "max_posterior", "q"}),
                      usage="--pure-dp --max-ratio R --max-posterior A [--q Q|any]")
MEASURE = common.Form("measure", "--measure given",
                      frozenset({"measure", "target", "p", "known"}),
                      usage="--measure marginal-risk|marginal-posterior --target T "
                      "[--p P1,P2,...] [--known M]", selected_by="measure")
#: The forms of ``dprisk budget``.
FORMS = [PURE_DP, MEASURE]
#: Defaults applied after the checks.
DEFAULTS = {"q": 1.0, "p": [0.5], "known": 0}

DESCRIPTION = common.describe(
    FORMS, "The largest epsilon of an epsilon-DP release whose worst-case posterior-to-prior "
    "ratio stays within the profile r*(p) = max(R, A/(p q)) for every prior p (Kazan & "
    "Reiter).")


def q_value(text: str):
    """``--q``: a number (fractions accepted) or ``any`` (minimise over q too)."""
    if text.strip() == "any":
        return "any"
    return common.number(text)


def priors(text: str) -> list[float]:
    """``--p``: a comma list of priors (fractions accepted)."""
    return [common.number(item) for item in text.split(",")]


def add_parser(subs) -> None:
    """Register ``dprisk budget``."""
    sub = subs.add_parser("budget", help=common.SUBCOMMAND_HELP["budget"],
                          description=DESCRIPTION)
    sub.add_argument("--pure-dp", action="store_const", const=True, default=None,
                     help="epsilon-DP budget from a risk profile (Kazan & Reiter)")
    sub.add_argument("--max-ratio", type=common.number, default=None,
                     help="R, the largest accepted posterior-to-prior ratio (> 1)")
    sub.add_argument("--max-posterior", type=common.number, default=None,
                     help="A, the largest accepted posterior, 0 < A < 1 (a posterior up to the "
                     "larger of R p q and A is accepted)")
    sub.add_argument("--q", type=q_value, default=None, help=common.with_default(
        "prior on the sensitive value, 0 < q <= 1, or any (the worst case over q)",
        DEFAULTS["q"]))
    sub.add_argument("--measure", default=None,
                     help="marginal-risk | marginal-posterior: the largest single-level rho "
                     "whose measure stays at most --target; selects this form")
    sub.add_argument("--target", type=common.number, default=None,
                     help="the measure's target (marginal-risk: > 1; marginal-posterior: "
                     "between every p and 1)")
    sub.add_argument("--p", type=priors, default=None, help=common.with_default(
        "the priors P[X1 = m+1] at which the target must hold, a comma list P1,P2,...", "0.5"))
    sub.add_argument("--known", type=common.integer, default=None, help=common.with_default(
        "m, the adversary's known count of the others (integer >= 0)", DEFAULTS["known"]))
    common.add_json(sub)
    sub.set_defaults(func=run)


def run(args) -> int:
    """Check the options, compute the budget, print."""
    return common.run_form(args, "budget", FORMS, DEFAULTS, {PURE_DP: _pure_dp, MEASURE: _measure})


def _pure_dp(args, method: str, seed: None) -> tuple[dict, list[str]]:
    from dprisk.inference.budget import pure_dp_budget

    if args.pure_dp is None:
        raise ValueError("--pure-dp is required: the epsilon-DP risk-profile budget is the "
                         "form of dprisk budget available so far")
    common.require(args, "pure-dp", max_ratio="a ratio > 1",
                   max_posterior="a posterior in (0, 1)")
    for option, value in (("--max-ratio", args.max_ratio),
                          ("--max-posterior", args.max_posterior)):
        _check_option(option, value)
    q = None if args.q == "any" else args.q
    if q is not None and not 0.0 < q <= 1.0:
        raise ValueError(f"--q must be a number with 0 < q <= 1 or any, got {q!r}")
    answer = pure_dp_budget(args.max_ratio, args.max_posterior, q=q)
    payload = {"epsilon": answer.epsilon, "binding_p": answer.binding_p,
               "binding_q": answer.binding_q}
    lines = [
        f"epsilon-DP budget for the risk profile r*(p) = max({fmt(args.max_ratio)}, "
        f"{fmt(args.max_posterior)}/(p q)), q = {args.q}",
        f"  epsilon*   = {answer.epsilon:.6f}",
        f"  binding p  = {fmt(answer.binding_p)}",
        f"  binding q  = {fmt(answer.binding_q)}",
    ]
    return payload, lines


def _measure(args, method: str, seed: None) -> tuple[dict, list[str]]:
    from dprisk.inference.accounting import epsilon_cks
    from dprisk.inference.dg_budget import rho_for_target
    from dprisk.models.census import CENSUS_DELTA

    common.require(args, "measure", target="the measure's target")
    answer = rho_for_target(args.measure, args.target, p=args.p, known=args.known)
    payload = {
        "rho": answer.rho,
        "epsilon_cks": epsilon_cks(answer.rho, CENSUS_DELTA),
        "measure": answer.measure,
        "target": answer.target,
        "binding_p": answer.binding_p,
        "value_at_rho": answer.value_at_rho,
        "value_above": answer.value_above,
    }
    lines = [
        f"largest rho with {answer.measure} <= {fmt(answer.target)} at p in "
        f"{{{', '.join(fmt(p) for p in args.p)}}}, known m = {args.known}",
        f"  rho*                       = {answer.rho:.10g} "
        f"(epsilon_cks = {payload['epsilon_cks']:.6f} at delta = {CENSUS_DELTA:g})",
        f"  binding p                  = {fmt(answer.binding_p)}",
        f"  measure at rho*            = {answer.value_at_rho:.12g}",
        f"  measure at rho* (1 + 1e-9) = {answer.value_above:.12g}",
    ]
    return payload, lines


def _check_option(option: str, value: float) -> None:
    """--max-ratio > 1 and 0 < --max-posterior < 1; the message names the option."""
    import math

    if option == "--max-ratio" and not (math.isfinite(value) and value > 1.0):
        raise ValueError(f"--max-ratio must be a finite number > 1 (a ratio of at most 1 is "
                         f"an impossible profile; allowed range: 1 < R < inf), got {value!r}")
    if option == "--max-posterior" and not 0.0 < value < 1.0:
        raise ValueError(f"--max-posterior must be a number with 0 < A < 1, got {value!r}")
