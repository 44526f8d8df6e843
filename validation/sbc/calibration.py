r"""Simulation-based calibration (SBC; Talts et al. 2018) of the two-level samplers.

SBC checks a sampler against its own model. Repeat, for ``n = 1..N``:

1. draw the truth from the adversary's prior: :math:`X_1 = m + \mathrm{Bernoulli}(p)`,
   :math:`X_2 \mid X_1 \sim w(\cdot \mid X_1)` (exactly, from the prior's normalised pmf on
   its support; a proper prior is required);
2. draw a release from the adversary's likelihood (the model's approximation, so the model
   is exactly right): :math:`x_1^* \sim \mathrm{DG}(X_1, \rho_1)`,
   :math:`x_2^* \sim \mathrm{DG}(X_2, \rho_2)`,
   :math:`y_1^* \sim \mathrm{DG}(X_2 - X_1, \rho_1/d)` (DG with pmf
   :math:`\propto e^{-\rho (x - \mu)^2}`);
3. run the sampler on that release and keep ``L`` roughly independent draws;
4. record the rank of the truth among the draws,

   .. math:: r = \#\{\ell: \theta^{(\ell)} < \theta\} + U, \qquad
             U \sim \mathrm{Uniform}\{0, \dots, \#\{\ell: \theta^{(\ell)} = \theta\}\},

   ties broken uniformly at random (Talts et al. 2018; Modrák et al. 2023) because X1 and X2
   are discrete.

If the sampler draws from the posterior and the draws are independent, the truth and the
draws are exchangeable given the release, so :math:`r` is uniform on ``{0, ..., L}``
(:func:`x1_rank_pmf` shows it for X1 in closed form). Uniformity is tested by a chi-square
test on ``bins`` equal groups of ranks and by a Kolmogorov-Smirnov test of the randomised
PIT :math:`(r + V)/(L + 1)`, :math:`V \sim U(0, 1)`, which is exactly U(0, 1) under the
null (:func:`uniformity_tests`).

Independent draws: the exact two-block Gibbs sampler's X1 path is a two-state Markov chain
with lag-one autocorrelation :math:`\lambda = a_1 - a_0`,
:math:`a_b = \sum_{k_2} P[X_2 = k_2 \mid X_1 = m + b]\, P[X_1 = m + 1 \mid X_2 = k_2]`
(:mod:`dprisk.inference.two_level.gibbs`), and X2 is conditionally independent given the X1 path.
The chains
are thinned by ``thin = ceil(log(0.01) / log|lambda|)`` (the lag-``thin`` autocorrelation
is below :data:`AUTOCORRELATION_MAX`), computed exactly per release from the conditional
tables (the vectorised Gibbs samplers round it up to a power of 2, to run the releases in a
few groups); the first ``thin`` sweeps are discarded.

Samplers (:data:`SAMPLERS`):

================  ==========================================================================
gibbs             :func:`dprisk.inference.two_level.gibbs.gibbs_sample`, the releases of each
                  thinning interval in one vectorised call
pymc-gibbs        ``pm.sample`` of
:func:`dprisk.models.builders.two_level.build_two_level_model` with
                  :class:`dprisk.inference.two_level.gibbs_step.ExactGibbsStep` (release swapped by
                  :func:`dprisk.models.builders.two_level.set_release`, no recompilation)
pymc              the same model with PyMC's own steps (``BinaryGibbsMetropolis`` +
                  ``Metropolis``, :func:`dprisk.inference.two_level.sampling.pymc_steps`), thinned
                  by
                  :data:`PYMC_THIN_FACTOR` times the exact sweep's thin
reference-loop    :func:`two_block_gibbs_sample` with the exact X1 update: an independent,
                  sequential implementation of the same sweep (control for the next one)
broken-gibbs      :func:`two_block_gibbs_sample` with the X1 update that drops the
                  constraint ``k1 <= k2`` (the sampler behind the paper's Tables 7-8,
                  :mod:`dprisk.validation.paper.two_level`): must FAIL
================  ==========================================================================

The broken X1 update, for proper priors: where ``X2 = k2 >= m + 1`` it is the exact
conditional; at ``k2 = m``, where the constraint forces ``X1 = m``, it uses the paper's eq.
(X1fc) without the constraint (:func:`dprisk.inference.studies.variant.variant_prob_x1`). Under the
improper prior this is exactly the variant of :mod:`dprisk.inference.studies.variant`.

PyMC's ``CategoricalGibbsMetropolis(proposal="proportional")`` (wrong in pymc 6.4) is not
calibrated here because it cannot run on this model: on the two-state target indicator it
proposes the other state and accepts with :math:`(1 - \pi_c) / (1 - \tilde\pi_o)`, where
:math:`\tilde\pi_o = \pi_o / (1 - \pi_c)` is renormalised and so equals 1 up to rounding
(``metropolis_proportional``): the ratio is ``inf`` (divide-by-zero ``RuntimeWarning``,
rejected: X1 stuck) or about 1e16 (accepted: X1 alternates), about 1 : 2 over random log
probabilities; and when the other state is impossible (``X2 = m`` forbids ``X1 = m + 1``)
it divides 0 by 0 and ``Generator.choice`` raises "Probabilities contain NaN". The correct
ratio (Liu 1996) uses the unnormalised :math:`\pi_o`.

How many simulations expose the broken Gibbs sampler: its stationary
:math:`P[X_1 = m+1 \mid D]` is exact per release (two-state chain), so the expected X1 rank
histogram and the chi-square test's noncentrality follow in closed form
(:func:`x1_rank_pmf`, :func:`detection_size`). The bias lives at ``X2 = m``, so it is large
only under a prior with much mass there: :data:`BROKEN_PRIOR` (``truncated:1``).

References: S. Talts, M. Betancourt, D. Simpson, A. Vehtari, A. Gelman (2018), "Validating
Bayesian inference algorithms with simulation-based calibration", arXiv:1804.06788;
M. Modrák et al. (2023), "Simulation-based calibration checking for Bayesian computation:
the choice of test quantities shapes sensitivity", Bayesian Analysis.

Modules: :mod:`dprisk.validation.sbc.ranks` (truths and releases, ranks, uniformity tests,
detection size), :mod:`dprisk.validation.sbc.samplers` (the samplers, :func:`run_sbc`),
:mod:`dprisk.validation.sbc.study` (the report study); their public names are importable
from here.
"""

from __future__ import annotations

from dprisk.validation.sbc.ranks import (
    BROKEN_PRIOR,
    DEFAULT_PARAMETERS,
    P_VALUE_BROKEN,
    P_VALUE_MIN,
    PRIOR_TAIL_MASS,
    USER_PRIOR,
    VARIABLES,
    SimulatedReleases,
    UniformityTest,
    detection_size,
    prior_x2_pmf,
    rank_statistics,
    simulate_releases,
    uniformity_tests,
    x1_rank_pmf,
)
from dprisk.validation.sbc.samplers import (
    AUTOCORRELATION_MAX,
    PYMC_THIN_FACTOR,
    SAMPLERS,
    SBCConditionals,
    SBCResult,
    expected_x1_rank_pmf,
    run_sbc,
    two_block_gibbs_sample,
)
from dprisk.validation.sbc.study import (
    DEFAULT_BUDGET,
    PAPER_SCALE_BUDGET,
    SEED,
    SBCBudget,
    SBCRun,
    study,
)

__all__ = [
    "AUTOCORRELATION_MAX",
    "BROKEN_PRIOR",
    "DEFAULT_BUDGET",
    "DEFAULT_PARAMETERS",
    "PAPER_SCALE_BUDGET",
    "PRIOR_TAIL_MASS",
    "PYMC_THIN_FACTOR",
    "P_VALUE_BROKEN",
    "P_VALUE_MIN",
    "SAMPLERS",
    "SEED",
    "USER_PRIOR",
    "VARIABLES",
    "SBCBudget",
    "SBCConditionals",
    "SBCResult",
    "SBCRun",
    "SimulatedReleases",
    "UniformityTest",
    "detection_size",
    "expected_x1_rank_pmf",
    "prior_x2_pmf",
    "rank_statistics",
    "run_sbc",
    "simulate_releases",
    "study",
    "two_block_gibbs_sample",
    "uniformity_tests",
    "x1_rank_pmf",
]
