"""``dprisk census``: the 2020 Census rho allocation (paper Table 2) and its epsilon."""

from __future__ import annotations

from dprisk.cli.common import EXIT_OK, add_json, add_subcommand, emit

__all__ = ["add_parser", "run"]


def add_parser(subs) -> None:
    """Register ``dprisk census``."""
    census = add_subcommand(subs, "census", run, flags={
        "--strategy": "also list every query of the 2020 persons strategy with its fraction "
                      "of the level's rho and its rho (JSON key queries)"})
    add_json(census)


def run(args) -> int:
    """Print the allocation: total rho, delta, epsilon (three ways) and each level's rho."""
    from dprisk.inference.privacy.accounting import (
        census_epsilon_pld,
        census_epsilon_pld_bracket,
        epsilon_cks,
    )
    from dprisk.inference.privacy.worst_case import census_worst_case
    from dprisk.models.census.allocation import CENSUS_DELTA, CENSUS_LEVELS, CENSUS_RHO_TOTAL
    from dprisk.models.census.strategy import STRATEGY_NAME, strategy_queries
    from dprisk.models.mechanism.conversions import zcdp_to_dp

    epsilon = float(zcdp_to_dp(float(CENSUS_RHO_TOTAL), CENSUS_DELTA))
    tighter = epsilon_cks(float(CENSUS_RHO_TOTAL), CENSUS_DELTA)
    composed = census_epsilon_pld(CENSUS_RHO_TOTAL, CENSUS_DELTA)
    lower, upper = census_epsilon_pld_bracket(CENSUS_RHO_TOTAL, CENSUS_DELTA)
    worst = census_worst_case(CENSUS_RHO_TOTAL, p=0.5)
    detailed = census_worst_case(CENSUS_RHO_TOTAL, p=0.5, queries="detailed")
    levels = [{"level": level.name, "rho": level.rho} for level in CENSUS_LEVELS]
    payload = {
        "rho_total": float(CENSUS_RHO_TOTAL),
        "delta": CENSUS_DELTA,
        "epsilon": epsilon,
        "levels": levels,
        "epsilon_cks": tighter,
        "epsilon_pld": composed,
        "epsilon_pld_lower": lower,
        "epsilon_pld_upper": upper,
        "worst_case_accuracy": worst.accuracy,
        "worst_case_accuracy_lower": worst.lower,
        "worst_case_accuracy_upper": worst.upper,
        "worst_case_accuracy_detailed": detailed.accuracy,
    }
    lines = [
        "2020 Census GVHR query, zCDP allocation (paper Table 2)",
        f"  total rho = {float(CENSUS_RHO_TOTAL)}, delta = {CENSUS_DELTA:g}, "
        f"epsilon = {epsilon:.4f} (Bun-Steinke, the paper's Theorem 1)",
        f"  epsilon = {tighter:.4f} (Canonne-Kamath-Steinke conversion, as the Census states "
        "it)",
        f"  epsilon = {composed:.4f} (privacy-loss distributions of the 65 discrete Gaussian "
        "queries of the persons strategy, composed; pessimistic at interval 1e-4: an upper "
        "bound)",
        f"  epsilon in [{lower:.4f}, {upper:.4f}] (the same composition, optimistic and "
        "pessimistic PLDs at interval 2e-5; neighbours: add or remove one person)",
        f"  worst-case accuracy at p = 1/2, any adversary, all 65 queries = {worst.accuracy:.6f}"
        f" (PLD bracket [{worst.lower:.6f}, {worst.upper:.6f}]); block and block-group "
        f"detailed queries alone = {detailed.accuracy:.6f} (exact)",
        f"  {'level':<12} {'geolevel share':>15} {'query share':>12} {'rho':>10}",
    ]
    for level in CENSUS_LEVELS:
        lines.append(
            f"  {level.name:<12} {level.geolevel_share!s:>15} {level.query_share!s:>12} "
            f"{level.rho:>10.5f}"
        )
    if args.strategy:
        queries = strategy_queries(CENSUS_RHO_TOTAL)
        payload["queries"] = [{"level": q.level, "query": q.query, "fraction": float(q.fraction),
                               "rho": q.rho} for q in queries]
        lines.append(f"  persons strategy {STRATEGY_NAME}: {len(queries)} queries")
        lines.append(f"  {'level':<12} {'query':<32} {'fraction':>11} {'rho':>10}")
        lines.extend(f"  {q.level:<12} {q.query:<32} {q.fraction!s:>11} {q.rho:>10.5f}"
                     for q in queries)
    emit(args, payload, lines)
    return EXIT_OK
