r"""One entry point for the two-level posterior: exact enumeration or one of three samplers.

All methods target the same joint posterior of (X1, X2) given D = (x1*, x2*, y1*)
(paper §3.2, S3; :mod:`dprisk.inference.two_level.exact`):

========== ===============================================================================
method     what runs
========== ===============================================================================
exact      :func:`dprisk.inference.two_level.exact.exact_posterior` (enumeration on a checked k2
grid)
gibbs      :func:`dprisk.inference.two_level.gibbs.gibbs_sample`, the vectorised exact Gibbs sampler
pymc-gibbs ``pm.sample`` of :func:`dprisk.models.builders.two_level.build_two_level_model` with
           :class:`dprisk.inference.two_level.gibbs_step.ExactGibbsStep`
pymc       ``pm.sample`` with PyMC's own steps: ``BinaryGibbsMetropolis`` for
           ``target_has_c`` and ``Metropolis`` for ``X2`` (under ``point:K`` X2 is not free
           and only the indicator is sampled)
========== ===============================================================================

:func:`posterior_summary` returns the command line's JSON payload
(:mod:`dprisk.inference.two_level.summary`, shared with the ``h``-level form). The Monte Carlo
diagnostics of the target indicator ``1[X1 = m + 1]`` it reports (rank-normalised split
R-hat, bulk ESS, MCSE of the mean) come from
:func:`dprisk.inference.mcmc.chain_stats.chain_diagnostics`, the one ArviZ routine, also used by
:func:`dprisk.validation.crosschecks.diagnostics.convergence_report`; the diagnostics of every
unknown (X1, X2) and the verdict come from :mod:`dprisk.inference.mcmc.convergence`, and
:func:`summarize_posterior` keeps the draws for
:func:`dprisk.inference.mcmc.arviz_groups.arviz_tree` (``dprisk posterior --save-draws``).
Sampling results are DataTrees whose ``posterior`` group records the scenario in its attributes
(:meth:`dprisk.models.scenario.Scenario.attrs`) and the ``method``. The inputs are validated
once (:func:`dprisk.models.builders.two_level.validated_spec`); PyMC is imported only to sample.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

from dprisk.inference.kernels.table_kernels import DEFAULT_TAIL_MASS, MAX_PRECISION
from dprisk.inference.mcmc.chain_stats import chain_diagnostics
from dprisk.inference.mcmc.run_options import check_draws_memory, run_options
from dprisk.inference.two_level.exact import two_level_posterior
from dprisk.inference.two_level.gibbs import gibbs_draws, to_datatree
from dprisk.inference.two_level.level_form import from_two_level
from dprisk.inference.two_level.summary import X2_MASS_MIN, PosteriorSummary, summarize
from dprisk.models.builders.two_level import (
    TARGET_VAR,
    X2_VAR,
    TwoLevelSpec,
    model_from_spec,
    two_level_spec,
    validated_spec,
)
from dprisk.models.checks import check_positive_int
from dprisk.models.mechanism.dg_sampling import as_generator, resolve_random_seed
from dprisk.models.scenario import Release, Scenario
from dprisk.runtime.work_limit import check_work, pymc_work_steps

if TYPE_CHECKING:
    import pymc as pm
    import xarray as xr

__all__ = [
    "METHODS",
    "SAMPLING_METHODS",
    "X2_MASS_MIN",
    "chain_diagnostics",
    "check_method",
    "posterior_summary",
    "pymc_steps",
    "sample_model",
    "sample_posterior",
    "summarize_posterior",
    "trust_step_inputs",
]

#: Every method of :func:`sample_posterior`.
METHODS = ("exact", "gibbs", "pymc-gibbs", "pymc")
#: The Monte Carlo methods (their result is an ``xarray.DataTree`` of draws).
SAMPLING_METHODS = ("gibbs", "pymc-gibbs", "pymc")


def check_method(method, allowed=METHODS) -> str:
    """Return ``method`` if it is one of ``allowed``, else raise a one-line ``ValueError``."""
    if method not in allowed:
        raise ValueError(f"method must be one of {', '.join(allowed)}; got {method!r}")
    return method


def pymc_steps(model: pm.Model, method: str) -> list:
    """The step methods of ``method`` ("pymc-gibbs" or "pymc") for a two-level ``model``.

    Reusable across :func:`dprisk.models.builders.two_level.set_release` calls: PyMC's steps read
    the
    model's data, :class:`ExactGibbsStep` re-tabulates when a chain starts.
    """
    import pymc as pm
    from pymc.model.core import Point

    from dprisk.inference.mcmc.compiled_chain import initial_point_function
    from dprisk.inference.two_level.gibbs_step import ExactGibbsStep
    from dprisk.inference.two_level.lean_steps import LeanMetropolis

    check_method(method, ("pymc-gibbs", "pymc"))
    two_level_spec(model)
    if method == "pymc-gibbs":
        return [ExactGibbsStep(model=model)]
    # the model's initial point, compiled once per model (shared with its CompiledChains) and
    # evaluated once for both steps (each would compile its own when not given one; they read
    # only its values' shapes and dtypes and the indicator's starting value for Metropolis's
    # shared copy of it): model.initial_point()'s point
    initial_point = Point(initial_point_function(model)(None), model=model)
    steps = [pm.BinaryGibbsMetropolis([model[TARGET_VAR]], model=model,
                                      initial_point=initial_point)]
    if model[X2_VAR] in model.free_RVs:  # pm.Metropolis, its statistics read directly
        steps.append(LeanMetropolis([model[X2_VAR]], model=model, initial_point=initial_point))
    return trust_step_inputs(steps)


def trust_step_inputs(steps: list) -> list:
    """Skip PyTensor's per-call input checks in the compiled functions of PyMC ``steps``.

    ``BinaryGibbsMetropolis`` evaluates the model's log density, compiled by
    ``model.compile_logp``, once or twice per step through PyMC's point maps
    (``DictToArrayBijection.rmap``), which hand it every value variable as an array of its
    own dtype and shape (``astype`` of the point's dtype, ``reshape`` to its shape); the
    other values come from the chain's point, built the same way. PyTensor's
    ``Function.__call__`` would check and filter each input again on every call (15-25 % of
    a step's CPU time, measured on the two-level model); with ``trust_input`` it stores them
    as given. PyMC already sets it for the functions it calls with raw arrays
    (``Metropolis``'s ``delta_logp``, the gradient samplers' ``logp_dlogp_func``). The draws
    are the same bit for bit (``tests/inference/two_level/test_trusted_steps.py``).

    Returns ``steps`` (the same objects).
    """
    for step in steps:
        for function in getattr(step, "fs", ()):  # ArrayStep: PointFuncs over compiled Functions
            getattr(function, "f", function).trust_input = True
    return steps


def sample_model(
    model: pm.Model, *, method: str = "pymc-gibbs", draws: int = 5000, chains: int = 4,
    tune: int = 1000, random_seed=None, cores: int = 1, progressbar: bool = False, step=None,
) -> xr.DataTree:
    """``pm.sample`` of a two-level model with the steps of ``method`` (or the given ``step``).

    Parameters
    ----------
    model : pymc.Model
        From :func:`dprisk.models.builders.two_level.build_two_level_model`.
    method : {"pymc-gibbs", "pymc"}
        Which steps :func:`pymc_steps` builds when ``step`` is None.
    draws, chains, tune, random_seed, cores, progressbar
        As in ``pm.sample``. PyMC's log lines are silenced unless ``progressbar``; its own
        convergence checks are skipped (see :func:`chain_diagnostics`).
    step : list of step methods, optional
        Steps from an earlier :func:`pymc_steps` call on the same model (no recompilation).

    Returns
    -------
    xarray.DataTree
        PyMC's result: ``posterior`` with ``target_has_c``, ``X1``, ``X2`` (chain, draw).
    """
    import pymc as pm

    check_method(method, ("pymc-gibbs", "pymc"))
    draws = check_positive_int(draws, "draws")
    chains = check_positive_int(chains, "chains")
    tune = check_positive_int(tune, "tune", minimum=0)
    cores = check_positive_int(cores, "cores")
    check_work(pymc_work_steps(chains, tune, draws), parameter="draws, chains, tune",
               what=f"{chains} PyMC chains x ({tune} tuning + {draws}) draws")
    check_draws_memory(2, chains, draws, tune=tune, pymc=True)
    if step is None:
        step = pymc_steps(model, method)
    # Chains start from each feasible X1 in turn (chain 0 from the model's start, m + 1): a
    # chain that cannot leave its start (a prior whose X2 supports given X1 = m and m + 1 do
    # not overlap, e.g. X2 - X1 known) then disagrees with the others and R-hat shows it;
    # from one common start every chain stayed there, "converged" with a wrong posterior.
    spec = two_level_spec(model)
    starts = spec.prior.feasible_x1(spec.known)[::-1]
    initvals = [{TARGET_VAR: np.int64(starts[c % len(starts)] - spec.known)}
                for c in range(chains)]
    # Metropolis' acceptance statistic exp(log ratio) overflows when a huge rho makes every
    # proposal improbable: a warning line about a statistic, not about the draws.
    with np.errstate(over="ignore"):
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            step=step,
            model=model,
            random_seed=random_seed,
            initvals=initvals,
            progressbar=progressbar,
            quiet=not progressbar,
            compute_convergence_checks=False,
        )


def sample_posterior(
    x1_star, x2_star, y1_star, *, scenario: Scenario | None = None, method: str = "exact",
    draws: int = 5000, chains: int = 4, tune: int = 1000, random_seed=None, cores: int = 1,
    progressbar: bool = False, **parameters,
) -> xr.Dataset | xr.DataTree:
    r"""The posterior of (X1, X2) given one release D by the chosen ``method``.

    Parameters
    ----------
    x1_star, x2_star, y1_star : int
        The release D (noisy block count, block-group count, other blocks' sum).
    scenario : Scenario, optional
        A validated two-level scenario instead of the keyword parameters below.
    method : {"exact", "gibbs", "pymc-gibbs", "pymc"}, default "exact"
        ``exact``: enumeration on a checked k2 window
        (:func:`dprisk.inference.two_level.exact.exact_posterior`); ``gibbs``: the vectorised
        exact Gibbs sampler (:func:`dprisk.inference.two_level.gibbs.gibbs_sample`);
        ``pymc-gibbs``: ``pm.sample`` of the model
        (:func:`dprisk.models.builders.two_level.build_two_level_model`) with an exact Gibbs
        step; ``pymc``: ``pm.sample`` with PyMC's own steps (``BinaryGibbsMetropolis`` for
        the indicator, ``Metropolis`` for X2). All target the same posterior.
    draws : int (>= 1)
        Recorded draws per chain (sampling methods).
    chains : int (>= 1)
        Number of chains.
    tune : int (>= 0)
        Discarded initial iterations per chain.
    random_seed : int, numpy.random.Generator or None
        Seed; the same seed gives the same draws. Without one, a seed is drawn, used and
        recorded (an integer seed is in the posterior group's ``random_seed`` attribute).
    cores : int (>= 1)
        Processes for PyMC (the standalone Gibbs sampler is vectorised and ignores it).
    progressbar : bool
        Show PyMC's progress bar and log lines.
    **parameters
        ``rho1, rho2`` (float > 0): zCDP parameters of the block and block-group levels;
        ``d`` (int >= 1): other blocks in the block group; ``p`` (0 < p < 1, default 0.5):
        ``P[X1 = known + 1]``; ``known`` (int >= 0, default 0): ``m``, the adversary's count
        of the others in the block with ``c``; ``prior`` (str or X2Prior, default
        ``"improper"``): ``improper``, ``truncated:U``, ``point:K``, ``PATH.py:NAME``.

    Returns
    -------
    xarray.Dataset or xarray.DataTree
        ``exact``: a Dataset with ``prob_x1`` = P[X1 = m+1 | D] and ``x2_pmf`` (dim ``k2``),
        the parameters in ``attrs``. Sampling methods: a DataTree whose ``posterior`` group
        holds ``X1`` and ``X2`` with dims (chain, draw) and the scenario and ``method`` in its
        attributes.

    Raises
    ------
    ValueError
        One line naming the bad parameter: an unknown method (listing the supported ones),
        ``d < 1``, a prior with empty support such as ``truncated:U`` with
        ``U < known + 1``, a malformed prior spec, a missing model file or NAME, ...
    """
    check_method(method)
    spec = validated_spec(x1_star, x2_star, y1_star, scenario=scenario, **parameters)
    result = _posterior(spec, method, draws=draws, chains=chains, tune=tune,
                        random_seed=random_seed, cores=cores, progressbar=progressbar)
    return result.to_dataset().isel(release=0) if method == "exact" else result


def _release(spec: TwoLevelSpec) -> Release:
    """The spec's (validated) release as a :class:`Release`, without checking it again."""
    x1, x2, y1 = spec.release
    return Release(np.array([x1, x2], dtype=np.int64), np.array([y1], dtype=np.int64))


def _posterior(spec: TwoLevelSpec, method: str, *, draws, chains, tune, random_seed, cores,
               progressbar):
    """The exact posterior (``TwoLevelPosterior``) or a DataTree of draws (validated spec)."""
    scenario = spec.scenario
    if method == "exact":
        return two_level_posterior(_release(spec), scenario, DEFAULT_TAIL_MASS)
    attrs = {**scenario.attrs(), "method": method}
    if random_seed is None:  # draw one, use it and record it: every random result reproducible
        random_seed = resolve_random_seed(None)
    if isinstance(random_seed, numbers.Integral) and not isinstance(random_seed, bool):
        attrs["random_seed"] = int(random_seed)
    if method == "gibbs":
        run = run_options(draws, chains, tune, random_seed)
        check_positive_int(cores, "cores")
        samples = gibbs_draws(_release(spec), scenario, **run, tail_mass=DEFAULT_TAIL_MASS,
                              progress=progressbar)
        return to_datatree(samples, attrs=attrs)
    if random_seed is not None and not isinstance(random_seed, np.random.Generator):
        as_generator(random_seed, "random_seed")  # one-line error naming random_seed
    if method == "pymc" and not scenario.prior.values_checked \
            and scenario.precision <= MAX_PRECISION:
        # PyMC's Metropolis evaluates a user prior only where it walks: check its weights on
        # the window the exact and Gibbs methods certify (NaN or above log_weight_max there,
        # e.g. growing weights that leave the posterior without a finite mass, are refused
        # as they refuse them) instead of sampling an improper posterior
        two_level_posterior(_release(spec), scenario, DEFAULT_TAIL_MASS)
    tree = sample_model(
        model_from_spec(spec), method=method, draws=draws, chains=chains, tune=tune,
        random_seed=random_seed, cores=cores, progressbar=progressbar,
    )
    tree["posterior"].attrs.update(attrs)
    return tree


def summarize_posterior(
    x1_star, x2_star, y1_star, *, scenario: Scenario | None = None, method: str = "exact",
    draws: int = 5000, chains: int = 4, tune: int = 1000, random_seed=None, cores: int = 1,
    progressbar: bool = False, **parameters,
) -> PosteriorSummary:
    """The summary of one release's posterior, keeping the result (a DataTree for draws).

    Parameters as in :func:`sample_posterior`. The summary's ``result`` is the exact
    posterior (``h``-level form) or the DataTree of draws; its ``scenario`` and ``release``
    are the validated inputs; :meth:`PosteriorSummary.two_level_json` is the payload of
    :func:`posterior_summary`.

    Raises
    ------
    ValueError
        As :func:`sample_posterior`.
    """
    check_method(method)
    spec = validated_spec(x1_star, x2_star, y1_star, scenario=scenario, **parameters)
    result = _posterior(spec, method, draws=draws, chains=chains, tune=tune,
                        random_seed=random_seed, cores=cores, progressbar=progressbar)
    release = _release(spec)
    if method == "exact":
        result = from_two_level(result, release)
    return summarize(result, spec.scenario, method, release)


def posterior_summary(
    x1_star, x2_star, y1_star, *, scenario: Scenario | None = None, method: str = "exact",
    draws: int = 5000, chains: int = 4, tune: int = 1000, random_seed=None, cores: int = 1,
    progressbar: bool = False, **parameters,
) -> dict:
    """The ``dprisk posterior --json`` payload of one release.

    Parameters
    ----------
    x1_star, x2_star, y1_star, scenario, method, draws, chains, tune, random_seed, cores
        As in :func:`sample_posterior`.
    progressbar, **parameters
        As in :func:`sample_posterior`.

    Returns
    -------
    dict
        ``{"posterior": P[X1 = m+1 | D], "risk": posterior / p, "x2_posterior": {"k2": mass},
        "method": method}``; ``x2_posterior`` lists, with string keys in increasing ``k2``,
        the exact masses ``>= 1e-12`` (:data:`X2_MASS_MIN`) or the observed frequencies of
        the draws. Sampling methods add ``"mcse"``, ``"r_hat"`` and ``"ess_bulk"`` of the
        indicator 1[X1 = m+1] (``None`` when undefined: the indicator never changed), and
        ``"diagnostics"`` (``{"X1": {"r_hat", "ess_bulk", "ess_tail", "mcse_mean"}, "X2":
        {...}}``) and ``"verdict"`` (``{"converged": bool, "reason": str}``) of
        :mod:`dprisk.inference.mcmc.convergence`.

    Raises
    ------
    ValueError
        As :func:`sample_posterior`.
    """
    return summarize_posterior(
        x1_star, x2_star, y1_star, scenario=scenario, method=method, draws=draws,
        chains=chains, tune=tune, random_seed=random_seed, cores=cores,
        progressbar=progressbar, **parameters,
    ).two_level_json()
