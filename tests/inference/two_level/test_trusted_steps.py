"""PyMC's steps with PyTensor's per-call input checks skipped draw exactly what they drew with them.

:func:`dprisk.inference.two_level.sampling.pymc_steps` marks the compiled functions of
``BinaryGibbsMetropolis`` ``trust_input`` (:func:`trust_step_inputs`), and
:class:`dprisk.inference.mcmc.compiled_chain.CompiledChain` its recorded-values function. Two
copies of one model, one with the checks switched back on, sampled with the same seeds over a
sequence of releases (tuned step state carried over alike): the draws must be equal bit for bit
(the check only filters inputs that are already arrays of the right dtype and shape, so any
difference would mean an input was not).
"""

import numpy as np
import pytest
from twin_chains import PARAMS, RELEASES, assert_twins_draw_the_same

from dprisk.inference.mcmc.compiled_chain import CompiledChain
from dprisk.inference.two_level.sampling import pymc_steps, sample_model
from dprisk.models.builders.two_level import build_two_level_model


def _functions(steps):
    return [getattr(f, "f", f) for step in steps for f in getattr(step, "fs", ())]


def _checked(steps):
    """The steps with PyTensor's input checks switched back on."""
    for function in _functions(steps):
        function.trust_input = False
    return steps


@pytest.mark.parametrize("prior", ["truncated:10", "point:6"])
def test_trusted_steps_draw_the_same(prior):
    models = [build_two_level_model(*RELEASES[0], **PARAMS, prior=prior) for _ in range(2)]
    trusted = pymc_steps(models[0], "pymc")
    checked = _checked(pymc_steps(models[1], "pymc"))
    assert _functions(trusted) and all(f.trust_input for f in _functions(trusted))
    chains = [CompiledChain(models[0], trusted), CompiledChain(models[1], checked)]
    assert chains[0]._values.f.trust_input
    chains[1]._values.f.trust_input = False
    assert_twins_draw_the_same(models, chains, draws=80, tune_step=30, seed=200)


def test_pm_sample_with_trusted_steps_draws_the_same():
    models = [build_two_level_model(*RELEASES[1], **PARAMS, prior="truncated:10")
              for _ in range(2)]
    steps = [pymc_steps(models[0], "pymc"), _checked(pymc_steps(models[1], "pymc"))]
    trees = [sample_model(model, method="pymc", step=step, draws=80, tune=40, chains=2,
                          random_seed=7) for model, step in zip(models, steps, strict=True)]
    for name in ("X1", "X2"):
        assert np.array_equal(trees[0].posterior[name].values, trees[1].posterior[name].values)
