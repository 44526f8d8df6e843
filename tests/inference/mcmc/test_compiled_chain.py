"""``CompiledChain`` gives ``pm.sample``'s draws bit for bit, over a sequence of releases.

Two copies of one model with their own steps: one sampled by ``pm.sample`` (through
``sampling.sample_model``), the other by :class:`CompiledChain`, each with the same seeds, the
release changed in place between runs (so tuned step state is carried over alike).
"""

import numpy as np
import pytest
from twin_chains import PARAMS as TWIN_PARAMS
from twin_chains import RELEASES, assert_twins_draw_the_same

from dprisk.inference.mcmc.compiled_chain import CompiledChain
from dprisk.inference.two_level.sampling import pymc_steps, sample_model
from dprisk.models.builders.two_level import build_two_level_model, set_release

PARAMS = {**TWIN_PARAMS, "prior": "truncated:10"}


@pytest.mark.parametrize("method", ["pymc-gibbs", "pymc"])
def test_same_draws_as_pm_sample(method):
    models = [build_two_level_model(*RELEASES[0], **PARAMS) for _ in range(2)]
    steps = [pymc_steps(model, method) for model in models]
    chain = CompiledChain(models[1], steps[1], ("X1", "X2"))
    for k, release in enumerate(RELEASES):
        for model in models:
            set_release(model, *release)
        # tune = 0 included; one chain, then two (each chain from the steps' entry state)
        run = {"draws": 60, "tune": 20 * k, "random_seed": 100 + k, "chains": 1 + k % 2}
        tree = sample_model(models[0], method=method, step=steps[0], **run)
        got = chain.run(**run)
        for name in ("X1", "X2"):
            assert np.array_equal(tree.posterior[name].values, got[name])


@pytest.mark.parametrize("prior", ["truncated:10", "point:6"])
@pytest.mark.parametrize("method", ["pymc-gibbs", "pymc"])
def test_batched_values_equal_point_by_point(method, prior):
    """The integer quantities computed once per run equal the per-draw compiled calls."""
    params = {**PARAMS, "prior": prior}
    models = [build_two_level_model(*RELEASES[0], **params) for _ in range(2)]
    chains = [CompiledChain(model, pymc_steps(model, method)) for model in models]
    assert chains[0]._batched is not None
    # elementwise (X1 = m + target_has_c, X2): PyTensor's Python implementations, no jitted
    # function compiled at its first call; the per-point function not compiled at all
    assert getattr(chains[0]._batched[2].vm, "jit_fn", None) is None
    chains[1]._batched = None  # the per-draw path
    assert_twins_draw_the_same(models, chains, draws=50, tune_step=10, seed=300)
    assert "_values" not in vars(chains[0]) and "_values" in vars(chains[1])


def test_compiled_once_per_model(monkeypatch):
    """The initial point: compiled once per model for both PyMC steps (each compiled its own
    before) and the model's chains, which also share the batched recorded values; the draws
    are those of chains on a twin model compiled on their own."""
    import pymc.initial_point
    import pymc.model.core as model_core

    compiled = []
    original = pymc.initial_point.make_initial_point_fn

    def counting(*args, **kwargs):
        compiled.append(1)
        return original(*args, **kwargs)

    # what Model.initial_point() compiles (the steps call it when not given a point), and
    # what initial_point_function compiles
    monkeypatch.setattr(model_core, "make_initial_point_fn", counting)
    monkeypatch.setattr(pymc.initial_point, "make_initial_point_fn", counting)
    models = [build_two_level_model(*RELEASES[0], **PARAMS) for _ in range(2)]
    steps = pymc_steps(models[0], "pymc")
    assert len(steps) == 2 and len(compiled) == 1
    shared = [CompiledChain(models[0], pymc_steps(models[0], "pymc-gibbs")),
              CompiledChain(models[0], steps)]
    assert len(compiled) == 1
    assert shared[0]._initial_point is shared[1]._initial_point
    assert shared[0]._batched is shared[1]._batched
    alone = CompiledChain(models[1], pymc_steps(models[1], "pymc"))
    assert alone._initial_point is not shared[1]._initial_point
    run = {"draws": 40, "tune": 10, "random_seed": 8, "chains": 2}
    got, expected = shared[1].run(**run), alone.run(**run)
    for name in ("X1", "X2"):
        assert np.array_equal(got[name], expected[name])


def test_state_copied_only_for_later_chains(monkeypatch):
    """Each chain starts from the steps' state at entry: copied (PyMC's ``sampling_state``,
    deep copies) only when there are later chains to give it back to; the draws of one and
    two chains are those of ``pm.sample``'s loop either way (the twin tests above)."""
    from pymc.step_methods.state import WithSamplingState

    from dprisk.inference.two_level.gibbs_step import ExactGibbsStep

    copies = []
    original = WithSamplingState.sampling_state

    def counted(self):
        copies.append(1)
        return original.fget(self)

    monkeypatch.setattr(ExactGibbsStep, "sampling_state",
                        property(counted, original.fset), raising=False)
    model = build_two_level_model(*RELEASES[0], **PARAMS)
    chain = CompiledChain(model, pymc_steps(model, "pymc-gibbs"))
    chain.run(draws=5, tune=2, random_seed=1)
    assert copies == []
    chain.run(draws=5, tune=2, random_seed=1, chains=2)
    assert copies == [1]


def test_graphs_built_without_tracebacks_keep_no_trace_and_restore_the_limit():
    # The context only drops PyTensor's creation tracebacks (tag.trace), and only within it.
    import pytensor
    import pytensor.tensor as pt

    from dprisk.inference.mcmc.compiled_chain import graphs_without_tracebacks

    limit = pytensor.config.traceback__limit
    with graphs_without_tracebacks():
        assert pytensor.config.traceback__limit == 0
        inside = pt.dscalar("a") + 1.0
    outside = pt.dscalar("b") + 1.0
    assert pytensor.config.traceback__limit == limit
    assert not inside.tag.trace
    assert (len(outside.tag.trace) > 0) == (limit != 0)


def test_initial_point_function_gives_model_initial_point():
    """``initial_point_function(model)(None)`` is ``model.initial_point()`` (value, dtype and
    shape of every value variable), for a free and a point-mass X2."""
    from dprisk.inference.mcmc.compiled_chain import initial_point_function

    for prior in ("improper", "point:3"):
        model = build_two_level_model(*RELEASES[0], **{**PARAMS, "prior": prior})
        ours, pymc_point = initial_point_function(model)(None), model.initial_point()
        assert list(ours) == list(pymc_point)
        for name, value in pymc_point.items():
            assert np.asarray(ours[name]).dtype == value.dtype
            assert np.array_equal(ours[name], value) and np.shape(ours[name]) == value.shape
        assert initial_point_function(model) is initial_point_function(model)
