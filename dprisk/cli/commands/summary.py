"""``dprisk summary``: the decision summary of an allocation (five priors, epsilon three ways).

``--census`` (the 2020 allocation, also the default: ``dprisk summary`` alone) or
``--rho1 R [--rho2 R2]``; a rho whose windows, memory or work the sizing step
(:mod:`dprisk.inference.privacy.decision_sizing`) refuses exits 2 naming ``--rho1`` or
``--rho2``, before any array is built. Computed by
:func:`dprisk.inference.privacy.decision_summary.decision_summary`; this module only parses
and formats. After the paper's rows, the block's answers at the noise the DAS drew (JSON key
``das_noise``: :mod:`dprisk.inference.privacy.das_noise`).
"""

from __future__ import annotations

from dprisk.cli.common import EXIT_OK, add_json, add_subcommand, emit

__all__ = ["add_parser", "run"]


def add_parser(subs) -> None:
    """Register ``dprisk summary``."""
    sub = add_subcommand(subs, "summary", run, flags={
        "--census": "the 2020 allocation, the default without --rho1 (block and block-group "
                    "GVHR queries; epsilon of the global rho 2.56 and of all 65 queries)"})
    sub.add_argument("--rho1", default=None,
                     help="the block's rho (> 0 or census:LEVEL; the answers at the DAS's noise "
                     "need about rho1 >= 2.3e-7, the CKS epsilon rho1 + rho2 <= about 2.3e5)")
    sub.add_argument("--rho2", default=None,
                     help="the block group's rho (> 0 or census:LEVEL), optional")
    add_json(sub)


def _value(value) -> str:
    return "-" if value is None else f"{value:.4f}"


def _das_noise_lines(das) -> list[str]:
    """The block's answers at the DAS's noise (JSON key ``das_noise``), beside the paper's."""
    from dprisk.models.mechanism.discrete_gaussian import DEFAULT_TAIL_MASS

    where = ("the noise the 2020 DAS drew the block detailed query with" if das.census
             else "the DAS's reading of rho1 (replace-one: variance 1/rho1)")
    lines = [
        f"  At {where}: sigma^2 = {das.sigma_sq:.5g} a cell (pmf exp(-x^2/(2 sigma^2))); the "
        f"rows above: the paper's DG(0, 1/(2 rho)), rho = {das.rho_paper:.5g}",
        f"  {'prior p':>9} {'two cells (which one holds the target)':>38}   "
        f"{'one cell (did the target respond)':>33}",
        f"  {'':>9} {'posterior':>10} {'risk R':>8} {'P[correct]':>11} {'accuracy':>9} "
        f"{'posterior':>10} {'risk R':>8} {'P[correct]':>11}",
    ]
    for row in das.rows:
        two, one = row.two_cell, row.one_cell
        # the two-cell sums are exact to 2 * DEFAULT_TAIL_MASS absolute: no digits below that
        floor = 2 * DEFAULT_TAIL_MASS
        two_pc = f"<{floor:.0e}" if two.p_correct < floor else f"{two.p_correct:.4g}"
        lines.append(f"  {row.p:>9.5g} {two.marginal_posterior:>10.4f} "
                     f"{two.marginal_risk:>8.3f} {two_pc:>11} {two.accuracy:>9.4f} "
                     f"{one.marginal_posterior:>10.4f} {one.marginal_risk:>8.3f} "
                     f"{one.p_correct:>11.4g}")
    lines += [f"  {sentence}" for sentence in das.agreement()]
    return lines


def _compute(args):
    """The decision summary of the options (2020 by default); refusals name the option."""
    from dprisk.inference.privacy.decision_summary import decision_summary
    from dprisk.models.census.allocation import parse_rho

    if args.census and args.rho1 is not None:
        raise ValueError("--census and --rho1 are alternatives: give --census (the 2020 "
                         "allocation, the default) or --rho1 R [--rho2 R2]")
    if args.rho1 is None and args.rho2 is not None:
        raise ValueError("--rho2 needs --rho1 R (the block's rho); --census (the default) "
                         "takes the 2020 block group's rho2")
    if args.rho1 is None:
        return decision_summary(census=True)
    rho1 = parse_rho(args.rho1, "--rho1")
    rho2 = None if args.rho2 is None else parse_rho(args.rho2, "--rho2")
    # a refusal "rho1: …" or "rho1 and rho2: …" (the sizing step) names the options as typed
    # through the command line's one renaming (dprisk.cli.main.naming_given_option)
    return decision_summary(rho1=rho1, rho2=rho2)


def run(args) -> int:
    """Check the options, compute the summary, print."""
    result = _compute(args)
    payload = result.to_dict()
    where = "the 2020 Census allocation" if result.census else "this allocation"
    rho2 = "-" if result.rho2 is None else f"{result.rho2:.5g}"
    lines = [
        f"Decision summary at {where}: rho1 = {result.rho1:.5g}, rho2 = {rho2}; unique target",
        f"  {'prior p':>9} {'posterior':>10} {'posterior':>10} {'risk R':>8} "
        f"{'accuracy':>9} {'worst-case':>11}",
        f"  {'':>9} {'(block)':>10} {'(+ group)':>10} {'(block)':>8} {'(Bayes)':>9} "
        f"{'(any test)':>11}",
    ]
    for row in result.rows:
        lines.append(f"  {row.p:>9.5g} {row.posterior_block:>10.4f} "
                     f"{_value(row.posterior_block_group):>10} {row.marginal_risk:>8.3f} "
                     f"{row.accuracy:>9.4f} {row.worst_case_accuracy:>11.4f}")
    if result.worst_case_accuracy_all is not None:
        lines.append(f"  worst-case accuracy at p = 1/2 over all 65 queries of the strategy: "
                     f"{result.worst_case_accuracy_all:.4f}")
    pld = (f"[{result.epsilon_pld_lower:.4f}, {result.epsilon_pld_upper:.4f}] (PLD bracket, "
           "add or remove one person)" if result.epsilon_pld_upper is not None else
           "PLD bracket not resolved (dp-accounting's PLD needs delta >= 1e-20 and epsilon + "
           "log(1/delta) < 700)")
    lines += [
        f"  epsilon at delta = {result.delta:g} (rho = {result.rho_total:.5g}): "
        f"{result.epsilon_bun_steinke:.4f} (Bun-Steinke, Theorem 1), "
        f"{result.epsilon_cks:.4f} (CKS), {pld}",
    ]
    if result.das_noise is not None:
        lines += _das_noise_lines(result.das_noise)
    emit(args, payload, lines)
    return EXIT_OK
