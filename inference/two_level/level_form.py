"""The two-level posterior in the ``h``-level form: one result type for every nested posterior.

:class:`NestedPosterior` holds the exact posterior of ``(X_1, …, X_h)`` level by level;
:func:`from_two_level` gives the two-level posterior (:mod:`dprisk.inference.two_level.exact`)
that form, so one summary (:mod:`dprisk.inference.two_level.summary`) serves ``h = 2`` and the
``h``-level model of :mod:`dprisk.inference.nested.exact`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dprisk.inference.two_level.exact import TwoLevelPosterior
from dprisk.models.checks import check_positive_int
from dprisk.models.numerics import expit, scalar_result
from dprisk.models.scenario import Release, Scenario
from dprisk.runtime.renamed import renamed_attributes

__all__ = ["NestedPosterior", "from_two_level"]


@dataclass(frozen=True)
class NestedPosterior:
    r"""Exact posterior of ``(X_1, …, X_h)`` for a batch of releases (batch shape ``S``).

    Attributes
    ----------
    log_odds_x1 : ndarray, shape S
        ``log P[X1 = m+1 | D] - log P[X1 = m | D]`` (``-inf`` if X1 = m + 1 is impossible).
    level_start : tuple of ndarray of int64, shape S each
        First value of each level's window (level 1: ``m``).
    level_pmf : tuple of ndarray, shape ``S + (W_ℓ,)`` each
        ``P[X_ℓ = level_start[ℓ-1] + j | D]`` (zero-padded beyond a release's window).
    neglected_mass : ndarray, shape S
        Upper bound of the posterior mass outside the box (below ``tail_mass``).
    pairwise_cells : ndarray of int, shape S
        ``Σ_ℓ W_{ℓ-1} W_ℓ``: pairwise factors evaluated for the release (the cost).
    params : Scenario
    x_stars, y_stars : ndarray
        The releases, shapes ``S + (h,)`` and ``S + (h - 1,)``.
    """

    log_odds_x1: np.ndarray
    level_start: tuple
    level_pmf: tuple
    neglected_mass: np.ndarray
    pairwise_cells: np.ndarray
    params: Scenario
    x_stars: np.ndarray
    y_stars: np.ndarray

    @property
    def prob_x1(self) -> float | np.ndarray:
        """``P[X1 = m + 1 | D]`` (a Python float for one release)."""
        return scalar_result(expit(self.log_odds_x1))

    @property
    def h(self) -> int:
        """Number of levels."""
        return self.params.h

    def level_values(self, level: int) -> np.ndarray:
        """The window of level ``level`` (1..h), shape ``S + (W_ℓ,)``."""
        pmf = self.level_pmf[self._index(level)]
        return self.level_start[self._index(level)][..., None] + np.arange(pmf.shape[-1])

    def level_mean(self, level: int) -> np.ndarray:
        """``E[X_ℓ | D]``."""
        i = self._index(level)
        return (self.level_pmf[i] * self.level_values(level)).sum(-1)

    def level_sd(self, level: int) -> np.ndarray:
        """Posterior standard deviation of ``X_ℓ``."""
        i = self._index(level)
        centred = self.level_values(level) - self.level_mean(level)[..., None]
        return np.sqrt((self.level_pmf[i] * centred**2).sum(-1))

    def level_quantile(self, level: int, q: float) -> np.ndarray:
        """Smallest ``k`` with ``P[X_ℓ <= k | D] >= q`` (``0 < q <= 1``)."""
        i = self._index(level)
        cdf = np.cumsum(self.level_pmf[i], -1)
        index = np.minimum((cdf < q - 1e-12).sum(-1), cdf.shape[-1] - 1)
        return self.level_start[i] + index

    def level_pmf_at(self, level: int, k) -> np.ndarray:
        """``P[X_ℓ = k | D]`` for integer ``k`` broadcast against the batch shape."""
        i = self._index(level)
        pmf, start = self.level_pmf[i], self.level_start[i]
        offset = np.asarray(k) - start
        width = pmf.shape[-1]
        inside = (offset >= 0) & (offset < width)
        shape = np.broadcast_shapes(offset.shape, start.shape)
        index = np.broadcast_to(np.clip(offset, 0, width - 1), shape)[..., None]
        picked = np.take_along_axis(np.broadcast_to(pmf, (*shape, width)), index, -1)[..., 0]
        return np.where(inside, picked, 0.0)

    def _index(self, level: int) -> int:
        level = check_positive_int(level, "level")
        if level > self.h:
            raise ValueError(f"level must be an integer in 1..{self.h}, got {level}")
        return level - 1


def from_two_level(post: TwoLevelPosterior, release: Release) -> NestedPosterior:
    """The two-level posterior in the ``h``-level form (levels X1 on {m, m+1} and X2)."""
    shape = release.shape
    width = post.joint_pmf.shape[-1]
    branches = int(np.count_nonzero(post.params.feasible))
    return NestedPosterior(
        log_odds_x1=post.log_odds_x1,
        level_start=(np.full(shape, post.params.known, dtype=np.int64), post.k2_start),
        level_pmf=(post.joint_pmf.sum(-1), post.x2_pmf),
        neglected_mass=post.neglected_mass,
        pairwise_cells=np.full(shape, branches * width, dtype=np.int64),
        params=post.params,
        x_stars=release.x_stars,
        y_stars=release.y_stars,
    )


#: Old names (issue 35: ``two_level`` for two levels, ``nested`` for h levels), still importable
#: from this module with a FutureWarning naming the new one.
__getattr__ = renamed_attributes(__name__, {
    "MultilevelPosterior": "NestedPosterior",
})
