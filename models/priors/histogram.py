r"""The adversary's prior over the target's cell of a K-cell histogram (issue 15, §1).

The adversary knows the counts :math:`m_j` of everyone but the target in every cell
:math:`j = 0, \ldots, K-1` of the block's histogram and holds a prior :math:`\pi` over the
target's cell. Three forms:

* uniform, :math:`\pi_j = 1/K` (the paper's ``p = 1/864`` adversary of the 1940 example);
* an explicit array (or a file of K numbers), which must be non-negative and sum to 1
  (within :data:`PRIOR_SUM_TOLERANCE`; it is then divided by its sum);
* structured: known attributes restrict it, :math:`\pi_j \propto 1[\text{cell } j
  \text{ has the known attributes}]` (e.g. "voting age and not Hispanic").

Cells are numbered from 0. The validators here are the one entry point for a cell prior;
the kernels of :mod:`dprisk.inference.attribute.posterior` trust their output.
"""

from __future__ import annotations

import numpy as np

from dprisk.models.checks import check_count

__all__ = [
    "CELL_PRIOR_MIN",
    "PRIOR_SUM_TOLERANCE",
    "check_cell_prior",
    "check_known_counts",
    "check_n_cells",
    "check_true_cell",
    "restricted_prior",
    "uniform_prior",
]

#: Largest allowed ``|sum(prior) - 1|`` of a user prior (a file of K decimals rounds).
PRIOR_SUM_TOLERANCE = 1e-6
#: Smallest positive prior probability of a cell: the risk R'_c = P[C = c | x*] / pi_c is up
#: to 1 / pi_c, which overflows a double (and a subnormal pi_c has lost its digits) below it.
CELL_PRIOR_MIN = 1e-300


def check_n_cells(n_cells, name: str = "n_cells") -> int:
    """Return the number of cells ``K`` as an int after checking ``K >= 2``.

    Raises
    ------
    ValueError
        Naming ``name`` and the allowed range.
    """
    if isinstance(n_cells, bool) or not isinstance(n_cells, (int, np.integer)) or n_cells < 2:
        raise ValueError(f"{name} must be an integer >= 2 (allowed range: {name} >= 2), "
                         f"got {n_cells!r}")
    return int(n_cells)


def uniform_prior(n_cells) -> np.ndarray:
    r"""The uniform prior :math:`\pi_j = 1/K` over ``K = n_cells >= 2`` cells."""
    n_cells = check_n_cells(n_cells)
    return np.full(n_cells, 1.0 / n_cells)


def check_cell_prior(prior, n_cells: int | None = None, name: str = "prior") -> np.ndarray:
    r"""Validate a prior over the cells and return it divided by its sum.

    Parameters
    ----------
    prior : array_like of float, one dimension
        :math:`\pi_j \ge 0`, :math:`|\sum_j \pi_j - 1| \le 10^{-6}`, at least 2 entries;
        each positive :math:`\pi_j \ge` :data:`CELL_PRIOR_MIN` (so the risk
        :math:`R'_j \le 1 / \pi_j` is a finite double).
    n_cells : int, optional
        Required length ``K``.
    name : str
        Parameter name used in the error message.

    Returns
    -------
    ndarray
        :math:`\pi / \sum_j \pi_j` (float64).

    Raises
    ------
    ValueError
        One line naming ``name`` and the rule broken.
    """
    try:
        arr = np.asarray(prior, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers, got {prior!r}") from None
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(f"{name} must be a one-dimensional array of at least 2 cells "
                         f"(allowed range: K >= 2), got shape {arr.shape}")
    if n_cells is not None and arr.size != n_cells:
        raise ValueError(f"{name} must have one entry per cell ({n_cells}), got {arr.size}")
    bad = ~np.isfinite(arr) | (arr < 0)
    if np.any(bad):
        cell = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be finite and >= 0 in every cell (allowed range: "
                         f"0 <= {name}[j] <= 1), got {float(arr[cell])!r} in cell {cell}"
                         + (f" and {int(bad.sum()) - 1} more" if bad.sum() > 1 else ""))
    total = float(arr.sum())
    if not abs(total - 1.0) <= PRIOR_SUM_TOLERANCE:
        raise ValueError(f"{name} must sum to 1 (allowed range: |sum - 1| <= "
                         f"{PRIOR_SUM_TOLERANCE:g}), got sum {total!r}")
    out = arr / total
    tiny = (out > 0) & (out < CELL_PRIOR_MIN)
    if np.any(tiny):
        raise ValueError(f"{name} must be 0 or at least {CELL_PRIOR_MIN:g} in every cell "
                         f"(allowed range: {name}[j] = 0 or {CELL_PRIOR_MIN:g} <= {name}[j] <= 1; "
                         f"the risk 1 / {name}[j] overflows below it), got "
                         f"{float(out[tiny][0])!r} in cell {int(np.flatnonzero(tiny)[0])}")
    return out


def restricted_prior(allowed) -> np.ndarray:
    r"""Structured prior: uniform over the cells with the known attributes.

    .. math:: \pi_j = \frac{1[j \in A]}{|A|}

    Parameters
    ----------
    allowed : array_like of bool
        ``True`` for the cells ``A`` compatible with what the adversary knows; at least one.
    """
    mask = np.asarray(allowed, dtype=bool)
    if mask.ndim != 1 or mask.size < 2:
        raise ValueError(f"allowed must mark at least 2 cells (allowed range: K >= 2), "
                         f"got shape {mask.shape}")
    if not mask.any():
        raise ValueError("allowed must keep at least one cell (allowed range: >= 1 cell)")
    return mask / mask.sum()


def check_known_counts(known, n_cells: int | None = None, name: str = "known") -> np.ndarray:
    """Validate the known counts ``m_j >= 0`` of everyone but the target (int64, one per cell)."""
    arr = check_count(known, name, minimum=0)
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(f"{name} must have one count per cell and at least 2 cells "
                         f"(allowed range: K >= 2), got shape {arr.shape}")
    if n_cells is not None and arr.size != n_cells:
        raise ValueError(f"{name} must have one entry per cell ({n_cells}), got {arr.size}")
    return arr


def check_true_cell(true_cell, prior: np.ndarray, name: str = "true_cell") -> int:
    """Validate the index of the true cell: ``0 <= true_cell < K`` with positive prior."""
    n_cells = prior.size
    if (isinstance(true_cell, bool) or not isinstance(true_cell, (int, np.integer))
            or not 0 <= true_cell < n_cells):
        raise ValueError(f"{name} must be an integer cell index (allowed range: 0 <= {name} "
                         f"<= {n_cells - 1}), got {true_cell!r}")
    if prior[true_cell] <= 0:
        raise ValueError(f"{name} must be a cell of positive prior (allowed range: cells j "
                         f"with prior[j] > 0), got {true_cell}")
    return int(true_cell)
