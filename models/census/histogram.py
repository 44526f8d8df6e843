r"""A labelled histogram: the cells of a cross-classification and their counts.

The cells are the Cartesian product of the variables' levels, numbered in C order (the last
variable varies fastest), as in the Census DAS (``hhgq x votingage x hispanic x cenrace``).
A :class:`LabelledHistogram` turns a cell number into its labels and back, and gives the
masks of cells with stated attributes (the structured prior of
:func:`dprisk.models.priors.histogram.restricted_prior`) and of a marginal query's cells.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LabelledHistogram"]


@dataclass(frozen=True)
class LabelledHistogram:
    """Counts of a cross-classification with the levels' labels.

    Attributes
    ----------
    variables : tuple of str
        Variable names, slowest-varying first.
    levels : tuple of tuple of str
        The labels of each variable's levels.
    counts : ndarray of int64, shape ``(K,)``
        Count of each cell, ``K = prod(len(levels[i]))``, cells in C order.
    """

    variables: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]
    counts: np.ndarray

    def __post_init__(self):
        if self.counts.shape != (self.n_cells,):
            raise ValueError(f"counts must have one entry per cell ({self.n_cells}), got "
                             f"shape {self.counts.shape}")

    @property
    def shape(self) -> tuple[int, ...]:
        """Number of levels of each variable."""
        return tuple(len(level) for level in self.levels)

    @property
    def n_cells(self) -> int:
        """``K``, the number of cells."""
        return int(np.prod(self.shape))

    def cell_labels(self, cell: int) -> dict[str, str]:
        """The labels of cell ``cell`` (0-based), one per variable."""
        index = np.unravel_index(cell, self.shape)
        return {var: self.levels[i][int(j)] for i, (var, j) in
                enumerate(zip(self.variables, index, strict=True))}

    def cell_index(self, **labels: str) -> int:
        """The cell number of the given labels (every variable named once)."""
        if set(labels) != set(self.variables):
            raise ValueError(f"name every variable once: {', '.join(self.variables)}")
        index = tuple(self.levels[i].index(labels[var]) for i, var in enumerate(self.variables))
        return int(np.ravel_multi_index(index, self.shape))

    def mask(self, **labels) -> np.ndarray:
        """Cells whose variables take the given labels (a label or a tuple of labels each)."""
        grids = np.indices(self.shape).reshape(len(self.shape), -1)
        keep = np.ones(self.n_cells, dtype=bool)
        for var, wanted in labels.items():
            i = self.variables.index(var)
            wanted = (wanted,) if isinstance(wanted, str) else tuple(wanted)
            codes = [self.levels[i].index(label) for label in wanted]
            keep &= np.isin(grids[i], codes)
        return keep

    def marginal_cells(self, variables: tuple[str, ...]) -> np.ndarray:
        r"""``a_q(c)``: the cell of the marginal query over ``variables`` containing cell ``c``.

        Returns an int64 array of length ``K`` with values in ``0 ... prod(levels) - 1`` of
        the kept variables (C order); the empty tuple is the total (all cells map to 0).
        """
        grids = np.indices(self.shape).reshape(len(self.shape), -1)
        kept = [self.variables.index(v) for v in variables]
        if not kept:
            return np.zeros(self.n_cells, dtype=np.int64)
        return np.ravel_multi_index(tuple(grids[i] for i in kept),
                                    tuple(self.shape[i] for i in kept)).astype(np.int64)
