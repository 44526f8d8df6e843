"""``ExactGibbsStep.run``: a chain's sweeps at once are the sweeps one by one, bit for bit.

:class:`dprisk.inference.mcmc.compiled_chain.CompiledChain` runs the exact Gibbs step's
iterations by :meth:`ExactGibbsStep.run` (all uniforms of a chain by one ``rng.random(n)``,
the X1 path by one pass over precomputed two-way choices). Compared exactly (integers, the
generator's state after the run) with :meth:`ExactGibbsStep.step` called once per
iteration: with X2 free (improper and truncated priors) and fixed (point prior), from a
start inside and far outside the tabulated X2 window, over several releases.
"""

import numpy as np
import pytest

from dprisk.inference.two_level.gibbs_step import ExactGibbsStep
from dprisk.models.builders.two_level import (
    TARGET_VAR,
    X2_VAR,
    build_two_level_model,
    set_release,
)

PARAMS = {"rho1": 0.5, "rho2": 0.3, "d": 4, "p": 0.5, "known": 0}
RELEASES = [(1, 5, 4), (0, 3, 2), (2, 8, 7), (-3, 40, 60)]


def _one_by_one(step, point, n):
    t_values, x_values = [], []
    for _ in range(n):
        point, _ = step.step(point)
        t_values.append(int(point[TARGET_VAR]))
        x_values.append(int(point[X2_VAR]) if X2_VAR in point else None)
    return point, t_values, x_values


@pytest.mark.parametrize("prior", ["improper", "truncated:10", "point:6", "point:0"])
def test_run_is_step_by_step(prior):
    model = build_two_level_model(*RELEASES[0], **PARAMS, prior=prior)
    steps = [ExactGibbsStep(model=model) for _ in range(2)]
    free = X2_VAR in {v.name for v in model.value_vars}
    assert steps[0].run_names == ((TARGET_VAR, X2_VAR) if free else (TARGET_VAR,))
    for k, release in enumerate(RELEASES):
        set_release(model, *release)
        far = 500 if prior == "improper" else 10  # outside the window, in the support
        for start_x2 in (1, far) if free else (None,):
            point = {TARGET_VAR: np.array(0, dtype=np.int64)}
            if free:
                point[X2_VAR] = np.array(start_x2, dtype=np.int64)
            for n in (0, 1, 2, 257):
                for step in steps:
                    step.setup_chain(np.random.default_rng(10 * k + n), 0, n)
                last, *values = steps[0].run(dict(point), n, record=True)
                expected_last, t_values, x_values = _one_by_one(steps[1], dict(point), n)
                assert values[0].dtype == np.int64
                assert values[0].tolist() == t_values
                if free:
                    assert values[1].tolist() == x_values
                assert steps[0].rng.bit_generator.state == steps[1].rng.bit_generator.state
                assert {name: int(v) for name, v in last.items()} == {
                    name: int(v) for name, v in expected_last.items()}
                assert all(last[name].dtype == point[name].dtype for name in point)
                assert steps[0].run(dict(point), n) is not None  # without record: the point


def _same_conditionals(a, b):
    assert a.release == b.release and a.feasible_x1 == b.feasible_x1
    assert (a.k2_start, a.width) == (b.k2_start, b.width)
    for name in ("prob_x1_table", "x2_pmf_table"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    for name in ("q", "alias", "p1", "x2_pmf", "start", "feasible"):
        assert np.array_equal(getattr(a._tables, name), getattr(b._tables, name))


@pytest.mark.parametrize("prior", ["improper", "truncated:10", "point:3",
                                   "models/examples/negative_binomial_prior.py:prior"])
def test_tabulated_many_is_one_at_a_time(prior):
    """``ExactConditionals.tabulated_many``: every release's tables equal, bit for bit, those
    tabulated for it alone; left out only where its own window is wider (widened). The
    releases: a grid around the truth, repeats, and far ones (x2*, y1* up to 400), for which
    the lone window of the negative-binomial prior widens."""
    from dprisk.inference.kernels.table_kernels import DEFAULT_TAIL_MASS
    from dprisk.inference.two_level.gibbs import ExactConditionals
    from dprisk.models.scenario import Scenario

    scenario = Scenario.two_level(rho1=0.05, rho2=2.0, d=27, prior=prior)
    grid = np.array([(x1, x2, y1) for x1 in (-2, 1, 4) for x2 in (0, 3, 9, 60, 400)
                     for y1 in (-5, 2, 400)] + [(1, 3, 2)] * 3)
    many = ExactConditionals.tabulated_many(grid.T, scenario, DEFAULT_TAIL_MASS)
    unique = {tuple(r) for r in grid.tolist()}
    assert set(many) <= unique
    assert (len(many) < len(unique)) == prior.endswith(":prior")  # some widened alone
    for release in {tuple(r) for r in grid.tolist()}:
        alone = ExactConditionals(*release, scenario=scenario)
        if release in many:
            _same_conditionals(many[release], alone)
        else:
            assert alone.width > min(c.width for c in many.values())


def test_step_takes_the_tabulated_conditionals():
    model = build_two_level_model(*RELEASES[0], **PARAMS, prior="truncated:10")
    steps = [ExactGibbsStep(model=model) for _ in range(2)]
    steps[0].tabulate(np.array(RELEASES[:3]).T)
    for k, release in enumerate(RELEASES[:3]):
        set_release(model, *release)
        for step in steps:
            step.setup_chain(np.random.default_rng(k), 0, 50)
        if k:  # a new release: taken from the tabulated ones
            assert steps[0].conditionals is steps[0]._tabulated[release]
        _same_conditionals(steps[0].conditionals, steps[1].conditionals)
        point = {TARGET_VAR: np.array(0, dtype=np.int64), X2_VAR: np.array(2, dtype=np.int64)}
        _, *got = steps[0].run(dict(point), 50, record=True)
        _, *expected = steps[1].run(dict(point), 50, record=True)
        assert [v.tolist() for v in got] == [v.tolist() for v in expected]
