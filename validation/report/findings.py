"""The report's headline findings: where the paper's printed numbers differ from the computed ones.

Each finding is one sentence whose numbers are read from the records (their ``published`` and
``computed`` values), so the summary cannot drift from the table it summarises. A finding whose
records are absent (a partial run, a test study) is left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from dprisk.validation.paper.record_annotations import printed_name

__all__ = ["Finding", "findings"]


@dataclass(frozen=True)
class Finding:
    """One headline: a short title, one sentence with the key numbers, the evidence record."""

    title: str
    text: str
    evidence_id: str


def _values(by_id: dict, ids: list[str], key: str) -> list[float] | None:
    if not all(i in by_id for i in ids):
        return None
    return [by_id[i][key] for i in ids]


def _join(values, fmt: str) -> str:
    return ", ".join(format(v, fmt) for v in values)


def _table1_mass(by_id: dict) -> Finding | None:
    ids = [f"table1/x1_star={k}/mass" for k in range(1, 6)]
    printed, computed = _values(by_id, ids, "published"), _values(by_id, ids, "computed")
    if printed is None:
        return None
    shifted = sum(round(computed[k + 1], 3) == printed[k] for k in range(len(ids) - 1))
    return Finding(
        f"{printed_name(by_id[ids[0]]['source'])}: the Mass column is shifted by a row",
        f"for x1* = 1…5 the paper prints {_join(printed, '.3f')}, but the caption's "
        f"P[X1* = x1* | X1 = 1] is {_join(computed, '.3f')}; {shifted} of the first "
        f"{len(ids) - 1} printed values equal the next row's value (= P[X1* = x1* | X1 = 0]).",
        ids[0])


def _variant(by_id: dict) -> Finding | None:
    key = "table4/k1=1/posterior"
    if key not in by_id or not by_id[key]["mcse"]:
        return None
    table4 = by_id[key]
    numbers = sorted({int(printed_name(r["source"]).split()[-1]) for r in by_id.values()
                      if r["id"].split("/")[0] in {"table4", "table5"}
                      and printed_name(r["source"]).startswith("Table ")})
    tables = (f"Tables {numbers[0]}–{numbers[-1]}" if len(numbers) > 1
              else f"Table {numbers[0]}")
    z = (table4["published"] - table4["computed"]) / table4["mcse"]
    text = (f"{printed_name(table4['source'])} prints P[X1 = 1 | D] = "
            f"{table4['published']:.3f}; exact enumeration gives {table4['computed']:.4f} "
            f"({z:+.1f} Monte Carlo standard errors away)")
    extras = [("fig4/gain", "Figure 4's gain", "{:.2%}"),
              ("s4/uniform/p_correct", "S4's uniform-prior P[correct]", "{:.3f}")]
    for rid, label, fmt in extras:
        if rid in by_id:
            text += (f"; {label} {fmt.format(by_id[rid]['published'])} vs "
                     f"{fmt.format(by_id[rid]['computed'])} exact")
    # the published numbers compared with that sampler (their explanations give its value):
    # not the claims (fig4/region_mass) nor the numbers of other findings (fig5/caption/rho2)
    affected = [r for r in by_id.values()
                if r["id"].split("/")[0] in {"table4", "table5", "fig4", "fig5", "fig6", "s4"}
                and r["status"] in ("differs", "within-mc-error")
                and "variant" in r["explanation"].lower()]
    text += (f". The published values are reproduced by a Gibbs sampler that drops the support "
             f"constraint k1 ≤ k2 ({len(affected)} records of {tables}, Figures 4–6 and "
             "supplement S4 compared with it are not a match).")
    return Finding(f"{tables}, Figures 4–6, 10–11: a sampler without the k1 ≤ k2 constraint",
                   text, key)


def _rounded(by_id: dict, key: str, title: str, what: str, digits: int) -> Finding | None:
    if key not in by_id:
        return None
    r = by_id[key]
    return Finding(title,
                   f"{what} is {r['computed']:.{digits + 3}f}, which rounds to "
                   f"{r['computed']:.{digits}f}; the paper prints {r['published']:.{digits}f}.",
                   key)


def _epsilon(by_id: dict) -> Finding | None:
    """ε truncated, with the tighter values of the accounting section when present."""
    finding = _rounded(by_id, "text2.3/epsilon", "ε truncated, and looser than it need be",
                       "the privacy-loss ε of the 2020 Census release", 2)
    ids = ["accounting/epsilon_census", "accounting/epsilon_pld"]
    if finding is None or any(key not in by_id for key in ids):
        return finding
    census, pld = (by_id[key]["computed"] for key in ids)
    return Finding(finding.title,
                   finding.text + f" That is the loosest conversion (Theorem 1): the "
                   f"Census's own conversion (Canonne–Kamath–Steinke) at the production ρ gives "
                   f"{census:.2f}, and composing the privacy-loss distributions of the 65 "
                   f"queries of the 2020 persons strategy gives {pld:.2f}.",
                   finding.evidence_id)


def _s6_bound(by_id: dict) -> Finding | None:
    ids = ["s6/fig10_left/bounded_by_no_postprocessing",
           "s6/fig10_right/bounded_by_no_postprocessing"]
    excess = _values(by_id, ids, "computed")
    if excess is None:
        return None
    text = (f"the supplement says post-processing keeps the marginal posterior below its "
            f"single-level value, but the post-processed value exceeds it by up to "
            f"{max(excess):.2g}")
    bound = "s6/fig10_left/data_processing_bound"
    if bound in by_id:
        text += (f"; the data-processing bound (x2 known) holds (largest excess "
                 f"{by_id[bound]['computed']:.2g})")
    return Finding("S6 (Figure 12): the single-level value is not a bound", text + ".", ids[0])


def _risk_range(by_id: dict) -> Finding | None:
    ids = ["text4.2/table2_risk_range/min", "text4.2/table2_risk_range/max"]
    printed, computed = _values(by_id, ids, "published"), _values(by_id, ids, "computed")
    if printed is None:
        return None
    return Finding(
        "Section 4.2: the text's risk range",
        f"the text gives R from {printed[0]:.2f} to {printed[1]:.2f}; over the five priors R "
        f"runs from {computed[0]:.4f} to {computed[1]:.4f} (printed {computed[1]:.2f} in the "
        "table: the text leaves out the p = 1/864 adversary).",
        ids[1])


def findings(records: list[dict]) -> list[Finding]:
    """The headline findings present in ``records``, in the page's order."""
    by_id = {r["id"]: r for r in records}
    candidates = [
        _table1_mass(by_id),
        _variant(by_id),
        _epsilon(by_id),
        _rounded(by_id, "fig5/caption/rho2", "ρ2 rounded twice",
                 "the block-group ρ2 of Figures 5–6", 3),
        _s6_bound(by_id),
        _risk_range(by_id),
    ]
    return [f for f in candidates if f is not None]
