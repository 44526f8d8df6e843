r"""Exact and Gibbs posteriors of the ``h``-level nested model (:mod:`dprisk.models.multilevel`).

The joint posterior of the counts ``X_1 ∈ {m, m+1}, X_2, …, X_h`` is a chain (Markov) model

.. math::

    \pi(k_1, \dots, k_h) \propto \prod_{\ell=1}^{h} \phi_\ell(k_\ell)
        \prod_{\ell=2}^{h} \psi_\ell(k_{\ell-1}, k_\ell), \qquad
    \phi_\ell(k) = e^{-\rho_\ell (x_\ell^* - k)^2}\,(P[X_1 = k] \text{ if } \ell = 1),

    \psi_\ell(j, k) = w_\ell(k \mid j)\, e^{-(\rho_{\ell-1}/d_\ell)(y_{\ell-1}^* - (k - j))^2},

with ``w_ℓ`` the prior of ``X_ℓ | X_{ℓ-1}`` (zero unless ``k >= j``). For ``h = 2`` it is the
two-level posterior of :mod:`dprisk.inference.exact` (DESIGN.md §3).

Exact method (:func:`exact_posterior`)
---------------------------------------
Sum–product (forward–backward) along the chain on one window ``G_ℓ`` of ``W_ℓ`` consecutive
integers per level (``G_1 = {m, m+1}``), in log space:

.. math::

    \alpha_1 = \log\phi_1, \quad
    \alpha_\ell(k) = \log\phi_\ell(k)
        + \operatorname{LSE}_j [\alpha_{\ell-1}(j) + \log\psi_\ell(j, k)],

    \beta_h = 0, \quad
    \beta_{\ell-1}(j) = \operatorname{LSE}_k
        [\log\psi_\ell(j, k) + \log\phi_\ell(k) + \beta_\ell(k)],

so ``P[X_1 = m + b | D] ∝ exp(α_1(b) + β_1(b))`` and ``P[X_ℓ = k | D] ∝ exp(α_ℓ(k) + β_ℓ(k))``.
Cost ``O(Σ_ℓ W_{ℓ-1} W_ℓ) = O(h K²)`` per release (:attr:`MultilevelPosterior.pairwise_cells`
counts the pairwise factor evaluations), vectorised over releases.

Windows and the neglected-mass bound (no silent truncation)
-----------------------------------------------------------
Dropping the priors' weights (``w ≤ e^{L_ℓ}``, ``L_ℓ`` = ``log_weight_max``) and the support
constraints, the posterior of branch ``X_1 = k_1`` is bounded by a Gaussian-shaped function of
``(k_2, …, k_h)``. Summing one integer coordinate out of such a function obeys

.. math::

    \sum_{j \in \mathbb{Z}} e^{-a (j - c)^2 - b (j - u)^2}
        \le Z(a + b)\, e^{-\frac{ab}{a+b} (u - c)^2}, \qquad
    Z(A) = \sum_{j \in \mathbb{Z}} e^{-A j^2}

(the theta sum :math:`\sum_j e^{-A (j - \mu)^2}` is largest at integer ``μ``). Passing these
Gaussian "envelope" messages from both ends of the chain to level ``ℓ`` gives, per branch,
:math:`\sum_{k_{-\ell}} \pi(k_1, \dots, k_h) \le U_\ell(k_\ell) = e^{s - a_\ell (k_\ell - c)^2}`
with explicit ``a_ℓ, c, s``. The mass outside the box ``G_1 × … × G_h`` is at most the sum
over levels of the mass of ``U_ℓ`` outside ``G_ℓ`` (and inside the level's support, see
:meth:`dprisk.models.multilevel.MultilevelParams.level_bounds`), bounded by the geometric tail bound
:math:`\sum_{k \ge s} e^{-a (k - c)^2} \le e^{-a t^2} / (1 - e^{-2 a t})`, ``t = s - c``.
Windows are centred on the envelope centres ``c`` with half-width from the envelope
precision ``a_ℓ`` (which depends only on the ρ's and d's), slid inside the supports, and
widened (``K -> 2K + 1``) until this bound is below ``tail_mass`` times the branch's mass on
the box, for each possible branch; otherwise :class:`dprisk.inference.exact.GridTooNarrowError`.

Gibbs sampler (:func:`gibbs_sample`)
-------------------------------------
Systematic scan ``X_1, X_2, …, X_h`` with exact full conditionals on the same checked box
(whose neglected mass is below ``tail_mass``): ``X_1 | X_2`` on ``{m, m+1} ∩ {≤ k_2}``, and
``X_ℓ | X_{ℓ-1}, X_{ℓ+1} ∝ ψ_ℓ φ_ℓ ψ_{ℓ+1}`` (a discrete Gaussian of precision
``ρ_ℓ + ρ_{ℓ-1}/d_ℓ + ρ_ℓ/d_{ℓ+1}`` times the prior weights, truncated to the support),
tabulated once as cumulative tables (recomputed for each sweep instead when a level's table
would exceed ``2**22`` cells) and drawn by inversion, vectorised over chains. Results
are arrays of shape ``(h, chains, draws)`` or a DataTree whose ``posterior`` group holds one
variable per level, ``X1 … Xh`` with dims ``(chain, draw)``: the names of the PyMC model's
variables, so Gibbs and PyMC results compare by name and two-level tools that read ``X1``
and ``X2`` keep working.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from dprisk.inference.exact import DEFAULT_TAIL_MASS, GridTooNarrowError
from dprisk.models.census import census_rhos, parse_rho
from dprisk.models.checks import check_positive_int, check_probability
from dprisk.models.dg_sampling import as_generator
from dprisk.models.discrete_gaussian import support_halfwidth
from dprisk.models.multilevel import MultilevelParams, x_var_name
from dprisk.models.numerics import dg_log_normalizer

__all__ = [
    "MAX_WIDTH",
    "METHODS",
    "MultilevelDraws",
    "MultilevelParams",
    "MultilevelPosterior",
    "exact_posterior",
    "gibbs_sample",
    "parse_multilevel_args",
    "posterior_summary",
    "to_datatree",
]

#: Largest window (values per level and release) before giving up.
MAX_WIDTH = 2048
#: Target number of pairwise cells per vectorised chunk of releases.
_CHUNK_CELLS = 2**20
#: Largest full-conditional table (cells) :func:`gibbs_sample` keeps per level.
_TABLE_CELLS = 2**22
#: Sweeps per block of pre-drawn uniforms in :func:`gibbs_sample`.
_SWEEP_BLOCK = 1024
#: Methods accepted by :func:`posterior_summary`.
METHODS = ("exact", "gibbs", "pymc")


# -- small kernels ------------------------------------------------------------------------------
def _lse(t: np.ndarray, axis: int) -> np.ndarray:
    """``log(sum(exp(t), axis))`` with ``-inf`` for all ``-inf`` slices, no warnings."""
    top = np.max(t, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.exp(t - top).sum(axis))
    return out + np.squeeze(top, axis)


def _expit(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))`` without overflow warnings (``expit(±inf) = 1, 0``)."""
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1.0 / (1.0 + np.exp(-x)), np.exp(x) / (1.0 + np.exp(x)))


def _log_gauss_tail(t: np.ndarray, precision) -> np.ndarray:
    r"""Upper bound of ``log sum_{i >= 0} exp(-A (t + i)^2)`` (``A = precision``), any real ``t``.

    For ``t > 0`` the geometric bound :math:`e^{-A t^2} / (1 - e^{-2 A t})`; always at most
    the whole sum over the integers, :math:`Z(A) \le 1 + \sqrt{\pi / A}`.
    """
    whole = np.log1p(np.sqrt(np.pi / precision))
    t_pos = np.maximum(t, 1e-300)
    with np.errstate(divide="ignore", over="ignore"):
        geometric = -precision * t_pos**2 - np.log(-np.expm1(-2.0 * precision * t_pos))
    return np.where(t > 0, np.minimum(geometric, whole), whole)


def _times(g1, g2):
    r"""Product of Gaussian-shaped functions ``exp(s - a (k - c)^2)``: ``(a, c, s)`` triples."""
    a1, c1, s1 = g1
    a2, c2, s2 = g2
    a = a1 + a2
    return a, (a1 * c1 + a2 * c2) / a, s1 + s2 - (a1 * a2 / a) * (c1 - c2) ** 2


def _sum_out(g, b: float, shift):
    r"""Bound of :math:`\sum_{j} e^{s - a (j - c)^2 - b (j - (k - \text{shift}))^2}` over j.

    :math:`\le Z(a + b)\, e^{s - \frac{ab}{a + b} (k - (c + \text{shift}))^2}`, as a triple.
    """
    a, c, s = g
    return a * b / (a + b), c + shift, s + _log_z(float(a + b))


@functools.lru_cache(maxsize=1024)
def _log_z(precision: float) -> float:
    """``log Z(precision)`` (:func:`dprisk.models.numerics.dg_log_normalizer`), cached."""
    return float(dg_log_normalizer(precision))


def _envelopes(xs: np.ndarray, ys: np.ndarray, params: MultilevelParams):
    """Envelopes ``U_ℓ`` at level indices ``i = 1..h-1`` for every release and branch.

    Returns ``a`` (h - 1,) precisions and ``c, s`` (R, h - 1, 2) centres and log scales,
    including ``exp(Σ log_weight_max)`` (module docstring). Scalars (no release) when
    ``xs`` and ``ys`` are 0-d zeros, used for the precisions alone.
    """
    h = params.h
    rhos, pair = params.rhos, params.pair_precisions
    k1 = params.known + np.arange(2.0)
    log_p1 = np.array(params.log_prior_x1)
    x = xs.astype(float)[:, :, None]
    y = ys.astype(float)[:, :, None]
    forward = [None, (pair[0], k1 + y[:, 0], log_p1 - rhos[0] * (x[:, 0] - k1) ** 2)]
    for i in range(2, h):
        joined = _times(forward[i - 1], (rhos[i - 1], x[:, i - 1], 0.0))
        forward.append(_sum_out(joined, pair[i - 1], y[:, i - 1]))
    backward = [None] * h
    backward[h - 1] = (0.0, 0.0, 0.0)
    for i in range(h - 2, 0, -1):
        joined = _times((rhos[i + 1], x[:, i + 1], 0.0), backward[i + 1])
        backward[i] = _sum_out(joined, pair[i], -y[:, i])
    precisions, centres, scales = [], [], []
    shape = (len(xs), 2)
    for i in range(1, h):
        a, c, s = _times(_times(forward[i], (rhos[i], x[:, i], 0.0)), backward[i])
        precisions.append(float(np.ravel(a)[0]))
        centres.append(np.broadcast_to(c, shape))
        scales.append(np.broadcast_to(s, shape))
    return (
        np.array(precisions),
        np.stack(centres, 1),
        np.stack(scales, 1) + params.log_weight_max,
    )


def _structure(params: MultilevelParams, tail_mass: float):
    """Per-parameter constants: branch bounds, feasibility, envelope precisions, half-widths.

    Cached per ``(params, tail_mass)`` when the priors are hashable.
    """
    try:
        return _cached_structure(params, tail_mass)
    except TypeError:  # a user prior that defines __eq__ without __hash__
        return _compute_structure(params, tail_mass)


@functools.lru_cache(maxsize=64)
def _cached_structure(params: MultilevelParams, tail_mass: float):
    return _compute_structure(params, tail_mass)


def _compute_structure(params: MultilevelParams, tail_mass: float):
    bounds = tuple(params.level_bounds(params.known + b) for b in (0, 1))
    feasible = np.array([bd is not None for bd in bounds])
    zeros = np.zeros((1, params.h), dtype=np.int64)
    precisions = _envelopes(zeros, zeros[:, :-1], params)[0]
    share = tail_mass * 1e-3 / params.h
    halfwidths = [0] + [int(support_halfwidth(a, share)) + 1 for a in precisions]
    # Support ends per (level index 1..h-1, branch); impossible branches never count.
    lo = np.full((params.h - 1, 2), np.inf)
    hi = np.full((params.h - 1, 2), -np.inf)
    for b, bd in enumerate(bounds):
        if bd is not None:
            lo[:, b] = [bd[i][0] for i in range(1, params.h)]
            hi[:, b] = [np.inf if bd[i][1] is None else bd[i][1] for i in range(1, params.h)]
    return bounds, feasible, halfwidths, lo, hi


class _Box:
    """Log factors, messages and the neglected-mass bound of R releases on one grid box.

    Level indices ``i = 0..h-1`` (level ``ℓ = i + 1``). ``start[i]`` (R,), ``width[i]``;
    ``log_phi[i]`` (R, W_i); ``log_psi[i]`` (R, W_{i-1}, W_i) for ``i >= 1``; forward
    ``alpha[i]`` and backward ``beta[i]`` messages (R, W_i); ``log_branch`` (R, 2) the
    branch masses on the box; ``log_bound`` (R, 2) the bound of each branch's mass outside
    it; ``ok`` (R,) whether every possible branch passes the ``tail_mass`` check.
    """

    def __init__(self, xs, ys, params: MultilevelParams, attempt: int, tail_mass: float):
        h = params.h
        n = len(xs)
        self.params = params
        _, feasible, base, lo_end, hi_end = _structure(params, tail_mass)
        halfwidths = _widened(base, attempt)
        env_a, env_c, env_s = _envelopes(xs, ys, params)
        self.feasible = feasible
        starts = [np.full(n, params.known, dtype=np.int64)]
        widths = [2]
        for i in range(1, h):
            centres = env_c[:, i - 1, feasible]
            low_centre = centres.min(1)
            spread = int(np.ceil(np.max(centres.max(1) - low_centre)))
            width = 2 * halfwidths[i] + 3 + spread
            lo = int(lo_end[i - 1, feasible].min())
            hi = hi_end[i - 1, feasible].max()
            start = np.floor(low_centre).astype(np.int64) - halfwidths[i]
            if np.isfinite(hi):
                width = min(width, int(hi) - lo + 1)
                start = np.minimum(start, int(hi) - width + 1)
            starts.append(np.maximum(start, lo))
            widths.append(width)
        self.start, self.width = starts, widths
        self.cells = int(sum(widths[i - 1] * widths[i] for i in range(1, h)))

        # Factors on the box.
        rhos, pair = params.rhos, params.pair_precisions
        grids = [s[:, None] + np.arange(w) for s, w in zip(starts, widths, strict=True)]
        log_p1 = np.where(feasible, np.array(params.log_prior_x1), -np.inf)
        self.log_phi = [
            -rhos[i] * (xs[:, i : i + 1] - grids[i]).astype(float) ** 2 for i in range(h)
        ]
        self.log_phi[0] = self.log_phi[0] + log_p1
        self.log_psi = [None]
        for i in range(1, h):
            lower, upper = grids[i - 1][:, :, None], grids[i][:, None, :]
            gap = (ys[:, i - 1, None, None] - (upper - lower)).astype(float)
            prior = params.priors[i - 1]
            self.log_psi.append(prior.log_weight(upper, lower) - pair[i - 1] * gap**2)

        # Forward-backward.
        alpha = [self.log_phi[0]]
        for i in range(1, h):
            alpha.append(_lse(alpha[-1][:, :, None] + self.log_psi[i], 1) + self.log_phi[i])
        beta = [None] * h
        beta[h - 1] = np.zeros((n, widths[h - 1]))
        for i in range(h - 1, 0, -1):
            beta[i - 1] = _lse(self.log_psi[i] + (self.log_phi[i] + beta[i])[:, None, :], 2)
        self.alpha, self.beta = alpha, beta
        self.log_branch = alpha[0] + beta[0]

        # Bound of each branch's mass outside the box, all levels at once: (R, h - 1, 2).
        first = np.stack(starts[1:], 1)[:, :, None]
        end = first + np.array(widths[1:])[None, :, None]
        precision = env_a[None, :, None]
        left = np.where(
            lo_end[None] < first, _log_gauss_tail(env_c - (first - 1), precision), -np.inf
        )
        right = np.where(hi_end[None] >= end, _log_gauss_tail(end - env_c, precision), -np.inf)
        self.log_bound = np.where(
            feasible, _lse(env_s + np.logaddexp(left, right), 1), -np.inf
        )
        with np.errstate(invalid="ignore"):
            excess = self.log_bound - self.log_branch >= math.log(tail_mass)
        self.ok = ~(excess & feasible).any(-1)

    @property
    def log_total(self) -> np.ndarray:
        """``log Σ π`` over the box, per release."""
        return np.logaddexp(self.log_branch[:, 0], self.log_branch[:, 1])

    def marginal(self, i: int) -> np.ndarray:
        """``P[X_{i+1} = start[i] + j | D]`` on the box, shape (R, W_i)."""
        return np.exp(self.alpha[i] + self.beta[i] - self.log_total[:, None])


def _widened(base: list[int], attempt: int) -> list[int]:
    out = list(base)
    for _ in range(attempt):
        out = [2 * k + 1 for k in out]
    return out


def _too_narrow(box: _Box, index: int, xs, ys, tail_mass: float) -> GridTooNarrowError:
    with np.errstate(invalid="ignore", over="ignore"):
        share = float(np.nanmax(np.exp(box.log_bound[index] - box.log_branch[index])))
    return GridTooNarrowError(
        f"multi-level grids of widths {box.width} leave out up to {share:.3g} of the posterior "
        f"mass for release x_stars = {xs.tolist()}, y_stars = {ys.tolist()}, above tail_mass = "
        f"{tail_mass:g}; windows cannot grow beyond {MAX_WIDTH} values per level"
    )


def _checked_box(xs, ys, params, tail_mass: float) -> _Box:
    """The box for a few releases, widened until every release passes the check."""
    attempt = 0
    while True:
        box = _Box(xs, ys, params, attempt, tail_mass)
        if box.ok.all():
            return box
        if 2 * max(box.width) + 1 > MAX_WIDTH:
            i = int(np.flatnonzero(~box.ok)[0])
            raise _too_narrow(box, i, xs[i], ys[i], tail_mass)
        attempt += 1


def _check_tail_mass(tail_mass) -> float:
    value = check_probability(tail_mass, "tail_mass")
    if np.ndim(value) != 0:
        raise ValueError("tail_mass must be a single number")
    return float(value)


# -- exact posterior ----------------------------------------------------------------------------
@dataclass(frozen=True)
class MultilevelPosterior:
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
    params : MultilevelParams
    x_stars, y_stars : ndarray
        The releases, shapes ``S + (h,)`` and ``S + (h - 1,)``.
    """

    log_odds_x1: np.ndarray
    level_start: tuple
    level_pmf: tuple
    neglected_mass: np.ndarray
    pairwise_cells: np.ndarray
    params: MultilevelParams
    x_stars: np.ndarray
    y_stars: np.ndarray

    @property
    def prob_x1(self) -> np.ndarray:
        """``P[X1 = m + 1 | D]``."""
        return _expit(self.log_odds_x1)

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


def exact_posterior(
    x_stars,
    y_stars,
    *,
    rhos,
    siblings,
    p=0.5,
    known=0,
    prior="improper",
    tail_mass: float = DEFAULT_TAIL_MASS,
) -> MultilevelPosterior:
    r"""Exact posterior of the ``h``-level model by forward–backward (module docstring).

    Parameters
    ----------
    x_stars : array_like of int, shape ``S + (h,)``
        Released noisy counts ``x_1*, …, x_h*`` on the last axis (batch shape ``S``).
    y_stars : array_like of int, shape ``S + (h - 1,)``
        Released noisy sibling sums ``y_1*, …, y_{h-1}*`` on the last axis.
    rhos : sequence of float (> 0), length h >= 2
        zCDP parameters, block level first.
    siblings : sequence of int (>= 1), length h - 1
        ``d_2, …, d_h``.
    p : float (0 < p < 1)
        Prior probability ``P[X1 = known + 1]``.
    known : int (known >= 0)
        ``m``.
    prior : str, X2Prior or sequence of h - 1 of them
        Prior of ``X_ℓ | X_{ℓ-1}``: one for all levels, or h - 1 of them (``X2 | X1`` first)
        as a list or a ``;``-separated string of specs.
    tail_mass : float (0 < tail_mass < 1)
        Largest share of each branch's posterior mass the grids may leave out.

    Returns
    -------
    MultilevelPosterior
        ``prob_x1`` = ``P[X1 = m+1 | D]``, every level's marginal pmf, the neglected-mass
        bound and the number of pairwise factor evaluations.

    Raises
    ------
    ValueError
        Bad parameters or releases (the message names the parameter).
    GridTooNarrowError
        If the neglected mass cannot be brought below ``tail_mass``.
    """
    params = MultilevelParams.validated(
        rhos=rhos, siblings=siblings, p=p, known=known, prior=prior
    )
    tail_mass = _check_tail_mass(tail_mass)
    xs, ys, shape = params.releases(x_stars, y_stars)
    h, n = params.h, len(xs)
    if n == 0:
        raise ValueError("x_stars and y_stars must hold at least one release, got none")
    base = _structure(params, tail_mass)[2]
    log_branch = np.empty((n, 2))
    neglected = np.empty(n)
    cells = np.empty(n, dtype=np.int64)
    pieces = []  # (release indices, starts per level, pmfs per level)
    pending = np.arange(n)
    attempt = 0
    while pending.size:
        # Estimated pairwise cells per release (the spread of the branch centres is <= 2).
        guess = [2] + [2 * k + 5 for k in _widened(base, attempt)[1:]]
        cells_guess = sum(guess[i - 1] * guess[i] for i in range(1, h))
        chunk = max(1, _CHUNK_CELLS // cells_guess)
        failed = []
        for lo in range(0, pending.size, chunk):
            idx = pending[lo : lo + chunk]
            box = _Box(xs[idx], ys[idx], params, attempt, tail_mass)
            if not box.ok.all() and 2 * max(box.width) + 1 > MAX_WIDTH:
                i = int(np.flatnonzero(~box.ok)[0])
                raise _too_narrow(box, i, xs[idx[i]], ys[idx[i]], tail_mass)
            good = box.ok
            failed.append(idx[~good])
            if not good.any():
                continue
            log_branch[idx[good]] = box.log_branch[good]
            with np.errstate(over="ignore"):
                neglected[idx[good]] = np.exp(
                    _lse(box.log_bound[good], -1) - box.log_total[good]
                )
            cells[idx[good]] = box.cells
            pieces.append(
                (
                    idx[good],
                    [s[good] for s in box.start],
                    [box.marginal(i)[good] for i in range(h)],
                )
            )
        pending = np.concatenate(failed)
        attempt += 1

    if not np.all(np.isfinite(np.logaddexp(log_branch[:, 0], log_branch[:, 1]))):
        i = int(np.flatnonzero(~np.isfinite(np.logaddexp(*log_branch.T)))[0])
        raise ValueError(
            f"release x_stars = {xs[i].tolist()}, y_stars = {ys[i].tolist()} has no possible "
            f"X_1, ..., X_h under the priors ({', '.join(pr.spec for pr in params.priors)})"
        )
    widths = [max(piece[2][i].shape[-1] for piece in pieces) for i in range(h)]
    starts = [np.empty(n, dtype=np.int64) for _ in range(h)]
    pmfs = [np.zeros((n, w)) for w in widths]
    for idx, piece_starts, piece_pmfs in pieces:
        for i in range(h):
            starts[i][idx] = piece_starts[i]
            pmfs[i][idx, : piece_pmfs[i].shape[-1]] = piece_pmfs[i]
    # Renormalise the level marginals (each sums to one up to rounding).
    pmfs = [pmf / pmf.sum(-1, keepdims=True) for pmf in pmfs]
    with np.errstate(invalid="ignore"):
        log_odds = log_branch[:, 1] - log_branch[:, 0]
    return MultilevelPosterior(
        log_odds_x1=log_odds.reshape(shape),
        level_start=tuple(s.reshape(shape) for s in starts),
        level_pmf=tuple(pmf.reshape(*shape, pmf.shape[-1]) for pmf in pmfs),
        neglected_mass=neglected.reshape(shape),
        pairwise_cells=cells.reshape(shape),
        params=params,
        x_stars=xs.reshape(*shape, h),
        y_stars=ys.reshape(*shape, h - 1),
    )


# -- Gibbs sampler ------------------------------------------------------------------------------
class MultilevelDraws(NamedTuple):
    """Draws of :func:`gibbs_sample`: ``x`` (int64) of shape ``(h, chains, draws)``.

    ``x[ℓ - 1]`` holds the draws of ``X_ℓ``; ``x[0]`` is ``m`` or ``m + 1``.
    """

    x: np.ndarray
    known: int

    def level(self, level: int) -> np.ndarray:
        """Draws of ``X_level`` (1..h), shape ``(chains, draws)``."""
        return self.x[level - 1]

    @property
    def target(self) -> np.ndarray:
        """Indicator draws ``1[X1 = m + 1]`` (int64), shape ``(chains, draws)``."""
        return self.x[0] - self.known


def _cdf_rows(log_weight: np.ndarray) -> np.ndarray:
    """Cumulative rows (last axis) scaled to end at exactly 1; all-zero rows stay zero."""
    top = log_weight.max(-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    cdf = np.cumsum(np.exp(log_weight - top), -1)
    total = cdf[..., -1:]
    return np.where(total > 0, cdf / np.where(total > 0, total, 1.0), 0.0)


def _draw_rows(rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inversion: index ``k`` with ``cdf[k-1] <= u < cdf[k]`` for each row (u in [0, 1))."""
    return (rows <= u[:, None]).sum(1)


def gibbs_sample(
    x_stars,
    y_stars,
    *,
    rhos,
    siblings,
    p=0.5,
    known=0,
    prior="improper",
    draws: int = 1000,
    chains: int = 4,
    tune: int = 100,
    rng=None,
    tail_mass: float = DEFAULT_TAIL_MASS,
) -> MultilevelDraws:
    r"""Systematic-scan Gibbs sampler with exact full conditionals for one release.

    Sweep: ``X_1 | X_2``, then ``X_ℓ | X_{ℓ-1}, X_{ℓ+1}`` for ``ℓ = 2..h-1``, then
    ``X_h | X_{h-1}``, each drawn exactly (inversion of tabulated conditionals on the checked
    box of :func:`exact_posterior`, neglected mass < ``tail_mass``). Chains start from
    ``X_1`` uniform on its possible values and ``X_ℓ`` drawn from ``P[X_ℓ | X_{ℓ-1}, D]``
    (so the start is inside the support but not a posterior draw); the first ``tune``
    sweeps are discarded.

    Parameters
    ----------
    x_stars, y_stars : sequence of int
        One release: ``h`` and ``h - 1`` integers.
    rhos, siblings, p, known, prior, tail_mass
        As in :func:`exact_posterior`.
    draws : int (>= 1)
        Recorded sweeps per chain.
    chains : int (>= 1)
        Chains, run together (vectorised).
    tune : int (>= 0)
        Sweeps discarded at the start of every chain.
    rng : numpy.random.Generator or int or None
        Source of randomness (``np.random.default_rng(rng)``).

    Returns
    -------
    MultilevelDraws
        ``x`` of shape ``(h, chains, draws)``.
    """
    params = MultilevelParams.validated(
        rhos=rhos, siblings=siblings, p=p, known=known, prior=prior
    )
    tail_mass = _check_tail_mass(tail_mass)
    draws = check_positive_int(draws, "draws")
    chains = check_positive_int(chains, "chains")
    tune = check_positive_int(tune, "tune", minimum=0)
    rng = as_generator(rng)
    xs, ys, shape = params.releases(x_stars, y_stars)
    if shape != ():
        raise ValueError(
            f"gibbs_sample takes one release (1-d x_stars and y_stars), got batch shape {shape}"
        )
    box = _checked_box(xs, ys, params, tail_mass)
    h = params.h
    phi = [f[0] for f in box.log_phi]
    psi = [None] + [f[0] for f in box.log_psi[1:]]
    psi_up = [None] + [np.ascontiguousarray(psi[i + 1].T) for i in range(1, h - 1)]

    # X1 | X2 = grid[1][j]: P[X1 = m + 1 | k2].
    log_b = phi[0][:, None] + psi[1]  # (2, W_2)
    with np.errstate(invalid="ignore"):
        prob_x1 = np.where(np.isfinite(log_b[1]), _expit(log_b[1] - log_b[0]), 0.0)
    # X_ℓ | neighbours: cdf[i] of shape (W_{i-1} * W_{i+1}, W_i) (top level: W_{h-2} rows);
    # a table too large to keep is replaced by rows computed for each sweep (None).
    cdfs = [None]
    for i in range(1, h):
        table = psi[i] + phi[i][None, :]  # (W_{i-1}, W_i)
        if i < h - 1:
            if table.size * box.width[i + 1] > _TABLE_CELLS:
                cdfs.append(None)
                continue
            table = table[:, None, :] + psi[i + 1].T[None, :, :]  # (W_{i-1}, W_{i+1}, W_i)
        cdfs.append(_cdf_rows(table).reshape(-1, box.width[i]))

    # Initial state: X1 uniform on its possible values, X_ℓ ~ P[X_ℓ | X_{ℓ-1}, D].
    state = np.empty((h, chains), dtype=np.int64)  # grid offsets of X_1 ... X_h
    options = np.flatnonzero(box.feasible)
    state[0] = options[rng.integers(len(options), size=chains)]
    for i in range(1, h):
        start_cdf = _cdf_rows(psi[i] + phi[i][None, :] + box.beta[i][0][None, :])
        state[i] = _draw_rows(start_cdf[state[i - 1]], rng.random(chains))

    out = np.empty((h, chains, draws), dtype=np.int64)
    total = tune + draws
    done = 0
    while done < total:
        steps = min(_SWEEP_BLOCK, total - done)
        u = rng.random((steps, h, chains))
        for t in range(steps):
            state[0] = u[t, 0] < prob_x1[state[1]]
            for i in range(1, h - 1):
                if cdfs[i] is None:
                    rows = _cdf_rows(psi[i][state[i - 1]] + phi[i] + psi_up[i][state[i + 1]])
                else:
                    rows = cdfs[i][state[i - 1] * box.width[i + 1] + state[i + 1]]
                state[i] = _draw_rows(rows, u[t, i])
            state[h - 1] = _draw_rows(cdfs[h - 1][state[h - 2]], u[t, h - 1])
            if done + t >= tune:
                out[:, :, done + t - tune] = state
        done += steps
    starts = np.array([s[0] for s in box.start])
    out += starts[:, None, None]
    return MultilevelDraws(out, params.known)


def to_datatree(samples: MultilevelDraws, *, attrs: dict | None = None):
    """Wrap draws in an ``xarray.DataTree``: group ``posterior`` with ``X1 … Xh`` (chain, draw).

    Parameters
    ----------
    samples : MultilevelDraws
        Output of :func:`gibbs_sample`.
    attrs : dict, optional
        Attributes of the posterior group (e.g. the parameters).
    """
    import xarray as xr

    x = np.asarray(samples.x)
    h, chains, draws = x.shape
    posterior = xr.Dataset(
        {x_var_name(level): (("chain", "draw"), x[level - 1]) for level in range(1, h + 1)},
        coords={"chain": np.arange(chains), "draw": np.arange(draws)},
        attrs={"sampler": "exact Gibbs, systematic scan (inference.multilevel)", **(attrs or {})},
    )
    return xr.DataTree.from_dict({"posterior": posterior})


# -- command-line helpers -----------------------------------------------------------------------
def _split(text, name: str, form: str) -> list[str]:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{name} must be a comma-separated list ({form}), got {text!r}")
    parts = [part.strip() for part in text.split(",")]
    if any(not part for part in parts):
        raise ValueError(f"{name} must be a comma-separated list ({form}) with no empty entry, "
                         f"got {text!r}")
    return parts


def _parse_integer(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {text!r}") from None


def parse_multilevel_args(rhos_text: str, siblings_text: str, stars_text: str) -> dict:
    """Parse the command-line lists of the ``h``-level model.

    Parameters
    ----------
    rhos_text : str
        ``"R1,...,Rh"`` with each entry a number > 0 or ``census:LEVEL``, or ``"census:N"``
        (the bottom ``N`` Census levels, 2 <= N <= 6); h >= 2.
    siblings_text : str
        ``"d2,...,dh"``: ``h - 1`` integers >= 1.
    stars_text : str
        ``"x1*,...,xh*,y1*,...,y(h-1)*"``: ``2h - 1`` integers (may be negative).

    Returns
    -------
    dict
        ``{"rhos": [...], "siblings": [...], "x_stars": [...], "y_stars": [...]}``, the
        keyword arguments of :func:`posterior_summary` (and of :func:`exact_posterior`).

    Raises
    ------
    ValueError
        One line naming ``rhos``, ``siblings`` or ``stars`` and the expected form.
    """
    rho_form = "R1,...,Rh with numbers > 0 or census:LEVEL, or census:N"
    parts = _split(rhos_text, "rhos", rho_form)
    if len(parts) == 1 and parts[0].startswith("census:") and parts[0][7:].isdigit():
        n_levels = int(parts[0][7:])
        if not 2 <= n_levels <= 6:
            raise ValueError(f"rhos: census:N needs 2 <= N <= 6, got {parts[0]!r}")
        rhos = census_rhos(n_levels)
    else:
        rhos = [parse_rho(part, f"rhos: rho_{i + 1}") for i, part in enumerate(parts)]
    h = len(rhos)
    if h < 2:
        raise ValueError(f"rhos must have at least 2 entries (h >= 2 levels; {rho_form}), "
                         f"got {rhos_text!r}")
    d_parts = _split(siblings_text, "siblings", f"d2,...,dh: h - 1 = {h - 1} integers >= 1")
    if len(d_parts) != h - 1:
        raise ValueError(f"siblings must have h - 1 = {h - 1} entries d2,...,dh, "
                         f"got {len(d_parts)} ({siblings_text!r})")
    siblings = []
    for i, part in enumerate(d_parts):
        value = _parse_integer(part, f"siblings: d_{i + 2}")
        siblings.append(check_positive_int(value, f"siblings: d_{i + 2}"))
    star_form = f"x1*,...,x{h}*,y1*,...,y{h - 1}*: 2h - 1 = {2 * h - 1} integers"
    s_parts = _split(stars_text, "stars", star_form)
    if len(s_parts) != 2 * h - 1:
        raise ValueError(f"stars must have 2h - 1 = {2 * h - 1} entries ({star_form}), "
                         f"got {len(s_parts)} ({stars_text!r})")
    names = [f"x{i + 1}*" for i in range(h)] + [f"y{i + 1}*" for i in range(h - 1)]
    stars = [_parse_integer(part, f"stars: {nm}") for part, nm in zip(s_parts, names, strict=True)]
    return {"rhos": rhos, "siblings": siblings, "x_stars": stars[:h], "y_stars": stars[h:]}


def _number(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _pmf_stats(values: np.ndarray, pmf: np.ndarray) -> dict:
    mean = float((values * pmf).sum())
    cdf = np.cumsum(pmf)

    def quantile(q):
        return int(values[min(int((cdf < q - 1e-12).sum()), len(values) - 1)])

    return {
        "mean": mean,
        "sd": float(np.sqrt((pmf * (values - mean) ** 2).sum())),
        "q025": quantile(0.025),
        "median": quantile(0.5),
        "q975": quantile(0.975),
    }


def _draw_stats(x: np.ndarray) -> dict:
    from dprisk.inference.sampling import chain_diagnostics

    flat = x.ravel()
    diagnostics = chain_diagnostics(x)  # constant chain: mcse 0, R-hat/ESS undefined (None)
    return {
        "mean": float(flat.mean()),
        "sd": float(flat.std()),
        "q025": int(np.quantile(flat, 0.025, method="inverted_cdf")),
        "median": int(np.quantile(flat, 0.5, method="inverted_cdf")),
        "q975": int(np.quantile(flat, 0.975, method="inverted_cdf")),
        "mcse_mean": diagnostics["mcse"],
        "ess_bulk": _number(diagnostics["ess_bulk"]),
        "r_hat": _number(diagnostics["r_hat"]),
    }


def posterior_summary(
    *,
    rhos,
    siblings,
    x_stars,
    y_stars,
    p=0.5,
    known=0,
    prior="improper",
    method: str = "exact",
    draws: int = 5000,
    chains: int = 4,
    random_seed=None,
    tail_mass: float = DEFAULT_TAIL_MASS,
) -> dict:
    r"""Posterior summary of one release of the ``h``-level model (for ``dprisk posterior``).

    Parameters
    ----------
    rhos, siblings, x_stars, y_stars, p, known, prior, tail_mass
        As in :func:`exact_posterior` (one release).
    method : {"exact", "gibbs", "pymc"}
        Forward–backward, the exact Gibbs sampler, or ``pm.sample`` on
        :func:`dprisk.models.multilevel.build_multilevel_model` (``cores=1``).
    draws, chains : int (>= 1)
        Draws per chain and chains of the sampling methods.
    random_seed : int, optional
        Seed of the sampling methods.

    Returns
    -------
    dict
        Exactly ``{"posterior": P[X1 = m+1 | D], "risk": posterior / p, "level_posteriors":
        {"1": {...}, ..., "h": {...}}, "method": method}``. Each level entry holds the
        posterior ``mean``, ``sd``, ``q025``, ``median``, ``q975`` of ``X_ℓ``; the sampling
        methods add ``mcse_mean``, ``ess_bulk`` and ``r_hat`` (ArviZ; ``None`` for a constant
        chain). The MCSE of ``posterior`` is ``level_posteriors["1"]["mcse_mean"]``
        (``X1 = m + 1[target]``).

    Raises
    ------
    ValueError
        Bad parameters or an unknown method (the message lists the methods).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    params = MultilevelParams.validated(
        rhos=rhos, siblings=siblings, p=p, known=known, prior=prior
    )
    h = params.h
    if method != "exact":
        as_generator(random_seed, "random_seed")  # a bad seed: one line naming random_seed
    if method == "exact":
        post = exact_posterior(
            x_stars, y_stars, rhos=params.rhos, siblings=params.siblings, p=params.p,
            known=params.known, prior=list(params.priors), tail_mass=tail_mass,
        )
        if post.prob_x1.shape != ():
            raise ValueError("x_stars and y_stars must describe one release (1-d lists)")
        posterior = float(post.prob_x1)
        levels = {
            str(level): _pmf_stats(post.level_values(level), post.level_pmf[level - 1])
            for level in range(1, h + 1)
        }
    else:
        if method == "gibbs":
            samples = gibbs_sample(
                x_stars, y_stars, rhos=params.rhos, siblings=params.siblings, p=params.p,
                known=params.known, prior=list(params.priors), draws=draws, chains=chains,
                rng=random_seed, tail_mass=tail_mass,
            )
            x = samples.x
        else:
            x = _pymc_draws(params, x_stars, y_stars, draws, chains, random_seed)
        posterior = float((x[0] == params.known + 1).mean())
        levels = {str(level): _draw_stats(x[level - 1]) for level in range(1, h + 1)}
    return {
        "posterior": posterior,
        "risk": posterior / params.p,
        "level_posteriors": levels,
        "method": method,
    }


def _pymc_draws(params, x_stars, y_stars, draws, chains, random_seed) -> np.ndarray:
    """``pm.sample`` draws of ``X1 … Xh`` as an array ``(h, chains, draws)``."""
    import pymc as pm

    from dprisk.models.multilevel import build_multilevel_model

    draws = check_positive_int(draws, "draws")
    chains = check_positive_int(chains, "chains")
    model = build_multilevel_model(
        x_stars, y_stars, rhos=params.rhos, siblings=params.siblings, p=params.p,
        known=params.known, prior=list(params.priors),
    )
    idata = pm.sample(
        draws=draws, chains=chains, cores=1, random_seed=random_seed, model=model,
        progressbar=False, compute_convergence_checks=False,
    )
    post = idata.posterior
    return np.stack(
        [np.asarray(post[x_var_name(level)].values) for level in range(1, params.h + 1)]
    )
