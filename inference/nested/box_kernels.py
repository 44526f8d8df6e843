r"""Grid boxes of the ``h``-level exact posterior: windows, factors, messages, neglected mass.

Kernels of :mod:`dprisk.inference.nested.exact` and :mod:`dprisk.inference.nested.gibbs`
(validated :class:`dprisk.models.scenario.Scenario` and int64 releases in, no checks).

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
:meth:`dprisk.models.scenario.Scenario.level_bounds`), bounded by the geometric tail bound
:math:`\sum_{k \ge s} e^{-a (k - c)^2} \le e^{-a t^2} / (1 - e^{-2 a t})`, ``t = s - c``
(:func:`dprisk.models.numerics.log_gauss_tail`). Windows are centred on the envelope centres
``c`` with half-width from the envelope precision ``a_ℓ`` (which depends only on the ρ's and
d's), slid inside the supports, and widened (``K -> 2K + 1``) until this bound is below
``tail_mass`` times the branch's mass on the box, for each possible branch; otherwise they
raise :class:`dprisk.inference.kernels.table_kernels.GridTooNarrowError`, or a ``ValueError``
naming the prior when its declared ``log_weight_max`` is what they cannot close
(:func:`check_declared_bound_closes`).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dprisk.inference.kernels.table_kernels import MAX_WINDOW, GridTooNarrowError
from dprisk.models.mechanism.discrete_gaussian import support_halfwidth_kernel
from dprisk.models.numerics import dg_log_normalizer, log_gauss_tail, logsumexp
from dprisk.models.scenario import Scenario
from dprisk.runtime.memory_limit import check_memory

__all__ = [
    "BOX_CELL_BYTES",
    "MAX_WIDTH",
    "NESTED_RHO_MAX",
    "Box",
    "at_widest",
    "check_declared_bound_closes",
    "check_nested_rhos",
    "check_priors_where_bound_reaches",
    "checked_box",
    "grid_structure",
    "too_narrow",
    "widened",
]

#: Largest window (values per level and release) before giving up.
MAX_WIDTH = 2048
#: Bytes per pairwise cell ``(k_{l-1}, k_l)`` of a box and release while its factors and
#: messages are built (the pair factors kept, one level's temporaries; measured peak about
#: 31 bytes at h = 3, rounded up).
BOX_CELL_BYTES = 48
#: Largest rho of a level the nested-levels tables take (measured exact to 1e20; above about
#: 1e30 the windows fail): larger ones are refused, stating the range.
NESTED_RHO_MAX = 1e15


def check_nested_rhos(params: Scenario) -> None:
    """Refuse a level's rho above :data:`NESTED_RHO_MAX` (``ValueError`` naming ``rhos``)."""
    for level, rho in enumerate(params.rhos, start=1):
        if rho > NESTED_RHO_MAX:
            raise ValueError(
                f"rhos: rho_{level} = {rho!r} is above {NESTED_RHO_MAX:g}, where the "
                f"nested-levels tables lose accuracy (allowed range: 0 < rho_l <= "
                f"{NESTED_RHO_MAX:g} for the nested-levels posterior)"
            )


def _level_tails(t: np.ndarray, precisions: np.ndarray) -> np.ndarray:
    """:func:`dprisk.models.numerics.log_gauss_tail` of ``t[:, i]`` at precision ``a_i``.

    ``t`` has shape (R, h - 1, 2), ``precisions`` shape (h - 1,).
    """
    out = np.empty(t.shape)
    for i, precision in enumerate(precisions):
        out[:, i] = log_gauss_tail(t[:, i], float(precision))
    return out


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


def _envelopes(xs: np.ndarray, ys: np.ndarray, params: Scenario):
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


def grid_structure(params: Scenario, tail_mass: float):
    """Per-parameter constants: branch bounds, feasibility, envelope precisions, half-widths.

    Cached per ``(params, tail_mass)`` when the priors are hashable.
    """
    try:
        return _cached_structure(params, tail_mass)
    except TypeError:  # a user prior that defines __eq__ without __hash__
        return _compute_structure(params, tail_mass)


@functools.lru_cache(maxsize=64)
def _cached_structure(params: Scenario, tail_mass: float):
    return _compute_structure(params, tail_mass)


def _compute_structure(params: Scenario, tail_mass: float):
    bounds = tuple(params.level_bounds(params.known + b) for b in (0, 1))
    feasible = np.array([bd is not None for bd in bounds])
    zeros = np.zeros((1, params.h), dtype=np.int64)
    precisions = _envelopes(zeros, zeros[:, :-1], params)[0]
    share = tail_mass * 1e-3 / params.h
    halfwidths = [0] + [int(support_halfwidth_kernel(np.asarray(a, dtype=float), share)) + 1
                        for a in precisions]
    # Support ends per (level index 1..h-1, branch); impossible branches never count.
    lo = np.full((params.h - 1, 2), np.inf)
    hi = np.full((params.h - 1, 2), -np.inf)
    for b, bd in enumerate(bounds):
        if bd is not None:
            lo[:, b] = [bd[i][0] for i in range(1, params.h)]
            hi[:, b] = [np.inf if bd[i][1] is None else bd[i][1] for i in range(1, params.h)]
    return bounds, feasible, halfwidths, lo, hi


class Box:
    """Log factors, messages and the neglected-mass bound of R releases on one grid box.

    Level indices ``i = 0..h-1`` (level ``ℓ = i + 1``). ``start[i]`` (R,), ``width[i]``;
    ``log_phi[i]`` (R, W_i); ``log_psi[i]`` (R, W_{i-1}, W_i) for ``i >= 1``; forward
    ``alpha[i]`` and backward ``beta[i]`` messages (R, W_i); ``log_branch`` (R, 2) the
    branch masses on the box; ``log_bound`` (R, 2) the bound of each branch's mass outside
    it; ``ok`` (R,) whether every possible branch passes the ``tail_mass`` check.
    """

    def __init__(self, xs, ys, params: Scenario, attempt: int, tail_mass: float):
        check_nested_rhos(params)
        h = params.h
        n = len(xs)
        self.params = params
        _, feasible, base, lo_end, hi_end = grid_structure(params, tail_mass)
        halfwidths = widened(base, attempt)
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
        # A tiny rho makes the windows wide before any widening: refused before allocating.
        check_memory(float(BOX_CELL_BYTES) * n * self.cells, parameter="rhos, siblings",
                     what=f"the nested-levels windows of widths {widths} for {n} release(s)")

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
            alpha.append(logsumexp(alpha[-1][:, :, None] + self.log_psi[i], 1) + self.log_phi[i])
        beta = [None] * h
        beta[h - 1] = np.zeros((n, widths[h - 1]))
        for i in range(h - 1, 0, -1):
            beta[i - 1] = logsumexp(self.log_psi[i] + (self.log_phi[i] + beta[i])[:, None, :], 2)
        self.alpha, self.beta = alpha, beta
        self.log_branch = alpha[0] + beta[0]

        # Bound of each branch's mass outside the box, all levels at once: (R, h - 1, 2).
        first = np.stack(starts[1:], 1)[:, :, None]
        end = first + np.array(widths[1:])[None, :, None]
        left = np.where(
            lo_end[None] < first, _level_tails(env_c - (first - 1), env_a), -np.inf
        )
        right = np.where(hi_end[None] >= end, _level_tails(end - env_c, env_a), -np.inf)
        self.log_bound = np.where(
            feasible, logsumexp(env_s + np.logaddexp(left, right), 1), -np.inf
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


def widened(base: list[int], attempt: int) -> list[int]:
    """The half-widths after ``attempt`` widenings ``K -> 2K + 1``."""
    out = list(base)
    for _ in range(attempt):
        out = [2 * k + 1 for k in out]
    return out


def check_priors_where_bound_reaches(box: Box, index: int, xs, ys, tail_mass: float) -> None:
    r"""Refuse a prior whose weights pass its ``log_weight_max`` where the bound must reach.

    The neglected-mass bound assumes ``w_ℓ ≤ e^{L_ℓ}`` everywhere. For release ``index``,
    whose bound at the widest box still exceeds ``tail_mass``, the window of level ``ℓ`` would
    have to reach ``|k_ℓ - c_ℓ| = t_ℓ``, :math:`a_\ell t_\ell^2 = s_\ell - \log M - \log`
    ``tail_mass`` (envelope ``(a_ℓ, c_ℓ, s_ℓ)``, ``M`` the branch's mass on the box), capped
    at the two-level method's widest half-width ``MAX_WINDOW // 2``. Each prior's log weight
    (:meth:`dprisk.models.priors.base.X2Prior.log_weight`, which refuses NaN or a value
    above ``log_weight_max``) is evaluated at every ``k_ℓ`` with ``|k_ℓ - c_ℓ| <= t_ℓ``,
    ``k_ℓ >= k_{ℓ-1}``, for ``k_{ℓ-1}`` the branch's ``X_1`` (``ℓ = 2``) or the rounded
    envelope centre of the level below: the values the two-level method's window evaluates
    for ``h = 2``. Weights growing faster than the likelihood falls (a posterior without a
    finite mass) are then refused as the two-level form refuses them, not reported as a grid
    too narrow.
    """
    params = box.params
    env_a, env_c, env_s = _envelopes(xs[None], ys[None], params)
    reach_max = MAX_WINDOW // 2
    for i in range(1, params.h):
        prior = params.priors[i - 1]
        for b in np.flatnonzero(box.feasible):
            gap = env_s[0, i - 1, b] - box.log_branch[index, b] - math.log(tail_mass)
            if not gap > 0:
                continue
            reach = reach_max if not math.isfinite(gap) else min(  # no mass on the box: inf
                reach_max, math.ceil(math.sqrt(gap / env_a[i - 1])) + 1)
            lower = params.known + int(b) if i == 1 else round(float(env_c[0, i - 2, b]))
            centre = math.floor(float(env_c[0, i - 1, b]))
            upper = np.arange(max(lower, centre - reach), max(lower, centre + reach) + 1)
            prior.log_weight(upper, np.int64(lower))


def check_declared_bound_closes(box: Box, index: int, xs, ys, tail_mass: float) -> None:
    r"""Refuse priors whose declared ``log_weight_max`` the widest windows cannot close.

    The bound of release ``index``'s mass outside ``box`` carries
    :math:`e^{L}`, ``L = Σ_ℓ L_ℓ`` the sum of the priors' ``log_weight_max``, as a factor
    (module docstring), so the box passes the ``tail_mass`` check for every sum up to

    .. math::

        L_{\text{closed}} = L + \log(\text{tail\_mass})
            - \max_{b\ \text{possible}} (\log B_b - \log M_b)

    (``B_b`` the bound, ``M_b`` the branch's mass on the box, the latter free of ``L``).
    When ``box`` is the widest and ``0 <= L_closed < L`` the declared bound, not the weights
    near the data, is what the windows cannot close (at ``L = 0`` they would): a
    ``ValueError`` naming the priors says which bound they do close and what to do, as the
    two-level form refuses a bad ``log_weight_max``. At ``L_closed < 0`` (the windows fail
    even for weights at most 1) nothing is raised; :func:`too_narrow` reports the grid.
    """
    params = box.params
    declared = params.log_weight_max
    with np.errstate(invalid="ignore"):
        excess = (box.log_bound[index] - box.log_branch[index])[box.feasible].max()
    closed = declared + math.log(tail_mass) - float(excess)
    if not (declared > 0 and 0 <= closed < declared):
        return
    distinct = list({id(pr): pr for pr in params.priors}.values())
    if len(distinct) == 1:  # one prior at every level: its own bound, L / (h - 1)
        levels = params.h - 1
        named = f"{distinct[0].spec!r}: log_weight_max = {declared / levels:g}"
        allowed = f"log_weight_max <= {math.floor(10 * closed / levels) / 10:g}"
    else:
        named = (f"({', '.join(pr.spec for pr in params.priors)}): log_weight_max summing "
                 f"to {declared:g}")
        allowed = f"log_weight_max summing to at most {math.floor(10 * closed) / 10:g}"
    raise ValueError(
        f"prior {named} is too loose for the nested-levels windows (widened only up to "
        f"{MAX_WIDTH} values per level) at rhos = {list(params.rhos)}: their tail bound of "
        f"release x_stars = {xs.tolist()}, y_stars = {ys.tolist()} stays above tail_mass = "
        f"{tail_mass:g} (allowed range here: {allowed}); declare a tighter log_weight_max "
        f"(the largest log weight), use the two-level form for two levels, or larger rhos"
    )


def too_narrow(box: Box, index: int, xs, ys, tail_mass: float) -> GridTooNarrowError:
    """The error for release ``index`` of ``box`` whose neglected mass stays too large.

    First refuses a prior that breaks its bound where the windows would need to reach
    (:func:`check_priors_where_bound_reaches`), then priors whose declared bound the windows
    cannot close (:func:`check_declared_bound_closes`), each a ``ValueError`` naming it.
    """
    check_priors_where_bound_reaches(box, index, xs, ys, tail_mass)
    check_declared_bound_closes(box, index, xs, ys, tail_mass)
    with np.errstate(invalid="ignore", over="ignore"):
        share = float(np.nanmax(np.exp(box.log_bound[index] - box.log_branch[index])))
    return GridTooNarrowError(
        f"multi-level grids of widths {box.width} leave out up to {share:.3g} of the posterior "
        f"mass for release x_stars = {xs.tolist()}, y_stars = {ys.tolist()}, above tail_mass = "
        f"{tail_mass:g}; windows are widened (doubled) only up to {MAX_WIDTH} values per "
        f"level, and doubling the widest ({max(box.width)} values) would pass that"
    )


def at_widest(box: Box) -> bool:
    """Whether widening ``box`` once more would exceed :data:`MAX_WIDTH` values per level."""
    return 2 * max(box.width) + 1 > MAX_WIDTH


def checked_box(xs, ys, params, tail_mass: float) -> Box:
    """The box for a few releases, widened until every release passes the check."""
    attempt = 0
    while True:
        box = Box(xs, ys, params, attempt, tail_mass)
        if box.ok.all():
            return box
        if at_widest(box):
            i = int(np.flatnonzero(~box.ok)[0])
            raise too_narrow(box, i, xs[i], ys[i], tail_mass)
        attempt += 1
