"""FusedSteps (PyMC's two-level steps on the point's values) draws PyMC's draws, bit for bit.

:class:`dprisk.inference.mcmc.compiled_chain.CompiledChain` runs ``pymc_steps(model, "pymc")``
(BinaryGibbsMetropolis for the indicator, LeanMetropolis for X2, or the indicator alone under a
point prior) through :class:`dprisk.inference.mcmc.fused_steps.FusedSteps`. Compared here,
exactly (integers; the generators' states after the runs): with the unfused loop
(``step.step(point)``, whose Metropolis step runs PyMC's own compiled ``delta_logp`` where the
fused one subtracts the model's log densities) on a twin model over a sequence of releases, with
``pm.sample`` under a point prior (``tests/inference/mcmc/test_compiled_chain.py`` does so for
the truncated prior), and the acceptance test :func:`log_uniform_below` with PyMC's
``metrop_select`` (draws and outcomes, near-ties, u = 0 and non-finite ratios included).
LeanMetropolis's own scalar step is compared with ``pm.Metropolis`` in
``tests/inference/two_level/test_lean_steps.py``; here also its array fallback for a proposal
too large for float rounding (with PyMC's own Metropolis).
"""

import numpy as np
import pymc as pm
import pytest
from pymc.step_methods.arraystep import metrop_select
from twin_chains import PARAMS, RELEASES, assert_twins_draw_the_same

from dprisk.inference.mcmc import fused_steps
from dprisk.inference.mcmc.compiled_chain import CompiledChain
from dprisk.inference.mcmc.fused_steps import FusedSteps, log_uniform_below
from dprisk.inference.two_level.lean_steps import LeanMetropolis
from dprisk.inference.two_level.sampling import pymc_steps, sample_model
from dprisk.models.builders.two_level import X2_VAR, build_two_level_model, set_release


def _step_state(steps):
    """What the steps carry from run to run: generators, tuning, the shared indicator."""
    state = []
    for step in steps:
        state.append(step.rng.bit_generator.state)
        for name in ("scaling", "accepted_sum", "steps_until_tune", "order"):
            if hasattr(step, name):
                state.append(np.asarray(getattr(step, name)).tolist())
        for shared in getattr(step, "shared", {}).values():
            state.append(shared.get_value().tolist())
    return state


@pytest.fixture(scope="module")
def truncated_twins():
    """Two copies of the model with the truncated:10 prior and their ``pymc`` steps, built
    and compiled once for the module (about 1 s of CPU per model and its steps)."""
    models = [build_two_level_model(*RELEASES[0], **PARAMS, prior="truncated:10")
              for _ in range(2)]
    return models, [pymc_steps(model, "pymc") for model in models]


@pytest.fixture(scope="module")
def point_twins():
    """Two copies of the model with the point:6 prior and their ``pymc`` steps (the indicator's
    step alone), built and compiled once for the module's two point-prior checks (issue 36:
    each built its own pair, about 0.6 s of CPU). Each check starts from the twins in the same
    state: built alike, then run alike (the twins check asserts their steps' state equal); the
    steps' generators are seeded by each run's ``random_seed``."""
    models = [build_two_level_model(*RELEASES[0], **PARAMS, prior="point:6") for _ in range(2)]
    return models, [pymc_steps(model, "pymc") for model in models]


@pytest.mark.parametrize("prior", ["truncated:10", "point:6"])
def test_fused_chain_draws_what_the_unfused_chain_draws(prior, request):
    models, steps = request.getfixturevalue(
        "truncated_twins" if prior == "truncated:10" else "point_twins")
    chains = [CompiledChain(model, step) for model, step in zip(models, steps, strict=True)]
    assert isinstance(chains[0]._fused, FusedSteps)
    assert (chains[0]._fused.x_name is None) == prior.startswith("point")
    chains[1]._fused = None  # step.step(point): PyMC's point maps and compiled functions
    # tuning every 100 steps: runs with up to 240 tuning steps and 150 draws
    assert_twins_draw_the_same(models, chains, draws=150, tune_step=120, seed=500)
    assert _step_state(steps[0]) == _step_state(steps[1])
    if prior == "truncated:10":  # the fused chain takes its Metropolis log-ratios from the
        # log density: the step's own delta_logp is compiled by the unfused chain alone
        assert steps[0][1]._delta_logp is None and steps[1][1]._delta_logp is not None


def test_fused_chain_draws_what_pm_sample_draws_under_a_point_prior(point_twins):
    """The indicator's step alone (X2 is the constant K): CompiledChain vs ``pm.sample``."""
    models, steps = point_twins
    for model in models:
        set_release(model, *RELEASES[1])
    # the twins start alike (their generators are seeded by each run's random_seed)
    states = [[part for part in _step_state(step) if not isinstance(part, dict)]
              for step in steps]
    assert states[0] == states[1]
    chain = CompiledChain(models[1], steps[1])
    assert chain._fused is not None and len(steps[1]) == 1
    run = {"draws": 200, "tune": 30, "random_seed": 77, "chains": 2}
    tree = sample_model(models[0], method="pymc", step=steps[0], **run)
    got = chain.run(**run)
    for name in ("X1", "X2"):
        assert np.array_equal(tree.posterior[name].values, got[name])


def test_fused_run_is_step_by_step(truncated_twins):
    """FusedSteps.run (one loop, values as ints) against FusedSteps.step per iteration.

    Tuning on (the Metropolis scale tuned every 100 steps) and off, from a point whose X2
    start makes the first proposals improbable; the kept values, the last point and the
    steps' state (generators, scaling, accepted count, counters, last acceptance) equal.
    """
    models, steps = truncated_twins
    fused = [FusedSteps.build(model, step) for model, step in zip(models, steps, strict=True)]
    assert fused[0].run_names == ("target_has_c", X2_VAR)
    for k, release in enumerate(RELEASES):
        for model in models:
            set_release(model, *release)
        points = []
        for (gibbs, metropolis), twin in zip(steps, fused, strict=True):
            for step in (gibbs, metropolis):
                step.rng = np.random.default_rng(40 + k)
            metropolis.tune = k != 1
            metropolis.reset_tuning()
            metropolis.steps_until_tune = metropolis.tune_interval
            twin.start_chain()
            points.append({"target_has_c": np.array(1, dtype=np.int64),
                           X2_VAR: np.array(3 + k, dtype=np.int64)})
        got, t_values, x_values = fused[0].run(points[0], 250, record=True)
        expected, t_expected, x_expected = points[1], [], []
        for _ in range(250):
            expected = fused[1].step(expected)
            t_expected.append(int(expected["target_has_c"]))
            x_expected.append(int(expected[X2_VAR]))
        assert (list(t_values), list(x_values)) == (t_expected, x_expected)
        assert {n: int(v) for n, v in got.items()} == {n: int(v) for n, v in expected.items()}
        assert _step_state(steps[0]) == _step_state(steps[1])
        lean = [step[1] for step in steps]
        assert lean[0].accepted_iter.tolist() == lean[1].accepted_iter.tolist()
        assert float(lean[0].accept_rate_iter) == float(lean[1].accept_rate_iter)
        assert fused[0].run(got, 3) is not None  # without record: the point


def test_fused_run_without_x_is_step_by_step(point_twins):
    """FusedSteps.run against FusedSteps.step per iteration for a model without ``X`` (the
    point prior: the indicator's step alone, the loop's Metropolis part skipped): the kept
    values, the last point and the steps' state equal, from both starts of the indicator."""
    models, steps = point_twins
    fused = [FusedSteps.build(model, step) for model, step in zip(models, steps, strict=True)]
    assert fused[0].x_name is None and fused[0].run_names == ("target_has_c",)
    for k, release in enumerate(RELEASES):
        for model in models:
            set_release(model, *release)
        points = []
        for (gibbs,), twin in zip(steps, fused, strict=True):
            gibbs.rng = np.random.default_rng(60 + k)
            twin.start_chain()
            points.append({"target_has_c": np.array(k % 2, dtype=np.int64)})
        got, t_values = fused[0].run(points[0], 250, record=True)
        expected, t_expected = points[1], []
        for _ in range(250):
            expected = fused[1].step(expected)
            t_expected.append(int(expected["target_has_c"]))
        assert list(t_values) == t_expected and len(set(t_values)) == 2  # moved both ways
        assert {n: int(v) for n, v in got.items()} == {n: int(v) for n, v in expected.items()}
        assert _step_state(steps[0]) == _step_state(steps[1])
        assert fused[0].run(got, 3) is not None  # without record: the point


@pytest.mark.parametrize("scaling", [1.0, 4e3, 1e17])
def test_compiled_loop_is_the_python_loop(truncated_twins, scaling):
    """The compiled loop (fused_loop_jit, its driver in FusedSteps) against the Python loop:
    the same kept values, last values and steps' state (generators included), with tuning
    on and off; a scale of 4e3 sends proposals far outside the log densities' first window
    (grown, then spare slots), 1e17 beyond exact float rounding (PyMC's array path)."""
    models, steps = truncated_twins
    fused = [FusedSteps.build(model, step) for model, step in zip(models, steps, strict=True)]
    assert fused_steps._compiled_loop() is not None
    for k, release in enumerate(RELEASES[:3]):
        for model in models:
            set_release(model, *release)
        for (gibbs, metropolis), twin in zip(steps, fused, strict=True):
            for step in (gibbs, metropolis):
                step.rng = np.random.default_rng(70 + k)
            metropolis.tune = k != 1
            metropolis.reset_tuning()
            metropolis.scaling = np.array([scaling])
            metropolis.steps_until_tune = 30
            twin.start_chain()
        got = fused[0]._run_both(1, 3 + k, 400, True)
        expected = fused[1]._run_python(1, 3 + k, 400, True)
        assert got[:2] == expected[:2]
        assert (list(got[2]), list(got[3])) == (expected[2], expected[3])
        assert _step_state(steps[0]) == _step_state(steps[1])
        lean = [step[1] for step in steps]
        assert lean[0].accepted_iter.tolist() == lean[1].accepted_iter.tolist()
        assert float(lean[0].accept_rate_iter) == float(lean[1].accept_rate_iter)
        assert fused[0]._run_both(*got[:2], 5, False)[2:] == (None, None)


def test_compiled_loop_leaves_near_ties_to_the_driver():
    """Within a relative 1e-9 of the ratio (and at u = 0) the loop does not decide; it keeps
    ``u`` and the ratio for the driver."""
    from dprisk.inference.mcmc.fused_loop_jit import RATIO, REALS_SIZE, U, _decide

    reals = np.zeros(REALS_SIZE)
    for u in (0.5, 0.3, 1e-300):
        r = float(np.log(u))
        assert _decide(u, r, reals) == -1 and _decide(u, r + 1e-12, reals) == -1
        assert (reals[U], reals[RATIO]) == (u, r + 1e-12)
        assert _decide(u, r + 1e-3, reals) == 1 and _decide(u, r - 1e-3, reals) == 0
    assert _decide(0.0, -1.0, reals) == -1
    assert (reals[U], reals[RATIO]) == (0.0, -1.0)


class _Uniforms:
    """A generator stand-in returning given uniforms (``random`` and ``uniform`` alike)."""

    def __init__(self, values):
        self.values = list(values)

    def random(self):
        return self.values.pop(0)

    uniform = random


def test_log_uniform_below_is_metrop_select():
    rng = np.random.default_rng(3)
    ratios = np.concatenate([rng.normal(0, 2, 3000), -rng.exponential(1, 3000),
                             [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-300, -745.0]])
    mine, pymcs = np.random.default_rng(9), np.random.default_rng(9)
    for r in ratios:
        expected = metrop_select(np.float64(r), 1, 0, rng=pymcs)[1]
        assert log_uniform_below(np.float64(r), mine) == expected
        assert mine.bit_generator.state == pymcs.bit_generator.state  # no draw when not finite
    # near-ties decided by np.log as PyMC does, and u = 0 (log -inf)
    for u in (0.5, 0.3, 1e-300, 0.999999999):
        r = np.log(u)
        for ratio in (r, np.nextafter(r, 0), np.nextafter(r, -1), r + 1e-12, r - 1e-12):
            expected = metrop_select(ratio, 1, 0, rng=_Uniforms([u]))[1]
            assert log_uniform_below(ratio, _Uniforms([u])) == expected
    with np.errstate(divide="ignore"):
        assert log_uniform_below(-1e308, _Uniforms([0.0]))
        assert not log_uniform_below(-np.inf, _Uniforms([0.0]))


def test_only_the_known_steps_are_fused(truncated_twins):
    """And PyMC's own Metropolis, which LeanMetropolis's array fallback is compared with."""
    (model, _), ((gibbs, _), _) = truncated_twins
    plain = pm.Metropolis([model[X2_VAR]], model=model)  # no raveled scalar step
    assert FusedSteps.build(model, [gibbs, plain]) is None
    assert FusedSteps.build(model, [gibbs]) is None  # X2 would not be updated
    assert FusedSteps.build(model, pymc_steps(model, "pymc-gibbs")) is None
    _assert_lean_array_fallback_is_pymc(model, plain)


def _assert_lean_array_fallback_is_pymc(model, plain):
    """A scaling beyond float rounding (|delta| >= 2**53) takes PyMC's array operations."""
    set_release(model, *RELEASES[2])
    steps = [LeanMetropolis([model[X2_VAR]], model=model), plain]
    point = {name: np.asarray(value) for name, value in model.initial_point().items()}
    for scaling in (1e16, 3e15, 1.0):
        for step in steps:
            step.rng = np.random.default_rng(21)
            step.tune = False
            step.scaling = np.array([scaling])
            step.shared["target_has_c"].set_value(point["target_has_c"])
        for _ in range(20):
            (got, _), (expected, _) = (step.step(dict(point)) for step in steps)
            assert got[X2_VAR].dtype == expected[X2_VAR].dtype
            assert got[X2_VAR] == expected[X2_VAR]
        assert steps[0].rng.bit_generator.state == steps[1].rng.bit_generator.state
        assert steps[0].accepted_sum.tolist() == steps[1].accepted_sum.tolist()
