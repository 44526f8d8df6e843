r"""The samplers that SBC calibrates, and one SBC run (:func:`run_sbc`).

``gibbs`` (:func:`dprisk.inference.two_level.gibbs.gibbs_sample`), ``pymc-gibbs`` and ``pymc``
(``pm.sample`` of the two-level model with the exact Gibbs step or PyMC's own steps), and
the two-block sweep on tabulated conditionals
(:func:`dprisk.inference.studies.variant.tabulated_gibbs`)
with the exact X1 update (``reference-loop``) or the constraint-dropping one
(``broken-gibbs``, :func:`dprisk.inference.studies.variant.variant_prob_x1`). Chains are thinned
so that the X1 chain's lag-``thin`` autocorrelation is below :data:`AUTOCORRELATION_MAX`.
The overview is in :mod:`dprisk.validation.sbc.calibration`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

from dprisk.inference.studies.setup import branch_conditionals, exact_x1_update
from dprisk.inference.studies.variant import tabulated_gibbs, variant_prob_x1
from dprisk.inference.two_level.exact import joint_log_table
from dprisk.inference.two_level.gibbs import GibbsDraws, gibbs_sample
from dprisk.models.checks import check_count, check_positive_int
from dprisk.models.numerics import expit
from dprisk.models.priors.library import X2Prior
from dprisk.models.scenario import Scenario
from dprisk.validation.sbc.ranks import (
    DEFAULT_PARAMETERS,
    VARIABLES,
    SimulatedReleases,
    UniformityTest,
    rank_statistics,
    simulate_from_params,
    uniformity_tests,
    x1_rank_pmf,
)

__all__ = [
    "AUTOCORRELATION_MAX",
    "MAX_THIN",
    "PYMC_THIN_FACTOR",
    "PYMC_TUNE",
    "SAMPLERS",
    "SBCConditionals",
    "SBCResult",
    "expected_x1_rank_pmf",
    "run_sbc",
    "two_block_gibbs_sample",
    "validated_params",
]

#: The samplers :func:`run_sbc` can calibrate (see the module docstring).
SAMPLERS = ("gibbs", "pymc-gibbs", "pymc", "reference-loop", "broken-gibbs")
#: Largest lag-``thin`` autocorrelation of the X1 chain allowed between kept draws.
AUTOCORRELATION_MAX = 0.01
#: Upper limit of the thinning interval.
MAX_THIN = 1000
#: PyMC's own steps are thinned by this factor times the exact sweep's thin: X2 moves by a
#: random-walk Metropolis whose bulk ESS per draw measured 0.12-0.18 here (vs ~0.95 for the
#: exact sweep), an integrated autocorrelation time of 6-8.
PYMC_THIN_FACTOR = 8
#: Burn-in of PyMC's own steps per release (Metropolis tunes its scale every 100 steps).
PYMC_TUNE = 200
_GIBBS_SAMPLERS = ("gibbs", "reference-loop", "broken-gibbs")


# --------------------------------------------------------------------------- samplers
class SBCConditionals:
    """Exact conditional tables of many releases (from :func:`joint_log_table`).

    ``params`` is the dict of a validated :class:`Scenario` (:func:`validated_params`).
    ``x2_pmf[r, b]`` is ``P[X2 | X1 = m + b]`` on the window ``k2_start[r] + (0..W-1)``,
    ``p1[r]`` the X1 update ``P[X1 = m + 1 | X2]`` (exact or constraint-dropping), ``a[r, b]``
    the X1 chain's ``P[X1' = m + 1 | X1 = m + b]``.
    """

    def __init__(self, releases, params: dict, x1_update: str):
        x1s, x2s, y1s = (np.asarray(a, dtype=np.int64) for a in releases)
        table = joint_log_table(x1s, x2s, y1s, **params)
        log_joint = table.log_joint
        self.k2_start = table.k2_start
        self.width = table.width
        self.x2_pmf = branch_conditionals(table)
        p1 = exact_x1_update(log_joint)
        known = int(params["known"])
        if x1_update == "unconstrained":
            k2 = self.k2_start[:, None] + np.arange(self.width)
            p_unc = variant_prob_x1(k2, x1_star=x1s[:, None], y1_star=y1s[:, None],
                                    rho1=params["rho1"], d=params["d"], p=params["p"],
                                    known=known)
            p1 = np.where(k2 <= known, p_unc, p1)
        elif x1_update != "exact":
            raise ValueError(f"x1_update must be 'exact' or 'unconstrained', got {x1_update!r}")
        self.p1 = p1
        self.a = np.einsum("rbw,rw->rb", self.x2_pmf, p1)
        # Exact posterior P[X1 = m + 1 | D] (from the branch masses) and the sampler's
        # stationary P[X1 = m + 1] of the two-state chain.
        log_mass = np.where(table.feasible, table.log_branch_mass, -np.inf)
        self.prob_x1 = expit(log_mass[:, 1] - log_mass[:, 0])
        leave = self.a[:, 0] + (1.0 - self.a[:, 1])
        self.stationary_x1 = np.where(leave > 0, self.a[:, 0] / np.where(leave > 0, leave, 1),
                                      self.prob_x1)

    @property
    def autocorrelation(self) -> np.ndarray:
        """Lag-one autocorrelation ``a_1 - a_0`` of the X1 chain, per release."""
        return self.a[:, 1] - self.a[:, 0]


def _thin(autocorrelation) -> int:
    """Smallest ``t`` with ``|lambda|^t <= AUTOCORRELATION_MAX`` (at most ``MAX_THIN``)."""
    worst = float(np.max(np.abs(autocorrelation), initial=0.0))
    if worst <= AUTOCORRELATION_MAX:
        return 1
    if worst >= 1.0:
        return MAX_THIN
    return min(MAX_THIN, math.ceil(math.log(AUTOCORRELATION_MAX) / math.log(worst)))


def _thins(autocorrelation) -> np.ndarray:
    """:func:`_thin` of each release's ``lambda`` at once (int64 array of its shape).

    ``ceil(log 0.01 / log |lambda|)`` in NumPy; where that ratio lies within ``1e-9`` of an
    integer (so that NumPy's and ``math``'s logarithms, a few ulp apart at most, could round
    it to different sides), :func:`_thin` itself: the same intervals as :func:`_thin`'s loop.
    """
    worst = np.abs(np.asarray(autocorrelation, dtype=float))
    between = (worst > AUTOCORRELATION_MAX) & (worst < 1.0)
    ratio = np.full(worst.shape, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio[between] = math.log(AUTOCORRELATION_MAX) / np.log(worst[between])
    thins = np.where(worst >= 1.0, MAX_THIN,
                     np.minimum(MAX_THIN, np.ceil(ratio))).astype(np.int64)
    near = between & (np.abs(ratio - np.round(ratio)) < 1e-9)
    thins[near] = [_thin(lam) for lam in worst[near]]
    return thins


def _two_block_loop(tables: SBCConditionals, *, p, known, draws, tune, chains,
                    rng) -> GibbsDraws:
    """Sequential sweeps ``X1 ~ p1[X2]`` then ``X2 ~ x2_pmf[X1]``, vectorised over chains."""
    return tabulated_gibbs(tables.x2_pmf, tables.p1, tables.k2_start, p=p, known=known,
                           draws=draws, tune=tune, chains=chains, rng=rng)


def validated_params(rho1, rho2, d, p, known, prior) -> dict:
    """The model parameters checked once (:meth:`Scenario.two_level`), as a dict."""
    params = Scenario.two_level(rho1=rho1, rho2=rho2, d=d, p=p, known=known, prior=prior)
    return {"rho1": params.rho1, "rho2": params.rho2, "d": params.d, "p": params.p,
            "known": params.known, "prior": params.prior}


def two_block_gibbs_sample(
    x1_star, x2_star, y1_star, *, rho1, rho2, d, p=0.5, known=0, prior,
    x1_update: str = "exact", draws: int = 1000, chains: int = 1, tune: int = 0,
    random_seed=None,
) -> GibbsDraws:
    r"""A plain sequential two-block Gibbs sampler, vectorised over releases and chains.

    Each sweep draws ``X1 | X2`` then ``X2 | X1`` (inverse CDF on the exact window of
    :func:`dprisk.inference.two_level.exact.joint_log_table`); chains start at X1 from its prior.

    ``x1_update="exact"``: :math:`P[X_1 = m+1 \mid k_2] = \pi(m+1, k_2) / (\pi(m, k_2) +
    \pi(m+1, k_2))` — the same chain as :func:`dprisk.inference.two_level.gibbs.gibbs_sample`,
    implemented
    independently. ``x1_update="unconstrained"``: at ``k2 = m``, where the constraint
    ``k1 <= k2`` forces ``X1 = m``, use the paper's eq. (X1fc) without it
    (:func:`dprisk.inference.studies.variant.variant_prob_x1`) — the known-broken sampler. The sweep
    is :func:`dprisk.inference.studies.variant.tabulated_gibbs`; ``random_seed`` seeds
    ``numpy.random.default_rng``.

    Returns
    -------
    inference.gibbs.GibbsDraws
        ``x1``, ``x2`` of shape ``(R, chains, draws)`` for ``R`` releases (1-d inputs).
    """
    params = validated_params(rho1, rho2, d, p, known, prior)
    draws = check_positive_int(draws, "draws")
    chains = check_positive_int(chains, "chains")
    tune = check_positive_int(tune, "tune", minimum=0)
    releases = [np.atleast_1d(check_count(v, name)).ravel() for v, name in
                ((x1_star, "x1_star"), (x2_star, "x2_star"), (y1_star, "y1_star"))]
    tables = SBCConditionals(np.broadcast_arrays(*releases), params, x1_update)
    return _two_block_loop(tables, p=params["p"], known=params["known"], draws=draws,
                           tune=tune, chains=chains, rng=np.random.default_rng(random_seed))


# --------------------------------------------------------------------------- SBC runs
def _prior_label(prior: X2Prior) -> str:
    spec = prior.spec
    if ".py:" in spec:
        path, name = spec.rsplit(":", 1)
        return f"user:{Path(path).stem}" + ("" if name == "prior" else f".{name}")
    return spec


@dataclass
class SBCResult:
    """Ranks and uniformity tests of one SBC run.

    Attributes
    ----------
    sampler : str
        One of :data:`SAMPLERS`.
    prior : str
        Short label of the prior (``truncated:10``, ``user:negative_binomial_prior``).
    parameters : dict
        ``rho1, rho2, d, p, known`` and the prior's spec.
    simulations : SimulatedReleases
    n_draws : int
        ``L``, kept draws per release.
    thin : ndarray of int, shape (N,)
        Thinning interval per release.
    ranks : dict of str to ndarray
        Per variable of :data:`VARIABLES`, ranks in ``0..L``.
    tests : dict of str to UniformityTest
    bins : int
    seconds : float
        Wall time of the sampling (simulation included).
    random_seed : int
        The seed of the run (everything is drawn from ``default_rng(random_seed)``).
    extra : dict
        ``x1_rank_pmf``: the expected X1 rank pmf given the sampler's exact stationary law
        of X1 on these releases (:func:`x1_rank_pmf`; uniform unless the X1 update is
        broken, as far as the exact sweep's law is concerned).
    """

    sampler: str
    prior: str
    parameters: dict
    simulations: SimulatedReleases
    n_draws: int
    thin: np.ndarray
    ranks: dict[str, np.ndarray]
    tests: dict[str, UniformityTest]
    bins: int
    seconds: float
    random_seed: int
    extra: dict = field(default_factory=dict)

    @property
    def n_simulations(self) -> int:
        """Number of simulated releases ``N``."""
        return int(self.simulations.x1.size)

    @property
    def label(self) -> str:
        """``sampler/prior``."""
        return f"{self.sampler}/{self.prior}"

    def p_value(self, variable: str = "X1", test: str = "chi2") -> float:
        """The ``chi2`` or ``ks`` p-value of ``variable``."""
        result = self.tests[variable]
        return result.chi2_p_value if test == "chi2" else result.ks_p_value

    def summary(self) -> str:
        """One line per variable: N, L, thin, chi-square and KS p-values."""
        lines = []
        for variable in VARIABLES:
            t = self.tests[variable]
            lines.append(
                f"sbc/{self.label}/{variable}: N = {self.n_simulations}, L = {self.n_draws}, "
                f"thin {int(self.thin.min())}-{int(self.thin.max())}, chi2({self.bins - 1}) = "
                f"{t.chi2:.2f} p = {t.chi2_p_value:.3g}, KS p = {t.ks_p_value:.3g} "
                f"[{self.seconds:.1f} s]"
            )
        return "\n".join(lines)

    def to_dataset(self) -> xr.Dataset:
        """Truths, releases, ranks and thinning per simulation; tests and settings in attrs."""
        sims = self.simulations
        persons = {"units": "persons"}
        data = {
            "x1": ("simulation", sims.x1, {"long_name": "true block count x1", **persons}),
            "x2": ("simulation", sims.x2, {"long_name": "true block-group count x2", **persons}),
            "x1_star": ("simulation", sims.x1_star,
                        {"long_name": "released block count x1*", **persons}),
            "x2_star": ("simulation", sims.x2_star,
                        {"long_name": "released block-group count x2*", **persons}),
            "y1_star": ("simulation", sims.y1_star,
                        {"long_name": "released count of the other d blocks y1*", **persons}),
            "thin": ("simulation", self.thin,
                     {"long_name": "sweeps per kept draw", "units": "sweeps"}),
        }
        for variable in VARIABLES:
            data[f"rank_{variable}"] = ("simulation", self.ranks[variable], {
                "long_name": f"rank of the true {variable} among the posterior draws "
                             "(draws below it, ties broken at random)", "units": "draws"})
        attrs = {key: value for key, value in self.parameters.items()}
        attrs.update(sampler=self.sampler, prior_label=self.prior, n_draws=self.n_draws,
                     bins=self.bins, random_seed=self.random_seed,
                     seconds=self.seconds)
        for variable in VARIABLES:
            attrs[f"chi2_p_value_{variable}"] = self.tests[variable].chi2_p_value
            attrs[f"ks_p_value_{variable}"] = self.tests[variable].ks_p_value
        index = {"long_name": "index of the simulated release", "units": "1"}
        return xr.Dataset(data, coords={"simulation": ("simulation",
                                                       np.arange(self.n_simulations), index)},
                          attrs=attrs)


def _pymc_draws(sampler, sims: SimulatedReleases, params: dict, thin: np.ndarray,
                tune: np.ndarray, n_draws: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Thinned draws (N, L) of X1 and X2 by PyMC's steps, one release at a time.

    One model, one set of step methods and one compiled chain
    (:class:`dprisk.inference.mcmc.compiled_chain.CompiledChain`: the draws of ``pm.sample`` with
    the same seed, bit for bit, without its fixed cost per call) serve every release
    (:func:`dprisk.models.builders.two_level.release_setter`: the releases checked once).
    """
    from dprisk.inference.mcmc.compiled_chain import CompiledChain, graphs_without_tracebacks
    from dprisk.inference.two_level.sampling import pymc_steps
    from dprisk.models.builders.two_level import build_two_level_model, release_setter

    with graphs_without_tracebacks():  # the same graphs, built and compiled in less time
        first = [int(a[0]) for a in sims.releases]
        model = build_two_level_model(*first, **params)
        steps = pymc_steps(model, sampler)
        if sampler == "pymc-gibbs":  # the exact conditionals of every release, at once
            steps[0].tabulate(sims.releases)
        chain = CompiledChain(model, steps, ("X1", "X2"))
        n = sims.x1.size
        x1 = np.empty((n, n_draws), dtype=np.int64)
        x2 = np.empty((n, n_draws), dtype=np.int64)
        seeds = rng.integers(0, 2**31, size=n)
        set_release = release_setter(model, sims.releases)
        for r in range(n):
            set_release(r)
            draws = chain.run(draws=n_draws * int(thin[r]), tune=int(tune[r]),
                              random_seed=int(seeds[r]))
            keep = slice(int(thin[r]) - 1, None, int(thin[r]))
            x1[r] = draws["X1"][0, keep]
            x2[r] = draws["X2"][0, keep]
    return x1, x2


def _gibbs_thins(autocorrelation) -> np.ndarray:
    """Per-release thinning of the vectorised Gibbs samplers: :func:`_thin` up to a power of 2.

    At least the interval :func:`_thin` asks for (so the lag-``thin`` autocorrelation is still
    below :data:`AUTOCORRELATION_MAX`), at most twice it (and at most :data:`MAX_THIN`); the
    powers of two leave few groups of releases to run (:func:`_gibbs_draws_by_thin`: a
    vectorised call whose cost per sweep has a fixed part). One interval for all releases, the
    largest, ran every release as long as the slowest-mixing one: the report's runs took 2-4
    times as long (their mean thin is 2-6, their largest 19-88).
    """
    needed = _thins(autocorrelation)
    return np.minimum(MAX_THIN, 2 ** np.ceil(np.log2(needed)).astype(np.int64))


def _gibbs_draws_by_thin(sampler, sims: SimulatedReleases, tables: SBCConditionals,
                         params: dict, thins: np.ndarray, n_draws: int,
                         rng) -> tuple[np.ndarray, np.ndarray]:
    """Thinned draws (N, L) of X1 and X2 by a vectorised Gibbs sampler, per-release thin.

    ``thins`` (from :func:`_gibbs_thins`) take few values; the releases of each value ``t``
    run in one vectorised call of ``L t`` sweeps after ``t`` discarded ones, values in
    increasing order, all from ``rng``.
    """
    n = thins.size
    x1 = np.empty((n, n_draws), dtype=np.int64)
    x2 = np.empty((n, n_draws), dtype=np.int64)
    for thin in np.unique(thins):
        rows = np.flatnonzero(thins == thin)
        thin = int(thin)
        total = n_draws * thin
        if sampler == "gibbs":
            out = gibbs_sample(*(a[rows] for a in sims.releases), **params, draws=total,
                               chains=1, tune=thin, random_seed=rng)
        else:
            out = tabulated_gibbs(tables.x2_pmf[rows], tables.p1[rows], tables.k2_start[rows],
                                  p=params["p"], known=params["known"], draws=total,
                                  tune=thin, chains=1, rng=rng)
        x1[rows] = out.x1[:, 0, thin - 1::thin]
        x2[rows] = out.x2[:, 0, thin - 1::thin]
    return x1, x2


def run_sbc(
    sampler: str,
    *,
    prior,
    n_simulations: int,
    n_draws: int = 99,
    bins: int = 10,
    rho1=DEFAULT_PARAMETERS["rho1"],
    rho2=DEFAULT_PARAMETERS["rho2"],
    d=DEFAULT_PARAMETERS["d"],
    p=DEFAULT_PARAMETERS["p"],
    known=DEFAULT_PARAMETERS["known"],
    random_seed: int = 0,
) -> SBCResult:
    r"""Simulation-based calibration of one sampler under one proper prior.

    Simulates ``n_simulations`` (truth, release) pairs
    (:func:`dprisk.validation.sbc.ranks.simulate_releases`), runs the
    sampler on every release, keeps ``n_draws`` thinned draws, ranks the truth of X1 and X2
    (:func:`rank_statistics`) and tests uniformity (:func:`uniformity_tests`).

    Thinning: the exact sweep's X1 chain has lag-one autocorrelation ``lambda`` per release
    (computed from the tables); every release is thinned by at least ``thin = ceil(log 0.01
    / log |lambda|)``: ``pymc-gibbs`` by that, the Gibbs samplers by it rounded up to a power
    of 2 (one vectorised call per value, :func:`_gibbs_thins`), ``pymc`` by
    :data:`PYMC_THIN_FACTOR` times it after :data:`PYMC_TUNE` tuning steps (their ESS per
    draw is lower). The broken
    Gibbs sampler uses its own chain's ``lambda``. The first ``thin`` sweeps are discarded.

    Parameters
    ----------
    sampler : str
        One of :data:`SAMPLERS`.
    prior : str or X2Prior
        A proper prior (``truncated:U``, ``point:K``, :data:`USER_PRIOR`, ...).
    n_simulations : int (>= 1)
    n_draws : int (>= 1)
        ``L``; ranks take ``L + 1`` values.
    bins : int (>= 2)
        Groups of ranks of the chi-square test; must divide ``L + 1``.
    rho1, rho2, d, p, known
        Model parameters (default :data:`DEFAULT_PARAMETERS`).
    random_seed : int
        Seeds everything (simulation, samplers, tie-breaking, KS randomisation).

    Returns
    -------
    SBCResult

    Raises
    ------
    ValueError
        Unknown sampler (naming the supported ones), improper prior, ``bins`` not dividing
        ``n_draws + 1``, or a parameter outside its range.
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}; got {sampler!r}")
    n_draws = check_positive_int(n_draws, "n_draws")
    bins = check_positive_int(bins, "bins", minimum=2)
    if (n_draws + 1) % bins:
        raise ValueError(f"bins must divide n_draws + 1 = {n_draws + 1}, got {bins}")
    params = validated_params(rho1, rho2, d, p, known, prior)
    seed = int(check_count(random_seed, "random_seed", minimum=0))
    n_simulations = check_positive_int(n_simulations, "n_simulations")
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    sims = simulate_from_params(n_simulations, Scenario.two_level(**params), rng)
    update = "unconstrained" if sampler == "broken-gibbs" else "exact"
    tables = SBCConditionals(sims.releases, params, update)
    if sampler in _GIBBS_SAMPLERS:
        thins = _gibbs_thins(tables.autocorrelation)
        x1, x2 = _gibbs_draws_by_thin(sampler, sims, tables, params, thins, n_draws, rng)
    else:
        thins = _thins(tables.autocorrelation)
        if sampler == "pymc-gibbs":
            tune = thins
        else:
            thins = thins * PYMC_THIN_FACTOR
            tune = np.full(thins.size, PYMC_TUNE)
        x1, x2 = _pymc_draws(sampler, sims, params, thins, tune, n_draws, rng)
    ranks = {"X1": rank_statistics(sims.x1, x1, rng), "X2": rank_statistics(sims.x2, x2, rng)}
    tests = {v: uniformity_tests(ranks[v], n_draws, bins=bins, random_seed=rng)
             for v in VARIABLES}
    parameters = {key: value for key, value in params.items() if key != "prior"}
    parameters["prior"] = params["prior"].spec
    return SBCResult(
        sampler=sampler, prior=_prior_label(params["prior"]), parameters=parameters,
        simulations=sims, n_draws=n_draws, thin=thins, ranks=ranks, tests=tests, bins=bins,
        seconds=time.perf_counter() - start, random_seed=seed,
        extra={"x1_rank_pmf": x1_rank_pmf(tables.prob_x1, tables.stationary_x1, n_draws)},
    )


def expected_x1_rank_pmf(
    x1_update: str = "unconstrained",
    *,
    prior,
    n_releases: int = 20_000,
    n_draws: int = 99,
    random_seed: int = 0,
    **parameters,
) -> np.ndarray:
    r"""Expected X1 rank pmf of a two-block Gibbs sampler (``L`` independent draws).

    Averages :func:`x1_rank_pmf` over ``n_releases`` releases from
    :func:`dprisk.validation.sbc.ranks.simulate_releases`, with the exact posterior
    :math:`P[X_1 = m+1 \mid D]` and the sampler's exact stationary value
    :math:`a_0 / (a_0 + 1 - a_1)` of its two-state X1 chain (``x1_update`` as in
    :func:`two_block_gibbs_sample`). Uniform for ``"exact"``; feed the result to
    :func:`dprisk.validation.sbc.ranks.detection_size`.
    """
    unknown = sorted(set(parameters) - set(DEFAULT_PARAMETERS))
    if unknown:
        raise TypeError(f"expected_x1_rank_pmf got unexpected parameters {unknown}; the model "
                        f"parameters are {sorted(DEFAULT_PARAMETERS)}")
    params = validated_params(**{**DEFAULT_PARAMETERS, **parameters}, prior=prior)
    sims = simulate_from_params(check_positive_int(n_releases, "n_releases"),
                                Scenario.two_level(**params), np.random.default_rng(random_seed))
    tables = SBCConditionals(sims.releases, params, x1_update)
    return x1_rank_pmf(tables.prob_x1, tables.stationary_x1, n_draws)
