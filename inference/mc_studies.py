r"""Monte Carlo versions of the decision studies, at the paper's scale (paper §4.3, Figs 5-6).

The paper estimates P[correct decision] by simulating ``D = (x1*, x2*, y1*)`` from the true
mechanism, running a Gibbs sampler with ``N`` draws (``N = 1e3``) on each ``D``, deciding
``m + 1`` iff the fraction of draws with ``X1 = m + 1`` exceeds 1/2, and averaging. This
module does the same, vectorised over many ``D`` and chunked.

The X1 path of a two-block Gibbs sampler is a two-state Markov chain (see
:mod:`dprisk.inference.gibbs`): with ``q(k2) = P[X1 = m + 1 | k2, D]`` the X1 update and
``P[k2 | k1, D]`` the X2 update,

.. math:: a_b = P[X_1^{(t+1)} = m+1 \mid X_1^{(t)} = m+b]
              = \sum_{k_2} P[k_2 \mid m+b, D]\, q(k_2),

so the count of ``X1 = m + 1`` draws, and with it the decision, has exactly the law of the
Gibbs output when the chain is simulated from ``(a_0, a_1)`` alone (``sampler="x1_chain"``;
``"gibbs"`` runs :func:`dprisk.inference.gibbs.gibbs_sample` itself, for checking). The chain's
stationary probability :math:`a_0 / (1 - a_1 + a_0)` is the exact posterior. With the X1
update of eq. (X1fc) *without* its constraint ``k1 <= k2`` the same construction gives the
paper's apparent sampler (``"variant"``, see :func:`dprisk.inference.studies.variant_log_odds`).
``"exact"`` / ``"variant_exact"`` decide with the stationary probability itself (no draws):
a variance-free check of the simulation of ``D``. Every run also reports the decision rate
of the stationary probability on the same ``D`` (paired), which isolates the effect of the
finite number of draws.

Reproducibility: releases are generated in fixed blocks of :data:`BLOCK` datasets; block
``i`` uses the ``i``-th child of ``np.random.SeedSequence(seed)``, so results depend on
``(seed, datasets)`` only, not on how blocks are grouped into chunks.

:func:`finite_draws_p_correct` computes the *expected* P[correct] of the ``N``-draw procedure
exactly (no simulation): the count of ones of a two-state chain has probability generating
function :math:`G(z) = \mathbf{s}^\top (P\,\mathrm{diag}(1, z))^N \mathbf{1}`, evaluated at
the ``N + 1`` roots of unity and inverted by FFT.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import asdict, dataclass

import numpy as np

from dprisk.inference import single_level
from dprisk.inference.exact import TwoLevelParams, joint_log_table
from dprisk.inference.studies import (
    _POSTERIOR_TAIL,
    TIE_ATOL,
    _check_ties,
    _thresholds,
    release_grid,
    validated_study_params,
)
from dprisk.models import discrete_gaussian as dg
from dprisk.models.checks import check_positive_int
from dprisk.models.dg_sampling import sample, sample_sum
from dprisk.models.numerics import dg_log_normalizer

__all__ = [
    "BLOCK",
    "SAMPLERS",
    "MCResult",
    "chain_transitions",
    "count_moments",
    "decision_probability",
    "finite_draws_p_correct",
    "simulate_p_correct",
]

#: Datasets per independently seeded block.
BLOCK = 16_384
#: Samplers of :func:`simulate_p_correct`; the ``*_exact`` ones decide without draws.
SAMPLERS = ("x1_chain", "gibbs", "exact", "variant", "variant_exact")
#: Time steps of the X1 chain simulated per vectorised pass.
_STEP_CHUNK = 128
#: Releases per pass of :func:`dprisk.inference.gibbs.gibbs_sample` (memory: 2 x 8 B x draws each).
_GIBBS_SUB = 1024


# --------------------------------------------------------------------------- chain tables
def chain_transitions(x1_star, x2_star, y1_star, params: TwoLevelParams, *,
                      variant: bool = False):
    r"""``(a0, a1)`` of the X1 chain of the Gibbs sampler, one pair per release.

    :math:`a_b = \sum_{k_2} P[k_2 \mid X_1 = m + b, D]\, q(k_2)` with ``q`` the model's
    :math:`P[X_1 = m+1 \mid k_2, D]` or, for ``variant=True``, the unconstrained update of
    eq. (X1fc). A branch the prior rules out gets ``a_b = 0`` (the chain stays at ``m``).

    Parameters
    ----------
    x1_star, x2_star, y1_star : ndarray of int, shape (R,)
    params : TwoLevelParams

    Returns
    -------
    a0, a1 : ndarray, shape (R,)
    """
    table = joint_log_table(
        x1_star, x2_star, y1_star, rho1=params.rho1, rho2=params.rho2, d=params.d,
        p=params.p, known=params.known, prior=params.prior, tail_mass=_POSTERIOR_TAIL,
    )
    log_joint = table.log_joint
    with np.errstate(invalid="ignore"):
        cond = np.exp(log_joint - table.log_branch_mass[:, :, None])
    cond = np.where(np.isfinite(log_joint), cond, 0.0)
    if variant:
        if not table.feasible.all():
            raise ValueError(f"prior {params.prior.spec!r} rules out X1 = {params.known + 1}; "
                             "the constraint-dropping variant needs both values possible")
        rho1, d, m = params.rho1, params.d, params.known
        k2 = table.k2_start[:, None] + np.arange(table.width)
        logit = (math.log(params.p) - math.log1p(-params.p)
                 + rho1 * (2.0 * (np.asarray(x1_star)[:, None] - m) - 1.0)
                 - (rho1 / d) * (2.0 * (np.asarray(y1_star)[:, None] - k2 + m) + 1.0))
        q = _expit(logit)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            q = 1.0 / (1.0 + np.exp(log_joint[:, 0] - log_joint[:, 1]))
        q = np.where(np.isfinite(log_joint[:, 1]), q, 0.0)
    a0 = (cond[:, 0] * q).sum(-1)
    a1 = (cond[:, 1] * q).sum(-1)
    return np.clip(a0, 0.0, 1.0), np.clip(np.where(table.feasible[1], a1, 0.0), 0.0, 1.0)


def _expit(x):
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1.0 / (1.0 + np.exp(-x)), np.exp(x) / (1.0 + np.exp(x)))


def _stationary_up(a0, a1, tie_weight: float) -> np.ndarray:
    """1 where the stationary probability exceeds 1/2, ``tie_weight`` where it equals 1/2."""
    log_odds = _stationary_log_odds(a0, a1)
    return np.where(log_odds > TIE_ATOL, 1.0,
                    np.where(np.abs(log_odds) <= TIE_ATOL, tie_weight, 0.0))


def _stationary_log_odds(a0, a1):
    """``log(pi / (1 - pi))`` of the chain, ``pi = a0 / (1 - a1 + a0)``."""
    with np.errstate(divide="ignore"):
        return np.log(a0) - np.log1p(-a1)


# --------------------------------------------------------------------------- exact N-draw rate
def decision_probability(a0, a1, start, draws: int, *, method: str = "fft",
                         ties: str = "m") -> np.ndarray:
    r"""P[the ``draws`` X1 draws make the adversary decide m + 1], per chain.

    The chain starts from ``X1^(0) = m + 1`` with probability ``start``; the recorded draws are
    ``X1^(1), ..., X1^(N)`` (as in :func:`dprisk.inference.gibbs.gibbs_sample`); ``C`` counts the
    draws equal to ``m + 1``. The decision is ``m + 1`` iff ``C > N/2``; when ``C = N/2``
    exactly (``N`` even) ``ties`` decides: ``"m"`` (strict rule), ``"m+1"`` (the rule
    "estimate >= 1/2") or ``"half"``.

    * ``method="fft"`` (exact): with :math:`P = [[1-a_0, a_0], [1-a_1, a_1]]`, ``C`` has
      generating function :math:`G(z) = (1 - s, s)\,(P\,\mathrm{diag}(1, z))^N \mathbf 1`;
      ``G`` at the ``N + 1`` roots of unity (binary powering), inverted by FFT, gives
      ``P[C = k]`` (round-off about ``N * 1e-16``).
    * ``method="normal"``: the continuity-corrected normal law with the exact mean and
      variance of ``C``: with :math:`\lambda = a_1 - a_0`, :math:`\pi = a_0/(1-\lambda)`,
      :math:`c = s - \pi`, :math:`S_1 = \sum_{t=1}^N \lambda^t`,
      :math:`S_2 = \sum_{t=1}^N \lambda^{2t}`,

      .. math::

          E C = N\pi + c S_1, \qquad
          \operatorname{Var} C = \frac{1+\lambda}{1-\lambda}\big(N\pi(1-\pi)
              + c(1-2\pi) S_1 - c^2 S_2\big)
              - \frac{2}{1-\lambda}\big(\pi(1-\pi) S_1 + c(1-2\pi) N\lambda^{N+1}
              - c^2 \lambda^{N+1} S_1\big)

      (from :math:`P[X_1^{(t)} = m+1] = \pi + c\lambda^t` and
      :math:`\operatorname{Cov}(b_t, b_u) = \lambda^{u-t}\operatorname{Var} b_t`). O(1) per
      chain; at ``N = 1000`` on Census-parameter releases within 5e-4 of ``"fft"`` (tested).

    Parameters
    ----------
    a0, a1, start : array_like of float in [0, 1] (broadcast to shape (R,))
    draws : int (>= 1)
    method : {"fft", "normal"}
    ties : {"m", "m+1", "half"}
    """
    draws = check_positive_int(draws, "draws")
    tie_weight = _check_ties(ties)
    a0, a1, start = (np.asarray(v, dtype=float).ravel()
                     for v in np.broadcast_arrays(a0, a1, start))
    for name, values in (("a0", a0), ("a1", a1), ("start", start)):
        if not np.all((values >= 0) & (values <= 1)):
            raise ValueError(f"{name} must hold probabilities in [0, 1], got {values!r}")
    if method == "fft":
        return _decision_probability_fft(a0, a1, start, draws, tie_weight)
    if method == "normal":
        return _decision_probability_normal(a0, a1, start, draws, tie_weight)
    raise ValueError(f"method must be 'fft' or 'normal', got {method!r}")


def _decision_probability_fft(a0, a1, start, draws, tie_weight, chunk=512):
    n_points = draws + 1
    z = np.exp(2j * np.pi * np.arange(n_points) / n_points)[None, :]
    out = np.empty(a0.size)
    for lo in range(0, a0.size, chunk):
        sl = slice(lo, lo + chunk)
        b0, b1, s = a0[sl, None], a1[sl, None], start[sl, None]
        power = ((1.0 - b0) + 0j * z, b0 * z, (1.0 - b1) + 0j * z, b1 * z)  # M(z) = P diag(1, z)
        result = None
        e = draws
        while e:
            if e & 1:
                result = power if result is None else _matmul(result, power)
            e >>= 1
            if e:
                power = _matmul(power, power)
        r00, r01, r10, r11 = result
        gen = (1.0 - s) * (r00 + r01) + s * (r10 + r11)
        # G(w^j) = sum_k P[C = k] w^{jk}, so P[C = k] = fft(G)[k] / (N + 1).
        pmf = np.fft.fft(gen, axis=-1).real / n_points
        up = pmf[:, draws // 2 + 1:].sum(-1)
        if draws % 2 == 0:
            up = up + tie_weight * pmf[:, draws // 2]
        out[sl] = np.clip(up, 0.0, 1.0)
    return out


def _matmul(x, y):
    x00, x01, x10, x11 = x
    y00, y01, y10, y11 = y
    return (x00 * y00 + x01 * y10, x00 * y01 + x01 * y11,
            x10 * y00 + x11 * y10, x10 * y01 + x11 * y11)


def count_moments(a0, a1, start, draws):
    """Exact mean and variance of the count ``C`` (see :func:`decision_probability`)."""
    a0, a1, start = (np.asarray(v, dtype=float) for v in (a0, a1, start))
    lam = np.clip(a1 - a0, -1.0 + 1e-12, 1.0 - 1e-9)
    gap = 1.0 - lam
    pi = np.clip(a0 / gap, 0.0, 1.0)
    c = start - pi
    lam_n = lam**draws
    s1 = lam * (1.0 - lam_n) / gap
    s2 = lam**2 * (1.0 - lam_n**2) / (1.0 - lam**2)
    mean = draws * pi + c * s1
    var = ((1.0 + lam) / gap * (draws * pi * (1.0 - pi) + c * (1.0 - 2.0 * pi) * s1 - c**2 * s2)
           - 2.0 / gap * (pi * (1.0 - pi) * s1 + c * (1.0 - 2.0 * pi) * draws * lam_n * lam
                          - c**2 * lam_n * lam * s1))
    return mean, np.maximum(var, 0.0)


def _decision_probability_normal(a0, a1, start, draws, tie_weight):
    from scipy.special import ndtr

    mean, var = count_moments(a0, a1, start, draws)
    sd = np.sqrt(np.maximum(var, 1e-300))
    strict = ndtr(-((draws // 2 + 0.5) - mean) / sd)            # P[C >= floor(N/2) + 1]
    if draws % 2:
        return strict
    with_tie = ndtr(-((draws // 2 - 0.5) - mean) / sd)          # P[C >= N/2]
    return strict + tie_weight * (with_tie - strict)


def finite_draws_p_correct(*, x2, rho1, rho2, d, draws, x1=None, p=0.5, known=0,
                           prior="improper", variant=False, method="normal", start="prior",
                           ties="m", tail_mass=1e-9) -> dict:
    r"""Expected P[correct] of the paper's procedure with ``draws`` Gibbs draws per ``D``.

    .. math::

        \sum_{D} P[D \mid \text{truth}]\;
            P\big[\text{decision from } N \text{ draws is correct} \mid D\big]

    on the grid of :func:`dprisk.inference.studies.release_grid`, with the chain started from the
    prior of X1 (``start="prior"``, as :func:`dprisk.inference.gibbs.gibbs_sample`) or from
    ``X1 = m + 1`` with probability ``start`` (a float in [0, 1]). For each ``(x2*, y1*)`` the
    ``x1*`` within a band around the chain's stationary threshold use
    :func:`decision_probability`; outside it the decision is taken as deterministic (m below,
    m + 1 above), and the band is widened until the bound on the error this makes (the
    decision probability is monotone in ``x1*``), ``band_error``, is below 1e-10.
    ``method`` is that of :func:`decision_probability` (``"normal"`` by default: exact
    moments, continuity-corrected normal law; ``"fft"`` is exact but ~100 times slower).
    ``ties`` decides a count of exactly ``N/2`` and a stationary probability of exactly 1/2
    (``"m"``: estimate must exceed 1/2; ``"m+1"``: estimate >= 1/2; ``"half"``: a coin).

    Returns
    -------
    dict
        ``p_correct`` (``draws`` draws), ``p_correct_stationary`` (the deterministic decision
        with the chain's stationary probability), ``draws``, ``variant``, ``ties``,
        ``neglected_mass`` (grid) and ``band_error`` (bound of the error from treating the
        decisions outside the band as deterministic).
    """
    params, x1, x2, y1 = validated_study_params(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p,
                                                known=known, prior=prior)
    draws = check_positive_int(draws, "draws")
    tie_weight = _check_ties(ties)
    grid = release_grid(x2=x2, y1=y1, rho1=params.rho1, rho2=params.rho2, d=params.d,
                        tail_mass=tail_mass)
    x2s, y1s = np.meshgrid(grid.x2_star, grid.y1_star, indexing="ij")
    x2s, y1s, weights = x2s.ravel(), y1s.ravel(), grid.weights.ravel()
    m = params.known
    # The band is centred on the chain's own stationary threshold.
    offset, _ = _thresholds(x2s, y1s, params, "variant" if variant else "exact")
    finite = np.isfinite(offset)
    always_up = offset == -np.inf  # (never for proper inputs; kept for completeness)
    x2f, y1f, wf, centre = x2s[finite], y1s[finite], weights[finite], offset[finite]
    start_prob = _start_probability(start, params)
    half = 4
    while True:
        js = np.arange(-half, half)
        x1_grid = (m + centre[:, None] + js[None, :]).astype(np.int64)
        rows = np.repeat(np.arange(x2f.size), js.size)
        a0, a1 = chain_transitions(x1_grid.ravel(), x2f[rows], y1f[rows], params,
                                   variant=variant)
        prob_up = decision_probability(a0, a1, start_prob, draws, method=method,
                                       ties=ties).reshape(x1_grid.shape)
        stationary_up = _stationary_up(a0, a1, tie_weight).reshape(x1_grid.shape)
        below = dg.cdf(x1_grid[:, 0] - 1, x1, params.rho1)   # P[x1* < band]
        above = dg.sf(x1_grid[:, -1], x1, params.rho1)        # P[x1* > band]
        # Outside the band the decision is taken as m below and m + 1 above; since the
        # decision probability increases with x1*, the error is at most:
        band_error = float((wf * (below * prob_up[:, 0] + above * (1.0 - prob_up[:, -1]))).sum())
        if (band_error < 1e-10 and not stationary_up[:, 0].any()
                and (stationary_up[:, -1] == 1.0).all()):
            break
        half *= 2
        if half > 512:
            raise RuntimeError(f"decision band did not converge (error {band_error:.3g})")
    pmf_x1 = np.exp(-params.rho1 * (x1_grid - x1) ** 2 - dg_log_normalizer(params.rho1))
    up_n = np.where(always_up, 1.0, 0.0)
    up_s = up_n.copy()
    up_n[finite] = (pmf_x1 * prob_up).sum(-1) + above
    up_s[finite] = (pmf_x1 * stationary_up).sum(-1) + above
    if x1 == m + 1:
        correct_n, correct_s = up_n, up_s
    else:
        correct_n, correct_s = 1.0 - up_n, 1.0 - up_s
    return {"p_correct": float((weights * correct_n).sum()),
            "p_correct_stationary": float((weights * correct_s).sum()),
            "draws": draws, "variant": bool(variant), "method": method, "ties": ties,
            "start": start, "x1": x1, "x2": x2,
            "neglected_mass": grid.neglected_mass, "band_error": band_error}


# --------------------------------------------------------------------------- simulation
@dataclass(frozen=True)
class MCResult:
    """Monte Carlo estimate of P[correct] (one truth, one sampler).

    Attributes
    ----------
    p_correct, mcse : float
        Proportion of simulated ``D`` decided correctly (with ``draws`` draws each, or with
        the stationary probability for the ``*_exact`` samplers) and its standard error.
    p_correct_stationary : float
        Same ``D``, decided with the chain's stationary probability (the exact posterior for
        the model's sampler).
    draws_effect, mcse_draws_effect : float
        ``p_correct - p_correct_stationary`` (paired on the same ``D``) and its standard
        error: the effect of deciding from a finite number of draws.
    p_correct_no_hierarchy, gain, loss : float
        Same ``D``: single-level decision, and the paired gain/loss of the hierarchical one.
    datasets, draws : int
    sampler, ties : str
    seed : int
        The seed given, or the entropy drawn by ``np.random.SeedSequence()`` when none was
        (pass it back to reproduce the run).
    seconds : float
    """

    p_correct: float
    mcse: float
    p_correct_stationary: float
    draws_effect: float
    mcse_draws_effect: float
    p_correct_no_hierarchy: float
    gain: float
    loss: float
    datasets: int
    draws: int
    sampler: str
    ties: str
    seed: int
    seconds: float
    x1: int
    x2: int

    def to_dict(self) -> dict:
        """All fields as a plain dict."""
        return asdict(self)


def _block_sizes(datasets: int) -> list[int]:
    full, rest = divmod(datasets, BLOCK)
    return [BLOCK] * full + ([rest] if rest else [])


def _simulate_chain(a0, a1, start_prob, draws, rng) -> np.ndarray:
    """Count of ones among ``draws`` steps of the X1 chain (one chain per row)."""
    n = a0.size
    state = rng.random(n) < start_prob
    count = np.zeros(n, dtype=np.int64)
    delta = a1 - a0
    done = 0
    while done < draws:
        steps = min(_STEP_CHUNK, draws - done)
        u = rng.random((steps, n))
        for t in range(steps):
            state = u[t] < a0 + delta * state
            count += state
        done += steps
    return count


def _check_seed(seed):
    """``None`` or a non-negative integer (any size: SeedSequence entropy is 128-bit)."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be None or an integer >= 0, got {seed!r}")
    return int(seed)


def _start_probability(start, params: TwoLevelParams) -> float:
    """P[X1^(0) = m + 1]: the prior ``p`` for ``"prior"``, else the given probability."""
    if params.prior.branch_support(params.known + 1) is None:
        return 0.0
    if isinstance(start, str):
        if start != "prior":
            raise ValueError(f"start must be 'prior' or a probability in [0, 1], got {start!r}")
        return params.p
    value = float(start)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"start must be 'prior' or a probability in [0, 1], got {start!r}")
    return value


def _resolve(up: np.ndarray, tie: np.ndarray, ties: str, rng) -> np.ndarray:
    """Decisions ``up`` with the ``tie`` cases set by the tie rule (a coin for ``"half"``)."""
    if ties == "m" or not tie.any():
        return up
    if ties == "m+1":
        return up | tie
    return up | (tie & (rng.random(up.size) < 0.5))


def _block(n, params, x1, x2, y1, draws, sampler, t0, rng, start, ties):
    """Decisions for one block: (correct, correct_stationary, correct_no_hierarchy)."""
    x1s = sample(x1, params.rho1, size=n, rng=rng)
    x2s = sample(x2, params.rho2, size=n, rng=rng)
    y1s = y1 + sample_sum(params.d, params.rho1, size=n, rng=rng)
    m = params.known
    releases = np.stack([x1s, x2s, y1s], axis=1)
    unique, inverse = np.unique(releases, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    variant = sampler.startswith("variant")
    a0, a1 = chain_transitions(unique[:, 0], unique[:, 1], unique[:, 2], params,
                               variant=variant)
    log_odds = _stationary_log_odds(a0, a1)[inverse]
    up_stationary = _resolve(log_odds > TIE_ATOL, np.abs(log_odds) <= TIE_ATOL, ties, rng)
    start_prob = _start_probability(start, params)
    if sampler in ("exact", "variant_exact"):
        up = up_stationary
    elif sampler in ("x1_chain", "variant"):
        count = _simulate_chain(a0[inverse], a1[inverse], start_prob, draws, rng)
        up = _resolve(2 * count > draws, 2 * count == draws, ties, rng)
    else:  # "gibbs"
        from dprisk.inference.gibbs import gibbs_sample

        count = np.empty(n, dtype=np.int64)
        for lo in range(0, n, _GIBBS_SUB):
            sl = slice(lo, lo + _GIBBS_SUB)
            out = gibbs_sample(x1s[sl], x2s[sl], y1s[sl], rho1=params.rho1, rho2=params.rho2,
                               d=params.d, p=params.p, known=m, prior=params.prior,
                               draws=draws, chains=1, rng=rng)
            count[sl] = (out.x1[:, 0, :] == m + 1).sum(-1)
        up = _resolve(2 * count > draws, 2 * count == draws, ties, rng)
    up_single = x1s >= t0
    if x1 == m + 1:
        return up, up_stationary, up_single
    return ~up, ~up_stationary, ~up_single


def simulate_p_correct(*, x2, rho1, rho2, d, x1=None, p=0.5, known=0, prior="improper",
                       datasets=10_000, draws=1000, sampler="x1_chain", seed=None,
                       start="prior", ties="m", progress=True) -> MCResult:
    r"""Monte Carlo P[correct decision] at paper scale (Figures 5-6 procedure).

    Simulates ``datasets`` releases ``D`` from the true mechanism (fast sampler; ``y1*``
    noise is the exact sum of ``d`` DG draws), decides each from ``draws`` Gibbs draws
    (posterior estimate > 1/2) and returns the proportion correct with
    :math:`\mathrm{MCSE} = \sqrt{\hat p (1 - \hat p) / n}`.

    Parameters
    ----------
    x2, rho1, rho2, d, x1, p, known, prior
        As in :func:`dprisk.inference.studies.p_correct_hierarchical`.
    datasets : int (>= 1)
        Number of simulated releases.
    draws : int (>= 1)
        Gibbs draws per release (the paper: 1000); ignored by the ``*_exact`` samplers.
    sampler : {"x1_chain", "gibbs", "exact", "variant", "variant_exact"}
        See the module docstring.
    seed : int, optional
    start : "prior" or float in [0, 1]
        Initial X1 of each chain: drawn from the prior (as ``gibbs_sample``)
        or ``m + 1`` with the given probability (not for ``sampler="gibbs"``).
    ties : {"m", "m+1", "half"}
        Decision when exactly half the draws (or the stationary probability) favour m + 1:
        ``"m"`` is the rule "estimate > 1/2", ``"m+1"`` the rule "estimate >= 1/2".
    progress : bool
        tqdm progress bar over blocks (stderr).

    Returns
    -------
    MCResult
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    if sampler == "gibbs" and start != "prior":
        raise ValueError("start must be 'prior' for sampler='gibbs' (gibbs_sample starts there)")
    params, x1, x2, y1 = validated_study_params(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p,
                                                known=known, prior=prior)
    datasets = check_positive_int(datasets, "datasets")
    draws = check_positive_int(draws, "draws")
    _check_ties(ties)
    seed = _check_seed(seed)
    t0 = int(single_level.decision_threshold(params.rho1, params.p, params.known))
    sizes = _block_sizes(datasets)
    root = np.random.SeedSequence(seed)
    children = root.spawn(len(sizes))
    from tqdm.auto import tqdm

    # correct, stationary, single, gain, loss, correct-only, stationary-only
    totals = np.zeros(7, dtype=np.int64)
    clock = time.perf_counter()
    for n, child in tqdm(list(zip(sizes, children, strict=True)), desc="datasets",
                         unit="block", disable=not progress):
        rng = np.random.default_rng(child)
        correct, stationary, single = _block(n, params, x1, x2, y1, draws, sampler, t0, rng,
                                              start, ties)
        totals += [correct.sum(), stationary.sum(), single.sum(), (correct & ~single).sum(),
                   (~correct & single).sum(), (correct & ~stationary).sum(),
                   (~correct & stationary).sum()]
    rate = totals / datasets
    mcse = math.sqrt(max(rate[0] * (1.0 - rate[0]), 0.0) / datasets)
    diff = rate[5] - rate[6]
    mcse_diff = math.sqrt(max(rate[5] + rate[6] - diff**2, 0.0) / datasets)
    return MCResult(float(rate[0]), mcse, float(rate[1]), float(diff), mcse_diff,
                    float(rate[2]), float(rate[3]), float(rate[4]), datasets, draws, sampler,
                    ties, int(root.entropy) if seed is None else seed,
                    time.perf_counter() - clock, x1, x2)
