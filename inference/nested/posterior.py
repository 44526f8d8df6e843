r"""Exact and Gibbs posteriors of the ``h``-level model (:mod:`~dprisk.models.builders.nested`).

The joint posterior of the counts ``X_1 ∈ {m, m+1}, X_2, …, X_h`` given one release is a chain
(Markov) model over the levels, stated in :mod:`dprisk.inference.nested.exact`; for
``h = 2`` it is the two-level posterior of :mod:`dprisk.inference.two_level.exact` (paper §3.2, S3).

Modules
-------
One job each; their public names are re-exported here:

* :mod:`dprisk.inference.nested.exact` -- :func:`exact_posterior` (forward–backward for
  ``h >= 3``; for ``h = 2`` the two-level enumeration of :mod:`dprisk.inference.two_level.exact`),
  :class:`NestedPosterior`;
* :mod:`dprisk.inference.nested.box_kernels` -- the checked grid box and its neglected-mass bound;
* :mod:`dprisk.inference.nested.gibbs` -- :func:`gibbs_sample` (systematic scan with exact
  full conditionals; for ``h = 2`` the two-level sampler of
  :mod:`dprisk.inference.two_level.gibbs`),
  :class:`NestedDraws`, :func:`to_datatree`;
* :mod:`dprisk.inference.two_level.summary` -- the summary computation shared with the two-level
form.

This module holds :func:`posterior_summary`, the ``h``-level ``dprisk posterior`` payload, and
:func:`summarize_posterior`, the same summary keeping the draws.
"""

from __future__ import annotations

import numbers

import numpy as np

from dprisk.inference.kernels.table_kernels import DEFAULT_TAIL_MASS, MAX_PRECISION
from dprisk.inference.mcmc.run_options import check_draws_memory, run_options
from dprisk.inference.nested.box_kernels import MAX_WIDTH, NESTED_RHO_MAX
from dprisk.inference.nested.exact import NestedPosterior, exact_posterior, nested_posterior
from dprisk.inference.nested.gibbs import (
    NestedDraws,
    gibbs_sample,
    nested_draws,
    to_datatree,
)
from dprisk.inference.two_level.summary import PosteriorSummary, summarize
from dprisk.models.checks import check_positive_int
from dprisk.models.mechanism.dg_sampling import as_generator, resolve_random_seed
from dprisk.models.numerics import check_tail_mass
from dprisk.models.scenario import Release, Scenario, nested_scenario
from dprisk.runtime.work_limit import NESTED_PYMC_LEVEL_STEPS, check_work, pymc_work_steps

__all__ = [
    "MAX_WIDTH",
    "METHODS",
    "NestedDraws",
    "NestedPosterior",
    "exact_posterior",
    "gibbs_sample",
    "posterior_summary",
    "summarize_posterior",
    "to_datatree",
]

#: Methods accepted by :func:`posterior_summary`.
METHODS = ("exact", "gibbs", "pymc")
#: Discarded sweeps per chain of the ``gibbs`` method.
GIBBS_TUNE = 100


def posterior_summary(
    *, x_stars, y_stars, scenario: Scenario | None = None, method: str = "exact",
    draws: int = 5000, chains: int = 4, tune: int = 1000, random_seed=None,
    tail_mass: float = DEFAULT_TAIL_MASS, progressbar: bool = False, **parameters,
) -> dict:
    r"""Posterior summary of one release of the ``h``-level model (for ``dprisk posterior``).

    Parameters
    ----------
    x_stars, y_stars, scenario, tail_mass, **parameters
        As in :func:`exact_posterior` (one release; ``rhos, siblings, p, known, prior`` or a
        validated ``scenario``).
    method : {"exact", "gibbs", "pymc"}
        Exact (forward–backward, or the two-level enumeration for ``h = 2``), the exact Gibbs
        sampler, or ``pm.sample`` on :func:`dprisk.models.builders.nested.build_nested_model`
        (``cores=1``).
    draws, chains : int (>= 1)
        Draws per chain and chains of the sampling methods.
    tune : int (0 <= tune <= 2**53)
        Tuning iterations per chain of the ``pymc`` method, discarded (``pm.sample``'s
        ``tune``; the default is PyMC's, 1000). ``chains x (tune + draws)`` is within the work
        limit (:mod:`dprisk.runtime.work_limit`). The ``gibbs`` method ignores it: it discards
        its first :data:`GIBBS_TUNE` sweeps per chain.
    random_seed : int, numpy.random.Generator or None
        Seed of the sampling methods; the same seed gives the same draws. Without one, a
        seed is drawn, used and recorded: an integer seed is the ``random_seed`` attribute of
        the draws' ``posterior`` group (as in the two-level form).
    progressbar : bool
        A progress bar on stderr while sampling (Gibbs and PyMC).

    Returns
    -------
    dict
        Exactly ``{"posterior": P[X1 = m+1 | D], "risk": posterior / p, "level_posteriors":
        {"1": {...}, ..., "h": {...}}, "method": method}``. Each level entry holds the
        posterior ``mean``, ``sd``, ``q025``, ``median``, ``q975`` of ``X_ℓ``; the sampling
        methods add ``mcse_mean``, ``ess_bulk`` and ``r_hat`` (ArviZ; ``None`` for a constant
        chain). The MCSE of ``posterior`` is ``level_posteriors["1"]["mcse_mean"]``
        (``X1 = m + 1[target]``). The sampling methods also add the keys ``diagnostics``
        (``{"X1": {"r_hat", "ess_bulk", "ess_tail", "mcse_mean"}, …, "Xh": {...}}``) and
        ``verdict`` (``{"converged": bool, "reason": str}``) of
        :mod:`dprisk.inference.mcmc.convergence`.

    Raises
    ------
    ValueError
        Bad parameters or an unknown method (the message lists the methods).
    """
    summary = summarize_posterior(
        x_stars=x_stars, y_stars=y_stars, scenario=scenario, method=method, draws=draws,
        chains=chains, tune=tune, random_seed=random_seed, tail_mass=tail_mass,
        progressbar=progressbar, **parameters)
    return summary.nested_json(summary.scenario.h)


def summarize_posterior(
    *, x_stars, y_stars, scenario: Scenario | None = None, method: str = "exact",
    draws: int = 5000, chains: int = 4, tune: int = 1000, random_seed=None,
    tail_mass: float = DEFAULT_TAIL_MASS, progressbar: bool = False, **parameters,
) -> PosteriorSummary:
    """The summary of :func:`posterior_summary`, keeping the result (a DataTree for draws).

    Parameters and errors as in :func:`posterior_summary`; the summary's ``scenario`` and
    ``release`` are the validated inputs.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    scenario = nested_scenario(scenario, **parameters)
    release = Release.nested(x_stars, y_stars, h=scenario.h)
    release.one("posterior_summary")
    tail_mass = check_tail_mass(tail_mass)
    if method == "exact":
        return summarize(nested_posterior(release, scenario, tail_mass), scenario, method,
                         release)
    if random_seed is None:  # draw one, use it and record it: every random result reproducible
        random_seed = resolve_random_seed(None)
    # the integer seed in the draws' attributes (and --save-draws' file), as the two-level
    # form records it; a Generator has none to record
    seed = ({"random_seed": int(random_seed)} if isinstance(random_seed, numbers.Integral)
            and not isinstance(random_seed, bool) else {})
    if method == "gibbs":
        run = run_options(draws, chains, GIBBS_TUNE, random_seed)
        samples = nested_draws(release, scenario, **run, tail_mass=tail_mass,
                               progress=progressbar)
        result = to_datatree(samples, attrs={**scenario.attrs(), "method": method, **seed})
    else:
        if _tables_check_user_priors(scenario):
            # PyMC's Metropolis evaluates a user prior only where it walks: check its weights
            # on the windows the exact and Gibbs methods certify, refusing as they refuse
            nested_posterior(release, scenario, tail_mass)
        result = _pymc_draws(scenario, release, draws, chains, tune, random_seed, progressbar)
        result["posterior"].attrs.update(seed)
    return summarize(result, scenario, method, release)


def _tables_check_user_priors(scenario: Scenario) -> bool:
    """Whether ``scenario`` has a user prior and exact tables (within their rho limits).

    The limits: :data:`NESTED_RHO_MAX`, and ``MAX_PRECISION`` of ``rho2 + rho1/d`` at h = 2.
    """
    if all(prior.values_checked for prior in scenario.priors):
        return False
    if max(scenario.rhos) > NESTED_RHO_MAX:
        return False
    return scenario.h > 2 or scenario.precision <= MAX_PRECISION


def _pymc_draws(scenario: Scenario, release: Release, draws, chains, tune, random_seed,
                progressbar=False):
    """``pm.sample`` draws of ``X1 … Xh`` (a DataTree) for a validated scenario."""
    import pymc as pm

    from dprisk.models.builders.nested import build_nested_model

    as_generator(random_seed, "random_seed")  # a bad seed: one line naming random_seed
    draws = check_positive_int(draws, "draws")
    chains = check_positive_int(chains, "chains")
    tune = check_positive_int(tune, "tune", minimum=0)
    sampling = pymc_work_steps(chains, tune, draws)
    building = NESTED_PYMC_LEVEL_STEPS * float(scenario.h) ** 3  # the model, once
    if building > sampling:  # mostly the model of h levels: name rhos (one per level)
        check_work(sampling + building, parameter="rhos",
                   what=f"building and compiling the PyMC model of {scenario.h} levels")
    check_work(sampling + building, parameter="draws, chains, tune",
               what=f"{chains} PyMC chains x ({tune} tuning + {draws}) draws")
    check_draws_memory(scenario.h, chains, draws, tune=tune, pymc=True)
    model = build_nested_model(release.x_stars, release.y_stars, scenario=scenario)
    # chains from X1 = m + 1 and m in turn (as the two-level sample_model), each level at the
    # model's lowest start: chains stuck at one common start looked converged
    from dprisk.models.builders.nested import TARGET_VAR, x_var_name

    initvals = []
    for b in [b for b in (1, 0) if scenario.feasible[b]]:
        lowest = scenario.level_bounds(scenario.known + b)
        initvals.append({TARGET_VAR: np.int64(b), **{
            x_var_name(level): np.int64(lowest[level - 1][0])
            for level in range(2, scenario.h + 1)
            if model[x_var_name(level)] in model.free_RVs}})
    with np.errstate(over="ignore"):  # Metropolis' acceptance statistic at a huge rho
        idata = pm.sample(
            draws=draws, tune=tune, chains=chains, cores=1, random_seed=random_seed, model=model,
            initvals=[initvals[c % len(initvals)] for c in range(chains)],
            progressbar=progressbar, quiet=not progressbar, compute_convergence_checks=False,
        )
    idata["posterior"].attrs.update({**scenario.attrs(), "method": "pymc"})
    return idata
