r"""Monte Carlo versions of the decision studies, at the paper's scale (paper §4.3, Figs 5-6).

The paper estimates P[correct decision] by simulating ``D = (x1*, x2*, y1*)`` from the true
mechanism, running a Gibbs sampler with ``N`` draws (``N = 1e3``) on each ``D``, deciding
``m + 1`` iff the fraction of draws with ``X1 = m + 1`` exceeds 1/2, and averaging. This
module does the same, vectorised over many ``D`` and chunked.

The X1 path of a two-block Gibbs sampler is a two-state Markov chain with transitions
``(a_0, a_1)`` (:func:`dprisk.inference.studies.finite_draws.chain_transitions`), so the count of
``X1 = m + 1`` draws, and with it the decision, has exactly the law of the Gibbs output when
the chain is simulated from ``(a_0, a_1)`` alone (``sampler="x1_chain"``; ``"gibbs"`` runs
:func:`dprisk.inference.two_level.gibbs.gibbs_sample` itself, for checking). The chain's stationary
probability :math:`a_0 / (1 - a_1 + a_0)` is the exact posterior. With the X1 update of eq.
(X1fc) *without* its constraint ``k1 <= k2`` the same construction gives the paper's apparent
sampler (``"variant"``, see :mod:`dprisk.inference.studies.variant`). ``"exact"`` /
``"variant_exact"`` decide with the stationary probability itself (no draws): a
variance-free check of the simulation of ``D``. Every run also reports the decision rate of
the stationary probability on the same ``D`` (paired), which isolates the effect of the
finite number of draws.

Reproducibility: releases are generated in fixed blocks of :data:`BLOCK` datasets; block
``i`` uses the ``i``-th child of ``np.random.SeedSequence(random_seed)``, so results depend on
``(random_seed, datasets)`` only, not on how blocks are grouped into chunks. A run without a
seed draws one (:func:`resolve_random_seed`), uses it and reports it
(:attr:`MCResult.random_seed`).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from dprisk.inference.single_level import closed_form_kernels as single_level_kernels
from dprisk.inference.studies.finite_draws import (
    chain_transitions,
    exact_chain_log_odds,
    start_probability,
    stationary_log_odds,
)
from dprisk.inference.studies.setup import (
    TIE_ATOL,
    check_ties,
    posterior_table_cost,
    validated_study_params,
)
from dprisk.models.checks import check_flag, check_positive_int
from dprisk.models.mechanism.dg_sampling import (
    resolve_random_seed,
    sample_kernel,
    sample_sum_kernel,
)
from dprisk.runtime.memory_limit import check_memory
from dprisk.runtime.work_limit import check_work, mc_study_steps

__all__ = [
    "BLOCK",
    "SAMPLERS",
    "MCResult",
    "check_study_cost",
    "resolve_random_seed",
    "simulate_p_correct",
    "unique_releases",
]

#: Datasets per independently seeded block.
BLOCK = 16_384
#: Samplers of :func:`simulate_p_correct`; the ``*_exact`` ones decide without draws.
SAMPLERS = ("x1_chain", "gibbs", "exact", "variant", "variant_exact")
#: Time steps of the X1 chain simulated per vectorised pass.
_STEP_CHUNK = 128
# : Releases per pass of :func:`dprisk.inference.two_level.gibbs.gibbs_sample` (memory: 2 x 8 B x
# draws each).
_GIBBS_SUB = 1024


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
        Same ``D``: single-level decision, and the paired gain/loss of the two-level one.
    datasets, draws : int
        Simulated releases ``D``, and the Gibbs draws per release.
    sampler, ties : str
        The sampler (see :func:`simulate_p_correct`) and the tie rule at a posterior of 1/2.
    random_seed : int
        The seed given, or the one drawn when none was (pass it back to reproduce the run).
    seconds : float
        Wall-clock time of the run.
    x1, x2 : int
        The truth simulated: block count (``known + 1`` unless given) and block-group count.
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
    random_seed: int
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




def unique_releases(releases: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The distinct rows of ``releases`` (int64, shape (n, k)), sorted, and each row's index.

    Equal to ``np.unique(releases, axis=0, return_inverse=True)`` (rows in lexicographic
    order, ``inverse`` flat) but through one int64 key per row, a mixed-radix number with
    digit :math:`c_j = r_j - \min r_j` in base :math:`s_j = \max r_j - \min r_j + 1`:

    .. math:: \text{key} = (\cdots(c_1 s_2 + c_2) s_3 + \cdots) s_k + c_k,

    which orders rows as the lexicographic comparison does. About 20x faster than sorting the
    rows as records; rows whose key would exceed the int64 range take ``np.unique(axis=0)``.
    """
    low = releases.min(axis=0)
    span = releases.max(axis=0) - low + 1
    if math.prod(int(s) for s in span) >= 2**62:  # the key would not fit: sort the records
        unique, inverse = np.unique(releases, axis=0, return_inverse=True)
        return unique, inverse.ravel()
    digits = releases - low
    key = digits[:, 0]
    for j in range(1, releases.shape[1]):
        key = key * span[j] + digits[:, j]
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return releases[first], inverse.ravel()


def _resolve(up: np.ndarray, tie: np.ndarray, ties: str, rng) -> np.ndarray:
    """Decisions ``up`` with the ``tie`` cases set by the tie rule (a coin for ``"half"``)."""
    if ties == "m" or not tie.any():
        return up
    if ties == "m+1":
        return up | tie
    return up | (tie & (rng.random(up.size) < 0.5))


def _block(n, params, x1, x2, y1, draws, sampler, t0, rng, start_prob, ties):
    """Decisions for one block: (correct, correct_stationary, correct_no_hierarchy)."""
    rho1, rho2 = np.asarray(params.rho1, dtype=float), np.asarray(params.rho2, dtype=float)
    x1s = sample_kernel(np.asarray(x1, dtype=np.int64), rho1, (n,), rng)
    x2s = sample_kernel(np.asarray(x2, dtype=np.int64), rho2, (n,), rng)
    y1s = y1 + sample_sum_kernel(params.d, rho1, (n,), rng)
    m = params.known
    unique, inverse = unique_releases(np.stack([x1s, x2s, y1s], axis=1))
    variant = sampler.startswith("variant")
    a0, a1 = chain_transitions(unique[:, 0], unique[:, 1], unique[:, 2], params,
                               variant=variant)
    if variant:
        log_odds = stationary_log_odds(a0, a1)[inverse]
    else:  # from the posterior itself: (a0, a1) round to 1 - a1 = 0 (log-odds +inf or NaN)
        log_odds = exact_chain_log_odds(unique[:, 0], unique[:, 1], unique[:, 2],
                                        params)[inverse]
    up_stationary = _resolve(log_odds > TIE_ATOL, np.abs(log_odds) <= TIE_ATOL, ties, rng)
    if sampler in ("exact", "variant_exact"):
        up = up_stationary
    elif sampler in ("x1_chain", "variant"):
        count = _simulate_chain(a0[inverse], a1[inverse], start_prob, draws, rng)
        up = _resolve(2 * count > draws, 2 * count == draws, ties, rng)
    else:  # "gibbs": one chain per D, tables per distinct D, gibbs_sample's random stream
        from dprisk.inference.two_level.gibbs import DEFAULT_TAIL_MASS, gibbs_x1_counts
        from dprisk.models.scenario import Release

        distinct = Release.two_level(unique[:, 0], unique[:, 1], unique[:, 2])
        count = gibbs_x1_counts(distinct, inverse, params, draws=draws, generator=rng,
                                tail_mass=DEFAULT_TAIL_MASS, batch=_GIBBS_SUB)
        up = _resolve(2 * count > draws, 2 * count == draws, ties, rng)
    up_single = x1s >= t0
    if x1 == m + 1:
        return up, up_stationary, up_single
    return ~up, ~up_stationary, ~up_single


def check_study_cost(params, datasets: int, draws: int) -> None:
    """Refuse a study whose posterior tables or draws are above the memory or work limit.

    The checks :func:`simulate_p_correct` makes before it draws (a sweep makes them at its
    costliest point before any point is computed). Each block of ``min(datasets, BLOCK)``
    releases holds exact posterior tables on a k2 window that widens as the precision
    ``rho2 + rho1 / d`` falls (:func:`~dprisk.inference.studies.setup.posterior_table_cost`:
    at rho1 = rho2 = 1e-6 a block of 16384 asked numpy for 7 GiB); the work is
    :func:`~dprisk.runtime.work_limit.mc_study_steps` ``(datasets, draws, d)`` plus the
    tables'. A refusal names the parameters that dominate: the rhos (the tables), ``d``
    (the d-fold noise sums) or ``datasets, draws``.

    Parameters
    ----------
    params : Scenario
        The study's validated scenario.
    datasets, draws : int
        Validated counts (``>= 2`` and ``>= 1``).
    """
    block = min(datasets, BLOCK)
    table_bytes, table_steps, width = posterior_table_cost(params, datasets)
    check_memory(table_bytes * block / datasets, parameter="rho1, rho2, datasets",
                 what=f"the posterior tables of {block} releases x {width} values of k2")
    steps = mc_study_steps(datasets, draws, params.d)
    total = steps + table_steps
    if table_steps > steps:  # mostly the tables: name the rhos that widen them
        check_work(total, parameter="rho1, rho2, datasets",
                   what=f"the posterior tables of {datasets} datasets x {width} values of k2")
    if steps > 2 * mc_study_steps(datasets, draws):  # mostly the d-fold noise sums: name d
        check_work(total, parameter="datasets, draws, d",
                   what=f"{datasets} datasets x {draws} draws, d = {params.d} other blocks")
    check_work(total, parameter="datasets, draws", what=f"{datasets} datasets x {draws} draws")


def simulate_p_correct(*, x2, rho1, rho2, d, x1=None, p=0.5, known=0, prior="improper",
                       datasets=10_000, draws=1000, sampler="x1_chain", random_seed=None,
                       start="prior", ties="m", progress=True) -> MCResult:
    r"""Monte Carlo P[correct decision] at paper scale (Figures 5-6 procedure).

    Simulates ``datasets`` releases ``D`` from the true mechanism (fast sampler; ``y1*``
    noise is the exact sum of ``d`` DG draws), decides each from ``draws`` Gibbs draws
    (posterior estimate > 1/2) and returns the proportion correct with
    :math:`\mathrm{MCSE} = \sqrt{\hat p (1 - \hat p) / n}`.

    Parameters
    ----------
    x2, rho1, rho2, d, x1, p, known, prior
        As in :func:`dprisk.inference.studies.p_correct.p_correct_two_level`.
    datasets : int (>= 2)
        Number of simulated releases (the MCSE is undefined with one: refused, as in
        :mod:`dprisk.inference.product.monte_carlo_risk`).
    draws : int (>= 1)
        Gibbs draws per release (the paper: 1000); ignored by the ``*_exact`` samplers.
    sampler : {"x1_chain", "gibbs", "exact", "variant", "variant_exact"}
        ``x1_chain``: the Gibbs sampler's X1 path simulated as the two-state Markov chain it
        is (the same law of the decision, fast); ``gibbs``: the Gibbs sampler itself;
        ``variant``: the chain of the X1 update without its constraint ``k1 <= k2`` (the
        paper's apparent sampler); ``exact`` / ``variant_exact``: decide with the chain's
        stationary probability :math:`a_0 / (1 - a_1 + a_0)` (no draws; for the exact chain
        the posterior itself,
        :func:`dprisk.inference.studies.finite_draws.exact_chain_log_odds`).
    random_seed : int, optional
        Root of the run's SeedSequence; drawn (and reported) when not given.
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
    datasets = check_positive_int(datasets, "datasets", minimum=2)  # one: no MCSE
    draws = check_positive_int(draws, "draws")
    check_study_cost(params, datasets, draws)
    check_ties(ties)
    progress = check_flag(progress, "progress")
    start_prob = start_probability(start, params)
    random_seed = resolve_random_seed(random_seed)
    t0 = int(single_level_kernels.decision_threshold(
        np.asarray(params.rho1, dtype=float), np.asarray(params.p, dtype=float),
        np.asarray(params.known, dtype=np.int64)))
    sizes = _block_sizes(datasets)
    root = np.random.SeedSequence(random_seed)
    children = root.spawn(len(sizes))
    from tqdm.auto import tqdm

    # correct, stationary, single, gain, loss, correct-only, stationary-only
    totals = np.zeros(7, dtype=np.int64)
    clock = time.perf_counter()
    for n, child in tqdm(list(zip(sizes, children, strict=True)), desc="datasets",
                         unit="block", disable=not progress):
        rng = np.random.default_rng(child)
        correct, stationary, single = _block(n, params, x1, x2, y1, draws, sampler, t0, rng,
                                              start_prob, ties)
        totals += [correct.sum(), stationary.sum(), single.sum(), (correct & ~single).sum(),
                   (~correct & single).sum(), (correct & ~stationary).sum(),
                   (~correct & stationary).sum()]
    rate = totals / datasets
    mcse = math.sqrt(max(rate[0] * (1.0 - rate[0]), 0.0) / datasets)
    diff = rate[5] - rate[6]
    mcse_diff = math.sqrt(max(rate[5] + rate[6] - diff**2, 0.0) / datasets)
    return MCResult(float(rate[0]), mcse, float(rate[1]), float(diff), mcse_diff,
                    float(rate[2]), float(rate[3]), float(rate[4]), datasets, draws, sampler,
                    ties, random_seed,
                    time.perf_counter() - clock, x1, x2)
