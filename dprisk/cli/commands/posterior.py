"""``dprisk posterior``: P[X1 = m+1 | release] and the risk R' of one release.

Three forms: single level (``--rho1 --x1-star``), two levels (``--rho2`` given: also ``--d
--x2-star --y1-star``) and nested levels (``--rhos --siblings --stars``). An option of
another form, or a sampling option (``--draws``, ``--chains``, ``--seed``) with ``--method
exact``, is refused. A sampled answer reports its seed (drawn when ``--seed`` is not given).
``--tune N`` (``pm.sample``'s ``tune``: tuning iterations per chain, discarded; default 1000)
applies to the PyMC methods only (``pymc``, and ``pymc-gibbs`` in the two-level form): the
exact Gibbs samplers keep their own burn-in (1000 sweeps per chain in the two-level form, 100
in the nested form), so ``--tune`` with ``--method gibbs`` or ``exact`` is refused.

A sampled answer (``--method gibbs|pymc``, and ``pymc-gibbs`` in the two-level form) also
reports the convergence of every unknown (``X1``, ``X2``, …, ``Xh``): JSON key
``diagnostics`` = ``{variable: {r_hat, ess_bulk, ess_tail, mcse_mean}}`` and ``verdict`` =
``{converged, reason}`` (:mod:`dprisk.inference.mcmc.convergence`); ``--save-draws FILE.nc``
and ``--plots DIR`` write the draws and their trace and rank plots
(:mod:`dprisk.cli.draws_output`).
"""

from __future__ import annotations

from dprisk.cli import common, draws_output, unknown_others
from dprisk.cli.common import fmt, integer

__all__ = ["DEFAULTS", "FORMS", "add_parser", "run"]

_SAMPLING = ("gibbs", "pymc")
_SAMPLED = frozenset({"draws", "chains", "seed"}) | draws_output.OPTIONS
_METHODS = ("exact", *_SAMPLING)
_TWO_LEVEL_SAMPLING = (*_SAMPLING, "pymc-gibbs")
#: The methods that run ``pm.sample`` (``--tune`` applies to them only).
_PYMC = ("pymc", "pymc-gibbs")
SINGLE = common.Form("single-level", "--rho1 without --rho2",
                     frozenset({"rho1", "x1_star", "method"}) | unknown_others.OPTIONS,
                     usage=f"--rho1 --x1-star [--p] [--known] {unknown_others.USAGE}, exact")
TWO_LEVEL = common.Form(
    "two-level", "--rho2 given",
    frozenset({"rho1", "rho2", "d", "x1_star", "x2_star", "y1_star", "prior", "method"}),
    usage="--rho1 --rho2 --d --x1-star --x2-star --y1-star [--p] [--known] [--prior] "
    "[--method]",
    selected_by="rho2", methods=(*_METHODS, "pymc-gibbs"), sampling=_TWO_LEVEL_SAMPLING,
    sampled=_SAMPLED, method_options=(("tune", _PYMC),),
)
NESTED = common.Form("nested-levels", "--rhos given",
                     frozenset({"rhos", "siblings", "stars", "prior", "method"}),
                     usage="--rhos --siblings --stars [--p] [--known] [--prior] [--method]",
                     selected_by="rhos", methods=_METHODS, sampling=_SAMPLING, sampled=_SAMPLED,
                     method_options=(("tune", ("pymc",)),))
#: The forms of ``dprisk posterior``.
FORMS = [SINGLE, TWO_LEVEL, NESTED]
#: Defaults applied after the checks.
DEFAULTS = {"p": 0.5, "known": 0, "prior": "improper", "draws": 5000, "chains": 4,
            "tune": 1000}

#: ``dprisk posterior --help``: the summary line and the description of the forms.
HELP = common.SUBCOMMAND_HELP["posterior"]
DESCRIPTION = common.describe(
    FORMS, "--draws, --chains, --seed, --save-draws and --plots apply to --method "
    "gibbs|pymc|pymc-gibbs only (pymc-gibbs: two levels), --tune to --method pymc|pymc-gibbs "
    "only; a sampled answer reports r_hat, "
    "ess_bulk, ess_tail and mcse_mean of every unknown and a convergence verdict.")


#: The limits of ``--rhos`` (the tables' own: ``NESTED_RHO_MAX`` of the nested-levels
#: tables, ``MAX_PRECISION`` of the two-level ones, which answer ``h = 2``), as help and
#: refusals state them.
NESTED_RHO_MAX = 1e15
TWO_LEVEL_PRECISION_MAX = 1e6
NESTED_RHOS_RANGE = (f"each 0 < rho <= {NESTED_RHO_MAX:g} (with two levels, h = 2: rho_2 + "
                     f"rho_1/d_2 <= {TWO_LEVEL_PRECISION_MAX:g})")


def add_parser(subs) -> None:
    """Register ``dprisk posterior`` with every option and its default."""
    post = subs.add_parser("posterior", help=HELP, description=DESCRIPTION)
    common.add_scenario(post, p=DEFAULTS["p"], known=DEFAULTS["known"])
    post.add_argument("--x1-star", type=integer, default=None, help="released block count x1*")
    unknown_others.add_options(post)
    hier = post.add_argument_group("two levels (when --rho2 is given)")
    common.add_two_level(hier)
    hier.add_argument("--x2-star", type=integer, default=None, help="released block-group x2*")
    hier.add_argument("--y1-star", type=integer, default=None, help="released other-blocks y1*")
    multi = post.add_argument_group("nested levels (when --rhos is given)")
    multi.add_argument("--rhos", default=None, help=f"rho_1,...,rho_h, {NESTED_RHOS_RANGE} "
                       "(census:LEVEL allowed), or census:N for the bottom N Census levels "
                       "(2 <= N <= 6)")
    multi.add_argument("--siblings", default=None, help="d_2,...,d_h sibling units per level")
    multi.add_argument("--stars", default=None, help="x1*,...,xh*,y1*,...,y(h-1)*")
    model = post.add_argument_group("two or nested levels")
    common.add_model(model, methods="exact | gibbs | pymc | pymc-gibbs (two levels: PyMC with "
                     "the exact Gibbs step)", prior=DEFAULTS["prior"],
                     draws=DEFAULTS["draws"], sampled="gibbs/pymc")
    model.add_argument("--chains", type=integer, default=None, help=common.with_default(
        "number of chains (gibbs/pymc only)", DEFAULTS["chains"]))
    model.add_argument("--tune", type=integer, default=None, help=common.with_default(
        "PyMC's tuning iterations per chain, discarded (pm.sample's tune; pymc/pymc-gibbs "
        "only), 0 <= tune, chains x (tune + draws) within the work limit DPRISK_WORK_LIMIT",
        DEFAULTS["tune"]))
    draws_output.add_options(model)
    common.add_json(post)
    post.set_defaults(func=run)


def run(args) -> int:
    """Check the options against the chosen form, compute, print."""
    return common.run_form(args, "posterior", FORMS, DEFAULTS,
                           {SINGLE: _single_level, TWO_LEVEL: _two_level, NESTED: _nested_levels})


def _check_p(args) -> None:
    """Refuse ``--p`` below :data:`dprisk.models.scenario.P_MIN` in every form.

    The two-level and nested scenarios refuse it themselves; the single level's API answers
    below it (its posterior to 1e-9 at 1e-310), but R' = posterior / p, up to 1 / p, can overflow to
    infinity in the command's output. One line naming ``p`` and its allowed range.
    """
    from dprisk.models.scenario import P_MIN

    if not args.p >= P_MIN:  # NaN too; p >= 1 is refused by the models' own check
        raise ValueError(f"p must be at least {P_MIN:g} for dprisk posterior (allowed range: "
                         f"{P_MIN:g} <= p < 1; below it the posterior loses its digits and "
                         f"R' = posterior / p can overflow), got {args.p!r}")


def _single_level(args, method: str, seed: None) -> tuple[dict, list[str]]:
    from dprisk.inference.single_level import closed_form as single_level

    _check_p(args)

    (rho1,) = common.scenario_rhos(args, "single-level", rho1="a rho > 0 or census:LEVEL",
                                   x1_star="the released block count, an integer")
    if unknown_others.requested(args):
        return unknown_others.posterior(args, rho1)
    summary = single_level.release_summary(args.x1_star, rho1, args.p, args.known)
    posterior, risk = float(summary["posterior"]), float(summary["risk"])
    payload = {"posterior": posterior, "risk": risk}
    lines = [
        f"single level: rho1 = {fmt(rho1)}, x1* = {args.x1_star}, p = {fmt(args.p)}, "
        f"known m = {args.known}",
        f"  P[X1 = m+1 | x1*] = {fmt(posterior)}",
        f"  R'(x1*)           = {fmt(risk)}",
    ]
    return payload, lines


def _two_level(args, method: str, seed: int | None) -> tuple[dict, list[str]]:
    from dprisk.inference.two_level.sampling import summarize_posterior

    _check_p(args)
    rho1, rho2 = common.scenario_rhos(
        args, "two-level", rho1="a rho > 0 or census:LEVEL", d="an integer >= 1",
        x1_star="an integer", x2_star="an integer", y1_star="an integer")
    with draws_output.holding(args) as outputs:  # checked, locked: before any sampling
        summary = summarize_posterior(
            args.x1_star, args.x2_star, args.y1_star, rho1=rho1, rho2=rho2, d=args.d,
            p=args.p, known=args.known, prior=args.prior, method=method, draws=args.draws,
            chains=args.chains, random_seed=seed, progressbar=common.show_progress(args),
            **_tune(args, method),
        )
        payload = {**summary.two_level_json(),
                   **draws_output.write(args, summary, seed, outputs)}
    title = (f"two levels: rho1 = {fmt(rho1)}, rho2 = {fmt(rho2)}, d = {args.d}, "
             f"D = ({args.x1_star}, {args.x2_star}, {args.y1_star}), p = {fmt(args.p)}, "
             f"known m = {args.known}, prior {args.prior}")
    return payload, _lines(title, payload)


def _nested_levels(args, method: str, seed: int | None) -> tuple[dict, list[str]]:
    from dprisk.cli.levels import check_two_levels, parse_rhos, parse_siblings, parse_stars
    from dprisk.inference.nested.posterior import summarize_posterior

    _check_p(args)
    common.require(args, "nested-levels", siblings="d_2,...,d_h",
                   stars="x1*,...,xh*,y1*,...")
    rhos = parse_rhos(args.rhos, min_levels=2, max_rho=NESTED_RHO_MAX, limit=NESTED_RHOS_RANGE)
    if len(rhos) < 2:
        raise ValueError(f"rhos must have at least 2 entries for the nested-levels form "
                         f"(h >= 2 levels), got {args.rhos!r}")
    siblings = parse_siblings(args.siblings, len(rhos))
    check_two_levels(rhos, siblings, TWO_LEVEL_PRECISION_MAX, NESTED_RHOS_RANGE)
    x_stars, y_stars = parse_stars(args.stars, len(rhos))
    with draws_output.holding(args) as outputs:  # checked, locked: before any sampling
        summary = summarize_posterior(
            rhos=rhos, siblings=siblings, x_stars=x_stars, y_stars=y_stars, p=args.p,
            known=args.known, prior=args.prior, method=method, draws=args.draws,
            chains=args.chains, random_seed=seed, progressbar=common.show_progress(args),
            **_tune(args, method),
        )
        payload = {**summary.nested_json(len(rhos)),
                   **draws_output.write(args, summary, seed, outputs)}
    title = f"{len(rhos)} nested levels: rhos = {args.rhos}, siblings = {args.siblings}"
    return payload, _lines(title, payload)


def _tune(args, method: str) -> dict:
    """``{"tune": --tune}`` for a PyMC method; nothing for the others (their own burn-in)."""
    return {"tune": args.tune} if method in _PYMC else {}


def _lines(title: str, payload: dict) -> list[str]:
    """The summary lines; the diagnostics as a table (one row per unknown) and the verdict."""
    plain = {k: v for k, v in payload.items() if k not in ("diagnostics", "verdict")}
    lines = common.payload_lines(title, plain)
    if "diagnostics" not in payload:
        return lines
    lines.append(f"  {'diagnostics':<24} {'r_hat':>9} {'ess_bulk':>10} {'ess_tail':>10} "
                 f"{'mcse_mean':>11}")
    for name, row in payload["diagnostics"].items():
        shown = ["undefined" if row[key] is None else fmt(row[key])
                 for key in ("r_hat", "ess_bulk", "ess_tail", "mcse_mean")]
        lines.append(f"    {name:<22} {shown[0]:>9} {shown[1]:>10} {shown[2]:>10} "
                     f"{shown[3]:>11}")
    verdict = payload["verdict"]
    word = "converged" if verdict["converged"] else "NOT converged"
    lines.append(f"  {'verdict':<24} {word}: {verdict['reason']}")
    return lines
