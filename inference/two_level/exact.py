r"""Exact posterior of the two-level (block, block-group) model by enumeration over a k2 grid.

The joint posterior (paper §3.2, supplement S3), for k1 in {m, m+1}:

.. math::

    \pi(k_1, k_2) \propto P[X_1 = k_1]\, w(k_2 \mid k_1)\,
        e^{-\rho_1 (x_1^* - k_1)^2}\, e^{-\rho_2 (x_2^* - k_2)^2}\,
        e^{-(\rho_1/d)(y_1^* - (k_2 - k_1))^2},

summed over ``k2`` on a checked window (:mod:`dprisk.inference.kernels.table_kernels`, which also
states the completed square, the neglected-mass bound and the floating-point layout):

.. math::

    P[X_1 = m+1 \mid D] = \frac{\sum_{k_2} \pi(m+1, k_2)}
                               {\sum_{k_2} \pi(m, k_2) + \sum_{k_2} \pi(m+1, k_2)}.

The public functions take the release ``(x1*, x2*, y1*)`` and either the loose parameters
``rho1, rho2, d, p, known, prior`` or a validated ``scenario=``
(:class:`dprisk.models.scenario.Scenario`); they validate once and call the kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dprisk.inference.kernels.fused_kernels import (
    checked_masses,
    serves,
    table_seconds,
    use_compiled,
)
from dprisk.inference.kernels.table_kernels import (
    DEFAULT_TAIL_MASS,
    MAX_WINDOW,
    GridTooNarrowError,
    JointTable,
    checked_table,
    initial_halfwidth,
)
from dprisk.models.checks import check_count, check_positive_int
from dprisk.models.numerics import check_tail_mass, expit, scalar_result
from dprisk.models.scenario import Release, Scenario, two_level_scenario
from dprisk.runtime.memory_limit import check_memory
from dprisk.runtime.renamed import renamed_attributes

__all__ = [
    "DEFAULT_TAIL_MASS",
    "HALFWIDTH_MAX",
    "TABLE_VALUE_BYTES",
    "GridTooNarrowError",
    "JointTable",
    "TwoLevelPosterior",
    "exact_posterior",
    "joint_log_table",
    "posterior_tables",
    "posterior_x1",
    "two_level_posterior",
]

#: Target number of grid cells per vectorised chunk of releases.
_CHUNK_CELLS = 2**17
#: Bytes per release and k2 value of the kept tables (the chunks' pmfs and the joined
#: ``joint_pmf``, two branches each; measured 33.5 with tracemalloc, rounded up).
TABLE_VALUE_BYTES = 40
#: Largest fixed ``halfwidth``: the window ``2 * halfwidth + 3`` stays within
#: :data:`dprisk.inference.kernels.table_kernels.MAX_WINDOW`, as a chosen window does.
HALFWIDTH_MAX = (MAX_WINDOW - 3) // 2


def _checked_options(tail_mass, halfwidth) -> tuple[float, int | None]:
    tail_mass = check_tail_mass(tail_mass)
    if halfwidth is not None:
        halfwidth = check_positive_int(halfwidth, "halfwidth", minimum=0)
        if halfwidth > HALFWIDTH_MAX:
            raise ValueError(f"halfwidth must be an integer >= 0 and <= {HALFWIDTH_MAX} (allowed "
                             f"range: 0 <= halfwidth <= {HALFWIDTH_MAX}, a window of at most "
                             f"{MAX_WINDOW} values), got {halfwidth}")
    return tail_mass, halfwidth


def joint_log_table(
    x1_star, x2_star, y1_star, *, scenario: Scenario | None = None,
    tail_mass: float = DEFAULT_TAIL_MASS, halfwidth: int | None = None, **parameters,
) -> JointTable:
    """Log joint posterior table of releases on a checked k2 window (one batch, one width).

    The releases are flattened to one dimension ``R``; ``parameters`` (``rho1, rho2, d, p,
    known, prior``) or ``scenario`` as in :func:`exact_posterior`. Used by the studies and
    by the Gibbs sampler's conditional tables. See
    :mod:`dprisk.inference.kernels.table_kernels` for the window and the neglected-mass check.

    Raises
    ------
    GridTooNarrowError
        If the window (``halfwidth`` if given, else the widest allowed) leaves out more than
        ``tail_mass`` of some branch's mass.
    """
    scenario = two_level_scenario(scenario, **parameters)
    release = Release.two_level(x1_star, x2_star, y1_star)
    tail_mass, halfwidth = _checked_options(tail_mass, halfwidth)
    return checked_table(*_flat(release), scenario, tail_mass, halfwidth)


def _flat(release: Release) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x1*, x2*, y1*)`` of a two-level release as flat int64 arrays."""
    xs, ys = release.flat()
    return xs[:, 0], xs[:, 1], ys[:, 0]


@dataclass(frozen=True)
class TwoLevelPosterior:
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
    params : Scenario
        The validated two-level scenario (prior included).
    release : tuple of ndarray
        ``(x1_star, x2_star, y1_star)`` broadcast to shape ``S``.
    """

    log_odds_x1: np.ndarray
    k2_start: np.ndarray
    joint_pmf: np.ndarray
    neglected_mass: np.ndarray
    params: Scenario
    release: tuple

    @property
    def prob_x1(self) -> float | np.ndarray:
        """``P[X1 = m + 1 | D]`` (a Python float for one release)."""
        return scalar_result(expit(self.log_odds_x1))

    @property
    def scenario(self) -> Scenario:
        """The validated scenario (same as ``params``)."""
        return self.params

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
        return xr.Dataset(
            {
                "prob_x1": ("release", np.ravel(self.prob_x1)),
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
            attrs={**self.params.attrs(), "method": "exact enumeration"},
        )


def posterior_tables(release: Release, params: Scenario, tail_mass: float,
                     halfwidth: int | None, *, keep_tables: bool,
                     want_neglected: bool = True, prob_x1: np.ndarray | None = None):
    """Kernel of :func:`exact_posterior` for validated inputs, in chunks of releases.

    Returns ``(log_odds, neglected, k2_start, joint_pmf)`` shaped like the batch (the last two
    ``None`` unless ``keep_tables``). Without the tables the branch masses come from
    :func:`dprisk.inference.kernels.fused_kernels.checked_masses` (compiled when it pays); without
    the tables and ``want_neglected`` the neglected mass is not computed (NaN). With
    ``prob_x1`` (float array of one entry per release, no tables) it receives
    ``P[X1 = m+1 | D] = expit(log_odds)`` and ``log_odds`` is not computed (``None``).
    """
    x1s, x2s, y1s = _flat(release)
    shape = release.shape
    n = x1s.size
    k0 = halfwidth if halfwidth is not None else initial_halfwidth(params.precision, tail_mass)
    width0 = 2 * k0 + 3
    if keep_tables:  # at least the first window's tables are kept for every release
        # one release's tables are large only by their window: name what sets it
        window = "rho1, rho2, d" if halfwidth is None else "halfwidth"
        check_memory(float(TABLE_VALUE_BYTES) * n * width0,
                     parameter=window if n == 1 else
                     "x1_star, x2_star, y1_star" if halfwidth is None
                     else "halfwidth, x1_star, x2_star, y1_star",
                     what=f"the X2 tables of {n} release(s) x {width0} values of k2")
    chunk = max(1, _CHUNK_CELLS // width0)
    # Without the tables, the fused kernel may do the whole batch in one pass.
    compiled = not keep_tables and serves(params) and use_compiled(table_seconds(n, k0))
    if compiled:
        chunk = max(n, 1)
    log_odds = None if prob_x1 is not None else np.empty(n)
    neglected = np.full(n, np.nan)
    pieces = []
    for lo in range(0, n, chunk):
        sl = slice(lo, lo + chunk)
        if keep_tables:
            table = checked_table(x1s[sl], x2s[sl], y1s[sl], params, tail_mass, halfwidth)
            mass, log_neglected = table.log_branch_mass, table.log_neglected
        else:
            mass, log_neglected = checked_masses(x1s[sl], x2s[sl], y1s[sl], params, tail_mass,
                                                 halfwidth, want_neglected=want_neglected,
                                                 compiled=compiled,
                                                 out_prob=None if prob_x1 is None else
                                                 prob_x1[sl])
        if log_odds is not None:
            log_odds[sl] = mass[:, 1] - mass[:, 0]
        if not (keep_tables or want_neglected):
            continue
        log_total = np.logaddexp(mass[:, 0], mass[:, 1])
        with np.errstate(invalid="ignore"):
            neglected[sl] = np.exp(np.logaddexp(*log_neglected.T) - log_total)
        if keep_tables:
            joint = np.exp(table.log_joint - log_total[:, None, None])
            pieces.append((table.k2_start, joint))
    if not keep_tables:
        if log_odds is not None:
            log_odds = log_odds.reshape(shape)
        return log_odds, neglected.reshape(shape), None, None
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


def two_level_posterior(release: Release, scenario: Scenario, tail_mass: float,
                        halfwidth: int | None = None) -> TwoLevelPosterior:
    """Kernel of :func:`exact_posterior` for a validated release and scenario (no checks)."""
    log_odds, neglected, k2_start, joint = posterior_tables(
        release, scenario, tail_mass, halfwidth, keep_tables=True
    )
    trio = (release.x1_star, release.x2_star, release.y1_star)
    return TwoLevelPosterior(log_odds, k2_start, joint, neglected, scenario, trio)


def exact_posterior(
    x1_star, x2_star, y1_star, *, scenario: Scenario | None = None,
    tail_mass: float = DEFAULT_TAIL_MASS, halfwidth: int | None = None, **parameters,
) -> TwoLevelPosterior:
    r"""Exact joint posterior of (X1, X2) given releases ``D = (x1*, x2*, y1*)``.

    .. math::

        \pi(k_1, k_2) \propto P[X_1 = k_1]\, w(k_2 \mid k_1)\,
            e^{-\rho_1 (x_1^* - k_1)^2}\, e^{-\rho_2 (x_2^* - k_2)^2}\,
            e^{-(\rho_1/d)(y_1^* - (k_2 - k_1))^2}, \qquad k_1 \in \{m, m+1\},

        P[X_1 = m+1 \mid D] = \frac{\sum_{k_2} \pi(m+1, k_2)}
                                   {\sum_{k_2} \pi(m, k_2) + \sum_{k_2} \pi(m+1, k_2)},

    ``w`` the prior of X2 given X1 (paper §3.2, supplement S3), summed over ``k2`` on a
    checked window (:mod:`dprisk.inference.kernels.table_kernels`). Vectorised over releases:
    ``x1_star``, ``x2_star`` and ``y1_star`` broadcast to a batch shape ``S``.

    Parameters
    ----------
    x1_star, x2_star, y1_star : array_like of int
        Noisy block count, block-group count, and sum of the other ``d`` blocks' counts.
    scenario : Scenario, optional
        A validated two-level scenario (:meth:`dprisk.models.scenario.Scenario.two_level`),
        instead of the keyword parameters below.
    tail_mass : float (0 < tail_mass <= 1e-3)
        Largest share of each branch's posterior mass the k2 window may leave out.
    halfwidth : int (0 <= halfwidth <= HALFWIDTH_MAX = 2097150), optional
        Fix the window to ``2 * halfwidth + 3`` values instead of choosing (and widening) it.
    **parameters
        ``rho1, rho2`` (float > 0): zCDP parameters of the block and block-group levels;
        ``d`` (int >= 1): other blocks in the block group; ``p`` (0 < p < 1, default 0.5):
        ``P[X1 = known + 1]``; ``known`` (int >= 0, default 0): ``m``, the count of the other
        people in the block with the characteristics; ``prior`` (X2Prior or spec string,
        default ``"improper"``): the prior of X2 given X1 (:mod:`dprisk.models.priors.library`).

    Returns
    -------
    TwoLevelPosterior
        ``prob_x1`` = P[X1 = m + 1 | D], the joint and X2 posterior pmfs, the neglected mass.

    Raises
    ------
    GridTooNarrowError
        If the neglected mass cannot be made smaller than ``tail_mass``.
    ValueError
        Naming the parameter: out of range, or tables of every release above the memory
        limit (:data:`TABLE_VALUE_BYTES` per release and k2 value; ``posterior_x1`` keeps
        none), before they are built.
    """
    scenario = two_level_scenario(scenario, **parameters)
    release = Release.two_level(x1_star, x2_star, y1_star)
    return two_level_posterior(release, scenario, *_checked_options(tail_mass, halfwidth))


def posterior_x1(
    x1_star, x2_star, y1_star, *, scenario: Scenario | None = None,
    tail_mass: float = DEFAULT_TAIL_MASS, **parameters,
) -> float | np.ndarray:
    r"""``P[X1 = m + 1 | D]`` for a batch of releases, without keeping the X2 tables.

    The formula of :func:`exact_posterior`; memory stays bounded for millions of releases
    (processed in chunks). A Python float for one release.

    .. math::

        P[X_1 = m+1 \mid D] = \frac{\sum_{k_2} \pi(m+1, k_2)}
                                   {\sum_{k_2} \pi(m, k_2) + \sum_{k_2} \pi(m+1, k_2)}

    Parameters
    ----------
    x1_star, x2_star, y1_star : array_like of int
        Noisy block count, block-group count, and sum of the other ``d`` blocks' counts,
        broadcast to a batch shape ``S``.
    scenario : Scenario, optional
        A validated two-level scenario, instead of the keyword parameters.
    tail_mass : float (0 < tail_mass <= 1e-3), default 1e-12
        Largest share of each branch's posterior mass the k2 window may leave out.
    **parameters
        ``rho1, rho2, d, p, known, prior``, as in :func:`exact_posterior`.

    Returns
    -------
    float or ndarray
        :math:`P[X_1 = m+1 \mid D]` of shape ``S`` (a float for one release).
    """
    scenario = two_level_scenario(scenario, **parameters)
    release = Release.two_level(x1_star, x2_star, y1_star)
    prob = np.empty(release.shape)
    posterior_tables(release, scenario, check_tail_mass(tail_mass), None, keep_tables=False,
                     want_neglected=False, prob_x1=prob.reshape(-1))
    return scalar_result(prob)


#: Old names (issue 35: ``two_level`` for two levels, ``nested`` for h levels), still importable
#: from this module with a FutureWarning naming the new one.
__getattr__ = renamed_attributes(__name__, {
    "HierarchicalPosterior": "TwoLevelPosterior",
})
