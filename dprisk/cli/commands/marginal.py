"""``dprisk marginal``: marginal posterior, risk R and P[correct decision].

Three forms: single level (``--rho1``), two levels (``--rho2`` given: also ``--d --x2
[--x1]``, exact or Monte Carlo) and a target unique at several levels (``--rhos``). An option
of another form, or a Monte Carlo option (``--datasets``, ``--draws``, ``--seed``) with
``--method exact``, is refused. A Monte Carlo answer reports its seed (drawn when ``--seed``
is not given).
"""

from __future__ import annotations

import argparse
import contextlib
import math

from dprisk.cli import common, unknown_others
from dprisk.cli.common import fmt, integer

__all__ = ["DEFAULTS", "FORMS", "add_parser", "run"]

SINGLE = common.Form("single-level", "--rho1 without --rho2",
                     frozenset({"rho1", "method"}) | unknown_others.OPTIONS,
                     usage=f"--rho1 [--p] [--known] {unknown_others.USAGE}, exact")
TWO_LEVEL = common.Form("two-level", "--rho2 given",
                        frozenset({"rho1", "rho2", "d", "x2", "x1", "prior", "method"}),
                        usage="--rho1 --rho2 --d --x2 [--x1] [--p] [--known] [--prior] "
                        "[--method exact|mc]",
                        selected_by="rho2", methods=("exact", "mc"), sampling=("mc",),
                        sampled=frozenset({"datasets", "draws", "seed"}))
UNIQUE_LEVELS = common.Form("unique-levels", "--rhos given", frozenset({"rhos", "method"}),
                            usage="--rhos R1,R2,... or census:N [--p] [--known], exact",
                            selected_by="rhos")
#: The forms of ``dprisk marginal``.
FORMS = [SINGLE, TWO_LEVEL, UNIQUE_LEVELS]
#: Defaults applied after the checks.
DEFAULTS = {"p": 0.5, "known": 0, "prior": "improper", "datasets": 20_000, "draws": 1000}

#: ``dprisk marginal --help``: the summary line and the description of the forms.
HELP = common.SUBCOMMAND_HELP["marginal"]
DESCRIPTION = common.describe(FORMS, "--datasets, --draws and --seed apply to --method mc only.")


def add_parser(subs) -> None:
    """Register ``dprisk marginal`` with every option and its default."""
    marg = subs.add_parser("marginal", help=HELP, description=DESCRIPTION)
    common.add_scenario(marg, p=DEFAULTS["p"], known=DEFAULTS["known"],
                        sums_over_releases=True)
    unknown_others.add_options(marg)
    mhier = marg.add_argument_group("two levels (when --rho2 is given)")
    common.add_two_level(mhier)
    mhier.add_argument("--x2", type=integer, default=None, help="true block-group count")
    mhier.add_argument("--x1", type=integer, default=None, help=common.with_default(
        "true block count, known or known + 1", "known + 1"))
    common.add_model(mhier, methods="exact | mc", prior=DEFAULTS["prior"],
                     draws=DEFAULTS["draws"], sampled="mc")
    mhier.add_argument("--datasets", type=integer, default=None, help=common.with_default(
        f"simulated releases (mc only; 2 <= N, the MCSE needs two; {common.WORK_HELP})",
        DEFAULTS["datasets"]))
    # no form takes --chains (the Monte Carlo study runs one chain per release): refused,
    # and not shown in the help
    marg.add_argument("--chains", type=integer, default=None, help=argparse.SUPPRESS)
    marg.add_argument("--rhos", default=None, help="target unique at several levels: "
                      "R1,R2,... (census:LEVEL allowed) or census:N, the bottom N levels; "
                      "p_correct is accurate relative to its value, however small (below "
                      "about 1e-308 it prints 0)")
    common.add_json(marg)
    marg.set_defaults(func=run)


def run(args) -> int:
    """Check the options against the chosen form, compute, print."""
    # no form takes --chains (the Monte Carlo study runs one chain per release)
    return common.run_form(args, "marginal", FORMS, DEFAULTS,
                           {SINGLE: _single_level, TWO_LEVEL: _two_level,
                            UNIQUE_LEVELS: _unique_levels}, never=("chains",))


def _single_level(args, method: str, seed: None) -> tuple[dict, list[str]]:
    from dprisk.inference.privacy.decision_sizing import check_one_level_size
    from dprisk.inference.privacy.worst_case import one_level_worst_case
    from dprisk.inference.single_level import closed_form as single_level

    (rho1,) = common.scenario_rhos(args, "single-level", rho1="a rho > 0 or census:LEVEL")
    with common.naming_option("rho", "--rho1"):
        if unknown_others.requested(args):
            return unknown_others.marginal(args, rho1)
        # the closed form's window and the worst case's atoms, before any is built
        check_one_level_size(rho1, args.p, name="--rho1")
        summary = single_level.design_summary(rho1, args.p, args.known)  # validates once
    accuracy = float(summary["accuracy"])
    worst = one_level_worst_case(rho1, args.p)
    marginal = float(summary["marginal_posterior"])
    marginal_risk = float(summary["marginal_risk"])
    p_correct = float(summary["p_correct"])
    threshold = int(summary["threshold"])
    payload = {
        "marginal_posterior": marginal,
        "marginal_risk": marginal_risk if math.isfinite(marginal_risk) else None,  # 1/p > max
        "p_correct": p_correct,
        "threshold": threshold,
        "accuracy": accuracy,
        "worst_case_accuracy": worst,
    }
    lines = [
        f"single level: rho1 = {fmt(rho1)}, p = {fmt(args.p)}, known m = {args.known}, "
        f"truth x1 = m+1",
        f"  marginal posterior P[X1 = x1 | x1]   = {fmt(marginal)}",
        f"  marginal risk R                      = {fmt(marginal_risk)}",
        f"  decision threshold (decide m+1 iff x1* >= threshold) = {threshold}",
        f"  P[correct decision]                  = {fmt(p_correct)}",
        f"  accuracy, p-weighted (Bayes rule)    = {fmt(accuracy)}",
        f"  worst-case accuracy (any test, f-DP) = {fmt(worst)}",
    ]
    return payload, lines


def _accuracies(bayes: float | None, rhos: list[float], p: float) -> tuple:
    """``(accuracy, worst_case_accuracy)``: the Bayes rule's and the best test's (exact)."""
    from dprisk.inference.privacy.worst_case import worst_case_accuracy

    return bayes, worst_case_accuracy(rhos, p).accuracy


def _two_level(args, method: str, seed: int | None) -> tuple[dict, list[str]]:
    from dprisk.inference.privacy.worst_case import bayes_accuracy_two_level
    from dprisk.inference.studies.p_correct import marginal_summary

    rho1, rho2 = common.scenario_rhos(args, "two-level", rho1="a rho > 0 or census:LEVEL",
                                      d="an integer >= 1",
                                      x2="the true block-group count, an integer >= 0")
    with (common.elapsed_progress(args, "exact two-level study") if method == "exact"
          else contextlib.nullcontext()):
        payload = marginal_summary(
            rho1=rho1, rho2=rho2, d=args.d, x2=args.x2, x1=args.x1, p=args.p,
            known=args.known, prior=args.prior, method=method, datasets=args.datasets,
            draws=args.draws, random_seed=seed,
            progress=method == "mc" and common.show_progress(args),
        )
        if method == "exact":  # the pair of truths (m + 1, x2) and (m, x2 - 1)
            payload["accuracy"] = bayes_accuracy_two_level(
                x2=args.x2, x1=args.x1, rho1=rho1, rho2=rho2, d=args.d, p=args.p,
                known=args.known, prior=args.prior)
        payload["worst_case_accuracy"] = _accuracies(None, [rho1, rho2], args.p)[1]
    truth = f"x1 = {args.x1 if args.x1 is not None else args.known + 1}, x2 = {args.x2}"
    title = (f"two levels: rho1 = {fmt(rho1)}, rho2 = {fmt(rho2)}, d = {args.d}, {truth}, "
             f"p = {fmt(args.p)}, prior {args.prior}, method {method}")
    # the seed line is added once, by common.run_form
    shown = {key: value for key, value in payload.items() if key != "seed"}
    return payload, common.payload_lines(title, shown)


def _unique_levels(args, method: str, seed: None) -> tuple[dict, list[str]]:
    from dprisk.cli.levels import parse_rhos
    from dprisk.inference.nested.unique_levels import unique_levels_summary

    rhos = parse_rhos(args.rhos)
    from dprisk.inference.privacy.worst_case import bayes_accuracy_levels

    payload = unique_levels_summary(rhos, p=args.p, known=args.known)
    payload["accuracy"], payload["worst_case_accuracy"] = _accuracies(
        bayes_accuracy_levels(rhos, args.p, args.known), list(rhos), args.p)
    shown = ", ".join(fmt(r) for r in rhos)
    return payload, common.payload_lines(f"target unique at {len(rhos)} levels: rhos = {shown}",
                                         payload)
