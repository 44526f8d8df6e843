r"""Exact probability of a correct decision with hierarchical information (paper §4.3, S4).

The data holder fixes the truth ``(x1, x2)``, ``y1 = x2 - x1``, and asks how often the
adversary's 0-1-loss decision about ``X1 in {m, m+1}`` is right when the releases come from
the TRUE mechanism,

.. math::

    x_1^* \sim \mathrm{DG}(x_1, \tfrac{1}{2\rho_1}), \quad
    x_2^* \sim \mathrm{DG}(x_2, \tfrac{1}{2\rho_2}), \quad
    y_1^* = y_1 + \textstyle\sum_{i=1}^d \eta^{(i)},\ \eta^{(i)} \overset{iid}{\sim}
    \mathrm{DG}(0, \tfrac{1}{2\rho_1})

(the exact d-fold sum, :func:`dprisk.models.dg_sums.sum_pmf`), while the adversary decides with the
model's exact posterior (:mod:`dprisk.inference.exact`, which uses the DG(0, d/(2 rho1))
approximation of the sum: that is the adversary's model).

Structure used for speed. ``x1*`` enters the joint posterior only through
:math:`e^{-\rho_1 (x_1^* - k_1)^2}`, so the posterior log-odds is

.. math::

    L(x_1^*, x_2^*, y_1^*) = L_m(x_2^*, y_1^*) + 2\rho_1 (x_1^* - m),

with :math:`L_m` the log-odds at ``x1* = m`` (one exact k2 enumeration per ``(x2*, y1*)``).
The adversary decides ``m + 1`` iff :math:`L > 0`, i.e. iff ``x1* >= t(x2*, y1*)`` with
:math:`t = m + \lfloor -L_m / (2\rho_1) \rfloor + 1`, and

.. math::

    P[\text{correct}] = \sum_{x_2^*, y_1^*} P[x_2^*]\,P[y_1^*]\,
        \begin{cases} P[X_1^* \ge t \mid x_1] & x_1 = m + 1 \\
                      P[X_1^* < t \mid x_1] & x_1 = m \end{cases}

with exact discrete-Gaussian tails in ``x1*`` (no sum over ``x1*``). The ``(x2*, y1*)`` grid
is chosen from the parameters so that its neglected probability is below ``tail_mass``
(checked, reported as ``neglected_mass``). Posteriors equal to 1/2 within
:data:`TIE_ATOL` on the log-odds scale are *ties* (they occur exactly, e.g. for point-mass
priors with odd ``d``); the paper's rule "decide m + 1 iff the posterior exceeds 1/2" sends
them to ``m`` (``ties="m"``, the default); ``"m+1"`` and ``"half"`` (a fair coin) are the
alternatives. ``tie_mass`` reports their probability.

The module also gives the same quantities for the paper's Gibbs sampler *as the published
numbers suggest it was run* — with the X1 update of eq. (X1fc) applied without the support
constraint ``k1 <= k2`` (:func:`variant_log_odds`): its X1 marginal is the two-state chain
with :math:`T(k_1 \to k_1') = \sum_{k_2} P[k_2 \mid k_1, D]\, P_{\text{unc}}[k_1' \mid k_2, D]`,
whose stationary probability is :math:`\pi_1 = T_{01} / (T_{01} + T_{10})`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import expit, log_expit, logsumexp

from dprisk.inference import single_level
from dprisk.inference.exact import TwoLevelParams, joint_log_table
from dprisk.models import discrete_gaussian as dg
from dprisk.models.checks import check_count, check_probability
from dprisk.models.dg_sums import sum_pmf
from dprisk.models.numerics import dg_log_normalizer
from dprisk.models.priors import check_support, parse_prior

__all__ = [
    "DEFAULT_TAIL_MASS",
    "TIES",
    "TIE_ATOL",
    "HierarchicalPCorrect",
    "ReleaseGrid",
    "decision_thresholds",
    "exact_log_odds_at_known",
    "marginal_summary",
    "p_correct_hierarchical",
    "p_correct_variant",
    "release_grid",
    "validated_study_params",
    "variant_log_odds",
]

#: Default bound on the probability of the (x2*, y1*) releases left out of the grid.
DEFAULT_TAIL_MASS = 1e-9
#: Log-odds within this of 0 count as a posterior of exactly 1/2 (a tie).
TIE_ATOL = 1e-9
#: Tie policies: decide ``m`` (posterior must exceed 1/2), ``m+1``, or a fair coin.
TIES = {"m": 0.0, "m+1": 1.0, "half": 0.5}
#: Decision methods of :func:`marginal_summary`.
SUMMARY_METHODS = ("exact", "mc")
#: k2 tail mass used for the posterior tables inside the studies.
_POSTERIOR_TAIL = 1e-12
#: Largest number of k2 cells (releases x 2 branches x window) built at once.
_CHUNK_CELLS = 2**22


# --------------------------------------------------------------------------- parameters
def _check_tail_mass(tail_mass) -> float:
    value = float(check_probability(tail_mass, "tail_mass"))
    if value > 1e-3:
        raise ValueError(f"tail_mass must be <= 1e-3 (allowed range: 0 < tail_mass <= 1e-3), "
                         f"got {value!r}")
    return value


def _check_ties(ties: str) -> float:
    if ties not in TIES:
        raise ValueError(f"ties must be one of {sorted(TIES)}, got {ties!r}")
    return TIES[ties]


def validated_study_params(*, x2, rho1, rho2, d, x1=None, p=0.5, known=0, prior="improper"):
    """Check a study's inputs; return ``(TwoLevelParams, x1, x2, y1)``.

    The truth is ``x1 in {known, known + 1}`` (default ``known + 1``) and ``x2 >= x1``, so
    that ``y1 = x2 - x1 >= 0``.

    Raises
    ------
    ValueError
        Naming the parameter (``x2``, ``x1``, ``d``, ``prior``, ...) and its allowed range.
    """
    prior = parse_prior(prior)
    params = TwoLevelParams.validated(rho1=rho1, rho2=rho2, d=d, p=p, known=known,
                                      prior=check_support(prior, known))
    m = params.known
    x1 = m + 1 if x1 is None else int(_scalar_count(x1, "x1", 0))
    if x1 not in (m, m + 1):
        raise ValueError(f"x1 must be known or known + 1 (allowed: {m} or {m + 1}), got {x1}")
    x2 = int(_scalar_count(x2, "x2", 0))
    if x2 < x1:
        raise ValueError(f"x2 must be >= x1 = {x1} (y1 = x2 - x1 is a count), got {x2}")
    return params, x1, x2, x2 - x1


def _scalar_count(value, name, minimum):
    arr = check_count(value, name, minimum=minimum)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got an array of shape {arr.shape}")
    return arr[()]


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


@functools.lru_cache(maxsize=256)
def _x2_noise(rho2: float, tail_mass: float):
    half = int(dg.support_halfwidth(rho2, tail_mass))
    offsets = np.arange(-half, half + 1)
    pmf = np.exp(-rho2 * offsets.astype(float) ** 2 - dg_log_normalizer(rho2))
    outside = 2.0 * float(np.exp(dg.log_tail(half + 1, rho2)))
    return offsets, pmf, outside


@functools.lru_cache(maxsize=256)
def _noise_sum(d: int, rho1: float, tail_mass: float):
    exact = sum_pmf(d, rho1, tail_mass=tail_mass)
    outside = max(0.0, 1.0 - float(exact.pmf.sum()))
    return exact.values, exact.pmf, max(outside, 0.0)


def release_grid(*, x2, y1, rho1, rho2, d, tail_mass=DEFAULT_TAIL_MASS) -> ReleaseGrid:
    r"""The ``(x2*, y1*)`` grid of the true mechanism with neglected probability < ``tail_mass``.

    ``x2* = x2 + eta2`` on ``|eta2| <= K2`` with :math:`P[|\eta_2| > K_2] < \tau/2`
    (:func:`dprisk.models.discrete_gaussian.support_halfwidth`, the excess computed exactly with
    ``log_tail``); ``y1* = y1 + S`` on the grid of :func:`dprisk.models.dg_sums.sum_pmf` with
    neglected mass below :math:`\tau/2`. Tables are cached per ``(rho, d, tau)``.

    Raises
    ------
    RuntimeError
        If the computed neglected mass is not below ``tail_mass`` (it always should be).
    """
    tail_mass = _check_tail_mass(tail_mass)
    check_count(x2, "x2", minimum=0)
    check_count(y1, "y1", minimum=0)
    offsets2, pmf2, out2 = _x2_noise(float(rho2), tail_mass / 2)
    values_s, pmf_s, out_s = _noise_sum(int(d), float(rho1), tail_mass / 2)
    neglected = out2 + out_s
    if not neglected < tail_mass:
        raise RuntimeError(f"release grid leaves out {neglected:.3g} >= tail_mass = "
                           f"{tail_mass:g} of the probability")
    return ReleaseGrid(int(x2) + offsets2, pmf2, int(y1) + values_s, pmf_s, neglected)


# --------------------------------------------------------------------------- exact model
def exact_log_odds_at_known(x2_star, y1_star, params: TwoLevelParams) -> np.ndarray:
    r"""``L_m(x2*, y1*)``: the exact posterior log-odds of ``X1 = m + 1`` at ``x1* = m``.

    .. math:: L(x_1^*, x_2^*, y_1^*) = L_m(x_2^*, y_1^*) + 2\rho_1 (x_1^* - m)

    ``-inf`` where the prior makes ``X1 = m + 1`` impossible.
    """
    x2s, y1s = (a.ravel() for a in np.broadcast_arrays(np.asarray(x2_star),
                                                        np.asarray(y1_star)))
    shape = np.broadcast_shapes(np.shape(x2_star), np.shape(y1_star))
    odds = np.empty(x2s.size)
    for rows in _row_chunks(x2s.size, params):
        table = joint_log_table(
            params.known, x2s[rows], y1s[rows], rho1=params.rho1, rho2=params.rho2,
            d=params.d, p=params.p, known=params.known, prior=params.prior,
            tail_mass=_POSTERIOR_TAIL,
        )
        mass = table.log_branch_mass
        with np.errstate(invalid="ignore"):
            odds[rows] = mass[:, 1] - mass[:, 0]
    return odds.reshape(shape)


def _row_chunks(n: int, params: TwoLevelParams):
    """Slices of at most ~_CHUNK_CELLS k2 cells (memory stays bounded for small rho)."""
    width = 2 * int(dg.support_halfwidth(params.precision, _POSTERIOR_TAIL * 1e-3)) + 5
    step = max(1, _CHUNK_CELLS // (2 * width))
    for lo in range(0, n, step):
        yield slice(lo, min(n, lo + step))


def _linear_thresholds(log_odds_at_known, rho1: float):
    r"""Strict thresholds ``t - m`` and tie offsets from :math:`L_m + 2\rho_1 j`.

    Returns ``(offset, tie)``: the smallest ``j`` with :math:`L_m + 2\rho_1 j > ` TIE_ATOL
    (float, ``+-inf`` for impossible / certain branches) and a boolean array marking cells
    where ``j = offset - 1`` is a tie.
    """
    lm = np.asarray(log_odds_at_known, dtype=float)
    finite = np.isfinite(lm)
    safe = np.where(finite, lm, 0.0)
    boundary = -safe / (2.0 * rho1)
    nearest = np.rint(boundary)
    tie = finite & (np.abs(safe + 2.0 * rho1 * nearest) <= TIE_ATOL)
    offset = np.where(tie, nearest + 1.0, np.floor(boundary) + 1.0)
    # Float guard: make sure offset - 1 is not above the boundary and offset is.
    value_at = safe + 2.0 * rho1 * offset
    offset = np.where(~tie & ~(value_at > TIE_ATOL), offset + 1.0, offset)
    value_below = safe + 2.0 * rho1 * (offset - 1.0)
    offset = np.where(~tie & (value_below > TIE_ATOL), offset - 1.0, offset)
    offset = np.where(finite, offset, np.where(lm > 0, -np.inf, np.inf))
    return offset, tie


def decision_thresholds(x2_star, y1_star, *, rho1, rho2, d, p=0.5, known=0,
                        prior="improper", model="exact"):
    r"""The adversary's decision boundary in ``x1*`` for each ``(x2*, y1*)``.

    The adversary decides ``X1 = m + 1`` iff ``x1* >= threshold`` (posterior > 1/2), and the
    release ``x1* = tie_at`` gives a posterior of exactly 1/2 where ``tie`` is true.

    Parameters
    ----------
    x2_star, y1_star : array_like of int
        Releases (broadcast).
    rho1, rho2, d, p, known, prior
        The adversary's model (:func:`dprisk.inference.exact.exact_posterior`).
    model : {"exact", "variant"}
        The exact posterior, or the stationary X1 probability of the constraint-dropping
        Gibbs sampler (:func:`variant_log_odds`).

    Returns
    -------
    threshold : ndarray of float
        Integer-valued, ``+inf`` if ``m + 1`` is never chosen, ``-inf`` if always.
    tie : ndarray of bool
    """
    params = TwoLevelParams.validated(rho1=rho1, rho2=rho2, d=d, p=p, known=known,
                                      prior=prior)
    x2s, y1s = np.broadcast_arrays(check_count(x2_star, "x2_star"),
                                   check_count(y1_star, "y1_star"))
    offset, tie = _thresholds(x2s, y1s, params, model)
    return params.known + offset, tie


def _thresholds(x2s, y1s, params: TwoLevelParams, model: str):
    if model == "exact":
        return _linear_thresholds(exact_log_odds_at_known(x2s, y1s, params), params.rho1)
    if model == "variant":
        return _variant_thresholds(x2s, y1s, params)
    raise ValueError(f"model must be 'exact' or 'variant', got {model!r}")


# --------------------------------------------------------------------------- the variant
class _VariantTables:
    r"""Per ``(x2*, y1*)``: the model's ``P[k2 | k1, D]`` and the unconstrained X1 update.

    ``log_odds(j)`` is :math:`\log T_{01} - \log T_{10}` at ``x1* = m + j`` with
    :math:`T_{01} = \sum_{k_2} P[k_2 \mid m] \operatorname{expit}(c_j + g(k_2))`,
    :math:`T_{10} = \sum_{k_2} P[k_2 \mid m+1] \operatorname{expit}(-c_j - g(k_2))`,
    :math:`c_j = \operatorname{logit} p + \rho_1 (2j - 1)`,
    :math:`g(k_2) = -(\rho_1/d)(2(y_1^* - k_2 + m) + 1)` (eq. X1fc without ``k1 <= k2``).
    """

    def __init__(self, x2s, y1s, params: TwoLevelParams):
        table = joint_log_table(
            params.known, x2s, y1s, rho1=params.rho1, rho2=params.rho2, d=params.d,
            p=params.p, known=params.known, prior=params.prior, tail_mass=_POSTERIOR_TAIL,
        )
        if not table.feasible.all():
            raise ValueError(
                f"prior {params.prior.spec!r} rules out X1 = {params.known + 1}; the "
                "constraint-dropping Gibbs variant needs both values of X1 possible"
            )
        self.params = params
        k2 = table.k2_start[:, None] + np.arange(table.width)
        with np.errstate(invalid="ignore"):
            cond = np.exp(table.log_joint - table.log_branch_mass[:, :, None])
        self.cond = np.where(np.isfinite(table.log_joint), cond, 0.0)
        rho1, d, m = params.rho1, params.d, params.known
        y1_flat = np.asarray(y1s).ravel()
        self.g = -(rho1 / d) * (2.0 * (y1_flat[:, None] - k2 + m) + 1.0)
        self.logit_p = math.log(params.p) - math.log1p(-params.p)

    def log_odds(self, offset: np.ndarray) -> np.ndarray:
        c = self.logit_p + self.params.rho1 * (2.0 * offset - 1.0)
        z = c[:, None] + self.g
        up = expit(z)
        t01 = (self.cond[:, 0] * up).sum(-1)
        t10 = (self.cond[:, 1] * (1.0 - up)).sum(-1)
        with np.errstate(divide="ignore"):
            out = np.log(t01) - np.log(t10)
        # Far from the boundary the direct sums can underflow: redo those rows in log space.
        tiny = (t01 < 1e-200) | (t10 < 1e-200)
        if tiny.any():
            cond = self.cond[tiny]
            with np.errstate(divide="ignore"):
                log_t01 = logsumexp(np.log(cond[:, 0]) + log_expit(z[tiny]), axis=-1)
                log_t10 = logsumexp(np.log(cond[:, 1]) + log_expit(-z[tiny]), axis=-1)
            out[tiny] = log_t01 - log_t10
        return out


def variant_log_odds(x1_star, x2_star, y1_star, *, rho1, rho2, d, p=0.5, known=0,
                     prior="improper") -> np.ndarray:
    r"""Log-odds of the stationary X1 law of the constraint-dropping Gibbs sampler.

    The sampler alternates the model's X2 update (eq. X2fc: ``k2 >= k1`` and the prior) with
    the X1 update of eq. (X1fc) *without* its support condition ``k1 <= k2``,

    .. math:: P_{\text{unc}}[X_1 = k_1 \mid k_2, D] \propto P[X_1 = k_1]\,
              e^{-\rho_1 (x_1^* - k_1)^2 - (\rho_1/d)(y_1^* - k_2 + k_1)^2}.

    Its X1 path is a two-state chain with
    :math:`T(k_1 \to k_1') = \sum_{k_2} P[k_2 \mid k_1, D]\, P_{\text{unc}}[k_1' \mid k_2, D]`,
    whose stationary probability is :math:`\pi_1 = T_{01} / (T_{01} + T_{10})`; this returns
    :math:`\log(\pi_1 / (1 - \pi_1)) = \log T_{01} - \log T_{10}`. It is NOT the model's
    posterior (the lead's finding: it reproduces the paper's MCMC Tables 4-5).
    """
    params = TwoLevelParams.validated(rho1=rho1, rho2=rho2, d=d, p=p, known=known,
                                      prior=prior)
    x1s, x2s, y1s = (a.ravel() for a in np.broadcast_arrays(check_count(x1_star, "x1_star"),
                                                            check_count(x2_star, "x2_star"),
                                                            check_count(y1_star, "y1_star")))
    shape = np.broadcast_shapes(np.shape(x1_star), np.shape(x2_star), np.shape(y1_star))
    out = np.empty(x1s.size)
    for rows in _row_chunks(x1s.size, params):
        tables = _VariantTables(x2s[rows], y1s[rows], params)
        out[rows] = tables.log_odds((x1s[rows] - params.known).astype(float))
    return out.reshape(shape)


def _variant_thresholds(x2s, y1s, params: TwoLevelParams):
    """Thresholds of the variant by vectorised integer bisection (its log-odds increases)."""
    flat2, flaty = np.ravel(x2s), np.ravel(y1s)
    threshold = np.empty(flat2.size)
    tie = np.empty(flat2.size, dtype=bool)
    for rows in _row_chunks(flat2.size, params):
        threshold[rows], tie[rows] = _variant_bisection(
            _VariantTables(flat2[rows], flaty[rows], params))
    return threshold.reshape(np.shape(x2s)), tie.reshape(np.shape(x2s))


def _variant_bisection(tables: _VariantTables):
    n = tables.g.shape[0]
    lo = np.full(n, -8.0)  # offsets j = x1* - m with log-odds <= TIE_ATOL (to be checked)
    hi = np.full(n, 8.0)   # offsets with log-odds > TIE_ATOL
    for _ in range(60):
        bad_lo = tables.log_odds(lo) > TIE_ATOL
        bad_hi = ~(tables.log_odds(hi) > TIE_ATOL)
        if not (bad_lo.any() or bad_hi.any()):
            break
        width = hi - lo
        lo = np.where(bad_lo, lo - width, lo)
        hi = np.where(bad_hi, hi + width, hi)
    else:  # pragma: no cover - the log-odds grows like 2 rho1 j
        raise RuntimeError("could not bracket the variant's decision threshold")
    while np.any(hi - lo > 1):
        mid = np.floor((lo + hi) / 2)
        above = tables.log_odds(mid) > TIE_ATOL
        active = hi - lo > 1
        hi = np.where(active & above, mid, hi)
        lo = np.where(active & ~above, mid, lo)
    return hi, np.abs(tables.log_odds(lo)) <= TIE_ATOL


# --------------------------------------------------------------------------- the sum
@dataclass(frozen=True)
class HierarchicalPCorrect:
    """Exact probability of a correct 0-1-loss decision with and without the hierarchy.

    Attributes
    ----------
    p_correct : float
        With the hierarchical information (two-level posterior).
    p_correct_no_hierarchy : float
        With ``x1*`` alone (:func:`dprisk.inference.single_level.decision_threshold`).
    gain, loss : float
        ``P[hierarchical decision correct, single-level wrong]`` and the reverse, so that
        ``p_correct - p_correct_no_hierarchy = gain - loss``.
    neglected_mass : float
        Bound of the release probability outside the ``(x2*, y1*)`` grid.
    tie_mass : float
        Probability of a release whose posterior is exactly 1/2.
    x1, x2 : int
        The truth.
    model, ties : str
    """

    p_correct: float
    p_correct_no_hierarchy: float
    gain: float
    loss: float
    neglected_mass: float
    tie_mass: float
    x1: int
    x2: int
    model: str = "exact"
    ties: str = "m"

    def to_dict(self) -> dict:
        """All fields as a plain dict."""
        return asdict(self)


def _upper(t: np.ndarray, x1: int, rho1: float) -> np.ndarray:
    """``P[X1* >= t]`` for X1* ~ DG(x1, 1/(2 rho1)), ``t`` float (integer-valued or +-inf)."""
    out = np.where(t == -np.inf, 1.0, 0.0)
    finite = np.isfinite(t)
    if finite.any():
        values, inverse = np.unique(t[finite].astype(np.int64), return_inverse=True)
        out[finite] = dg.sf(values - 1, x1, rho1)[inverse]
    return out


def _point(t: np.ndarray, x1: int, rho1: float) -> np.ndarray:
    """``P[X1* = t]`` (0 for infinite ``t``)."""
    out = np.zeros(t.shape)
    finite = np.isfinite(t)
    if finite.any():
        out[finite] = np.exp(-rho1 * (t[finite] - x1) ** 2 - dg_log_normalizer(rho1))
    return out


def _sum_over_grid(threshold, tie, weights, *, x1, m, rho1, t0, tie_weight):
    """Reduce per-cell thresholds to (p_correct, p0, gain, loss, tie_mass)."""
    u_t = _upper(threshold, x1, rho1)
    u_0 = float(_upper(np.array([float(t0)]), x1, rho1)[0])
    tie_point = np.where(tie, _point(threshold - 1.0, x1, rho1), 0.0)
    decide_up = u_t + tie_weight * tie_point          # P[decide m+1 | x2*, y1*]
    tie_below_t0 = tie & (threshold - 1.0 < t0)
    # P[hier = m+1, single = m] and P[hier = m, single = m+1]
    up_only = np.maximum(u_t - u_0, 0.0) + tie_weight * np.where(tie_below_t0, tie_point, 0.0)
    down_only = (np.maximum(u_0 - u_t, 0.0)
                 - tie_weight * np.where(tie & ~tie_below_t0, tie_point, 0.0))
    total = weights.sum()
    if x1 == m + 1:
        correct, correct0, gain, loss = decide_up, u_0, up_only, down_only
    else:
        correct, correct0, gain, loss = 1.0 - decide_up, 1.0 - u_0, down_only, up_only
    return (float((weights * correct).sum()), correct0 * float(total),
            float((weights * gain).sum()), float((weights * loss).sum()),
            float((weights * tie_point).sum()))


def _study(*, x2, rho1, rho2, d, x1, p, known, prior, tail_mass, ties, model):
    params, x1, x2, y1 = validated_study_params(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p,
                                                known=known, prior=prior)
    tie_weight = _check_ties(ties)
    grid = release_grid(x2=x2, y1=y1, rho1=params.rho1, rho2=params.rho2, d=params.d,
                        tail_mass=tail_mass)
    x2s, y1s = np.meshgrid(grid.x2_star, grid.y1_star, indexing="ij")
    offset, tie = _thresholds(x2s, y1s, params, model)
    t0 = int(single_level.decision_threshold(params.rho1, params.p, params.known))
    pc, pc0, gain, loss, tie_mass = _sum_over_grid(
        params.known + offset, tie, grid.weights, x1=x1, m=params.known, rho1=params.rho1,
        t0=t0, tie_weight=tie_weight)
    return HierarchicalPCorrect(pc, pc0, gain, loss, grid.neglected_mass, tie_mass, x1, x2,
                                model, ties)


def p_correct_hierarchical(*, x2, rho1, rho2, d, x1=None, p=0.5, known=0, prior="improper",
                           tail_mass=DEFAULT_TAIL_MASS, ties="m") -> HierarchicalPCorrect:
    r"""Exact P[correct 0-1-loss decision] using the block group (paper Figs 4-6, S4).

    .. math::

        P[\hat X_1 = x_1] = \sum_{x_2^*, y_1^*} P[x_2^* \mid x_2]\, P[y_1^* \mid y_1]\,
            P[\hat X_1(X_1^*, x_2^*, y_1^*) = x_1 \mid x_1]

    with the exact posterior deciding (see the module docstring for the threshold form and
    ties). Sums are exact up to ``neglected_mass < tail_mass``.

    Parameters
    ----------
    x2 : int (x2 >= x1)
        True block-group count.
    rho1, rho2 : float (> 0)
    d : int (d >= 1)
        Other blocks in the block group.
    x1 : int, optional
        True block count, ``known`` or ``known + 1`` (default ``known + 1``).
    p : float (0 < p < 1)
    known : int (known >= 0)
    prior : str or X2Prior
        ``improper``, ``truncated:U``, ``point:K``, ``PATH.py:NAME`` or a prior object.
    tail_mass : float (0 < tail_mass <= 1e-3)
        Bound on the release probability left out of the grid.
    ties : {"m", "m+1", "half"}
        Decision at a posterior of exactly 1/2.

    Returns
    -------
    HierarchicalPCorrect

    Raises
    ------
    ValueError
        Naming the bad parameter (e.g. ``x2 < x1``, ``d < 1``, an unknown prior).
    """
    return _study(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p, known=known, prior=prior,
                  tail_mass=tail_mass, ties=ties, model="exact")


def p_correct_variant(*, x2, rho1, rho2, d, x1=None, p=0.5, known=0, prior="improper",
                      tail_mass=DEFAULT_TAIL_MASS, ties="m") -> HierarchicalPCorrect:
    """As :func:`p_correct_hierarchical`, deciding with the constraint-dropping Gibbs variant.

    The adversary's posterior is replaced by the stationary X1 probability of the sampler
    described in :func:`variant_log_odds` (what the paper's figures appear to use).
    """
    return _study(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p, known=known, prior=prior,
                  tail_mass=tail_mass, ties=ties, model="variant")


# --------------------------------------------------------------------------- CLI summary
def marginal_summary(*, rho1, rho2, d, x2, x1=None, p=0.5, known=0, prior="improper",
                     method="exact", datasets=20_000, draws=1000, seed=None) -> dict:
    """P[correct] with and without the hierarchy, and the gain/loss split (for the CLI).

    Parameters
    ----------
    rho1, rho2, d, x2, x1, p, known, prior
        As in :func:`p_correct_hierarchical`.
    method : {"exact", "mc"}
        Exact grid sum, or Monte Carlo (:func:`dprisk.inference.mc_studies.simulate_p_correct`:
        ``datasets`` releases from the true mechanism, ``draws`` Gibbs draws each).
    datasets, draws : int (>= 1)
        Monte Carlo budget (``method="mc"`` only).
    seed : int, optional
        Seed of the Monte Carlo run.

    Returns
    -------
    dict
        Exactly ``{"p_correct", "p_correct_no_hierarchy", "gain", "loss"}`` (floats), plus
        ``"mcse"`` (standard error of ``p_correct``) for ``method="mc"``.
    """
    if method not in SUMMARY_METHODS:
        raise ValueError(f"method must be one of {SUMMARY_METHODS}, got {method!r}")
    if method == "exact":
        result = p_correct_hierarchical(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p,
                                        known=known, prior=prior)
        return {"p_correct": result.p_correct,
                "p_correct_no_hierarchy": result.p_correct_no_hierarchy,
                "gain": result.gain, "loss": result.loss}
    from dprisk.inference.mc_studies import simulate_p_correct

    run = simulate_p_correct(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p, known=known,
                             prior=prior, datasets=datasets, draws=draws, seed=seed,
                             progress=False)
    return {"p_correct": run.p_correct, "p_correct_no_hierarchy": run.p_correct_no_hierarchy,
            "gain": run.gain, "loss": run.loss, "mcse": run.mcse}
