"""``dprisk budget``: the privacy budget that meets a disclosure-risk target.

Four forms. ``--pure-dp``: Kazan & Reiter's risk-profile method for epsilon-DP, with the
profile r*(p) = max(R, A/(p q)) given by ``--max-ratio R --max-posterior A`` and the prior on
the sensitive value ``--q Q`` (1 by default; ``any`` minimises over q too). ``--measure``
(single level): the largest discrete Gaussian rho whose measure stays at most ``--target``
at every prior of ``--p``, with its certificate; the ``tail`` measure
P[R'(X*) > r*(p)] takes the tolerance ``--tail-tolerance TAU`` and the profile
``--max-ratio R [--max-posterior A]`` instead of ``--target``. ``--rho1 R --d D --x2 N``
(two levels; any measure): the largest block-group rho2 for the fixed block rho1.
``--census``: the largest global rho of the 2020 allocation (block and block-group shares
fixed), at the block or, with ``--d --x2``, with the block group (any measure). The
two-level searches are certified by an interval bound (``proven <= target up to`` in the
text output).
"""

from __future__ import annotations

import contextlib
import math
import re

from dprisk.cli import common
from dprisk.cli.common import fmt

__all__ = ["DEFAULTS", "FORMS", "add_parser", "run"]

_MEASURE_OPTIONS = frozenset({"measure", "target", "tail_tolerance", "max_ratio",
                              "max_posterior", "p", "known"})
PURE_DP = common.Form("pure-dp", "--pure-dp", frozenset({"pure_dp", "max_ratio",
                                                          "max_posterior", "q"}),
                      usage="--pure-dp --max-ratio R --max-posterior A [--q Q|any]")
TWO_LEVEL = common.Form("two-level", "--rho1 given", _MEASURE_OPTIONS | {"rho1", "d", "x2"},
                        usage="--measure M --target T (or the tail options) "
                        "--rho1 R --d D --x2 N [--p P1,P2,...] [--known M] (solves for rho2)",
                        selected_by="rho1")
CENSUS = common.Form("census", "--census", _MEASURE_OPTIONS | {"census", "d", "x2"},
                     usage="--measure M --target T (or the tail options) --census "
                     "[--d D --x2 N] [--p ...] [--known M] (solves for the global rho)",
                     selected_by="census")
MEASURE = common.Form("measure", "--measure given", _MEASURE_OPTIONS,
                      usage="--measure marginal-risk|marginal-posterior|p-correct|"
                      "worst-case-accuracy --target T "
                      "| --measure tail --tail-tolerance TAU --max-ratio R [--max-posterior A]"
                      "; [--p P1,P2,...] [--known M]", selected_by="measure")
#: The forms of ``dprisk budget``.
FORMS = [TWO_LEVEL, CENSUS, MEASURE, PURE_DP]
#: Defaults applied after the checks.
DEFAULTS = {"q": 1.0, "p": [0.5], "known": 0}
#: Smallest accepted --tail-tolerance, --max-posterior and --q: reciprocals and logs must
#: stay finite (1/5e-324 overflows).
SMALLEST = 1e-300
#: Largest accepted --max-ratio (written out: ``1.0 / SMALLEST`` rounds below 1e300, which
#: then refused the stated bound itself).
LARGEST_RATIO = 1e300

DESCRIPTION = common.describe(
    FORMS, "pure-dp: the largest epsilon of an epsilon-DP release whose worst-case "
    "posterior-to-prior ratio stays within the profile r*(p) = max(R, A/(p q)) for every "
    "prior p (Kazan & Reiter). The other forms: the largest zCDP rho of the discrete Gaussian "
    "release whose risk measure stays at most the target for every prior (the first crossing "
    "for the step-like p-correct and tail), with the certificate value_at_rho (<= target) and "
    "value_above (at rho (1 + 1e-9), > target); epsilon_cks is the (epsilon, 1e-10) "
    "guarantee of rho (of rho1 + rho2 for the two-level form).")


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
    common.add_options(sub, {
        "--pure-dp": (common.SWITCH, "epsilon-DP budget from a risk profile (Kazan & Reiter)"),
        "--max-ratio": (common.number, "R, the largest accepted posterior-to-prior ratio, "
                        f"1 < R <= {LARGEST_RATIO:g}"),
        "--max-posterior": (common.number, f"A, the largest accepted posterior, {SMALLEST:g} "
                            "<= A < 1 (a posterior up to the larger of R p q and A is accepted; "
                            "--pure-dp: A/(q R) >= 2.2e-308, the prior where the two meet, "
                            "with q = 1 for --q any)"),
        "--q": (q_value, common.with_default(
            "prior on the sensitive value, 0 < q <= 1, or any (the worst case over q)",
            DEFAULTS["q"])),
        "--measure": (None, "marginal-risk | marginal-posterior | p-correct | tail | "
                      "worst-case-accuracy: the largest rho whose measure stays at most the "
                      "target; selects the measure form (worst-case-accuracy: the best "
                      "p-weighted accuracy of any test, single level or --census)"),
        "--target": (common.number, "the measure's target (marginal-risk: > 1; "
                     "marginal-posterior: between every p and 1; p-correct: in (0, 1), above "
                     "1/2 if a p = 1/2, every p <= 1/2 at the single level; worst-case-accuracy: "
                     "between max(p, 1 - p) and 1)"),
        "--tail-tolerance": (common.number, "tail measure: TAU, 0 < TAU < 1, the largest "
                             "accepted P[R'(X*) > r*(p)] with r*(p) = max(R, A/p) from "
                             "--max-ratio [--max-posterior]"),
        "--rho1": (None, "two-level form: the block's rho (> 0 or census:LEVEL); the answer is "
                   "the block-group rho2; selects this form"),
        "--d": (common.integer, "two-level and census forms: other blocks in the block group "
                "(>= 1)"),
        "--x2": (common.integer, "two-level and census forms: true block-group count (>= known "
                 "+ 1)"),
        "--census": (common.SWITCH, "the global rho of the 2020 allocation, block and "
                     "block-group shares fixed; selects this form"),
        "--p": (priors, common.with_default(
            "the priors P[X1 = m+1] at which the target must hold, a comma list P1,P2,...",
            "0.5")),
        "--known": (common.integer, common.with_default(
            "m, the adversary's known count of the others (integer >= 0)", DEFAULTS["known"])),
    })
    common.add_json(sub)
    sub.set_defaults(func=run)


def run(args) -> int:
    """Check the options, compute the budget, print."""
    return common.run_form(args, "budget", FORMS, DEFAULTS,
                           {PURE_DP: _pure_dp, MEASURE: _measure, TWO_LEVEL: _two_level,
                            CENSUS: _census})


def _pure_dp(args, method: str, seed: None) -> tuple[dict, list[str]]:
    from dprisk.inference.privacy.risk_profile import SMALLEST_KINK, pure_dp_budget

    if args.pure_dp is None:
        raise ValueError("--pure-dp is required for the epsilon-DP risk-profile budget (or "
                         "choose another form: --measure, --rho1, --census)")
    common.require(args, "pure-dp", max_ratio="a ratio > 1",
                   max_posterior="a posterior in (0, 1)")
    for option, value in (("--max-ratio", args.max_ratio),
                          ("--max-posterior", args.max_posterior)):
        _check_option(option, value)
    q = None if args.q == "any" else args.q
    if q is not None and not SMALLEST <= q <= 1.0:
        raise ValueError(f"--q must be a number with 0 < q <= 1 or any (allowed range: "
                         f"{SMALLEST:g} <= q <= 1), got {q!r}")
    kink = args.max_posterior / ((1.0 if q is None else q) * args.max_ratio)
    if not kink >= SMALLEST_KINK:
        names, ratio = ("--max-posterior, --max-ratio", "A/R") if q is None else (
            "--max-posterior, --max-ratio, --q", "A/(q R)")
        exponent = (math.log10(args.max_posterior) - math.log10(q or 1.0)
                    - math.log10(args.max_ratio))
        shown = f"{kink:.3g}" if kink > 0 else f"about 1e{exponent:.0f}"
        raise ValueError(f"{names}: {ratio} = {shown} is below {SMALLEST_KINK:.3g}, the "
                         "smallest normal double: the prior where the profile's two branches "
                         f"meet would underflow (allowed range: {ratio} >= "
                         f"{SMALLEST_KINK:.3g})")
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


def _measure_kwargs(args) -> dict:
    """Check the measure's options; return ``target`` (tolerance for tail) and the profile."""
    if args.measure == "tail":
        if args.target is not None:
            raise ValueError("--target does not apply to --measure tail: give the tolerance "
                             "as --tail-tolerance TAU and the profile as --max-ratio R "
                             "[--max-posterior A]")
        common.require(args, "tail measure", tail_tolerance="TAU, 0 < TAU < 1",
                       max_ratio="a ratio > 1")
        if not SMALLEST <= args.tail_tolerance < 1.0:
            raise ValueError(f"--tail-tolerance must be a probability with 0 < TAU < 1 "
                             f"(allowed range: {SMALLEST:g} <= TAU < 1), got "
                             f"{args.tail_tolerance!r}")
        _check_option("--max-ratio", args.max_ratio)
        if args.max_posterior is not None:
            _check_option("--max-posterior", args.max_posterior)
        return {"target": args.tail_tolerance, "max_ratio": args.max_ratio,
                "max_posterior": args.max_posterior}
    for option in ("tail_tolerance", "max_ratio", "max_posterior"):
        if getattr(args, option) is not None:
            raise ValueError(f"{common.flag(option)} applies to --measure tail only, not to "
                             f"--measure {args.measure}")
    common.require(args, "measure", target="the measure's target")
    return {"target": args.target}


def _payload(answer, epsilon_rho: float) -> dict:
    from dprisk.inference.privacy.accounting import epsilon_cks
    from dprisk.inference.privacy.budget import check_certificate
    from dprisk.models.census.allocation import CENSUS_DELTA

    # verified before it is printed: the measure at rho* <= target < the measure just above
    check_certificate(answer, "--tail-tolerance" if answer.measure == "tail" else "--target")
    return {"rho": answer.rho, "epsilon_cks": epsilon_cks(epsilon_rho, CENSUS_DELTA),
            "measure": answer.measure, "target": answer.target, "binding_p": answer.binding_p,
            "value_at_rho": answer.value_at_rho, "value_above": answer.value_above}


def _lines(title: str, payload: dict, rho_name: str, epsilon_of: str) -> list[str]:
    from dprisk.models.census.allocation import CENSUS_DELTA

    return [
        title,
        f"  {rho_name:<26} = {payload['rho']:.10g} (epsilon_cks of {epsilon_of} = "
        f"{payload['epsilon_cks']:.6f} at delta = {CENSUS_DELTA:g})",
        f"  {'binding p':<26} = {fmt(payload['binding_p'])}",
        f"  {'measure at rho*':<26} = {payload['value_at_rho']:.12g}",
        f"  {'measure just above rho*':<26} = {payload['value_above']:.12g}",
    ]


def _priors_text(args) -> str:
    return f"p in {{{', '.join(fmt(p) for p in args.p)}}}, known m = {args.known}"


def _measure(args, method: str, seed: None) -> tuple[dict, list[str]]:
    from dprisk.inference.privacy.budget import rho_for_target

    kwargs = _measure_kwargs(args)
    with common.naming_option("target", "--target"), \
            common.naming_option("tail tolerance", "--tail-tolerance"):
        answer = rho_for_target(args.measure, p=args.p, known=args.known, **kwargs)
    with common.naming_option("rho", "--target"):  # an answer too small for the CKS epsilon
        payload = _payload(answer, answer.rho)
    title = (f"largest rho with {answer.measure} <= {fmt(answer.target)} at "
             f"{_priors_text(args)}")
    return payload, _lines(title, payload, "rho*", "rho*")


def _two_level(args, method: str, seed: None) -> tuple[dict, list[str]]:
    from dprisk.inference.privacy.budget_levels import TWO_LEVEL_MEASURES, rho2_for_target
    from dprisk.models.census.allocation import parse_rho

    common.require(args, "two-level", measure=" | ".join(TWO_LEVEL_MEASURES),
                   d="an integer >= 1", x2="the true block-group count")
    if args.measure not in TWO_LEVEL_MEASURES:
        raise ValueError(f"--measure must be one of {', '.join(TWO_LEVEL_MEASURES)} for the "
                         f"two-level form (--rho1 given), got {args.measure!r}")
    rho1 = parse_rho(args.rho1, "--rho1")
    kwargs = _measure_kwargs(args)
    with common.elapsed_progress(args, "searching rho2"), _naming_target(args):
        answer = rho2_for_target(kwargs.pop("target"), rho1=rho1, x2=args.x2, d=args.d,
                                 p=args.p, known=args.known, measure=args.measure, **kwargs)
    with common.naming_option("rho", "--target"):  # an answer too small for the CKS epsilon
        payload = _payload(answer, rho1 + answer.rho)
    title = (f"largest block-group rho2 with two-level {answer.measure} "
             f"<= {fmt(answer.target)}, "
             f"rho1 = {fmt(rho1)}, d = {args.d}, x2 = {args.x2}, {_priors_text(args)}")
    return payload, _lines(title, payload, "rho2*", "rho1 + rho2*") + _proof(answer)


def _proof(answer) -> list[str]:
    """The two-level forms' ``certified_to`` line (none for the single level)."""
    if answer.certified_to is None:
        return []
    return [f"  {'proven <= target up to':<26} = {answer.certified_to:.10g} (interval bound; "
            "from there to rho* proven except in 1e-9-wide intervals where many posteriors "
            "reach the decision level at once)"]


def _census(args, method: str, seed: None) -> tuple[dict, list[str]]:
    from dprisk.inference.privacy.budget_levels import census_rho_for_target

    if args.measure is None:
        raise ValueError("--measure is required for the census form (marginal-risk | "
                         "marginal-posterior | p-correct | tail | worst-case-accuracy)")
    if (args.x2 is None) != (args.d is None):  # named as options, before the API's "x2 and d"
        raise ValueError("--x2 and --d go together: give both for the two-level Census "
                         "budget, or neither for the block level")
    kwargs = _measure_kwargs(args)
    with common.elapsed_progress(args, "searching the global rho"), _naming_target(args):
        answer = census_rho_for_target(args.measure, p=args.p, known=args.known, x2=args.x2,
                                       d=args.d, **kwargs)
    with common.naming_option("rho", "--target"):  # an answer too small for the CKS epsilon
        payload = _payload(answer, answer.rho)
    where = ("with the block group" if args.x2 is not None else "at the block")
    title = (f"largest global rho of the 2020 allocation with {answer.measure} "
             f"<= {fmt(answer.target)} {where}, {_priors_text(args)}")
    return payload, _lines(title, payload, "global rho*", "rho*") + _proof(answer)


@contextlib.contextmanager
def _naming_target(args):
    """A refusal of the API's ``target`` names ``--tail-tolerance`` for the tail measure.

    The searches take the tail's tolerance as their ``target``; ``--target`` itself is
    named by the command line (it was typed), the tolerance only here.
    """
    try:
        yield
    except ValueError as err:
        message = str(err)
        if args.measure == "tail" and re.match(r"target\b", message):
            raise ValueError("--tail-tolerance" + message[len("target"):]) from None
        raise


def _check_option(option: str, value: float) -> None:
    """--max-ratio > 1 and 0 < --max-posterior < 1; the message names the option."""
    if option == "--max-ratio" and not 1.0 < value <= LARGEST_RATIO:
        raise ValueError(f"--max-ratio must be a finite number > 1 (a ratio of at most 1 is "
                         f"an impossible profile; allowed range: 1 < R <= {LARGEST_RATIO:g}), "
                         f"got {value!r}")
    if option == "--max-posterior" and not SMALLEST <= value < 1.0:
        raise ValueError(f"--max-posterior must be a number with 0 < A < 1 (allowed range: "
                         f"{SMALLEST:g} <= A < 1), got {value!r}")
