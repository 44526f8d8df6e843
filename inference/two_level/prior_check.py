r"""Check an X2 prior (a model file or a built-in spec): support, mass, and its effect.

What ``dprisk prior FILE:NAME`` reports. For each branch ``X1 = k1`` (``k1 = m, m + 1``):
the support of ``X2 | X1 = k1`` and the prior mass

.. math::

    M(k_1) = \sum_{k_2 \ge k_1} w(k_2 \mid k_1)

(:func:`dprisk.models.priors.base.branch_mass`: summed until it settles or for
:data:`~dprisk.models.priors.base.MASS_WIDTH` values). The prior is *found* proper when every
``M(k1)`` settled within :data:`~dprisk.models.priors.base.MASS_TOLERANCE` of 1. Then how
much it moves the Census-scenario posterior: the exact two-level posterior
:math:`P[X_1 = m+1 \mid D]` and :math:`E[X_2 \mid D]` at the 2020 Census block and
block-group :math:`\rho` (``d`` = 27 other blocks, ``p`` = 1/2, ``m`` = 0) for the releases
:data:`CENSUS_RELEASES`, under the paper's default prior (improper uniform) and under this one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dprisk.inference.two_level.exact import exact_posterior
from dprisk.models.census.allocation import census_rhos
from dprisk.models.checks import check_count
from dprisk.models.priors.base import MASS_TOLERANCE, branch_mass, check_prior_values
from dprisk.models.priors.library import ImproperUniform, as_prior
from dprisk.models.scenario import two_level_scenario

__all__ = ["CENSUS_RELEASES", "PriorCheck", "check_prior"]

#: Releases ``(x1*, x2*, y1*)`` at which the Census-scenario posteriors are compared: a small,
#: a middling and a larger block group, each with the block's count one above the others'.
CENSUS_RELEASES = ((0, 0, 0), (1, 3, 2), (1, 10, 9), (3, 30, 27))
#: Other blocks in the Census block group of the comparison.
CENSUS_D = 27


@dataclass(frozen=True)
class PriorCheck:
    """The result of :func:`check_prior` (JSON form: :meth:`to_json`, keys in the README).

    Attributes
    ----------
    spec, description : str
        The prior's specification and one-line description.
    labelled_proper : bool
        The prior's own ``is_proper``.
    proper : bool
        Whether every branch mass settled within ``MASS_TOLERANCE`` of 1.
    log_weight_max : float
        The prior's declared bound of its log weights.
    branches : dict
        ``{k1: {"lower", "upper", "mass", "mass_upto", "mass_settled"}}`` for ``k1 = m, m+1``
        (``upper`` None for an unbounded support; all None but ``lower`` for an empty branch).
    releases : tuple
        The releases compared, ``(x1*, x2*, y1*)`` each.
    rho1, rho2 : float
        The Census block and block-group rho.
    posterior_default, posterior_prior : ndarray
        ``P[X1 = m+1 | D]`` per release under the improper uniform and under this prior.
    x2_mean_default, x2_mean_prior : ndarray
        ``E[X2 | D]`` per release under each.
    """

    spec: str
    description: str
    labelled_proper: bool
    proper: bool
    log_weight_max: float
    branches: dict
    releases: tuple
    rho1: float
    rho2: float
    posterior_default: np.ndarray
    posterior_prior: np.ndarray
    x2_mean_default: np.ndarray
    x2_mean_prior: np.ndarray

    @property
    def max_posterior_shift(self) -> float:
        """``max |P_prior - P_default|`` over the releases."""
        return float(np.max(np.abs(self.posterior_prior - self.posterior_default)))

    def to_json(self) -> dict:
        """The ``dprisk prior --json`` object (plain Python values)."""
        return {
            "spec": self.spec,
            "description": self.description,
            "labelled_proper": self.labelled_proper,
            "proper": self.proper,
            "log_weight_max": self.log_weight_max,
            "branches": {str(k1): dict(row) for k1, row in self.branches.items()},
            "census": {
                "rho1": self.rho1, "rho2": self.rho2, "d": CENSUS_D, "p": 0.5, "known": 0,
                "releases": [list(r) for r in self.releases],
                "posterior_default": self.posterior_default.tolist(),
                "posterior_prior": self.posterior_prior.tolist(),
                "x2_mean_default": self.x2_mean_default.tolist(),
                "x2_mean_prior": self.x2_mean_prior.tolist(),
            },
            "max_posterior_shift": self.max_posterior_shift,
        }


def _branch(prior, k1: int) -> dict:
    support = prior.branch_support(k1)
    if support is None:
        return {"lower": None, "upper": None, "mass": 0.0, "mass_upto": None,
                "mass_settled": True}
    mass, last, settled = branch_mass(prior, k1)
    # a mass no double holds (weights e^800: above 1.8e308) is undefined here: null, not inf
    return {"lower": int(support[0]), "upper": support[1],
            "mass": mass if math.isfinite(mass) else None,
            "mass_upto": int(last), "mass_settled": bool(settled and math.isfinite(mass))}


def _posteriors(prior, releases, rho1: float, rho2: float) -> tuple[np.ndarray, np.ndarray]:
    scenario = two_level_scenario(None, rho1=rho1, rho2=rho2, d=CENSUS_D, p=0.5, known=0,
                                  prior=prior)
    x1, x2, y1 = (np.array(column) for column in zip(*releases, strict=True))
    result = exact_posterior(x1, x2, y1, scenario=scenario)
    return np.asarray(result.prob_x1, dtype=float), np.asarray(result.x2_mean(), dtype=float)


def _checked_releases(releases) -> tuple[tuple[int, int, int], ...]:
    """``releases`` as int triples, checked: integers of shape ``(n, 3)``, ``n >= 1``.

    Refused naming ``releases`` (``int()`` would truncate 1.5 to 1).
    """
    if isinstance(releases, (str, bytes)):
        raise TypeError(f"releases must be a sequence of (x1*, x2*, y1*) integer triples, "
                        f"got {releases!r}")
    values = check_count(releases, "releases", nonempty=True)
    if values.ndim != 2 or values.shape[1] != 3:
        raise ValueError(f"releases must be a sequence of (x1*, x2*, y1*) integer triples, "
                         f"shape (n, 3) with n >= 1, got shape {values.shape}")
    return tuple(tuple(int(v) for v in row) for row in values)


def check_prior(prior, *, releases=CENSUS_RELEASES) -> PriorCheck:
    """Check ``prior`` (an X2Prior or a spec such as ``PATH.py:NAME``); see the module docstring.

    Parameters
    ----------
    prior : X2Prior or str
        The prior, or its specification (:func:`dprisk.models.priors.library.parse_prior`).
    releases : sequence of (int, int, int)
        The Census-scenario releases ``(x1*, x2*, y1*)`` to compare at (default
        :data:`CENSUS_RELEASES`); at least one, integers (``|value| <= 2**53``).

    Returns
    -------
    PriorCheck

    Raises
    ------
    ValueError
        A prior the methods would refuse (:func:`dprisk.models.priors.base.check_prior_values`,
        :meth:`~dprisk.models.priors.base.X2Prior.check_support` with ``m = 0``), in one line.
    """
    releases = _checked_releases(releases)
    prior = as_prior(prior)
    check_prior_values(prior, 0)  # untrusted code first (captured): support() may raise
    prior.check_support(0)
    branches = {k1: _branch(prior, k1) for k1 in (0, 1)}
    # An empty branch (mass_upto None: X1 = k1 impossible, which only point:K with K = m may
    # declare, as the posterior commands accept) has no X2 | X1 = k1 to normalise: left out.
    proper = all(row["mass_settled"] and row["mass"] is not None
                 and abs(row["mass"] - 1.0) <= MASS_TOLERANCE
                 for row in branches.values() if row["mass_upto"] is not None)
    rho1, rho2 = census_rhos(2)
    default = _posteriors(ImproperUniform(), releases, rho1, rho2)
    chosen = _posteriors(prior, releases, rho1, rho2)
    return PriorCheck(
        spec=prior.spec, description=prior.description, labelled_proper=bool(prior.is_proper),
        proper=bool(proper), log_weight_max=float(prior.log_weight_max), branches=branches,
        releases=releases, rho1=float(rho1), rho2=float(rho2),
        posterior_default=default[0], posterior_prior=chosen[0],
        x2_mean_default=default[1], x2_mean_prior=chosen[1],
    )
