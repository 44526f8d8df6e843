"""What ``results.json`` adds to each study record: the paper's numbering and claims as claims.

A study's record has exactly :data:`~dprisk.validation.records.RECORD_KEYS`. The report adds
:data:`ANNOTATION_KEYS` (added, never changing a study's fields; ``results.json`` rows have
:data:`RESULTS_KEYS`):

``printed_as``
    The table, figure or section as printed in the paper (``"Table 4"`` for the record
    ``table1/...`` whose LaTeX label is ``tab:tab1``).
``latex_label``
    The paper's LaTeX label (``"tab:tab1"``), kept for traceability, or None.
``claim``
    None for a published number. For a qualitative statement of the paper (a bound holds,
    "R ≈ 1 for ρ1 < 0.25") ``{"statement", "relation", "holds"}``: the statement, the
    relation the measured quantity (the record's ``computed``) is checked against (``"≈ 1"``,
    ``"< 0.01"``, ``"≤ 0"``), and whether it holds (the record's status is not ``differs``).
"""

from __future__ import annotations

import re

from dprisk.validation import published

__all__ = ["ANNOTATION_KEYS", "RESULTS_KEYS", "annotate", "printed_name"]

ANNOTATION_KEYS = ("printed_as", "latex_label", "claim")
#: Keys of every row of ``results.json``.
RESULTS_KEYS = ("id", "source", "published", "computed", "mcse", "status", "explanation",
                *ANNOTATION_KEYS)

#: Claims of supplement S6 about Figure 10 (their records carry the measured quantity).
_S6_CLAIMS = {
    "s6/fig10_left/bounded_by_no_postprocessing":
        ("post-processing keeps the marginal posterior below its single-level value "
         "(measured: largest excess over it)", "≤ 0"),
    "s6/fig10_left/data_processing_bound":
        ("post-processing keeps the marginal posterior below its value before post-processing "
         "(measured: largest excess)", "≤ 0"),
    "s6/fig10_left/increasing_in_x2_tilde":
        ("larger x̃2 gives risks closer to the bound (measured: smallest step in x̃2)", "≥ 0"),
    "s6/fig10_right/bounded_by_no_postprocessing":
        ("the same bound over ρ1 (measured: largest excess over the single-level value)", "≤ 0"),
    "s6/fig10_right/data_processing_bound":
        ("the data-processing bound over ρ1 (measured: largest excess)", "≤ 0"),
    "s6/fig10_right/ordered_in_x2_tilde":
        ("'a similar effect': the lines are ordered in x̃2 (measured: smallest gap)", "≥ 0"),
}


def printed_name(source: str) -> str:
    """A table's name as printed in the paper, from a record's source.

    ``"Table 1 (tab:tab1; printed as Table 4)"`` -> ``"Table 4"``; a source without a
    ``printed as`` note names the table, figure or section as printed already.
    """
    printed = re.search(r"printed as (Table \d+)", source)
    if printed:
        return printed.group(1)
    named = re.match(r"Table \d+|Figures? \d+[a-z]?(?:, \d+[a-z]?)*|Section [\d.]*\d|"
                     r"Supplement S\d(?:\.\d)?", source)
    return named.group(0) if named else source


def _claim(record: dict) -> dict | None:
    holds = record["status"] != "differs"
    if record["id"] in _S6_CLAIMS:
        statement, relation = _S6_CLAIMS[record["id"]]
        return {"statement": statement, "relation": relation, "holds": holds}
    try:
        value = published.get(record["id"])
    except KeyError:
        return None
    if value.kind not in ("claim", "bound"):
        return None
    return {"statement": value.quantity, "relation": f"{value.relation} {value.printed}",
            "holds": holds}


def annotate(record: dict) -> dict:
    """``record`` with :data:`ANNOTATION_KEYS` added (a new dict; the study fields unchanged)."""
    label = re.search(r"\b(tab|fig):[\w-]+", record["source"])
    return {**record, "printed_as": printed_name(record["source"]),
            "latex_label": label.group(0) if label else None, "claim": _claim(record)}
