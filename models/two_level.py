"""Validated parameters of the two-level model (everything but the release D).

One place for the checks shared by the exact and Gibbs methods (:mod:`dprisk.inference.exact`) and
the PyMC builder (:func:`dprisk.models.hierarchical.validated_spec`): rho1, rho2 > 0, integer
d >= 1, 0 < p < 1, integer known >= 0, and a prior whose support is non-empty given known.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dprisk.models.checks import check_count, check_positive_int, check_probability, check_rho
from dprisk.models.priors import ImproperUniform, X2Prior, check_support

__all__ = ["TwoLevelParams"]


def _scalar(arr: np.ndarray, name: str):
    if np.ndim(arr) != 0:
        raise ValueError(f"{name} must be a scalar, got an array of shape {np.shape(arr)}")
    return arr[()]


@dataclass(frozen=True)
class TwoLevelParams:
    """Validated parameters of the two-level model (everything but the release D).

    Attributes
    ----------
    rho1, rho2 : float (> 0)
        zCDP parameters of the block and block-group releases.
    d : int (d >= 1)
        Number of other blocks in the block group.
    p : float (0 < p < 1)
        Prior probability ``P[X1 = known + 1]``.
    known : int (known >= 0)
        ``m``, the adversary's count of the other people in the block with characteristics c.
    prior : X2Prior
        Prior of X2 given X1.
    """

    rho1: float
    rho2: float
    d: int
    p: float
    known: int
    prior: X2Prior = field(default_factory=ImproperUniform)

    @classmethod
    def validated(cls, *, rho1, rho2, d, p, known, prior) -> TwoLevelParams:
        """Check every parameter with :mod:`dprisk.models.checks` and the prior's support."""
        rho1 = _scalar(check_rho(rho1, "rho1"), "rho1")
        rho2 = _scalar(check_rho(rho2, "rho2"), "rho2")
        d = check_positive_int(d, "d")
        p = _scalar(check_probability(p, "p"), "p")
        known = int(_scalar(check_count(known, "known", minimum=0), "known"))
        prior = check_support(prior, known)
        return cls(float(rho1), float(rho2), d, float(p), known, prior)

    @property
    def precision(self) -> float:
        """``A = rho2 + rho1/d``: ``X2 | X1`` is proportional to ``exp(-A (k2 - c)^2)``."""
        return self.rho2 + self.rho1 / self.d
