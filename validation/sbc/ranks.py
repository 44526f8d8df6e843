r"""Simulation-based calibration, the core: truths and releases from the model, ranks, tests.

Repeat, for ``n = 1..N``: draw the truth from the adversary's prior
(:math:`X_1 = m + \mathrm{Bernoulli}(p)`, :math:`X_2 \mid X_1 \sim w(\cdot \mid X_1)`), a
release from the adversary's likelihood (:func:`simulate_releases`), run the sampler, and
record the rank of the truth among ``L`` draws, ties broken uniformly at random
(:func:`rank_statistics`). Under a correct sampler the ranks are uniform on ``{0, ..., L}``
(:func:`uniformity_tests`; :func:`x1_rank_pmf` gives the expected X1 rank pmf of a sampler
with the wrong stationary law and :func:`detection_size` the simulations needed to see it).
The overview is in :mod:`dprisk.validation.sbc.calibration`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import stats

from dprisk.models.checks import check_count, check_positive_int, check_probability
from dprisk.models.mechanism.dg_sampling import sample as dg_sample
from dprisk.models.priors.library import parse_prior
from dprisk.models.scenario import Scenario

__all__ = [
    "BROKEN_PRIOR",
    "DEFAULT_PARAMETERS",
    "PRIOR_TAIL_MASS",
    "P_VALUE_BROKEN",
    "P_VALUE_MIN",
    "USER_PRIOR",
    "VARIABLES",
    "SimulatedReleases",
    "UniformityTest",
    "detection_size",
    "prior_x2_pmf",
    "rank_statistics",
    "simulate_from_params",
    "simulate_releases",
    "uniformity_tests",
    "x1_rank_pmf",
]

#: Model parameters of the SBC runs: X1's posterior is genuinely uncertain (x1* has sd ~1).
DEFAULT_PARAMETERS = {"rho1": 0.5, "rho2": 0.5, "d": 3, "p": 0.5, "known": 0}
#: The worked user prior (negative binomial on X2 - X1, mean 5, alpha 2).
USER_PRIOR = "models/examples/negative_binomial_prior.py:prior"
#: Prior under which the constraint-dropping sampler's bias is large (X2 = X1 often).
BROKEN_PRIOR = "truncated:1"
#: The calibrated quantities.
VARIABLES = ("X1", "X2")
#: A correct sampler passes when every uniformity p-value exceeds this (false-alarm rate
#: 0.001 per test).
P_VALUE_MIN = 1e-3
#: A broken sampler is caught when its p-value is below this.
P_VALUE_BROKEN = 1e-6
#: Prior mass an unbounded prior's table of X2 | X1 may leave out.
PRIOR_TAIL_MASS = 1e-12
_MAX_PRIOR_WIDTH = 2**22


# --------------------------------------------------------------------------- generative
def prior_x2_pmf(prior, k1: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The prior pmf of X2 given ``X1 = k1`` on its support (normalised).

    For a bounded support ``{lower, ..., upper}`` every value is tabulated; for an unbounded
    one the table grows (doubling) until it holds at least ``1 - 1e-12`` of the mass
    (:data:`PRIOR_TAIL_MASS`), which a proper prior reaches. The table is normalised to one.

    Parameters
    ----------
    prior : str or X2Prior
        A proper prior (``is_proper``), e.g. ``truncated:U`` or a proper user prior.
    k1 : int
        The value of X1.

    Returns
    -------
    k2 : ndarray of int64
    pmf : ndarray of float

    Raises
    ------
    ValueError
        If the prior is improper, leaves no possible X2, or its weights do not sum to one.
    """
    prior = parse_prior(prior)
    k1 = int(check_count(k1, "k1", minimum=0))
    if not prior.is_proper:
        raise ValueError(
            f"prior must be proper for SBC (the truth is drawn from it), got {prior.spec!r}"
        )
    support = prior.branch_support(k1)
    if support is None:
        raise ValueError(f"prior {prior.spec!r} leaves no possible X2 when X1 = {k1}")
    lower, upper = support
    if upper is not None:
        k2 = np.arange(lower, upper + 1, dtype=np.int64)
        weight = np.exp(prior.log_weight(k2, k1))
    else:
        width = 64
        while True:
            k2 = np.arange(lower, lower + width, dtype=np.int64)
            weight = np.exp(prior.log_weight(k2, k1))
            if weight.sum() >= 1.0 - PRIOR_TAIL_MASS:
                break
            if width >= _MAX_PRIOR_WIDTH:
                raise ValueError(
                    f"prior {prior.spec!r}: {_MAX_PRIOR_WIDTH} values of X2 | X1 = {k1} hold "
                    f"only {weight.sum():.6g} of the mass; is it proper?"
                )
            width *= 2
    total = weight.sum()
    if not abs(total - 1.0) < 1e-9 + PRIOR_TAIL_MASS:
        raise ValueError(
            f"prior {prior.spec!r}: the weights of X2 | X1 = {k1} sum to {total:.12g}, not 1; "
            "SBC needs a proper prior"
        )
    return k2, weight / total


@dataclass(frozen=True)
class SimulatedReleases:
    """Truths and releases of an SBC run (arrays of shape ``(N,)``).

    Attributes
    ----------
    x1, x2 : ndarray of int64
        The true counts drawn from the prior.
    x1_star, x2_star, y1_star : ndarray of int64
        The releases drawn from the adversary's likelihood given the truth.
    """

    x1: np.ndarray
    x2: np.ndarray
    x1_star: np.ndarray
    x2_star: np.ndarray
    y1_star: np.ndarray

    @property
    def releases(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(x1_star, x2_star, y1_star)``."""
        return self.x1_star, self.x2_star, self.y1_star


def simulate_releases(
    n_simulations: int, *, rho1, rho2, d, p=0.5, known=0, prior, random_seed=None
) -> SimulatedReleases:
    r"""Draw ``n_simulations`` truths from the prior and releases from the model.

    .. math::

        X_1 = m + \mathrm{Bernoulli}(p), \quad X_2 \mid X_1 \sim w(\cdot \mid X_1), \quad
        x_1^* \sim \mathrm{DG}(X_1, \rho_1), \ x_2^* \sim \mathrm{DG}(X_2, \rho_2), \
        y_1^* \sim \mathrm{DG}(X_2 - X_1, \rho_1 / d)

    (DG(mu, rho) with pmf proportional to ``exp(-rho (x - mu)^2)``; the last line is the
    adversary's approximation of the sum of ``d`` block noises, so the model is exact.)

    Parameters
    ----------
    n_simulations : int (>= 1)
    rho1, rho2 : float (> 0)
    d : int (>= 1)
    p : float (0 < p < 1)
    known : int (>= 0)
    prior : str or X2Prior
        A proper prior whose support allows both X1 = m and X1 = m + 1.
    random_seed : numpy.random.Generator or int or None
        Seed of ``numpy.random.default_rng`` (a Generator is used as is).

    Returns
    -------
    SimulatedReleases
    """
    n = check_positive_int(n_simulations, "n_simulations")
    params = Scenario.two_level(rho1=rho1, rho2=rho2, d=d, p=p, known=known, prior=prior)
    return simulate_from_params(n, params, np.random.default_rng(random_seed))


def simulate_from_params(n: int, params: Scenario, rng) -> SimulatedReleases:
    """Kernel of :func:`simulate_releases`: validated ``n`` and ``params``, a Generator."""
    x1 = params.known + (rng.random(n) < params.p).astype(np.int64)
    x2 = np.empty(n, dtype=np.int64)
    for k1 in (params.known, params.known + 1):
        chosen = x1 == k1
        k2, pmf = prior_x2_pmf(params.prior, k1)
        cdf = np.cumsum(pmf)
        index = np.searchsorted(cdf, rng.random(int(chosen.sum())) * cdf[-1], side="right")
        x2[chosen] = k2[np.minimum(index, k2.size - 1)]
    x1_star = dg_sample(x1, params.rho1, random_seed=rng)
    x2_star = dg_sample(x2, params.rho2, random_seed=rng)
    y1_star = dg_sample(x2 - x1, params.rho1 / params.d, random_seed=rng)
    return SimulatedReleases(x1, x2, *(np.asarray(a, dtype=np.int64)
                                       for a in (x1_star, x2_star, y1_star)))


# --------------------------------------------------------------------------- ranks, tests
def rank_statistics(truth, draws, random_seed) -> np.ndarray:
    r"""Rank of each truth among its draws, ties broken uniformly at random.

    .. math:: r_n = \#\{\ell: \theta_n^{(\ell)} < \theta_n\} + U_n, \quad
              U_n \sim \mathrm{Uniform}\{0, \dots, \#\{\ell: \theta_n^{(\ell)} = \theta_n\}\}

    Parameters
    ----------
    truth : array_like, shape (N,)
    draws : array_like, shape (N, L)
    random_seed : numpy.random.Generator or int
        For the tie-breaking ``U_n``.

    Returns
    -------
    ndarray of int64, shape (N,)
        Ranks in ``{0, ..., L}``.
    """
    truth = np.asarray(truth)
    draws = np.asarray(draws)
    if draws.ndim != 2 or truth.shape != draws.shape[:1]:
        raise ValueError(
            f"draws must have shape (N, L) with N = len(truth) = {truth.shape}, "
            f"got {draws.shape}"
        )
    rng = np.random.default_rng(random_seed)
    below = (draws < truth[:, None]).sum(axis=1)
    ties = (draws == truth[:, None]).sum(axis=1)
    return below + rng.integers(0, ties + 1)


class UniformityTest(NamedTuple):
    """Result of :func:`uniformity_tests` for one set of ranks."""

    counts: np.ndarray
    chi2: float
    chi2_p_value: float
    ks: float
    ks_p_value: float

    @property
    def p_value(self) -> float:
        """The smaller of the two p-values."""
        return min(self.chi2_p_value, self.ks_p_value)


def uniformity_tests(ranks, n_draws: int, *, bins: int = 10,
                     random_seed=None) -> UniformityTest:
    r"""Test that ranks are uniform on ``{0, ..., L}`` (``L = n_draws``).

    * Chi-square: counts in ``bins`` groups of ``(L + 1) / bins`` consecutive ranks, each
      with probability ``1 / bins`` under the null (``scipy.stats.chisquare``).
    * Kolmogorov-Smirnov on the randomised PIT :math:`u = (r + V) / (L + 1)`,
      :math:`V \sim U(0, 1)`: ``u`` is exactly U(0, 1) when ``r`` is uniform, so the
      continuous KS test applies without the conservatism of a discrete one.

    Parameters
    ----------
    ranks : array_like of int, shape (N,)
    n_draws : int (>= 1)
        ``L``, the draws each rank was computed among.
    bins : int (>= 2)
        Must divide ``L + 1``.
    random_seed : numpy.random.Generator or int or None
        For ``V``.

    Returns
    -------
    UniformityTest
    """
    n_draws = check_positive_int(n_draws, "n_draws")
    bins = check_positive_int(bins, "bins", minimum=2)
    if (n_draws + 1) % bins:
        raise ValueError(f"bins must divide n_draws + 1 = {n_draws + 1}, got {bins}")
    ranks = np.asarray(ranks)
    if ranks.ndim != 1 or ranks.size == 0:
        raise ValueError(f"ranks must be a non-empty 1-d array, got shape {ranks.shape}")
    if ranks.min() < 0 or ranks.max() > n_draws:
        raise ValueError(f"ranks must lie in 0..{n_draws}, got {ranks.min()}..{ranks.max()}")
    rng = np.random.default_rng(random_seed)
    counts = np.bincount(ranks * bins // (n_draws + 1), minlength=bins)
    chi2 = stats.chisquare(counts)
    pit = (ranks + rng.random(ranks.size)) / (n_draws + 1)
    ks = stats.kstest(pit, "uniform")
    return UniformityTest(counts, float(chi2.statistic), float(chi2.pvalue),
                          float(ks.statistic), float(ks.pvalue))


def x1_rank_pmf(prob_true, prob_sampler, n_draws: int) -> np.ndarray:
    r"""Expected pmf of the X1 rank when the sampler's draws are iid with the wrong law.

    For a release with :math:`q = P[X_1 = m+1 \mid D]` (truth drawn from it) and ``L`` iid
    draws with :math:`P[\text{draw} = m+1] = s`: with :math:`J \sim \mathrm{Bin}(L, 1 - s)`
    draws at ``m``, the rank is uniform on ``{J, ..., L}`` if the truth is ``m + 1`` and on
    ``{0, ..., J}`` if it is ``m``. Averaged over releases. With ``s = q`` it is exactly
    ``1 / (L + 1)`` (the SBC identity).

    Parameters
    ----------
    prob_true, prob_sampler : array_like, shape (R,)
        ``q`` and ``s`` per release.
    n_draws : int (>= 1)

    Returns
    -------
    ndarray, shape (L + 1,)
    """
    q = np.clip(np.asarray(prob_true, dtype=float), 0.0, 1.0)
    s = np.clip(np.asarray(prob_sampler, dtype=float), 0.0, 1.0)
    q, s = np.broadcast_arrays(np.atleast_1d(q), np.atleast_1d(s))
    n_draws = check_positive_int(n_draws, "n_draws")
    j = np.arange(n_draws + 1)
    # rank | J = j: uniform on j..L (truth m + 1) or on 0..j (truth m).
    upper = np.triu(np.ones((n_draws + 1, n_draws + 1))) / (n_draws + 1 - j)[:, None]
    lower = np.tril(np.ones((n_draws + 1, n_draws + 1))) / (j + 1)[:, None]
    # P[J = j] per release: the binomial pmf (elementwise) once per distinct s (a few hundred
    # distinct s in 2e4 simulated releases); the releases of one s share its rows of
    # P[rank | s] = pmf @ upper (or lower), so the sum over releases is the sum over distinct
    # s weighted by the releases' total q (and 1 - q) there: two small matrix products
    # instead of two per release (the same sum, in another order)
    s_values, which = np.unique(s, return_inverse=True)
    pmf_by_value = stats.binom.pmf(j[None, :], n_draws, 1.0 - s_values[:, None])
    q_sums = np.bincount(which, weights=q, minlength=s_values.size)
    not_q_sums = np.bincount(which, weights=1.0 - q, minlength=s_values.size)
    total = q_sums @ (pmf_by_value @ upper) + not_q_sums @ (pmf_by_value @ lower)
    return total / q.size


def detection_size(rank_pmf, *, bins: int = 10, alpha: float = P_VALUE_BROKEN,
                   power: float = 0.99) -> int:
    r"""Simulations needed for the chi-square test to reject with probability ``power``.

    The statistic on ``bins`` groups is approximately noncentral chi-square with
    ``bins - 1`` degrees of freedom and noncentrality
    :math:`N \cdot B \sum_b (\pi_b - 1/B)^2` (:math:`\pi_b` the expected share of group
    ``b``); returns the smallest ``N`` whose rejection probability at level ``alpha``
    reaches ``power`` (``math.inf`` is not returned: a uniform pmf raises).

    Raises
    ------
    ValueError
        If the pmf is uniform (no size detects it) or ``bins`` does not divide its length.
    """
    rank_pmf = np.asarray(rank_pmf, dtype=float)
    bins = check_positive_int(bins, "bins", minimum=2)
    if rank_pmf.size % bins:
        raise ValueError(f"bins must divide the number of ranks {rank_pmf.size}, got {bins}")
    alpha = float(check_probability(alpha, "alpha"))
    power = float(check_probability(power, "power"))
    shares = rank_pmf.reshape(bins, -1).sum(axis=1)
    per_simulation = bins * float(((shares - 1.0 / bins) ** 2).sum())
    if per_simulation < 1e-15:
        raise ValueError("rank_pmf is uniform: the chi-square test has no power against it")
    critical = stats.chi2.isf(alpha, bins - 1)

    def rejects(n: int) -> bool:
        return stats.ncx2.sf(critical, bins - 1, n * per_simulation) >= power

    hi = 1
    while not rejects(hi):
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if rejects(mid) else (mid, hi)
    return hi
