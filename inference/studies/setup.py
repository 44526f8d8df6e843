r"""Shared set-up of the decision studies: truth, release grid, exact log-odds (paper §4.3).

The checked truth and scenario, the true mechanism's release grid and the adversary's exact
log-odds on it.

The data holder fixes the truth ``(x1, x2)``, ``y1 = x2 - x1``; the releases come from the
TRUE mechanism,

.. math::

    x_2^* \sim \mathrm{DG}(x_2, \tfrac{1}{2\rho_2}), \quad
    y_1^* = y_1 + \textstyle\sum_{i=1}^d \eta^{(i)},\ \eta^{(i)} \overset{iid}{\sim}
    \mathrm{DG}(0, \tfrac{1}{2\rho_1})

(the exact d-fold sum, :func:`dprisk.models.mechanism.dg_sums.sum_pmf`), while the adversary's
posterior
log-odds of ``X1 = m + 1`` is linear in ``x1*``,

.. math:: L(x_1^*, x_2^*, y_1^*) = L_m(x_2^*, y_1^*) + 2\rho_1 (x_1^* - m),

with :math:`L_m` from one exact k2 enumeration per ``(x2*, y1*)``
(:func:`exact_log_odds_at_known`). Used by :mod:`dprisk.inference.studies.p_correct` (exact sums),
:mod:`dprisk.inference.studies.finite_draws`, :mod:`dprisk.inference.studies.monte_carlo` and
:mod:`dprisk.inference.studies.variant`.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import numpy as np

from dprisk.inference.kernels.fused_kernels import (
    checked_masses,
    serves,
    table_seconds,
    use_compiled,
)
from dprisk.inference.kernels.mass_kernels import checked_log_masses
from dprisk.inference.kernels.table_kernels import checked_table, initial_halfwidth
from dprisk.inference.two_level.exact import JointTable
from dprisk.models.checks import check_count, check_positive_int
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.mechanism.dg_sums import sum_pmf_kernel
from dprisk.models.numerics import check_tail_mass, dg_log_normalizer
from dprisk.models.scenario import Scenario
from dprisk.runtime.bounded_cache import BoundedCache
from dprisk.runtime.memory_limit import check_memory

__all__ = [
    "DEFAULT_TAIL_MASS",
    "POSTERIOR_TAIL_MASS",
    "TIES",
    "TIE_ATOL",
    "ReleaseGrid",
    "branch_conditionals",
    "check_ties",
    "exact_log_odds_at_known",
    "exact_x1_update",
    "grid_for_truth",
    "posterior_table",
    "posterior_table_cost",
    "release_grid",
    "row_chunks",
    "validated_study_params",
    "validated_truth",
]

#: Default bound on the probability of the (x2*, y1*) releases left out of the grid.
DEFAULT_TAIL_MASS = 1e-9
#: Log-odds within this of 0 count as a posterior of exactly 1/2 (a tie).
TIE_ATOL = 1e-9
#: Tie policies: decide ``m`` (posterior must exceed 1/2), ``m+1``, or a fair coin.
TIES = {"m": 0.0, "m+1": 1.0, "half": 0.5}
#: k2 tail mass used for the posterior tables inside the studies.
POSTERIOR_TAIL_MASS = 1e-12
#: Largest number of k2 cells (releases x 2 branches x window) built at once.
_CHUNK_CELLS = 2**22
#: Bytes of posterior tables a process remembers (:func:`posterior_table`).
TABLE_CACHE_BYTES = 2**26
_table_cache = BoundedCache(TABLE_CACHE_BYTES)
#: Bytes per release and k2 value of the first window of :func:`posterior_table` (the table's
#: arrays and the temporaries of its build: 59 measured against the first window at rho1 =
#: rho2 = 1e-6, d = 3, 1000 and 2000 releases; rounded up).
TABLE_CELL_BYTES = 64
#: Steps per release and k2 value of building it (61 ns measured there, 14 steps; rounded up).
TABLE_CELL_STEPS = 20


# --------------------------------------------------------------------------- parameters
def check_ties(ties: str) -> float:
    """The weight of ``m + 1`` at a tie: 0 for ``"m"``, 1 for ``"m+1"``, 1/2 for ``"half"``.

    Raises
    ------
    ValueError
        Naming ``ties`` and the allowed values.
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {sorted(TIES)}, got {ties!r}")
    return TIES[ties]


def validated_study_params(*, x2, rho1, rho2, d, x1=None, p=0.5, known=0, prior="improper"):
    """Check a study's inputs once; return ``(Scenario, x1, x2, y1)``.

    The model parameters are checked by :meth:`Scenario.two_level`. The truth is
    ``x1 in {known, known + 1}`` (default ``known + 1``) and ``x2 >= x1``, so that
    ``y1 = x2 - x1 >= 0``.

    Raises
    ------
    ValueError
        Naming the parameter (``x2``, ``x1``, ``d``, ``prior``, ...) and its allowed range.
    """
    params = Scenario.two_level(rho1=rho1, rho2=rho2, d=d, p=p, known=known,
                                      prior=prior)
    return (params, *validated_truth(params, x2=x2, x1=x1))


def validated_truth(params, *, x2, x1=None) -> tuple[int, int, int]:
    """Check a study's truth against a validated scenario once; return ``(x1, x2, y1)``.

    ``x1 in {known, known + 1}`` (default ``known + 1``) and ``x2 >= x1``.
    """
    m = params.known
    x1 = m + 1 if x1 is None else check_positive_int(x1, "x1", minimum=0)
    if x1 not in (m, m + 1):
        raise ValueError(f"x1 must be known or known + 1 (allowed: {m} or {m + 1}), got {x1}")
    x2 = check_positive_int(x2, "x2", minimum=0)
    if x2 < x1:
        raise ValueError(f"x2 must be >= x1 = {x1} (y1 = x2 - x1 is a count), got {x2}")
    return x1, x2, x2 - x1


# --------------------------------------------------------------------------- release grid
@dataclass(frozen=True)
class ReleaseGrid:
    """The true mechanism's ``(x2*, y1*)`` grid and probabilities.

    Attributes
    ----------
    x2_star, x2_pmf : ndarray, shape (n2,)
        ``x2 + j`` for ``|j| <= K2`` and ``P[X2* = x2*]``.
    y1_star, y1_pmf : ndarray, shape (ny,)
        ``y1 + s`` over the grid of the exact noise sum and its probabilities.
    neglected_mass : float
        Upper bound of ``P[(X2*, Y1*) outside the grid]`` (union bound of both margins).
    """

    x2_star: np.ndarray
    x2_pmf: np.ndarray
    y1_star: np.ndarray
    y1_pmf: np.ndarray
    neglected_mass: float

    @property
    def weights(self) -> np.ndarray:
        """``P[x2*] P[y1*]``, shape (n2, ny)."""
        return self.x2_pmf[:, None] * self.y1_pmf[None, :]


def grid_memory(params: Scenario, tail_mass: float) -> float:
    r"""Bytes of the release grid's arrays: :math:`32\,n_2\,n_y` (four float64 per cell).

    :math:`n_2 = 2 K(\rho_2, \tau/2) + 1` values of ``x2*`` and :math:`n_y \le
    2 d K(\rho_1, \tau / (4d)) + 1` of ``y1*`` (the sum of ``d`` noises); estimated from the
    half-widths alone, before any table is built.
    """
    return _grid_memory(float(params.rho1), float(params.rho2), int(params.d), float(tail_mass))


@functools.lru_cache(maxsize=256)
def _grid_memory(rho1: float, rho2: float, d: int, tail_mass: float) -> float:
    """:func:`grid_memory` of the numbers (remembered: a study asks for it three times)."""
    n2 = 2 * int(dg.support_halfwidth_kernel(np.asarray(rho2), tail_mass / 2)) + 1
    ny = 2 * d * int(dg.support_halfwidth_kernel(np.asarray(rho1), tail_mass / (4 * d))) + 1
    return 32.0 * n2 * ny


@functools.lru_cache(maxsize=256)
def _x2_noise(rho2: float, tail_mass: float):
    rho = np.asarray(rho2, dtype=float)  # validated by the caller's scenario
    half = int(dg.support_halfwidth_kernel(rho, tail_mass))
    offsets = np.arange(-half, half + 1)
    pmf = np.exp(-rho2 * offsets.astype(float) ** 2 - dg_log_normalizer(rho2))
    outside = 2.0 * float(np.exp(dg.log_tail_kernel(np.asarray(half + 1, dtype=np.int64), rho)))
    return offsets, pmf, outside


@functools.lru_cache(maxsize=256)
def _noise_sum(d: int, rho1: float, tail_mass: float):
    exact = sum_pmf_kernel(d, rho1, tail_mass)  # validated by the caller's scenario
    outside = max(0.0, 1.0 - float(exact.pmf.sum()))
    return exact.values, exact.pmf, max(outside, 0.0)


def grid_for_truth(x2: int, y1: int, params: Scenario, tail_mass: float) -> ReleaseGrid:
    r"""Kernel of :func:`release_grid` for a validated truth, parameters and ``tail_mass``.

    Raises
    ------
    RuntimeError
        If the computed neglected mass is not below ``tail_mass`` (it always should be).
    """
    check_memory(grid_memory(params, tail_mass), parameter="rho1, rho2, d",
                 what="the grid of releases (x2*, y1*)")
    offsets2, pmf2, out2 = _x2_noise(params.rho2, tail_mass / 2)
    values_s, pmf_s, out_s = _noise_sum(params.d, params.rho1, tail_mass / 2)
    neglected = out2 + out_s
    if not neglected < tail_mass:
        raise RuntimeError(f"release grid leaves out {neglected:.3g} >= tail_mass = "
                           f"{tail_mass:g} of the probability")
    return ReleaseGrid(int(x2) + offsets2, pmf2, int(y1) + values_s, pmf_s, neglected)


def release_grid(*, x2, y1, rho1, rho2, d, tail_mass=DEFAULT_TAIL_MASS) -> ReleaseGrid:
    r"""The ``(x2*, y1*)`` grid of the true mechanism with neglected probability < ``tail_mass``.

    ``x2* = x2 + eta2`` on ``|eta2| <= K2`` with :math:`P[|\eta_2| > K_2] < \tau/2`
    (:func:`dprisk.models.mechanism.discrete_gaussian.support_halfwidth`, the excess computed
    exactly with
    ``log_tail``); ``y1* = y1 + S`` on the grid of :func:`dprisk.models.mechanism.dg_sums.sum_pmf`
    with
    neglected mass below :math:`\tau/2`. Tables are cached per ``(rho, d, tau)``.

    Raises
    ------
    ValueError
        Naming a bad parameter.
    RuntimeError
        If the computed neglected mass is not below ``tail_mass`` (it always should be).
    """
    tail_mass = check_tail_mass(tail_mass)
    check_count(x2, "x2", minimum=0)
    check_count(y1, "y1", minimum=0)
    params = Scenario.two_level(rho1=rho1, rho2=rho2, d=d, p=0.5, known=0,
                                      prior="improper")
    return grid_for_truth(x2, y1, params, tail_mass)


# --------------------------------------------------------------------------- exact model
def posterior_table(x1_star, x2_star, y1_star, params: Scenario) -> JointTable:
    """The exact joint posterior table of releases on a k2 window with tail < 1e-12.

    Tables are remembered per process (at most :data:`TABLE_CACHE_BYTES` of them, keyed by
    the scenario and the releases' values, :class:`dprisk.runtime.bounded_cache.BoundedCache`:
    the exact and the variant chains of one study ask for the same table); their arrays are
    read-only.
    """
    key, (x1s, x2s, y1s) = _table_key(x1_star, x2_star, y1_star, params)
    table = _table_cache.get(key)  # None also for a scenario holding unhashable parts
    if table is not None:
        return table
    table = checked_table(x1s, x2s, y1s, params, POSTERIOR_TAIL_MASS, None)
    size = 0
    for value in vars(table).values():
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
            size += value.nbytes
    _table_cache.put(key, table, size)
    return table


def posterior_table_cost(params: Scenario, releases: int) -> tuple[float, float, int]:
    r"""Memory (bytes), work (steps) and k2 width of :func:`posterior_table` over ``releases``.

    The first window holds :math:`W = 2K + 3` values of k2, ``K`` its half-width
    (:func:`dprisk.inference.kernels.table_kernels.initial_halfwidth` at
    :data:`POSTERIOR_TAIL_MASS`, about :math:`\sqrt{34.5 / \text{precision}}`):
    ``releases x W x`` :data:`TABLE_CELL_BYTES` bytes and ``releases x max(0, W x``
    :data:`TABLE_CELL_STEPS` ``-`` :data:`dprisk.runtime.work_limit.MC_DATASET_STEPS` ``)``
    steps: a window of up to 50 values (the paper's rho: 29) is within a Monte Carlo dataset's
    own steps, measured with it.
    """
    from dprisk.runtime.work_limit import MC_DATASET_STEPS

    width = 2 * initial_halfwidth(params.precision, POSTERIOR_TAIL_MASS) + 3
    per_release = max(0.0, float(width) * TABLE_CELL_STEPS - MC_DATASET_STEPS)
    return float(releases) * width * TABLE_CELL_BYTES, float(releases) * per_release, width


def _table_key(x1_star, x2_star, y1_star, params: Scenario):
    """The key of a posterior table in the process's memory, and the flat int64 releases."""
    x1s, x2s, y1s = (np.asarray(a, dtype=np.int64).ravel() for a in np.broadcast_arrays(
        np.asarray(x1_star), np.asarray(x2_star), np.asarray(y1_star)))
    digest = hashlib.sha1(x1s.tobytes() + b"|" + x2s.tobytes() + b"|" + y1s.tobytes())
    return (params, x1s.size, digest.hexdigest()), (x1s, x2s, y1s)


def branch_conditionals(table: JointTable) -> np.ndarray:
    r"""``P[X2 = k2 | X1 = m + b, D]`` on the table's window, shape (R, 2, W); 0 off-support.

    .. math:: P[k_2 \mid m + b, D] = \pi(m + b, k_2) / \textstyle\sum_{k} \pi(m + b, k)

    The branch mass is the ``logsumexp`` of its row of ``log_joint``, so where it is finite
    the row holds only finite values and ``-inf``, and ``exp(-inf - mass)`` is already
    ``0.0``: only the rows with a non-finite mass (a branch the prior rules out) are masked,
    with the same zeros as masking every non-finite cell, bit for bit, without a pass of
    ``isfinite`` over the whole table.
    """
    log_joint, log_mass = table.log_joint, table.log_branch_mass
    with np.errstate(invalid="ignore"):  # in place: one (R, 2, W) array, same values
        cond = np.subtract(log_joint, log_mass[:, :, None])
    np.exp(cond, out=cond)
    empty = ~np.isfinite(log_mass)  # (R, 2): rows whose cells may be nan
    if empty.any():
        cond[empty] = np.where(np.isfinite(log_joint[empty]), cond[empty], 0.0)
    return cond


def exact_x1_update(log_joint: np.ndarray) -> np.ndarray:
    r"""The exact Gibbs X1 update ``P[X1 = m + 1 | k2, D]`` on a joint table's window (kernel).

    .. math:: q(k_2) = \frac{1}{1 + \pi(m, k_2) / \pi(m + 1, k_2)}

    from ``log_joint`` of shape (R, 2, W); 0 where ``X1 = m + 1`` is impossible.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        q = 1.0 / (1.0 + np.exp(log_joint[:, 0] - log_joint[:, 1]))
    return np.where(np.isfinite(log_joint[:, 1]), q, 0.0)


def exact_log_odds_at_known(x2_star, y1_star, params: Scenario) -> np.ndarray:
    r"""``L_m(x2*, y1*)``: the exact posterior log-odds of ``X1 = m + 1`` at ``x1* = m``.

    .. math:: L(x_1^*, x_2^*, y_1^*) = L_m(x_2^*, y_1^*) + 2\rho_1 (x_1^* - m)

    ``-inf`` where the prior makes ``X1 = m + 1`` impossible. When the releases' posterior
    table (:func:`posterior_table` at ``x1* = m``) is in the process's memory (the variant's
    thresholds of the same releases built it), its branch masses give the log-odds: the
    numpy path's values, bit for bit, without a second pass over the k2 windows.
    """
    x2s, y1s = (a.ravel() for a in np.broadcast_arrays(np.asarray(x2_star),
                                                        np.asarray(y1_star)))
    shape = np.broadcast_shapes(np.shape(x2_star), np.shape(y1_star))
    if x2s.size and np.asarray(x2_star).dtype.kind in "iu" and np.asarray(
            y1_star).dtype.kind in "iu":
        table = _table_cache.get(_table_key(params.known, x2s, y1s, params)[0])
        if table is not None:  # its masses are those of the numpy path below, bit for bit
            mass = table.log_branch_mass
            with np.errstate(invalid="ignore"):
                return (mass[:, 1] - mass[:, 0]).reshape(shape)
    odds = np.empty(x2s.size)
    halfwidth = initial_halfwidth(params.precision, POSTERIOR_TAIL_MASS)
    if serves(params) and use_compiled(table_seconds(x2s.size, halfwidth)):  # one fused pass
        x1s = np.full(x2s.size, params.known, dtype=np.int64)
        mass, _ = checked_masses(x1s, x2s, y1s, params, POSTERIOR_TAIL_MASS, None,
                                 want_neglected=False, compiled=True)
        with np.errstate(invalid="ignore"):
            return (mass[:, 1] - mass[:, 0]).reshape(shape)
    x2s, y1s = (np.asarray(a, dtype=np.int64) for a in (x2s, y1s))
    for rows in row_chunks(x2s.size, params):  # the masses of posterior_table, bit for bit
        x1s = np.full(rows.stop - rows.start, params.known, dtype=np.int64)
        mass, _ = checked_log_masses(x1s, x2s[rows], y1s[rows], params, POSTERIOR_TAIL_MASS,
                                     None)
        with np.errstate(invalid="ignore"):
            odds[rows] = mass[:, 1] - mass[:, 0]
    return odds.reshape(shape)


def row_chunks(n: int, params: Scenario):
    """Slices of at most ~2**22 k2 cells (memory stays bounded for small rho)."""
    precision = np.asarray(params.precision, dtype=float)
    width = 2 * int(dg.support_halfwidth_kernel(precision, POSTERIOR_TAIL_MASS * 1e-3)) + 5
    step = max(1, _CHUNK_CELLS // (2 * width))
    for lo in range(0, n, step):
        yield slice(lo, min(n, lo + step))
