r"""True answers of the 2020 strategy's queries from ``detailed`` counts, shaped as the DAS does.

A query's answer sums the histogram ``hhgq (8) x votingage (2) x hispanic (2) x cenrace (63)``
over the axes it does not keep; the released files give its ``query_shape`` (4 integers, 1 on a
summed axis) and its ``value`` flattened in C order over that shape. ``hhinstlevels`` groups
hhgq into {0}, {1-4}, {5-7}: shape ``[3, 1, 1, 1]`` (``CENSUS_ASYMMETRIC_QUERY_SHAPE`` in
``google-research/census-bluedown`` ``census_bluedown/constants.py``, which also gives
``DETAILED_QUERY_SHAPE = (8, 2, 2, 63)``).

Each row's axis spec strings (``hhgq``, ``votingage``, ``hispanic``, ``cenrace`` columns):
``"*"`` on a summed axis, the axis name on a kept one, ``"hhinstlevels"`` for that recode and
``"detailed"`` on every axis of the ``detailed`` query, as ``sbaldasty/dpvalue``'s
``test/test_nmf.py`` fixture writes them and its ``src/noisyvalue/nmf.py`` reads them (the
Census Bureau's GLS reader, ``uscensusbureau/DAS_2020_GLS_Uncertainty_Evaluation``
``GLS/main_two_pass_alg.py``, likewise treats every string column other than ``geocode,
query_name, sign, query_shape, value, variance, plb`` as an axis spec, ``"*"`` meaning summed).

The sums here are reshapes; the tests check them against
:func:`dprisk.models.census.histogram_2020.query_cell_map`.
"""

from __future__ import annotations

import numpy as np

from dprisk.models.census.histogram_2020 import GVHR_2020_SHAPE, HHINST_OF_HHGQ

__all__ = ["AXES", "query_answers", "query_shape", "query_specs"]

#: The histogram's axes, in order.
AXES = ("hhgq", "votingage", "hispanic", "cenrace")
_KEPT = {
    "total": (),
    "cenrace": ("cenrace",),
    "hispanic": ("hispanic",),
    "votingage": ("votingage",),
    "hhinstlevels": ("hhgq",),
    "hhgq": ("hhgq",),
    "hispanic * cenrace": ("hispanic", "cenrace"),
    "votingage * cenrace": ("votingage", "cenrace"),
    "votingage * hispanic": ("votingage", "hispanic"),
    "votingage * hispanic * cenrace": ("votingage", "hispanic", "cenrace"),
    "detailed": AXES,
}


def query_shape(query: str) -> tuple[int, int, int, int]:
    """The query's ``query_shape``: each axis's size when kept, 1 when summed."""
    shape = [n if axis in _KEPT[query] else 1 for axis, n in zip(AXES, GVHR_2020_SHAPE,
                                                                 strict=True)]
    if query == "hhinstlevels":
        shape[0] = 3
    return tuple(shape)


def query_specs(query: str) -> tuple[str, str, str, str]:
    """The axis spec strings of the query's rows (hhgq, votingage, hispanic, cenrace)."""
    if query == "detailed":
        return ("detailed",) * 4
    return tuple(("hhinstlevels" if query == "hhinstlevels" else axis)
                 if axis in _KEPT[query] else "*" for axis in AXES)


def query_answers(counts: np.ndarray, queries) -> dict[str, np.ndarray]:
    r"""True answers of ``queries`` for each row of ``counts`` (geounits x 2016 cells).

    .. math:: a_q(u)_j = \sum_{c : a_q(c) = j} n_u(c)

    Parameters
    ----------
    counts : ndarray of int (n_units, 2016)
        Detailed counts, C order over hhgq x votingage x hispanic x cenrace.
    queries : iterable of str
        Names of :data:`dprisk.models.census.strategy.STRATEGY_QUERY_NAMES`.

    Returns
    -------
    dict of str to ndarray of int64
        ``answers[q]`` of shape ``(n_units, prod(query_shape(q)))``, flattened in C order.
    """
    counts = np.asarray(counts, dtype=np.int64)
    cube = counts.reshape((counts.shape[0], *GVHR_2020_SHAPE))
    answers = {}
    for query in queries:
        summed = tuple(1 + i for i, axis in enumerate(AXES) if axis not in _KEPT[query])
        answer = cube.sum(axis=summed, keepdims=True) if summed else cube
        if query == "hhinstlevels":
            starts = np.flatnonzero(np.r_[True, np.diff(HHINST_OF_HHGQ) != 0])
            answer = np.add.reduceat(answer, starts, axis=1)
        answers[query] = answer.reshape(counts.shape[0], -1)
    return answers
