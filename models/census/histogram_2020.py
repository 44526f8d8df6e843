r"""The 2020 GVHR histogram (2,016 cells) and the cells of the eleven block-level queries.

The persons histogram of the 2020 redistricting data is
``hhgq (8) x votingage (2) x hispanic (2) x cenrace (63)`` = 2,016 cells (paper §2.3), in
C order as in the Census DAS. ``cenrace`` is one of the 63 non-empty combinations of the six
major races, ordered by the number of races and then lexicographically (White alone, ...,
Some Other Race alone, White and Black, ...), the Census order.

Each query of :data:`dprisk.models.census.strategy.STRATEGY_QUERY_NAMES` is a marginal of this
histogram: it partitions the 2,016 cells, and :func:`query_cell_map` gives :math:`a_q(c)`, the
query cell containing cell ``c``. ``hhinstlevels`` groups the group-quarters types into
household (type 0), institutional (types 1-4) and non-institutional (types 5-7), as in the
DAS schema.
"""

from __future__ import annotations

import itertools

import numpy as np

from dprisk.models.census.histogram import LabelledHistogram
from dprisk.models.census.strategy import STRATEGY_QUERY_NAMES

__all__ = [
    "CENRACE_LEVELS",
    "GVHR_2020_SHAPE",
    "HHGQ_LEVELS",
    "HHINST_OF_HHGQ",
    "MAJOR_RACES",
    "gvhr_2020",
    "query_cell_map",
    "query_cell_maps",
]

#: The eight group-quarters types of the 2020 GVHR query (household first).
HHGQ_LEVELS = ("Household", "Correctional facilities for adults", "Juvenile facilities",
               "Nursing facilities", "Other institutional facilities",
               "College/university student housing", "Military quarters",
               "Other noninstitutional facilities")
#: ``hhinstlevels`` level of each ``hhgq`` type: 0 household, 1 institutional, 2 other.
HHINST_OF_HHGQ = np.array([0, 1, 1, 1, 1, 2, 2, 2], dtype=np.int64)
#: The six major races of ``cenrace``.
MAJOR_RACES = ("White", "Black", "American Indian and Alaska Native", "Asian",
               "Native Hawaiian and Other Pacific Islander", "Some Other Race")
#: The 63 race combinations, in the Census order.
CENRACE_LEVELS = tuple(" and ".join(combo) for size in range(1, 7)
                       for combo in itertools.combinations(MAJOR_RACES, size))
#: Levels of (hhgq, votingage, hispanic, cenrace).
GVHR_2020_SHAPE = (8, 2, 2, 63)

_VARIABLES = {
    "total": (),
    "cenrace": ("cenrace",),
    "hispanic": ("hispanic",),
    "votingage": ("votingage",),
    "hhgq": ("hhgq",),
    "hispanic * cenrace": ("hispanic", "cenrace"),
    "votingage * cenrace": ("votingage", "cenrace"),
    "votingage * hispanic": ("votingage", "hispanic"),
    "votingage * hispanic * cenrace": ("votingage", "hispanic", "cenrace"),
    "detailed": ("hhgq", "votingage", "hispanic", "cenrace"),
}


def gvhr_2020(counts=None) -> LabelledHistogram:
    """The labelled 2,016-cell GVHR histogram (``counts`` default all 0)."""
    levels = (HHGQ_LEVELS, ("Under 18 years", "18 years and over"),
              ("Not Hispanic or Latino", "Hispanic or Latino"), CENRACE_LEVELS)
    size = int(np.prod(GVHR_2020_SHAPE))
    counts = np.zeros(size, dtype=np.int64) if counts is None else np.asarray(counts, np.int64)
    return LabelledHistogram(("hhgq", "votingage", "hispanic", "cenrace"), levels, counts)


def query_cell_map(query: str) -> tuple[np.ndarray, int]:
    r"""``(a_q, n_q)``: the query cell :math:`a_q(c)` of every GVHR cell and the query's size.

    Parameters
    ----------
    query : str
        A name of :data:`dprisk.models.census.strategy.STRATEGY_QUERY_NAMES`.
    """
    if query not in STRATEGY_QUERY_NAMES:
        raise ValueError(f"query must be one of {', '.join(STRATEGY_QUERY_NAMES)}, got "
                         f"{query!r}")
    histogram = gvhr_2020()
    if query == "hhinstlevels":
        hhgq = np.indices(GVHR_2020_SHAPE).reshape(4, -1)[0]
        return HHINST_OF_HHGQ[hhgq], 3
    cells = histogram.marginal_cells(_VARIABLES[query])
    n_query = int(np.prod([GVHR_2020_SHAPE[histogram.variables.index(v)]
                           for v in _VARIABLES[query]]))
    return cells, n_query


def query_cell_maps() -> dict[str, tuple[np.ndarray, int]]:
    """:func:`query_cell_map` of every strategy query, in the DAS order."""
    return {query: query_cell_map(query) for query in STRATEGY_QUERY_NAMES}
