"""Tests of the adversary's two-level PyMC model (paper §3.2, S3).

Reference: the model's joint log density over a (k1, k2) grid, normalised, is compared with
the joint pmf of ``dprisk.inference.two_level.exact.exact_posterior`` (enumeration on a grid whose
neglected
mass is below 1e-12). Tolerance ATOL_JOINT = 1e-10: the exact table leaves out < 1e-12 of
the mass and both sides are float64 sums of a few dozen terms (rounding ~1e-15); the model
side includes every DG normaliser, which cancels on normalisation.
"""

import numpy as np
import pymc as pm
import pytest
from census_values import RHO_BLOCK, RHO_BLOCK_GROUP

from dprisk.inference.two_level.exact import exact_posterior
from dprisk.models.builders.single_level import X1_STAR_VAR, build_single_level_model
from dprisk.models.builders.two_level import (
    RELEASE_DATA,
    TARGET_VAR,
    X1_VAR,
    X2_STAR_VAR,
    X2_VAR,
    Y1_STAR_VAR,
    build_two_level_model,
    release_setter,
    set_release,
    two_level_spec,
)
from dprisk.models.priors.library import PointMass, parse_prior

ATOL_JOINT = 1e-10
NB_PRIOR = "models/examples/negative_binomial_prior.py:prior"
CENSUS = {
    "rho1": RHO_BLOCK,
    "rho2": RHO_BLOCK_GROUP,
    "d": 27,
}
#: (prior, known): every built-in prior, the example user prior, and the edge cases
#: point:m (X1 = m + 1 impossible) and truncated:U with U = m + 4.
PRIOR_CASES = [
    ("improper", 0),
    ("truncated:10", 0),
    ("point:1", 0),
    ("point:25", 0),
    (NB_PRIOR, 0),
    ("point:3", 3),
    ("truncated:6", 2),
    ("point:0", 0),
]


def _model_joint(logp, k2_values, fixed_x2=None):
    """exp(model logp) on the grid k1 in {m, m+1} x k2_values, normalised."""
    table = np.full((2, k2_values.size), -np.inf)
    for t in (0, 1):
        for j, k2 in enumerate(k2_values):
            if fixed_x2 is not None:
                if k2 != fixed_x2:
                    continue
                point = {TARGET_VAR: np.int64(t)}
            else:
                point = {TARGET_VAR: np.int64(t), X2_VAR: np.int64(k2)}
            table[t, j] = logp(point)
    table = np.exp(table - table.max())
    return table / table.sum()


class TestStructure:
    def test_variables(self):
        model = build_two_level_model(2, 1, -1, **CENSUS)
        assert [rv.name for rv in model.free_RVs] == [TARGET_VAR, X2_VAR]
        assert [rv.name for rv in model.deterministics] == [X1_VAR]
        assert [rv.name for rv in model.observed_RVs] == [X1_STAR_VAR, X2_STAR_VAR, Y1_STAR_VAR]
        assert model[X2_VAR].dtype == "int64"
        assert [float(model[name].get_value()) for name in RELEASE_DATA] == [2.0, 1.0, -1.0]

    def test_point_mass_x2_is_deterministic(self):
        model = build_two_level_model(2, 1, -1, **CENSUS, prior="point:4")
        assert [rv.name for rv in model.free_RVs] == [TARGET_VAR]
        assert X2_VAR in [rv.name for rv in model.deterministics]

    @pytest.mark.parametrize(("prior", "known", "start"), [
        ("improper", 0, 1), ("point:0", 0, 0), ("point:5", 5, 0), ("truncated:3", 2, 1),
    ])
    def test_initial_point_is_feasible(self, prior, known, start):
        model = build_two_level_model(2, 1, -1, **CENSUS, prior=prior, known=known)
        assert int(model.initial_point()[TARGET_VAR]) == start

    def test_logp_is_float64(self):
        model = build_two_level_model(2, 1, -1, **CENSUS, p=0.5)
        assert model.logp().dtype == "float64"

    def test_prior_object_and_spec(self):
        prior = PointMass(2)
        model = build_two_level_model(1, 2, 3, **CENSUS, p=0.3, known=1, prior=prior)
        spec = two_level_spec(model)
        assert spec.release == (1, 2, 3)
        assert spec.prior is prior
        assert (spec.p, spec.known, spec.d) == (0.3, 1, 27)
        assert not spec.x2_is_free

    def test_spec_of_other_model_raises(self):
        with pytest.raises(ValueError, match="build_two_level_model"):
            two_level_spec(build_single_level_model(1, 0.5))


class TestJointMatchesExact:
    @pytest.mark.parametrize(("prior", "known"), PRIOR_CASES)
    def test_point_logps_finite_and_normalised_joint(self, prior, known):
        """One compiled logp per prior, reused across releases via set_release.

        The log density at the initial point is finite, so every term of it is (no term can
        be +inf: Bernoulli, prior and DG terms are log-probabilities); one compiled function
        instead of a second one for ``point_logps`` (0.3-0.4 s of CPU per case)."""
        model = build_two_level_model(0, 4, 7, **CENSUS, p=0.3, known=known, prior=prior)
        logp = model.compile_logp()
        assert np.isfinite(logp(model.initial_point())), model.initial_point()
        fixed = parse_prior(prior).k if prior.startswith("point:") else None
        for release in [(2, 1, -1), (0, 3, 5), (-1, 4, 9)]:
            release = tuple(v + known for v in release)
            set_release(model, *release)
            assert two_level_spec(model).release == release
            exact = exact_posterior(*release, **CENSUS, p=0.3, known=known, prior=prior)
            joint = _model_joint(logp, exact.k2_values, fixed)
            np.testing.assert_allclose(joint, exact.joint_pmf, rtol=0, atol=ATOL_JOINT)


class TestValidation:
    @pytest.mark.parametrize(
        ("kwargs", "name"),
        [
            ({"d": 0}, "d"),
            ({"d": 2.5}, "d"),
            ({"rho1": 0.0}, "rho1"),
            ({"rho2": -1.0}, "rho2"),
            ({"p": 1.0}, "p"),
            ({"known": -1}, "known"),
            ({"x1_star": 1.5}, "x1_star"),
            ({"y1_star": [1, 2]}, "y1_star"),
            ({"prior": "truncated:0"}, "truncated:0"),
            ({"prior": "truncated:3", "known": 3}, "truncated:3"),
            ({"prior": "point:2", "known": 3}, "point:2"),
            ({"prior": "uniform"}, "uniform"),
            ({"prior": "missing_file.py:prior"}, "missing_file.py"),
            ({"prior": "models/examples/negative_binomial_prior.py:nope"}, "nope"),
        ],
    )
    def test_bad_input_names_parameter(self, kwargs, name):
        args = {"x1_star": 2, "x2_star": 1, "y1_star": -1, **CENSUS, **kwargs}
        with pytest.raises(ValueError, match=name) as info:
            build_two_level_model(
                args.pop("x1_star"), args.pop("x2_star"), args.pop("y1_star"), **args
            )
        assert "\n" not in str(info.value)

    def test_set_release_validates(self):
        model = build_two_level_model(2, 1, -1, **CENSUS)
        with pytest.raises(ValueError, match="x2_star"):
            set_release(model, 1, 0.5, 0)
        assert two_level_spec(model).release == (2, 1, -1)

    def test_release_setter_sets_what_set_release_sets(self):
        """The same shared values (type, dtype, shape, value) as set_release, release by
        release; the releases checked once, as set_release checks each."""
        models = [build_two_level_model(2, 1, -1, **CENSUS) for _ in range(2)]
        releases = (np.array([3, 0, 5]), np.array([4, 1, -2]), np.array([1, 0, 7]))
        setter = release_setter(models[1], releases)
        for r in range(3):
            set_release(models[0], *(int(column[r]) for column in releases))
            setter(r)
            for name in RELEASE_DATA:
                values = [model[name].get_value(borrow=True) for model in models]
                assert type(values[0]) is type(values[1])
                assert values[0].dtype == values[1].dtype and values[0].shape == ()
                assert values[0] == values[1]
            assert two_level_spec(models[1]).release == two_level_spec(models[0]).release
        with pytest.raises(ValueError, match="x2_star"):
            release_setter(models[1], (np.array([1]), np.array([0.5]), np.array([0])))

    def test_set_release_needs_two_level_model(self):
        with pm.Model() as model:
            pm.Normal("z")
        with pytest.raises(ValueError, match="build_two_level_model"):
            set_release(model, 1, 1, 1)
