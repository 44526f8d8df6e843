r"""The adversary's model with ``h`` nested levels (block ⊂ block group ⊂ tract ⊂ …) in PyMC.

Generalises the two-level model of paper §3.2 / supplement S3 (DESIGN.md §3) along the
hierarchy, as the paper notes is possible ("generalizing to more levels is straightforward").
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
convention. ``w_ℓ`` is a swappable prior object (:mod:`dprisk.models.priors`; default the improper
uniform on {k_{ℓ-1}, k_{ℓ-1}+1, …}), one for every level or one per level. The joint
posterior is a chain (Markov) model

.. math::

    \pi(k_1, \dots, k_h) \propto P[X_1 = k_1]
        \prod_{\ell=1}^{h} e^{-\rho_\ell (x_\ell^* - k_\ell)^2}
        \prod_{\ell=2}^{h} w_\ell(k_\ell \mid k_{\ell-1})\,
        e^{-(\rho_{\ell-1}/d_\ell)(y_{\ell-1}^* - (k_\ell - k_{\ell-1}))^2},

which for ``h = 2`` is the two-level posterior of :mod:`dprisk.models.hierarchical`, with the same
variable names (``target_has_c``, ``X1``, ``X2``, ``x1_star``, ``x2_star``, ``y1_star``).
:mod:`dprisk.inference.multilevel` computes it exactly (forward–backward) and by Gibbs sampling.

Prior supports
--------------
Grids and feasibility use the supports of the priors along the chain. They assume each
prior's support of ``X_ℓ | X_{ℓ-1} = k`` is an interval ``[lower(k), upper(k)]`` (upper
possibly infinite) with both ends non-decreasing in ``k`` and empty only for ``k`` above some
threshold; every built-in prior and every user prior without a ``support=`` function
satisfies this.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pymc as pm

from dprisk.models.checks import check_count, check_positive_int, check_probability, check_rho
from dprisk.models.priors import X2Prior, check_support, parse_prior
from dprisk.models.pymc_dist import DiscreteGaussian
from dprisk.models.single_level import TARGET_VAR, X1_VAR

__all__ = [
    "TARGET_VAR",
    "X1_VAR",
    "MultilevelParams",
    "build_multilevel_model",
    "multilevel_params",
    "x_star_name",
    "x_var_name",
    "y_star_name",
]

#: Stand-in for +infinity when evaluating a prior's upper support end (see the module notes).
_HUGE = 2**52


def x_var_name(level: int) -> str:
    """Name of the count ``X_level`` (``"X1"``, ``"X2"``, …)."""
    return f"X{level}"


def x_star_name(level: int) -> str:
    """Name of the observed noisy count ``x_level*`` (``"x1_star"``, …)."""
    return f"x{level}_star"


def y_star_name(level: int) -> str:
    """Name of the observed noisy sibling sum ``y_level*`` (``"y1_star"``, …; level < h)."""
    return f"y{level}_star"


def _level_list(values, name: str, what: str) -> list:
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise ValueError(f"{name} must be a list of {what}, got {values!r}")
    return list(np.ravel(values)) if isinstance(values, np.ndarray) else list(values)


@dataclass(frozen=True)
class MultilevelParams:
    r"""Validated parameters of the ``h``-level model (everything but the release).

    Attributes
    ----------
    rhos : tuple of float (> 0), length h >= 2
        :math:`\rho_1, \dots, \rho_h`, block level first.
    siblings : tuple of int (>= 1), length h - 1
        :math:`d_2, \dots, d_h`: sibling level-(ℓ-1) units inside the level-ℓ unit.
    p : float (0 < p < 1)
        Prior probability ``P[X1 = known + 1]``.
    known : int (known >= 0)
        ``m``, the count of the other people in the block with characteristics c.
    priors : tuple of X2Prior, length h - 1
        ``priors[ℓ - 2]`` is the prior of ``X_ℓ`` given ``X_{ℓ-1}``.
    """

    rhos: tuple[float, ...]
    siblings: tuple[int, ...]
    p: float
    known: int
    priors: tuple[X2Prior, ...]

    @classmethod
    def validated(cls, *, rhos, siblings, p=0.5, known=0, prior="improper") -> MultilevelParams:
        """Check every parameter with :mod:`dprisk.models.checks`; ``ValueError`` names the culprit.

        ``prior`` is one prior (spec string or :class:`dprisk.models.priors.X2Prior`) used at every
        level, or ``h - 1`` of them (``X2 | X1`` first) as a list or as one string of specs
        separated by ``;`` (e.g. ``"truncated:30;point:12"``, the command-line form).
        """
        rho_list = _level_list(rhos, "rhos", "h >= 2 numbers rho_1, ..., rho_h")
        if len(rho_list) < 2:
            raise ValueError(
                f"rhos must have at least 2 entries (h >= 2 levels), got {len(rho_list)}"
            )
        h = len(rho_list)
        rho_values = tuple(
            float(_single(check_rho(r, f"rhos: rho_{i + 1}"), f"rhos: rho_{i + 1}"))
            for i, r in enumerate(rho_list)
        )
        d_list = _level_list(siblings, "siblings", f"h - 1 = {h - 1} integers >= 1")
        if len(d_list) != h - 1:
            raise ValueError(
                f"siblings must have h - 1 = {h - 1} entries (d_2, ..., d_h), got {len(d_list)}"
            )
        d_values = tuple(
            check_positive_int(_as_int(d), f"siblings: d_{i + 2}") for i, d in enumerate(d_list)
        )
        p = float(_single(check_probability(p, "p"), "p"))
        known = int(_single(check_count(known, "known", minimum=0), "known"))
        if isinstance(prior, str) and ";" in prior:
            prior = [part.strip() for part in prior.split(";")]
        if isinstance(prior, (str, X2Prior)):
            prior_list = [parse_prior(prior)] * (h - 1)
        else:
            raw = _level_list(prior, "prior", f"h - 1 = {h - 1} prior specs")
            if len(raw) != h - 1:
                raise ValueError(
                    f"prior must be one prior or a list of h - 1 = {h - 1} priors "
                    f"(X2 | X1 first), got {len(raw)}"
                )
            prior_list = [parse_prior(spec) for spec in raw]
        check_support(prior_list[0], known)
        params = cls(rho_values, d_values, p, known, tuple(prior_list))
        if not any(params.feasible):
            specs = ", ".join(pr.spec for pr in params.priors)
            raise ValueError(
                f"prior ({specs}) leaves no possible X_2, ..., X_h for X1 = {known} or "
                f"{known + 1}: every level needs a value >= the level below"
            )
        return params

    @property
    def h(self) -> int:
        """Number of levels."""
        return len(self.rhos)

    @property
    def pair_precisions(self) -> tuple[float, ...]:
        r"""``rho_{ℓ-1} / d_ℓ`` for ``ℓ = 2..h``: precision of the ``y_{ℓ-1}*`` factor."""
        return tuple(self.rhos[i] / self.siblings[i] for i in range(self.h - 1))

    @property
    def log_prior_x1(self) -> tuple[float, float]:
        """``(log P[X1 = m], log P[X1 = m + 1])``."""
        return math.log1p(-self.p), math.log(self.p)

    @property
    def log_weight_max(self) -> float:
        """Sum over levels of the priors' ``log_weight_max`` (bounds the product of weights)."""
        return float(sum(pr.log_weight_max for pr in self.priors))

    def level_bounds(self, k1: int) -> list[tuple[int, int | None]] | None:
        """Interval ``(lo, hi)`` holding every possible ``X_ℓ`` (ℓ = 1..h) given ``X1 = k1``.

        ``hi`` is ``None`` when unbounded; returns ``None`` if ``X1 = k1`` leaves no possible
        chain. Assumes the priors' supports described in the module notes (then the lowest
        chain decides feasibility and the bounds are exact).
        """
        lo, hi = int(k1), int(k1)
        bounds = [(lo, hi)]
        for prior in self.priors:
            support = prior.branch_support(lo)
            if support is None:
                return None
            new_lo = support[0]
            # upper(k) does not decrease in k: its largest value on [lo, hi] is upper(hi).
            upper = prior.support(_HUGE if hi is None else hi)[1]
            new_hi = None if upper is None or int(upper) >= _HUGE else int(upper)
            lo, hi = new_lo, new_hi
            if hi is not None and hi < lo:
                return None
            bounds.append((lo, hi))
        return bounds

    @property
    def feasible(self) -> tuple[bool, bool]:
        """Whether ``X1 = m`` and ``X1 = m + 1`` leave a possible chain ``X_2, ..., X_h``."""
        return tuple(self.level_bounds(self.known + b) is not None for b in (0, 1))

    def releases(self, x_stars, y_stars):
        """Validate releases; return ``(xs (R, h), ys (R, h-1), batch_shape)`` as int64.

        ``x_stars`` has shape ``S + (h,)`` (``x_1*, ..., x_h*`` on the last axis) and
        ``y_stars`` shape ``S + (h - 1,)``; the batch shapes ``S`` broadcast.
        """
        h = self.h
        xs = check_count(x_stars, "x_stars")
        ys = check_count(y_stars, "y_stars")
        if xs.ndim == 0 or xs.shape[-1] != h:
            raise ValueError(
                f"x_stars must have h = {h} entries x_1*, ..., x_h* (last axis), "
                f"got shape {xs.shape}"
            )
        if ys.ndim == 0 or ys.shape[-1] != h - 1:
            raise ValueError(
                f"y_stars must have h - 1 = {h - 1} entries y_1*, ..., y_(h-1)* (last axis), "
                f"got shape {ys.shape}"
            )
        try:
            shape = np.broadcast_shapes(xs.shape[:-1], ys.shape[:-1])
        except ValueError:
            raise ValueError(
                f"x_stars and y_stars must have broadcastable batch shapes, got "
                f"{xs.shape[:-1]} and {ys.shape[:-1]}"
            ) from None
        xs = np.broadcast_to(xs, (*shape, h)).reshape(-1, h)
        ys = np.broadcast_to(ys, (*shape, h - 1)).reshape(-1, h - 1)
        return xs, ys, shape


def _single(arr: np.ndarray, name: str):
    if np.ndim(arr) != 0:
        raise ValueError(f"{name} must be a single number, got an array of shape {arr.shape}")
    return arr[()]


def _as_int(value):
    if isinstance(value, np.integer):
        return int(value)
    return value


_PARAMS: weakref.WeakKeyDictionary[pm.Model, tuple] = weakref.WeakKeyDictionary()


def build_multilevel_model(
    x_stars, y_stars, *, rhos, siblings, p=0.5, known=0, prior="improper"
) -> pm.Model:
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
        zCDP parameters, block level first (Census: :func:`dprisk.models.census.census_rhos`).
    siblings : sequence of int (>= 1), length h - 1
        ``d_2, ..., d_h``.
    p : float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m + 1]`.
    known : int (known >= 0), default 0
        The adversary's count :math:`m = x_{1,-t}`.
    prior : str, X2Prior or sequence of them, default "improper"
        Prior of ``X_ℓ`` given ``X_{ℓ-1}``: one for every level or ``h - 1`` of them (a list
        or a ``;``-separated string); declared with ``prior.declare(f"X{ℓ}", X_{ℓ-1})``.

    Returns
    -------
    pymc.Model
        Free ``"target_has_c"`` (Bernoulli, started at the largest feasible value), ``"X2"``
        … ``"Xh"`` (free, or Deterministic under ``point:K``), deterministic ``"X1"``,
        observed ``"x1_star"`` … ``"xh_star"`` and ``"y1_star"`` … ``"y(h-1)_star"``. The
        free counts start on the lowest possible chain
        (:meth:`MultilevelParams.level_bounds`), inside the support
        (``model.point_logps()`` is finite).
        :func:`multilevel_params` returns the inputs.

    Raises
    ------
    ValueError
        If an input is outside its allowed range (the message names the parameter).
    """
    params = MultilevelParams.validated(
        rhos=rhos, siblings=siblings, p=p, known=known, prior=prior
    )
    xs, ys, shape = params.releases(x_stars, y_stars)
    if shape != ():
        raise ValueError(
            f"x_stars and y_stars must describe one release (1-d lists), got batch shape {shape}"
        )
    xs, ys = [int(v) for v in xs[0]], [int(v) for v in ys[0]]
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


def multilevel_params(model: pm.Model) -> tuple[MultilevelParams, tuple, tuple]:
    """``(params, x_stars, y_stars)`` that :func:`build_multilevel_model` recorded for ``model``.

    Raises
    ------
    ValueError
        If ``model`` was not built by :func:`build_multilevel_model`.
    """
    try:
        return _PARAMS[model]
    except (KeyError, TypeError):
        raise ValueError(
            "model must be built by models.multilevel.build_multilevel_model "
            f"(no multi-level inputs recorded for {model!r})"
        ) from None
