r"""The two-level joint posterior tabulated on a checked k2 window (kernels, no input checks).

The joint posterior (paper §3.2, supplement S3), for k1 in {m, m+1}:

.. math::

    \pi(k_1, k_2) \propto P[X_1 = k_1]\, w(k_2 \mid k_1)\,
        e^{-\rho_1 (x_1^* - k_1)^2}\, e^{-\rho_2 (x_2^* - k_2)^2}\,
        e^{-(\rho_1/d)(y_1^* - (k_2 - k_1))^2},

with ``w`` the prior of X2 given X1 (:mod:`dprisk.models.priors.library`; zero unless ``k2 >= k1``)
and
``P[X1 = m + 1] = p``. Completing the square in ``k2`` (``A = rho2 + rho1/d``):

.. math::

    \log \pi(k_1, k_2) = \beta_{k_1} - A (k_2 - c_{k_1})^2 + \log w(k_2 \mid k_1),
    \qquad c_{k_1} = \frac{\rho_2 x_2^* + (\rho_1/d)(y_1^* + k_1)}{A},

    \beta_{k_1} = \log P[X_1 = k_1] - \rho_1 (x_1^* - k_1)^2
        - \frac{\rho_2 \rho_1 / d}{A} (x_2^* - y_1^* - k_1)^2,

so ``X2 | X1 = k1`` is the discrete Gaussian DG(c_{k1}, 1/(2A)) (paper §3.2, equation
labelled ``eq:X2fc``) times the prior weight. Both branches are summed on one window of
``W = 2K + 3`` consecutive integers per release, placed around ``c_m`` and slid inside the
prior's support; ``K`` comes from
:func:`dprisk.models.mechanism.discrete_gaussian.support_halfwidth` at
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

The kernels here take a validated :class:`dprisk.models.scenario.Scenario` and int64 release
arrays (:class:`dprisk.models.scenario.Release`) and do not check them again; the public entry
points are in :mod:`dprisk.inference.two_level.exact` and :mod:`dprisk.inference.two_level.gibbs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dprisk.models.mechanism.discrete_gaussian import support_halfwidth_kernel
from dprisk.models.numerics import log_gauss_tail, logsumexp
from dprisk.models.priors.library import ImproperUniform, PointMass, TruncatedUniform
from dprisk.models.scenario import Scenario

__all__ = [
    "DEFAULT_TAIL_MASS",
    "MAX_PRECISION",
    "MAX_WINDOW",
    "GridTooNarrowError",
    "JointTable",
    "WindowGeometry",
    "add_log_weight",
    "band_window_table",
    "branch_log_neglected",
    "branch_offset",
    "check_precision",
    "checked_table",
    "constant_log_weight",
    "first_window_rows",
    "initial_halfwidth",
    "relative_log_joint",
    "relative_quadratic",
    "relative_release",
    "widened",
    "window_geometry",
    "window_table",
]

#: Default bound on the posterior mass a k2 grid may leave out.
DEFAULT_TAIL_MASS = 1e-12
#: Largest window (k2 values per release) before giving up.
MAX_WINDOW = 2**22
#: Largest precision ``A = rho2 + rho1/d`` of the tables: their log weights grow like ``A``,
#: and rounding then costs about ``eps * A`` (the posterior's log-odds about 2e-12 wrong at
#: A = 1e4 and 1.7e-10 at A = 9.9e5, the posterior 4e-11 there, against an mpmath reference;
#: 1e-8 wrong at A = 1e8); larger ones are refused.
MAX_PRECISION = 1e6


class GridTooNarrowError(RuntimeError):
    """The k2 grid leaves out more posterior mass than ``tail_mass`` allows."""


def relative_release(params: Scenario, x1s, x2s, y1s):
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


def branch_offset(b: int, delta_beta):
    """``b delta_beta - max(delta_beta, 0)``: zero for the branch that ``delta_beta`` favours.

    Subtracting ``max(delta_beta, 0)`` from both branches (a per-release constant) keeps the
    favoured branch's values free of the rounding of a large ``delta_beta``.
    """
    return np.minimum(delta_beta, 0.0) if b else -np.maximum(delta_beta, 0.0)


def relative_log_joint(params: Scenario, b: int, gamma, delta_beta, r, j_minus_r):
    r"""``log pi(m + b, m + j)`` without the prior weight, up to a per-release constant.

    .. math:: b\,\Delta\beta - \max(\Delta\beta, 0)
              - A\,((j - r) - b\delta)\,((j + r) - 2\gamma - b\delta)

    i.e. minus ``beta_m - A (r - gamma)^2 + max(delta_beta, 0)``. ``r`` and ``j_minus_r`` are
    integers (``r`` the reference, e.g. the window's ``j`` nearest the centre); see the
    module docstring.
    """
    # In place, in the order of ``bo - (A * offset) * (((j + r) - 2 gamma) - step)``: the
    # same values with two arrays of the broadcast shape instead of six.
    quadratic = relative_quadratic(params, b, gamma, r, j_minus_r)
    return _in_place(np.subtract, quadratic, branch_offset(b, delta_beta), reverse=True)


def relative_quadratic(params: Scenario, b: int, gamma, r, j_minus_r):
    r"""The quadratic term of :func:`relative_log_joint`, the part free of ``x1*``.

    .. math:: A\,((j - r) - b\delta)\,((j + r) - 2\gamma - b\delta)

    evaluated as ``(((j - r) - step) * A) * (((2r + (j - r)) - 2 gamma) - step)`` with
    ``step = b delta`` (these operations in this order: :func:`relative_log_joint` and
    :func:`band_window_table` share them, so their tables agree bit for bit), in place on
    arrays of the broadcast shape. ``r`` and ``j_minus_r`` are integers.
    """
    step = b * (params.rho1 / params.d) / params.precision
    factor = np.asarray((2 * np.asarray(r, dtype=np.int64) + j_minus_r), dtype=float)
    factor = _in_place(np.subtract, factor, 2.0 * np.asarray(gamma, dtype=float))
    factor = _in_place(np.subtract, factor, step)
    quadratic = np.asarray(np.asarray(j_minus_r, dtype=float) - step)
    quadratic = _in_place(np.multiply, quadratic, params.precision)
    return _in_place(np.multiply, quadratic, factor)


def _in_place(ufunc, a, b, *, reverse: bool = False):
    """``ufunc(a, b)``, or ``ufunc(b, a)`` if ``reverse``, written over ``a`` when it fits.

    ``a`` is overwritten only when it is an array that already has the broadcast shape.
    """
    fits = (isinstance(a, np.ndarray) and a.ndim > 0
            and a.shape == np.broadcast_shapes(a.shape, np.shape(b)))
    args = (b, a) if reverse else (a, b)
    return ufunc(*args, out=a if fits else None)


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


@dataclass(frozen=True)
class WindowGeometry:
    r"""Where each release's k2 window lies, and the per-release numbers of its tables.

    Attributes
    ----------
    width : int
        ``W = 2K + 3``, the number of k2 values per release.
    supports : list
        ``branch_support(k1)`` of ``k1 = known + (0, 1)`` (``None`` for an empty branch).
    feasible : ndarray of bool, shape (2,)
    gamma, delta_beta : ndarray, shape (R,)
        :func:`relative_release`.
    start : ndarray of int64, shape (R,)
        First k2 of each window.
    first, ref : ndarray of int64, shape (R,)
        The window's first ``j = k2 - known`` and the reference ``r`` (module docstring).
    """

    width: int
    supports: list
    feasible: np.ndarray
    gamma: np.ndarray
    delta_beta: np.ndarray
    start: np.ndarray
    first: np.ndarray
    ref: np.ndarray


def window_geometry(x1s, x2s, y1s, params: Scenario, halfwidth: int) -> WindowGeometry:
    """The windows of half-width ``K`` (``W = 2K + 3``), centred and slid inside the support."""
    prior = params.prior
    width = 2 * halfwidth + 3
    known = params.known
    supports = [prior.branch_support(k1) for k1 in (known, known + 1)]
    feasible = np.array([s is not None for s in supports])
    lower = min(s[0] for s in supports if s is not None)
    uppers = [s[1] for s in supports if s is not None]
    upper = None if any(u is None for u in uppers) else max(uppers)

    _, gamma, delta_beta = relative_release(params, x1s, x2s, y1s)
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
    return WindowGeometry(width, supports, feasible, gamma, delta_beta, start, first, ref)


def branch_log_neglected(params: Scenario, window: WindowGeometry, b: int) -> np.ndarray:
    r"""Log of a bound on the branch's mass outside each window (same constant as the table).

    The Gaussian tails beyond ``[start, start + W - 1]`` within the branch's support
    (:func:`dprisk.models.numerics.log_gauss_tail`), with ``t`` their distance from
    :math:`c_{k_1} = \text{known} + \gamma + b\delta` and :math:`t^2 - a^2 = (t + a)(t - a)`
    formed from integers and small quantities, times ``exp(prior.log_weight_max)``; ``-inf``
    where the window holds the whole support.
    """
    precision = params.precision
    gamma, first, ref, start, width = (window.gamma, window.first, window.ref, window.start,
                                       window.width)
    n = gamma.shape[0]
    a = ref - gamma
    step = b * (params.rho1 / params.d) / precision
    branch_shift = branch_offset(b, window.delta_beta) + params.prior.log_weight_max
    lo_b, hi_b = window.supports[b]
    parts = []
    left = start > lo_b
    if left.any():
        t = (gamma - first + 1.0) + step  # c_{k1} - (start - 1)
        excess = ((ref - first + 1) + step) * ((2.0 * gamma - (ref + first - 1)) + step)
        tail = log_gauss_tail(t, precision, excess=excess, offset=a)
        parts.append(np.where(left, tail, -np.inf))
    right = np.ones(n, bool) if hi_b is None else hi_b >= start + width
    if np.any(right):
        t = (first + width - gamma) - step  # start + W - c_{k1}
        excess = (((first + width + ref) - 2.0 * gamma) - step) * (
            (first + width - ref) - step)
        tail = log_gauss_tail(t, precision, excess=excess, offset=a)
        parts.append(np.where(right, tail, -np.inf))
    if not parts:
        return np.full(n, -np.inf)
    tail = parts[0] if len(parts) == 1 else np.logaddexp(parts[0], parts[1])
    return branch_shift + tail


def window_table(x1s, x2s, y1s, params: Scenario, halfwidth: int) -> JointTable:
    """The joint table with a fixed half-width ``K`` (window ``W = 2K + 3``), no check.

    Evaluated in coordinates relative to ``known`` (see the module docstring).
    """
    window = window_geometry(x1s, x2s, y1s, params, halfwidth)
    width, start, ref = window.width, window.start, window.ref
    offsets = np.arange(width)
    j_minus_ref = (window.first - ref)[:, None] + offsets

    n = x1s.shape[0]
    log_joint = np.full((n, 2, width), -np.inf)
    log_mass = np.full((n, 2), -np.inf)
    log_neglected = np.full((n, 2), -np.inf)
    for b, k1 in enumerate((params.known, params.known + 1)):
        if window.supports[b] is None:
            continue
        table = relative_log_joint(params, b, window.gamma[:, None],
                                   window.delta_beta[:, None], ref[:, None], j_minus_ref)
        add_log_weight(table, params.prior, k1, window.supports[b], start)
        log_joint[:, b] = table
        log_mass[:, b] = logsumexp(table)
        log_neglected[:, b] = branch_log_neglected(params, window, b)
    return JointTable(start, log_joint, log_mass, log_neglected, window.feasible)


def band_window_table(x1_band, x2s, y1s, params: Scenario, halfwidth: int) -> JointTable:
    """:func:`window_table` of the releases ``(x1_band[c, j], x2s[c], y1s[c])``, row ``c J + j``.

    ``x1*`` enters a release's table only through ``delta_beta`` (its window, reference and
    quadratic term depend on ``(x2*, y1*)`` alone), so the quadratic term and the prior
    weights are evaluated once per ``(x2*, y1*)`` and shared by its ``J`` values of ``x1*``
    (:func:`relative_quadratic`, as :func:`relative_log_joint` evaluates it): every element is
    the same float operation on the same operands as in :func:`window_table`, so the table is
    the same bit for bit, with fewer passes.
    """
    cells, band = x1_band.shape
    x1s = np.ascontiguousarray(x1_band, dtype=np.int64).ravel()
    cell = window_geometry(x1_band[:, 0], x2s, y1s, params, halfwidth)
    _, _, delta_beta = relative_release(params, x1s, np.repeat(x2s, band),
                                        np.repeat(y1s, band))
    rows = WindowGeometry(cell.width, cell.supports, cell.feasible,
                          np.repeat(cell.gamma, band), delta_beta, np.repeat(cell.start, band),
                          np.repeat(cell.first, band), np.repeat(cell.ref, band))
    width, ref = cell.width, cell.ref[:, None]
    offsets = np.arange(width)
    k2 = cell.start[:, None] + offsets
    j_minus_ref = (cell.first - cell.ref)[:, None] + offsets
    log_joint = np.full((cells * band, 2, width), -np.inf)
    log_mass = np.full((cells * band, 2), -np.inf)
    log_neglected = np.full((cells * band, 2), -np.inf)
    for b, k1 in enumerate((params.known, params.known + 1)):
        if cell.supports[b] is None:
            continue
        # relative_log_joint's operations, the x1*-free part once per cell
        quadratic = relative_quadratic(params, b, cell.gamma[:, None], ref, j_minus_ref)
        offset = branch_offset(b, delta_beta).reshape(cells, band, 1)
        table = log_joint.reshape(cells, band, 2, width)[:, :, b]  # a view, filled in place
        np.subtract(offset, quadratic[:, None, :], out=table)
        # the weight once per cell, shared by its band (not add_log_weight on every row)
        table += params.prior.log_weight(k2, k1)[:, None, :]
        log_mass[:, b] = logsumexp(log_joint[:, b])
        log_neglected[:, b] = branch_log_neglected(params, rows, b)
    return JointTable(rows.start, log_joint, log_mass, log_neglected, cell.feasible)


def constant_log_weight(prior, k1: int, support) -> float | None:
    """The log weight of a built-in prior constant on the branch's support, else ``None``.

    ``improper``, ``truncated:U`` and ``point:K`` give every ``k2`` of the support of
    ``X2 | X1 = k1`` one weight (their own ``log_weight`` at its lower end) and ``-inf``
    elsewhere.
    """
    if type(prior) not in (ImproperUniform, TruncatedUniform, PointMass):
        return None
    low = np.array([support[0]], dtype=np.int64)
    return float(prior.log_weight(low, np.array([k1], dtype=np.int64))[0])


def add_log_weight(table, prior, k1: int, support, k2_start) -> None:
    r"""``table += log w(k2 | k1)`` in place, ``k2 = k2_start[..., None] + arange(W)``.

    .. math:: t_{rc} \leftarrow t_{rc} + \log w(s_r + c \mid k_1)

    ``table`` of shape (..., W), ``k2_start`` broadcasting against ``table[..., 0]``. A
    weight constant on the support ``(low, high)`` (:func:`constant_log_weight`) is added as
    that number (also 0.0, which turns -0.0 into 0.0 as adding the array does) and the cells
    off the support set to ``-inf`` (what adding ``-inf`` to a finite value gives): the same
    values as adding the prior's ``log_weight`` array, bit for bit, without building it. Any
    other prior's ``log_weight`` is evaluated on the window.
    """
    width = table.shape[-1]
    offsets = np.arange(width)
    constant = constant_log_weight(prior, k1, support)
    if constant is None:
        table += prior.log_weight(k2_start[..., None] + offsets, k1)
        return
    table += constant
    low, high = support
    below = (low - k2_start)[..., None]  # positions c < low - start are off the support
    count = min(int(below.max(initial=0)), width)
    if count > 0:
        np.copyto(table[..., :count], -np.inf, where=offsets[:count] < below)
    if high is not None:
        above = (high - k2_start)[..., None]  # positions c > high - start are off it
        begin = max(int(above.min(initial=width)) + 1, 0)
        if begin < width:
            np.copyto(table[..., begin:], -np.inf, where=offsets[begin:] > above)


def initial_halfwidth(precision: float, tail_mass: float) -> int:
    """First window half-width ``K`` (before any widening).

    ``P[|X - mu| > K] < tail_mass / 1000`` for an integer centre, +1 for the fractional offset
    of the centre and the second branch's centre (at most 1 higher).
    """
    return int(support_halfwidth_kernel(np.asarray(precision, dtype=float), tail_mass * 1e-3)) + 1


def checked_table(x1s, x2s, y1s, params: Scenario, tail_mass: float,
                  halfwidth: int | None) -> JointTable:
    """The joint table on a window widened until every branch passes the neglected-mass check.

    The half-width grows ``K -> 2K + 1`` until every branch's neglected share is below
    ``tail_mass``; a fixed ``halfwidth`` is checked, not widened.

    Raises
    ------
    ValueError
        If ``rho2 + rho1/d`` exceeds :data:`MAX_PRECISION`.
    GridTooNarrowError
        If the (fixed, or largest allowed) window leaves out more than ``tail_mass``.
    """
    return widened(window_table, x1s, x2s, y1s, params, tail_mass, halfwidth)


def first_window_rows(x1s, x2s, y1s, params: Scenario,
                      tail_mass: float) -> tuple[JointTable, np.ndarray]:
    """``(table, rows)``: the releases ``rows`` whose checked window is the first one.

    :func:`window_table` at :func:`initial_halfwidth` and :func:`checked_table`'s test there;
    ``table`` holds the rows that pass it, whose tables are those :func:`checked_table`
    gives each of them alone (every operation is elementwise or along a row). The others
    need a wider window of their own.
    """
    table = window_table(x1s, x2s, y1s, params, initial_halfwidth(params.precision, tail_mass))
    with np.errstate(invalid="ignore"):
        excess = table.log_neglected - table.log_branch_mass >= math.log(tail_mass)
    rows = np.flatnonzero(~(excess & table.feasible).any(-1))
    return JointTable(table.k2_start[rows], table.log_joint[rows], table.log_branch_mass[rows],
                      table.log_neglected[rows], table.feasible), rows


def check_precision(params: Scenario) -> None:
    """Refuse a two-level scenario whose precision ``A = rho2 + rho1/d`` is too large.

    The tables' log weights grow like ``A``: above :data:`MAX_PRECISION` they lose accuracy.

    Raises
    ------
    ValueError
        Naming ``rho2 + rho1/d``, its value and the allowed range.
    """
    if params.precision > MAX_PRECISION:
        raise ValueError(
            f"rho2 + rho1/d = {params.precision!r} is above {MAX_PRECISION:g}, where the "
            f"two-level tables lose accuracy (allowed range: rho2 + rho1/d <= "
            f"{MAX_PRECISION:g})"
        )


def widened(build, x1s, x2s, y1s, params: Scenario, tail_mass: float, halfwidth: int | None):
    """``build(x1s, x2s, y1s, params, K)`` at the first ``K`` that passes the check.

    The rule of :func:`checked_table` for any ``build`` returning an object with
    ``log_neglected``, ``log_branch_mass``, ``feasible``, ``width`` and ``neglected_share``
    (:class:`JointTable`, or the masses alone).
    """
    check_precision(params)
    fixed = halfwidth is not None
    k = halfwidth if fixed else initial_halfwidth(params.precision, tail_mass)
    log_tail_mass = math.log(tail_mass)
    while True:
        table = build(x1s, x2s, y1s, params, k)
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
