r"""Exact posterior of the two-level (block, block-group) model by enumeration over a k2 grid.

The joint posterior (paper §3.2, supplement S3; DESIGN.md §3), for k1 in {m, m+1}:

.. math::

    \pi(k_1, k_2) \propto P[X_1 = k_1]\, w(k_2 \mid k_1)\,
        e^{-\rho_1 (x_1^* - k_1)^2}\, e^{-\rho_2 (x_2^* - k_2)^2}\,
        e^{-(\rho_1/d)(y_1^* - (k_2 - k_1))^2},

with ``w`` the prior of X2 given X1 (:mod:`dprisk.models.priors`; zero unless ``k2 >= k1``) and
``P[X1 = m + 1] = p``. Completing the square in ``k2`` (``A = rho2 + rho1/d``):

.. math::

    \log \pi(k_1, k_2) = \beta_{k_1} - A (k_2 - c_{k_1})^2 + \log w(k_2 \mid k_1),
    \qquad c_{k_1} = \frac{\rho_2 x_2^* + (\rho_1/d)(y_1^* + k_1)}{A},

    \beta_{k_1} = \log P[X_1 = k_1] - \rho_1 (x_1^* - k_1)^2
        - \frac{\rho_2 \rho_1 / d}{A} (x_2^* - y_1^* - k_1)^2,

so ``X2 | X1 = k1`` is the discrete Gaussian DG(c_{k1}, 1/(2A)) (paper §3.2, equation
labelled ``eq:X2fc``) times the prior weight. Both branches are summed on one window of
``W = 2K + 3`` consecutive integers per release, placed around ``c_m`` and slid inside the
prior's support; ``K`` comes from :func:`dprisk.models.discrete_gaussian.support_halfwidth` at
precision ``A``.

No silent truncation: for each branch the mass outside the window is bounded by the
geometric tail bound of the Gaussian factor times ``exp(prior.log_weight_max)``,

.. math::

    \sum_{k \ge s} e^{-A (k - c)^2} \le \frac{e^{-A t^2}}{1 - e^{-2 A t}}, \quad t = s - c > 0,

and the window is doubled until that bound is below ``tail_mass`` times the branch's mass
inside the window (so the neglected share of every conditional ``X2 | X1 = k1``, and hence of
the joint posterior, is below ``tail_mass``). A window fixed by the caller (``halfwidth=``)
that fails the check raises :class:`GridTooNarrowError`.

Floating point: counts go up to 2**53, so the table is not evaluated from ``beta`` and
``c`` directly (at ``known = 1e7`` or ``y1* = 1e7`` they are ~1e7 and ~1e13 and their
rounding would swamp the log-odds). With ``u = x1* - m``, ``v = x2* - m``, ``w = y1*``,
``j = k2 - m``, ``b = k1 - m`` and a reference ``r`` (the ``j`` of the window and the
prior's support nearest the centre ``c_m - m``), each release's log joint is stored relative
to the per-release constant ``beta_m - A (r - gamma)^2 + max(Delta beta, 0)``:

.. math::

    \log\pi(m + b, m + j) - \text{const} = b\,\Delta\beta - \max(\Delta\beta, 0)
        - A\,\bigl((j - r) - b\delta\bigr)\bigl((j + r) - 2\gamma - b\delta\bigr)
        + \log w(m + j \mid m + b),

    \gamma = c_m - m = \frac{\rho_2 v + (\rho_1/d) w}{A}, \quad
    \delta = c_{m+1} - c_m = \frac{\rho_1/d}{A}, \quad
    \Delta\beta = \beta_{m+1} - \beta_m = \operatorname{logit}(p) + \rho_1 (2u - 1)
        + \frac{\rho_2 \rho_1/d}{A}\,(2 (v - w) - 1),

which involves only differences of integers and small quantities, so the results shift
exactly with ``m`` (bitwise, for a shift-invariant prior) and keep their relative accuracy
for releases far in the tails. The constant cancels from every normalised quantity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dprisk.models.checks import check_count, check_positive_int, check_probability
from dprisk.models.discrete_gaussian import support_halfwidth
from dprisk.models.priors import ImproperUniform, X2Prior
from dprisk.models.two_level import TwoLevelParams, _scalar

__all__ = [
    "DEFAULT_TAIL_MASS",
    "GridTooNarrowError",
    "HierarchicalPosterior",
    "JointTable",
    "TwoLevelParams",
    "exact_posterior",
    "joint_log_table",
    "posterior_x1",
]

#: Default bound on the posterior mass a k2 grid may leave out.
DEFAULT_TAIL_MASS = 1e-12
#: Largest window (k2 values per release) before giving up.
MAX_WINDOW = 2**22
#: Target number of grid cells per vectorised chunk of releases.
_CHUNK_CELLS = 2**17


class GridTooNarrowError(RuntimeError):
    """The k2 grid leaves out more posterior mass than ``tail_mass`` allows."""


def _logsumexp(a: np.ndarray) -> np.ndarray:
    """``log(sum(exp(a), -1))`` with ``-inf`` for all ``-inf`` rows, no warnings."""
    top = a.max(-1)
    shift = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(a - shift[..., None]).sum(-1)) + shift


def _log_gauss_tail(t: np.ndarray, excess: np.ndarray, a: np.ndarray, precision: float):
    r"""Upper bound of ``log sum_{i >= 0} exp(-A (t + i)^2) + A a^2``, finite for every real ``t``.

    ``excess`` is ``t^2 - a^2``, supplied in factored form by the caller (``a`` is the offset of
    the reference point from the centre, see the module docstring). For ``t > 0`` the
    geometric bound ``exp(-A t^2) / (1 - exp(-2 A t))``; always at most the whole sum over all
    integers, ``1 + sqrt(pi / A)``.
    """
    whole = math.log1p(math.sqrt(math.pi / precision)) + precision * a**2
    t_pos = np.maximum(t, 1e-300)
    with np.errstate(divide="ignore", over="ignore"):
        geometric = -precision * excess - np.log(-np.expm1(-2.0 * precision * t_pos))
    return np.where(t > 0, np.minimum(geometric, whole), whole)


def _relative_release(params: TwoLevelParams, x1s, x2s, y1s):
    r"""``(u, gamma, delta_beta)`` of each release, in coordinates relative to ``known``.

    ``u = x1* - m``; ``gamma = c_m - m = (rho2 (x2* - m) + (rho1/d) y1*) / A``;
    ``delta_beta = beta_{m+1} - beta_m = logit(p) + rho1 (2u - 1) + s (2 (x2* - y1* - m) - 1)``
    with ``s = rho2 (rho1/d) / A`` (module docstring). Integer differences are formed in int64
    before the conversion to float, so they are exact.
    """
    m = params.known
    u = (np.asarray(x1s, dtype=np.int64) - m).astype(float)
    v = (np.asarray(x2s, dtype=np.int64) - m).astype(float)
    w = np.asarray(y1s, dtype=np.int64).astype(float)
    rho1_d = params.rho1 / params.d
    gamma = (params.rho2 * v + rho1_d * w) / params.precision
    shrink = params.rho2 * rho1_d / params.precision
    logit_p = math.log(params.p) - math.log1p(-params.p)
    delta_beta = logit_p + params.rho1 * (2.0 * u - 1.0) + shrink * (2.0 * (v - w) - 1.0)
    return u, gamma, delta_beta


def _branch_offset(b: int, delta_beta):
    """``b delta_beta - max(delta_beta, 0)``: zero for the branch that ``delta_beta`` favours.

    Subtracting ``max(delta_beta, 0)`` from both branches (a per-release constant) keeps the
    favoured branch's values free of the rounding of a large ``delta_beta``.
    """
    return np.minimum(delta_beta, 0.0) if b else -np.maximum(delta_beta, 0.0)


def _relative_log_joint(params: TwoLevelParams, b: int, gamma, delta_beta, r, j_minus_r):
    r"""``log pi(m + b, m + j)`` without the prior weight, up to a per-release constant.

    .. math:: b\,\Delta\beta - \max(\Delta\beta, 0)
              - A\,((j - r) - b\delta)\,((j + r) - 2\gamma - b\delta)

    i.e. minus ``beta_m - A (r - gamma)^2 + max(delta_beta, 0)``. ``r`` and ``j_minus_r`` are
    integers (``r`` the reference, e.g. the window's ``j`` nearest the centre); see the
    module docstring.
    """
    step = b * (params.rho1 / params.d) / params.precision
    j_plus_r = (2 * np.asarray(r, dtype=np.int64) + j_minus_r).astype(float)
    offset = np.asarray(j_minus_r, dtype=float) - step
    quadratic = params.precision * offset * (j_plus_r - 2.0 * gamma - step)
    return _branch_offset(b, delta_beta) - quadratic


@dataclass(frozen=True)
class JointTable:
    r"""The unnormalised log joint posterior of a batch of releases on a k2 window.

    Attributes
    ----------
    k2_start : ndarray of int64, shape (R,)
        First k2 of each release's window; the window is ``k2_start + arange(W)``.
    log_joint : ndarray, shape (R, 2, W)
        ``log pi(k1, k2)`` for ``k1 = known + (0, 1)`` (``-inf`` off the support), up to a
        per-release constant shared by both ``k1`` (module docstring, "Floating point").
    log_branch_mass : ndarray, shape (R, 2)
        ``log sum_k2 pi(k1, k2)`` over the window (same constant).
    log_neglected : ndarray, shape (R, 2)
        Log of a bound on ``sum pi(k1, k2)`` over the branch's support outside the window
        (same constant).
    feasible : ndarray of bool, shape (2,)
        Whether X1 = known + (0, 1) leaves a possible X2 under the prior.
    """

    k2_start: np.ndarray
    log_joint: np.ndarray
    log_branch_mass: np.ndarray
    log_neglected: np.ndarray
    feasible: np.ndarray

    @property
    def width(self) -> int:
        """``W``, the number of k2 values per release."""
        return self.log_joint.shape[-1]

    @property
    def neglected_share(self) -> np.ndarray:
        """Per release and branch: bound of neglected / included mass (0 for empty branches)."""
        with np.errstate(invalid="ignore"):
            share = np.exp(self.log_neglected - self.log_branch_mass)
        return np.where(self.feasible, share, 0.0)


def _window_table(x1s, x2s, y1s, params: TwoLevelParams, halfwidth: int) -> JointTable:
    """The joint table with a fixed half-width ``K`` (window ``W = 2K + 3``), no check.

    Evaluated in coordinates relative to ``known`` (see the module docstring).
    """
    prior = params.prior
    precision = params.precision
    width = 2 * halfwidth + 3
    known = params.known
    k1_values = (known, known + 1)
    supports = [prior.branch_support(k1) for k1 in k1_values]
    feasible = np.array([s is not None for s in supports])
    lower = min(s[0] for s in supports if s is not None)
    uppers = [s[1] for s in supports if s is not None]
    upper = None if any(u is None for u in uppers) else max(uppers)

    _, gamma, delta_beta = _relative_release(params, x1s, x2s, y1s)
    start = known + np.floor(gamma).astype(np.int64) - halfwidth
    if upper is not None:
        start = np.minimum(start, upper - width + 1)
    start = np.maximum(start, lower)
    first = start - known  # the window's first j = k2 - known
    # Reference point r: the value of the window and of the prior's support nearest the
    # centre c_m, so that the stored values are small where the mass is (also when the window
    # is pushed against the support).
    ref_hi = first + width - 1
    if upper is not None:
        ref_hi = np.maximum(np.minimum(ref_hi, upper - known), first)
    ref = np.clip(np.floor(gamma).astype(np.int64), first, ref_hi)
    a = ref - gamma
    offsets = np.arange(width)
    k2 = start[:, None] + offsets
    j_minus_ref = (first - ref)[:, None] + offsets

    n = x1s.shape[0]
    log_joint = np.full((n, 2, width), -np.inf)
    log_mass = np.full((n, 2), -np.inf)
    log_neglected = np.full((n, 2), -np.inf)
    for b, k1 in enumerate(k1_values):
        if supports[b] is None:
            continue
        table = _relative_log_joint(params, b, gamma[:, None], delta_beta[:, None],
                                    ref[:, None], j_minus_ref)
        table += prior.log_weight(k2, k1)
        log_joint[:, b] = table
        log_mass[:, b] = _logsumexp(table)
        # Bound the mass of the branch's support outside [start, start + W - 1]: the
        # Gaussian tails beyond, with t their distance from c_{k1} = known + gamma + b delta,
        # and t^2 - a^2 = (t + a)(t - a) formed from integers and small quantities.
        step = b * (params.rho1 / params.d) / precision
        branch_shift = _branch_offset(b, delta_beta) + prior.log_weight_max
        lo_b, hi_b = supports[b]
        parts = []
        left = start > lo_b
        if left.any():
            t = (gamma - first + 1.0) + step  # c_{k1} - (start - 1)
            excess = ((ref - first + 1) + step) * ((2.0 * gamma - (ref + first - 1)) + step)
            parts.append(np.where(left, _log_gauss_tail(t, excess, a, precision), -np.inf))
        right = np.ones(n, bool) if hi_b is None else hi_b >= start + width
        if np.any(right):
            t = (first + width - gamma) - step  # start + W - c_{k1}
            excess = (((first + width + ref) - 2.0 * gamma) - step) * (
                (first + width - ref) - step)
            parts.append(np.where(right, _log_gauss_tail(t, excess, a, precision), -np.inf))
        if parts:
            tail = parts[0] if len(parts) == 1 else np.logaddexp(parts[0], parts[1])
            log_neglected[:, b] = branch_shift + tail
    return JointTable(start, log_joint, log_mass, log_neglected, feasible)


def _initial_halfwidth(precision: float, tail_mass: float) -> int:
    # P[|X - mu| > K] < tail_mass / 1000 for an integer centre; +1 for the fractional offset
    # of the centre and the second branch's centre (at most 1 higher).
    return int(support_halfwidth(precision, tail_mass * 1e-3)) + 1


def _checked_table(x1s, x2s, y1s, params, tail_mass, halfwidth) -> JointTable:
    fixed = halfwidth is not None
    k = halfwidth if fixed else _initial_halfwidth(params.precision, tail_mass)
    log_tail_mass = math.log(tail_mass)
    while True:
        table = _window_table(x1s, x2s, y1s, params, k)
        with np.errstate(invalid="ignore"):
            excess = table.log_neglected - table.log_branch_mass >= log_tail_mass
        bad = (excess & table.feasible).any(-1)
        if not bad.any():
            return table
        if fixed or 2 * (2 * k + 1) + 3 > MAX_WINDOW:
            i = int(np.flatnonzero(bad)[0])
            share = float(np.nanmax(table.neglected_share[i]))
            raise GridTooNarrowError(
                f"k2 grid of {table.width} values (halfwidth {k}) leaves out up to "
                f"{share:.3g} of the posterior mass for release (x1*, x2*, y1*) = "
                f"({x1s[i]}, {x2s[i]}, {y1s[i]}), above tail_mass = {tail_mass:g}"
                + ("" if fixed else f"; the window cannot grow beyond {MAX_WINDOW}")
            )
        k = 2 * k + 1


def joint_log_table(
    x1_star,
    x2_star,
    y1_star,
    *,
    rho1,
    rho2,
    d,
    p=0.5,
    known=0,
    prior: X2Prior | str = ImproperUniform(),
    tail_mass: float = DEFAULT_TAIL_MASS,
    halfwidth: int | None = None,
) -> JointTable:
    """Log joint posterior table of releases on a checked k2 window (one batch, one width).

    The releases are flattened to one dimension ``R``. Used by :func:`exact_posterior` and
    by the Gibbs sampler's conditional tables. See the module docstring for the window and
    the neglected-mass check.

    Raises
    ------
    GridTooNarrowError
        If the window (``halfwidth`` if given, else the widest allowed) leaves out more than
        ``tail_mass`` of some branch's mass.
    """
    params = TwoLevelParams.validated(
        rho1=rho1, rho2=rho2, d=d, p=p, known=known, prior=prior
    )
    x1s, x2s, y1s, _ = _releases(x1_star, x2_star, y1_star)
    tail_mass = _check_tail_mass(tail_mass)
    halfwidth = None if halfwidth is None else check_positive_int(halfwidth, "halfwidth", minimum=0)
    return _checked_table(x1s.ravel(), x2s.ravel(), y1s.ravel(), params, tail_mass, halfwidth)


def _releases(x1_star, x2_star, y1_star):
    x1s = check_count(x1_star, "x1_star")
    x2s = check_count(x2_star, "x2_star")
    y1s = check_count(y1_star, "y1_star")
    shape = np.broadcast_shapes(x1s.shape, x2s.shape, y1s.shape)
    arrays = [np.broadcast_to(a, shape).ravel() for a in (x1s, x2s, y1s)]
    return (*arrays, shape)


def _check_tail_mass(tail_mass) -> float:
    return float(_scalar(check_probability(tail_mass, "tail_mass"), "tail_mass"))


@dataclass(frozen=True)
class HierarchicalPosterior:
    r"""Exact posterior of (X1, X2) for a batch of releases D (shape ``S``).

    Attributes
    ----------
    log_odds_x1 : ndarray, shape S
        ``log P[X1 = m+1 | D] - log P[X1 = m | D]`` (``-inf`` if X1 = m + 1 is impossible).
    k2_start : ndarray of int64, shape S
        First value of each release's k2 window.
    joint_pmf : ndarray, shape S + (2, W)
        ``P[X1 = m + i, X2 = k2_start + j | D]`` (zero-padded beyond a release's window).
    neglected_mass : ndarray, shape S
        Upper bound of the posterior mass outside the window (below ``tail_mass``).
    params : TwoLevelParams
        The model parameters (prior included).
    release : tuple of ndarray
        ``(x1_star, x2_star, y1_star)`` broadcast to shape ``S``.
    """

    log_odds_x1: np.ndarray
    k2_start: np.ndarray
    joint_pmf: np.ndarray
    neglected_mass: np.ndarray
    params: TwoLevelParams
    release: tuple

    @property
    def prob_x1(self) -> np.ndarray:
        """``P[X1 = m + 1 | D]``."""
        return _expit(self.log_odds_x1)

    @property
    def x2_pmf(self) -> np.ndarray:
        """``P[X2 = k2_start + j | D]``, shape ``S + (W,)``."""
        return self.joint_pmf.sum(-2)

    @property
    def k2_values(self) -> np.ndarray:
        """The k2 window of each release, shape ``S + (W,)``."""
        return self.k2_start[..., None] + np.arange(self.joint_pmf.shape[-1])

    def x2_pmf_at(self, k2) -> np.ndarray:
        """``P[X2 = k2 | D]`` for integer ``k2`` broadcast against the batch shape ``S``."""
        k2 = check_count(k2, "k2")
        offset = k2 - self.k2_start
        width = self.joint_pmf.shape[-1]
        inside = (offset >= 0) & (offset < width)
        shape = np.broadcast_shapes(offset.shape, self.k2_start.shape)
        pmf = np.broadcast_to(self.x2_pmf, (*shape, width))
        index = np.broadcast_to(np.clip(offset, 0, width - 1), shape)[..., None]
        picked = np.take_along_axis(pmf, index, -1)[..., 0]
        return np.where(inside, picked, 0.0)

    def x2_mean(self) -> np.ndarray:
        """``E[X2 | D]``."""
        return (self.x2_pmf * self.k2_values).sum(-1)

    def to_dataset(self):
        """An ``xarray.Dataset`` with dims ``release`` (flattened batch) and ``k2`` (union grid).

        Variables ``prob_x1`` (release), ``x2_pmf`` (release, k2), ``neglected_mass``; the
        release values are coordinates, the parameters are attributes.
        """
        import xarray as xr

        start = self.k2_start.ravel()
        width = self.joint_pmf.shape[-1]
        lo, hi = int(start.min()), int(start.max()) + width
        k2 = np.arange(lo, hi)
        pmf = np.zeros((start.size, k2.size))
        rows = np.arange(start.size)[:, None]
        pmf[rows, (start - lo)[:, None] + np.arange(width)] = self.x2_pmf.reshape(-1, width)
        x1s, x2s, y1s = (np.asarray(a).ravel() for a in self.release)
        p = self.params
        return xr.Dataset(
            {
                "prob_x1": ("release", self.prob_x1.ravel()),
                "x2_pmf": (("release", "k2"), pmf),
                "neglected_mass": ("release", self.neglected_mass.ravel()),
            },
            coords={
                "release": np.arange(start.size),
                "k2": k2,
                "x1_star": ("release", x1s),
                "x2_star": ("release", x2s),
                "y1_star": ("release", y1s),
            },
            attrs={
                "rho1": p.rho1,
                "rho2": p.rho2,
                "d": p.d,
                "p": p.p,
                "known": p.known,
                "prior": p.prior.spec,
                "method": "exact enumeration",
            },
        )


def _expit(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))`` without overflow: only ``exp(-|x|) <= 1`` is evaluated."""
    small = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + small), small / (1.0 + small))


def _run(x1_star, x2_star, y1_star, params, tail_mass, halfwidth, keep_tables):
    x1s, x2s, y1s, shape = _releases(x1_star, x2_star, y1_star)
    tail_mass = _check_tail_mass(tail_mass)
    if halfwidth is not None:
        halfwidth = check_positive_int(halfwidth, "halfwidth", minimum=0)
    n = x1s.size
    k0 = halfwidth if halfwidth is not None else _initial_halfwidth(params.precision, tail_mass)
    width0 = 2 * k0 + 3
    chunk = max(1, _CHUNK_CELLS // width0)
    log_odds = np.empty(n)
    neglected = np.empty(n)
    pieces = []
    for lo in range(0, n, chunk):
        sl = slice(lo, lo + chunk)
        table = _checked_table(x1s[sl], x2s[sl], y1s[sl], params, tail_mass, halfwidth)
        mass = table.log_branch_mass
        log_odds[sl] = mass[:, 1] - mass[:, 0]
        log_total = np.logaddexp(mass[:, 0], mass[:, 1])
        with np.errstate(invalid="ignore"):
            neglected[sl] = np.exp(np.logaddexp(*table.log_neglected.T) - log_total)
        if keep_tables:
            joint = np.exp(table.log_joint - log_total[:, None, None])
            pieces.append((table.k2_start, joint))
    if not keep_tables:
        return log_odds.reshape(shape), neglected.reshape(shape), None, None
    width = max(j.shape[-1] for _, j in pieces)
    joint_pmf = np.zeros((n, 2, width))
    k2_start = np.empty(n, dtype=np.int64)
    pos = 0
    for start, joint in pieces:
        joint_pmf[pos : pos + len(start), :, : joint.shape[-1]] = joint
        k2_start[pos : pos + len(start)] = start
        pos += len(start)
    return (
        log_odds.reshape(shape),
        neglected.reshape(shape),
        k2_start.reshape(shape),
        joint_pmf.reshape(*shape, 2, width),
    )


def exact_posterior(
    x1_star,
    x2_star,
    y1_star,
    *,
    rho1,
    rho2,
    d,
    p=0.5,
    known=0,
    prior: X2Prior | str = ImproperUniform(),
    tail_mass: float = DEFAULT_TAIL_MASS,
    halfwidth: int | None = None,
) -> HierarchicalPosterior:
    r"""Exact joint posterior of (X1, X2) given releases ``D = (x1*, x2*, y1*)``.

    Vectorised over releases: ``x1_star``, ``x2_star`` and ``y1_star`` broadcast to a batch
    shape ``S``. See the module docstring for the formula and the k2 window.

    Parameters
    ----------
    x1_star, x2_star, y1_star : array_like of int
        Noisy block count, block-group count, and sum of the other ``d`` blocks' counts.
    rho1, rho2 : float (> 0)
        zCDP parameters of the block and block-group levels.
    d : int (d >= 1)
        Number of other blocks in the block group.
    p : float (0 < p < 1)
        Prior probability ``P[X1 = known + 1]``.
    known : int (known >= 0)
        ``m``, the count of the other people in the block with the characteristics.
    prior : X2Prior or str
        Prior of X2 given X1 (:mod:`dprisk.models.priors`; a spec string is parsed).
    tail_mass : float (0 < tail_mass < 1)
        Largest share of each branch's posterior mass the k2 window may leave out.
    halfwidth : int (>= 0), optional
        Fix the window to ``2 * halfwidth + 3`` values instead of choosing (and widening) it.

    Returns
    -------
    HierarchicalPosterior
        ``prob_x1`` = P[X1 = m + 1 | D], the joint and X2 posterior pmfs, the neglected mass.

    Raises
    ------
    GridTooNarrowError
        If the neglected mass cannot be made smaller than ``tail_mass``.
    """
    params = TwoLevelParams.validated(rho1=rho1, rho2=rho2, d=d, p=p, known=known, prior=prior)
    log_odds, neglected, k2_start, joint = _run(
        x1_star, x2_star, y1_star, params, tail_mass, halfwidth, keep_tables=True
    )
    shape = log_odds.shape
    release = tuple(
        np.broadcast_to(check_count(a, n), shape)
        for a, n in ((x1_star, "x1_star"), (x2_star, "x2_star"), (y1_star, "y1_star"))
    )
    return HierarchicalPosterior(log_odds, k2_start, joint, neglected, params, release)


def posterior_x1(
    x1_star,
    x2_star,
    y1_star,
    *,
    rho1,
    rho2,
    d,
    p=0.5,
    known=0,
    prior: X2Prior | str = ImproperUniform(),
    tail_mass: float = DEFAULT_TAIL_MASS,
) -> np.ndarray:
    r"""``P[X1 = m + 1 | D]`` for a batch of releases, without keeping the X2 tables.

    Same parameters and formula as :func:`exact_posterior`; memory stays bounded for millions
    of releases (processed in chunks).

    .. math::

        P[X_1 = m+1 \mid D] = \frac{\sum_{k_2} \pi(m+1, k_2)}
                                   {\sum_{k_2} \pi(m, k_2) + \sum_{k_2} \pi(m+1, k_2)}
    """
    params = TwoLevelParams.validated(rho1=rho1, rho2=rho2, d=d, p=p, known=known, prior=prior)
    log_odds, _, _, _ = _run(
        x1_star, x2_star, y1_star, params, tail_mass, None, keep_tables=False
    )
    return _expit(log_odds)
