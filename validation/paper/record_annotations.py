"""What ``results.json`` adds to each study record: the paper's numbering and claims as claims.

A study's record has exactly :data:`~dprisk.validation.paper.records.RECORD_KEYS`. The report adds
:data:`ANNOTATION_KEYS` (added, never changing a study's fields; ``results.json`` rows have
:data:`RESULTS_KEYS`):

``printed_as``
    The table, figure or section as printed in the paper, read from the record's ``source``
    (``"Table 4"`` for the record ``table1/...``).
``latex_label``
    The LaTeX label of that table or figure (``"tab:tab1"``), kept for traceability only here,
    or None for a section or the text (:func:`dprisk.validation.paper.published.latex_label`).
``claim``
    None for a published number. For a qualitative statement of the paper (a bound holds,
    "R ≈ 1 for ρ1 < 0.25"; :mod:`dprisk.validation.paper.claims`) ``{"statement", "measured",
    "relation", "holds"}``: the statement, what the record's ``computed`` measures, the
    relation it is checked against (``"≈ 1 (within 10 %, our tolerance)"``, ``"< 0.01"``,
    ``"≤ 0 (to 1e-12)"``) and whether it holds (the record's status ``holds``).
"""

from __future__ import annotations

import re

from dprisk.validation.paper import claims, published

__all__ = ["ANNOTATION_KEYS", "RESULTS_KEYS", "annotate", "printed_name"]

ANNOTATION_KEYS = ("printed_as", "latex_label", "claim")
#: Keys of every row of ``results.json``.
RESULTS_KEYS = ("id", "source", "published", "computed", "mcse", "status", "explanation",
                *ANNOTATION_KEYS)


def printed_name(source: str) -> str:
    """The table, figure or section a record's ``source`` names first, as printed.

    ``"Table 2 (the Census ρ allocation)"`` -> ``"Table 2"``; ``"Supplement S6 text
    (Figure 12)"`` -> ``"Supplement S6"``; a source naming none of these is returned whole.
    """
    named = re.match(r"Table \d+|Figures? \d+[a-z]?(?:, \d+[a-z]?)*|Section [\d.]*\d|"
                     r"Supplement S\d(?:\.\d)?", source)
    return named.group(0) if named else source


def _latex_label(source: str) -> str | None:
    """The LaTeX label of the first table or figure the source names (None if none)."""
    named = re.search(r"\b(Table|Figure)s? (\d+)", source)
    return published.latex_label(f"{named.group(1)} {named.group(2)}") if named else None


def _claim(record: dict) -> dict | None:
    if not claims.is_claim(record["id"]):
        return None
    claim = claims.get(record["id"])
    return {"statement": claim.statement, "measured": claim.measured,
            "relation": claim.relation, "holds": record["status"] == "holds"}


def annotate(record: dict) -> dict:
    """``record`` with :data:`ANNOTATION_KEYS` added (a new dict; the study fields unchanged)."""
    return {**record, "printed_as": printed_name(record["source"]),
            "latex_label": _latex_label(record["source"]), "claim": _claim(record)}
