r"""The adversary's model with ``h`` nested levels (block ⊂ block group ⊂ tract ⊂ …) in PyMC.

Generalises the two-level model of paper §3.2 / supplement S3
(:mod:`dprisk.inference.two_level.exact`) along the hierarchy, as the paper notes is possible
("generalizing to more levels is straightforward").
Level ``ℓ`` (1 = block, 2 = block group, 3 = tract, …) has its own zCDP parameter
:math:`\rho_\ell`; the level-``ℓ`` unit holding the target contains the level-``(ℓ-1)`` unit
holding the target and :math:`d_\ell` sibling level-``(ℓ-1)`` units. With ``m = known``:

.. math::

    X_1 &= m + T, \quad T \sim \mathrm{Bernoulli}(p), \qquad
    X_\ell = X_{\ell-1} + Y_{\ell-1} \quad (\ell = 2, \dots, h), \\
    X_\ell \mid X_{\ell-1} &\sim w_\ell(\,\cdot \mid X_{\ell-1}) \quad (X_\ell \ge X_{\ell-1}), \\
    x_\ell^* &\sim \mathrm{DG}(X_\ell, 1/(2\rho_\ell)) \quad (\ell = 1, \dots, h), \\
    y_{\ell-1}^* &\sim \mathrm{DG}(X_\ell - X_{\ell-1}, d_\ell/(2\rho_{\ell-1}))
        \quad (\ell = 2, \dots, h).

``Y_{ℓ-1}`` is the count in the ``d_ℓ`` sibling units; its release is the sum of their
noisy counts, whose noise (a sum of ``d_ℓ`` iid DG(0, 1/(2 ρ_{ℓ-1}))) the adversary
approximates by DG(0, d_ℓ/(2 ρ_{ℓ-1})) exactly as in the two-level model (paper §3.2, S2),
i.e. a discrete Gaussian with parameter :math:`\rho_{\ell-1}/d_\ell` in this project's
convention. ``w_ℓ`` is a swappable prior object (:mod:`dprisk.models.priors.library`; default the
improper
uniform on {k_{ℓ-1}, k_{ℓ-1}+1, …}), one for every level or one per level. The joint
posterior is a chain (Markov) model

.. math::

    \pi(k_1, \dots, k_h) \propto P[X_1 = k_1]
        \prod_{\ell=1}^{h} e^{-\rho_\ell (x_\ell^* - k_\ell)^2}
        \prod_{\ell=2}^{h} w_\ell(k_\ell \mid k_{\ell-1})\,
        e^{-(\rho_{\ell-1}/d_\ell)(y_{\ell-1}^* - (k_\ell - k_{\ell-1}))^2},

which for ``h = 2`` is the two-level posterior of :mod:`dprisk.models.builders.two_level`, with the
same
variable names (``target_has_c``, ``X1``, ``X2``, ``x1_star``, ``x2_star``, ``y1_star``).
:mod:`dprisk.inference.nested.posterior` computes it exactly (forward–backward) and by Gibbs
sampling.

Prior supports
--------------
Grids and feasibility use the supports of the priors along the chain. They assume each
prior's support of ``X_ℓ | X_{ℓ-1} = k`` is an interval ``[lower(k), upper(k)]`` (upper
possibly infinite) with both ends non-decreasing in ``k`` and empty only for ``k`` above some
threshold; every built-in prior and every user prior without a ``support=`` function
satisfies this.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from dprisk.models.builders.single_level import TARGET_VAR, X1_VAR
from dprisk.models.scenario import Release, Scenario, nested_scenario
from dprisk.runtime.renamed import renamed_attributes

if TYPE_CHECKING:
    import pymc as pm

__all__ = [
    "TARGET_VAR",
    "X1_VAR",
    "build_nested_model",
    "nested_params",
    "x_star_name",
    "x_var_name",
    "y_star_name",
]

def x_var_name(level: int) -> str:
    """Name of the count ``X_level`` (``"X1"``, ``"X2"``, …)."""
    return f"X{level}"


def x_star_name(level: int) -> str:
    """Name of the observed noisy count ``x_level*`` (``"x1_star"``, …)."""
    return f"x{level}_star"


def y_star_name(level: int) -> str:
    """Name of the observed noisy sibling sum ``y_level*`` (``"y1_star"``, …; level < h)."""
    return f"y{level}_star"


_PARAMS: weakref.WeakKeyDictionary[pm.Model, tuple] = weakref.WeakKeyDictionary()


def build_nested_model(x_stars, y_stars, *, scenario: Scenario | None = None,
                           **parameters) -> pm.Model:
    r"""Build the adversary's ``h``-level model for one release (see the module docstring).

    .. math::

        T \sim \mathrm{Bernoulli}(p),\ X_1 = m + T,\ X_\ell \mid X_{\ell-1} \sim w_\ell,\
        x_\ell^* \sim \mathrm{DG}(X_\ell, \tfrac{1}{2\rho_\ell}),\
        y_{\ell-1}^* \sim \mathrm{DG}(X_\ell - X_{\ell-1}, \tfrac{d_\ell}{2\rho_{\ell-1}})

    Parameters
    ----------
    x_stars : sequence of int, length h
        Released noisy counts ``x_1*, ..., x_h*`` of the target's unit at each level.
    y_stars : sequence of int, length h - 1
        ``y_ℓ*`` = released sum of the noisy counts of the ``d_{ℓ+1}`` siblings of the
        target's level-ℓ unit inside its level-(ℓ+1) unit.
    rhos : sequence of float (> 0), length h >= 2
        zCDP parameters, block level first (Census:
        :func:`dprisk.models.census.allocation.census_rhos`).
    siblings : sequence of int (>= 1), length h - 1
        ``d_2, ..., d_h``.
    p : float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m + 1]`.
    known : int (known >= 0), default 0
        The adversary's count :math:`m = x_{1,-t}`.
    prior : str, X2Prior or sequence of them, default "improper"
        Prior of ``X_ℓ`` given ``X_{ℓ-1}``: one for every level or ``h - 1`` of them (a list
        or a ``;``-separated string); declared with ``prior.declare(f"X{ℓ}", X_{ℓ-1})``.
    scenario : Scenario, optional
        The validated scenario (:meth:`dprisk.models.scenario.Scenario.nested`) instead of
        ``rhos, siblings, p, known, prior``.

    Returns
    -------
    pymc.Model
        Free ``"target_has_c"`` (Bernoulli, started at the largest feasible value), ``"X2"``
        … ``"Xh"`` (free, or Deterministic under ``point:K``), deterministic ``"X1"``,
        observed ``"x1_star"`` … ``"xh_star"`` and ``"y1_star"`` … ``"y(h-1)_star"``. The
        free counts start on the lowest possible chain
        (:meth:`dprisk.models.scenario.Scenario.level_bounds`), inside the support
        (``model.point_logps()`` is finite).
        :func:`nested_params` returns the inputs.

    Raises
    ------
    ValueError
        If an input is outside its allowed range (the message names the parameter).
    """
    import pymc as pm

    from dprisk.models.mechanism.pymc_dist import DiscreteGaussian

    params = nested_scenario(scenario, **parameters)
    values = Release.nested(x_stars, y_stars, h=params.h).one("build_nested_model")
    xs, ys = list(values[: params.h]), list(values[params.h :])
    start = max(b for b in (0, 1) if params.feasible[b])
    with pm.Model() as model:
        target_has_c = pm.Bernoulli(TARGET_VAR, p=np.float64(params.p), initval=start)
        counts = [pm.Deterministic(X1_VAR, params.known + target_has_c)]
        for level in range(2, params.h + 1):
            counts.append(params.priors[level - 2].declare(x_var_name(level), counts[-1]))
        # Start on the lowest possible chain: each prior's own initial value may be above
        # what the next level's prior allows (e.g. truncated:30 then point:12).
        lowest = params.level_bounds(params.known + start)
        for level in range(2, params.h + 1):
            if counts[level - 1] in model.free_RVs:
                model.set_initval(counts[level - 1], np.int64(lowest[level - 1][0]))
        for level in range(1, params.h + 1):
            DiscreteGaussian(
                x_star_name(level),
                mu=counts[level - 1],
                rho=params.rhos[level - 1],
                observed=xs[level - 1],
            )
        for level in range(1, params.h):
            DiscreteGaussian(
                y_star_name(level),
                mu=counts[level] - counts[level - 1],
                rho=params.pair_precisions[level - 1],
                observed=ys[level - 1],
            )
    _PARAMS[model] = (params, tuple(xs), tuple(ys))
    return model


def nested_params(model: pm.Model) -> tuple[Scenario, tuple, tuple]:
    """``(scenario, x_stars, y_stars)`` that :func:`build_nested_model` recorded for ``model``.

    Raises
    ------
    ValueError
        If ``model`` was not built by :func:`build_nested_model`.
    """
    try:
        return _PARAMS[model]
    except (KeyError, TypeError):
        raise ValueError(
            "model must be built by models.builders.nested.build_nested_model "
            f"(no multi-level inputs recorded for {model!r})"
        ) from None


#: Old names (issue 35: ``two_level`` for two levels, ``nested`` for h levels), still importable
#: from this module with a FutureWarning naming the new one.
__getattr__ = renamed_attributes(__name__, {
    "build_multilevel_model": "build_nested_model",
    "multilevel_params": "nested_params",
})
