r"""The paper's own histogram: the 1940 GVHR query of enumeration district 28-21 (Dare County).

Kazan & Reiter §4.2 (the GVHR table, Table 3 in the printed numbering): 864 cells
(8 group-quarters types x 2 voting ages x 6 Hispanic origins x 9 races) with counts 34
(household, voting age, not Hispanic, White), 10 (household, not of voting age, not
Hispanic, White) and 1 (household, voting age, not Hispanic, Black: the target, unique in
the district). The paper's adversary knows everyone else (``x_{1,-t} = 0`` in the target's
cell); its ``p = 1/864`` adversary is the uniform prior over the 864 cells reading the
target's cell only.

The counts and labels ship as package data (``models/data/gvhr_1940_ed28_21.json``); the file
says which labels the paper prints and where the others come from.
"""

from __future__ import annotations

import importlib.resources
import json

import numpy as np

from dprisk.models.census.histogram import LabelledHistogram

__all__ = ["DATA_FILE", "ed_28_21", "ed_28_21_known", "ed_28_21_target"]

#: The shipped data file, inside the package ``dprisk.models``.
DATA_FILE = "data/gvhr_1940_ed28_21.json"


def _load() -> dict:
    text = importlib.resources.files("dprisk.models.census").joinpath(DATA_FILE).read_text("utf-8")
    return json.loads(text)


def ed_28_21() -> LabelledHistogram:
    """The 864-cell GVHR histogram of enumeration district 28-21 (true counts, target included)."""
    data = _load()
    variables = tuple(data["variables"])
    levels = tuple(tuple(data["levels"][v]) for v in variables)
    counts = np.zeros(int(np.prod([len(level) for level in levels])), dtype=np.int64)
    histogram = LabelledHistogram(variables, levels, counts)
    for row in data["nonzero_cells"]:
        counts[histogram.cell_index(**{v: row[v] for v in variables})] = row["count"]
    return histogram


def ed_28_21_target() -> int:
    """Cell number of the target (the unique voting-age, non-Hispanic Black householder)."""
    data = _load()
    return ed_28_21().cell_index(**data["target"])


def ed_28_21_known() -> np.ndarray:
    """``m_j``: the counts of everyone but the target (the histogram minus the target)."""
    known = ed_28_21().counts.copy()
    known[ed_28_21_target()] -= 1
    return known
