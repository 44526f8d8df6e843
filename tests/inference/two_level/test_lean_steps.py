"""LeanMetropolis draws what pm.Metropolis draws, bit for bit, and records the same statistics.

:func:`dprisk.inference.two_level.sampling.pymc_steps` gives X2 a
:class:`~dprisk.inference.two_level.lean_steps.LeanMetropolis` (PyMC's step with its per-step
statistics read without numpy reductions). Twin models, one with ``pm.Metropolis`` put back,
sampled with the same seeds: equal draws over a sequence of releases (tuned state carried
over alike) through CompiledChain, and equal draws and statistics through ``pm.sample``.
"""

import numpy as np
import pymc as pm
import pytest
from twin_chains import PARAMS, RELEASES, assert_twins_draw_the_same

from dprisk.inference.mcmc.compiled_chain import CompiledChain
from dprisk.inference.two_level.lean_steps import LeanMetropolis
from dprisk.inference.two_level.sampling import pymc_steps, trust_step_inputs
from dprisk.models.builders.two_level import X2_VAR, build_two_level_model, set_release


def _plain(model):
    """``pymc_steps(model, "pymc")`` with PyMC's own Metropolis for X2."""
    gibbs, lean = pymc_steps(model, "pymc")
    # PyMC logs the step by its class name: ">Metropolis: [X2]" as before
    assert type(lean) is LeanMetropolis and type(lean).__name__ == "Metropolis"
    return trust_step_inputs([gibbs, pm.Metropolis([model[X2_VAR]], model=model)])


@pytest.fixture(scope="module")
def twins():
    """Two copies of one model (truncated:10 prior) and their steps, LeanMetropolis's and
    ``pm.Metropolis``'s: built and compiled once for both tests (about 1 s of CPU per model
    and its steps). Each test starts from the steps' state the other left, the same in both
    twins (pm.sample resets the tuning of each chain; CompiledChain carries it over alike)."""
    models = [build_two_level_model(*RELEASES[0], **PARAMS, prior="truncated:10")
              for _ in range(2)]
    return models, [pymc_steps(models[0], "pymc"), _plain(models[1])]


def test_lean_metropolis_draws_what_pymc_draws_over_releases(twins):
    models, steps = twins
    chains = [CompiledChain(model, step) for model, step in zip(models, steps, strict=True)]
    # tuning every 100 steps: runs with up to 90 tuning steps (tune_step * k) and 150 draws
    assert_twins_draw_the_same(models, chains, draws=150, tune_step=30, seed=300)


def test_pm_sample_gives_the_same_draws_and_statistics(twins):
    """At the second release, the twins' steps through ``pm.sample`` (before issue 36's
    second pass: a second pair of models with the improper prior; the prior is not read by
    the step, whose draws and statistics are compared)."""
    models, steps = twins
    for model in models:
        set_release(model, *RELEASES[1])
    traces = [pm.sample(draws=60, tune=250, chains=1, cores=1, step=step, model=model,
                        random_seed=11, progressbar=False, compute_convergence_checks=False)
              for model, step in zip(models, steps, strict=True)]
    for name in ("X1", "X2"):
        np.testing.assert_array_equal(traces[0].posterior[name].values,
                                      traces[1].posterior[name].values)
    stats = [t.sample_stats for t in traces]
    names = [n for n in stats[1].data_vars if n in ("accept", "accepted", "scaling")]
    assert names and all(n in stats[0] for n in names)
    for name in names:
        np.testing.assert_array_equal(stats[0][name].values, stats[1][name].values)
