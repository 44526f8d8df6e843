"""``--unknown-others N --q Q``: the single-level forms of ``dprisk posterior`` and ``marginal``.

The adversary knows everyone in the block except the target and ``N`` others, each of whom
has the characteristics with probability ``Q`` (:mod:`dprisk.inference.unknown_others.closed_form`).
The two options belong to the single-level form of both subcommands (the other forms refuse
them through their :class:`dprisk.cli.common.Form`); ``--q`` without ``--unknown-others`` is
refused here. The JSON keeps the single-level keys and adds ``unknown_others`` and ``q``.
"""

from __future__ import annotations

import contextlib
import math
import re

from dprisk.cli.common import fmt, given, integer, number

__all__ = ["OPTIONS", "USAGE", "add_options", "marginal", "posterior", "requested"]

#: Destinations of the options, added to the single-level forms.
OPTIONS = frozenset({"unknown_others", "q"})
#: How the options appear in a form's usage.
USAGE = "[--unknown-others N --q Q]"


def add_options(parser) -> None:
    """Register ``--unknown-others`` and ``--q`` (both default to None: "not given")."""
    group = parser.add_argument_group(
        "adversary who does not know everyone (single level only)")
    group.add_argument("--unknown-others", type=integer, default=None,
                       help="N, the people in the block besides the target whom the adversary "
                       "does not know (0 <= N <= 10000; default: 0, the paper's adversary)")
    group.add_argument("--q", type=number, default=None,
                       help="probability that one unknown other has the characteristics, "
                       "0 <= Q <= 1 (required with --unknown-others N > 0)")


def requested(args) -> bool:
    """Whether the unknown-others model was asked for; ``--q`` alone is refused (ValueError)."""
    if given(args, "q") and not given(args, "unknown_others"):
        raise ValueError("--q applies only with --unknown-others N (the adversary's N "
                         "unknown others, an integer >= 0); allowed range: 0 <= q <= 1")
    return given(args, "unknown_others")


@contextlib.contextmanager
def _naming_options():
    """Turn the API's parameter names in a refusal into the options' spellings."""
    try:
        yield
    except ValueError as err:
        message = re.sub(r"\bunknown_others\b", "--unknown-others", str(err))
        raise ValueError(re.sub(r"^q\b", "--q", message)) from None


def _inputs(args) -> tuple[dict, str]:
    """The JSON keys of the new inputs and their summary text."""
    shown = f"unknown others n = {args.unknown_others}"
    if args.q is not None:
        shown += f", q = {fmt(args.q)}"
    return {"unknown_others": args.unknown_others, "q": args.q}, shown


def posterior(args, rho1: float) -> tuple[dict, list[str]]:
    """``dprisk posterior --rho1 R --x1-star X --unknown-others N --q Q``: posterior and R'."""
    from dprisk.inference.unknown_others import closed_form as uo

    model = {"unknown_others": args.unknown_others, "q": args.q}
    with _naming_options():
        post = float(uo.posterior(args.x1_star, rho1, args.p, args.known, **model))
    risk = float(uo.risk(args.x1_star, rho1, args.p, args.known, **model))
    inputs, shown = _inputs(args)
    lines = [
        f"single level: rho1 = {fmt(rho1)}, x1* = {args.x1_star}, p = {fmt(args.p)}, "
        f"known m = {args.known}, {shown}",
        f"  P[target has c | x1*] = {fmt(post)}",
        f"  R'(x1*)               = {fmt(risk)}",
    ]
    return {"posterior": post, "risk": risk, **inputs}, lines


def marginal(args, rho1: float) -> tuple[dict, list[str]]:
    """``dprisk marginal --rho1 R --unknown-others N --q Q``: marginal R and P[correct]."""
    from dprisk.inference.unknown_others import closed_form as uo
    from dprisk.runtime.work_limit import check_work

    model = {"unknown_others": args.unknown_others, "q": args.q}
    with _naming_options():
        # the whole command before any of it: two marginal sums (posterior, risk) and three
        # sets of decision tails (P[correct], accuracy's two)
        check_work(uo.work_steps(rho1, args.p, marginals=2, tail_sets=3, **model),
                   parameter="unknown_others and rho",
                   what=f"the marginal, P[correct decision] and accuracy with n = "
                   f"{args.unknown_others} unknown others")
        marginal_posterior = float(uo.marginal_posterior(rho1, args.p, args.known,
                                                         **model))
    marginal_risk = float(uo.marginal_risk(rho1, args.p, args.known, **model))
    p_correct = float(uo.p_correct(rho1, args.p, args.known, **model))
    threshold = int(uo.decision_threshold(rho1, args.p, args.known, **model))
    # the Bayes rule is the likelihood-ratio test here: its accuracy is the worst case
    accuracy = float(uo.accuracy(rho1, args.p, args.known, **model))
    inputs, shown = _inputs(args)
    payload = {"marginal_posterior": marginal_posterior,  # R above the largest double: null
               "marginal_risk": marginal_risk if math.isfinite(marginal_risk) else None,
               "p_correct": p_correct, "threshold": threshold, "accuracy": accuracy,
               "worst_case_accuracy": accuracy, **inputs}
    lines = [
        f"single level: rho1 = {fmt(rho1)}, p = {fmt(args.p)}, known m = {args.known}, "
        f"{shown}; truth: the target has c, the unknown others' count ~ Binomial(n, q)",
        f"  marginal posterior P[target has c]   = {fmt(marginal_posterior)}",
        f"  marginal risk R                      = {fmt(marginal_risk)}",
        f"  decision threshold (decide c iff x1* >= threshold) = {threshold}",
        f"  P[correct decision]                  = {fmt(p_correct)}",
    ]
    return payload, lines
