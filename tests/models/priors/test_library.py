"""Tests of models/priors/library.py: log weights against hand-written formulas and scipy, the
PyTensor and numpy forms of one prior against each other, PyMC declarations (finite initial
point, logp equal to the numpy weight), and the spec parser's errors.
"""


import numpy as np
import pytest
from reference_priors import NB_SPEC, reference_log_weight

from dprisk.models.priors.library import (
    PRIOR_FORMS,
    ImproperUniform,
    PointMass,
    TruncatedUniform,
    UserPrior,
    X2Prior,
    as_prior,
    check_support,
    load_prior,
    parse_prior,
)

K2 = np.arange(-3, 40)


SPECS = ["improper", "truncated:10", "point:1", "point:25", NB_SPEC]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("k1", [0, 1, 7])
def test_log_weight_matches_definition(spec, k1):
    prior = parse_prior(spec)
    got = prior.log_weight(K2, k1)
    want = reference_log_weight(spec, K2, k1)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=0)


@pytest.mark.parametrize("spec", SPECS[:4])
def test_numpy_weight_equals_compiled_pytensor_weight(spec):
    # One object, two worlds: the hand-written numpy log_weight of a built-in must equal the
    # base class's compilation of its PyTensor log_weight_pt.
    prior = parse_prior(spec)
    k2 = K2[:, None]
    k1 = np.array([0, 1, 7, 11])
    fast = prior.log_weight(k2, k1)
    compiled = X2Prior.log_weight(prior, k2, k1)
    # numpy's exp/log/gammaln against PyTensor's C code (libm): the same bits on this CPU,
    # not on every one (numpy's AVX-512 kernels, issue 32): 1e-13 relative, 1e-12 near 0
    np.testing.assert_array_equal(np.isfinite(fast), np.isfinite(compiled))
    finite = np.isfinite(fast)
    np.testing.assert_array_equal(fast[~finite], compiled[~finite])
    np.testing.assert_allclose(fast[finite], compiled[finite], rtol=1e-13, atol=1e-12)


def test_log_weight_broadcasts_and_proper_priors_sum_to_one():
    k2 = np.arange(0, 200)[:, None, None]
    k1 = np.array([[0, 1], [2, 3]])
    for spec in ["truncated:10", "point:5", NB_SPEC]:
        weights = np.exp(parse_prior(spec).log_weight(k2, k1))
        assert weights.shape == (200, 2, 2)
        np.testing.assert_allclose(weights.sum(0), 1.0, rtol=1e-12)


def test_supports_and_feasible_x1():
    assert ImproperUniform().branch_support(3) == (3, None)
    assert TruncatedUniform(10).branch_support(3) == (3, 10)
    assert TruncatedUniform(10).branch_support(11) is None
    assert PointMass(4).branch_support(3) == (4, 4)
    assert PointMass(4).branch_support(5) is None
    assert PointMass(2).feasible_x1(2) == (2,)
    assert PointMass(3).feasible_x1(2) == (2, 3)
    assert not ImproperUniform().is_proper
    assert TruncatedUniform(3).is_proper and PointMass(3).is_proper


def test_check_support_rejects_empty_supports():
    assert check_support("truncated:3", 2) == TruncatedUniform(3)
    with pytest.raises(ValueError, match=r"prior .truncated:2.*X1 = 3.*prior forms"):
        check_support("truncated:2", 2)
    assert check_support("point:2", 2) == PointMass(2)  # X1 = 3 impossible, but allowed
    with pytest.raises(ValueError, match="prior 'point:1'"):
        check_support("point:1", 2)
    with pytest.raises(ValueError, match="known"):
        check_support("improper", -1)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("improper", ImproperUniform()),
        (" truncated:10 ", TruncatedUniform(10)),
        ("point:0", PointMass(0)),
        ("point:25", PointMass(25)),
    ],
)
def test_parse_builtin_specs_round_trip(spec, expected):
    prior = parse_prior(spec)
    assert prior == expected
    assert parse_prior(prior.spec) == prior
    assert load_prior(spec) == prior
    assert as_prior(prior) is prior


@pytest.mark.parametrize(
    "spec",
    ["", "uniform", "truncated", "truncated:", "truncated:x", "truncated:-1", "point:1.5",
     "point:-2", "trunc:5", "models/examples/negative_binomial_prior.py:1abc"],
)
def test_malformed_specs_raise_one_line_value_error(spec):
    with pytest.raises(ValueError) as info:
        parse_prior(spec)
    message = str(info.value)
    assert "prior" in message and PRIOR_FORMS in message and "\n" not in message


def test_parse_rejects_non_strings():
    with pytest.raises(ValueError, match="prior"):
        parse_prior(3)
    with pytest.raises(TypeError, match="prior"):
        as_prior(3.5)


def test_user_prior_bad_values_are_reported():
    import pytensor.tensor as pt

    nan_prior = UserPrior(lambda k2, k1: pt.log(pt.cast(k1 - k2, "float64")), spec="nan")
    with pytest.raises(ValueError, match="NaN or above log_weight_max"):
        nan_prior.log_weight(np.arange(3, 6), 2)
    heavy = UserPrior(lambda k2, k1: pt.cast(k2, "float64"), is_proper=False, spec="heavy")
    with pytest.raises(ValueError, match="log_weight_max"):
        heavy.log_weight(np.arange(3, 6), 2)
    with pytest.raises(TypeError, match="logp"):
        UserPrior("not callable")


def test_user_prior_with_support_limits():
    import pytensor.tensor as pt

    prior = UserPrior(
        lambda k2, k1: pt.zeros_like(k2, dtype="float64") - np.log(3.0),
        support=lambda k1: (k1 + 1, k1 + 3),
    )
    got = prior.log_weight(np.arange(0, 8), 2)
    want = np.where((np.arange(8) >= 3) & (np.arange(8) <= 5), -np.log(3.0), -np.inf)
    np.testing.assert_array_equal(got, want)
    assert prior.branch_support(2) == (3, 5)


# -- PyMC declarations -----------------------------------------------------------------------


def _tiny_model(prior, known, p=0.5):
    """X1 = known + Bernoulli(p) (started at a feasible value), X2 declared by the prior."""
    import pymc as pm

    start = max(prior.feasible_x1(known)) - known
    with pm.Model() as model:
        b = pm.Bernoulli("b", p=p, initval=start)
        x1 = pm.Deterministic("X1", known + b)
        prior.declare("X2", x1)
    return model


@pytest.mark.parametrize(
    ("spec", "known"),
    [("improper", 2), ("truncated:10", 2), ("point:3", 2), ("point:2", 2), (NB_SPEC, 0)],
)
def test_declare_initial_point_and_logp(spec, known):
    prior = parse_prior(spec)
    model = _tiny_model(prior, known)
    logps = model.point_logps()
    assert all(np.isfinite(v) for v in logps.values()), logps
    if isinstance(prior, PointMass):
        # X2 is a constant; the potential rules out X1 > k.
        logp = model.compile_logp(vars=model.potentials, sum=True)
        for b in (0, 1):
            want = 0.0 if known + b <= prior.k else -np.inf
            assert logp({"b": np.array(b)}) == want
        return
    x2_rv = model["X2"]
    logp = model.compile_logp(vars=[x2_rv], sum=True)
    for b in (0, 1):
        for k2 in [known - 1, known, known + 1, known + 4, 10, 11, 30]:
            got = logp({"b": np.array(b), "X2": np.array(k2)})
            want = float(prior.log_weight(k2, known + b))
            if np.isinf(want):
                assert got == -np.inf
            else:
                assert got == pytest.approx(want, rel=1e-12, abs=0)


def test_point_mass_declare_makes_x2_constant():
    model = _tiny_model(PointMass(5), 2)
    assert "X2" in [v.name for v in model.deterministics]
    assert model.free_RVs == [model["b"]]


@pytest.mark.parametrize(("kwargs", "match"), [
    # before: "no" was read as True (the prior then refused as improperly "proper"), "1" gave
    # math's "must be real number, not str", True was taken as log_weight_max = 1.0
    ({"is_proper": "no"}, r"^is_proper must be True or False, got 'no'"),
    ({"is_proper": 1}, r"^is_proper must be True or False"),
    ({"log_weight_max": "1"}, r"^log_weight_max must be a finite number, got '1'"),
    ({"log_weight_max": True}, r"^log_weight_max must be a finite number, got True"),
])
def test_user_prior_arguments_of_the_wrong_type(kwargs, match):
    import pytensor.tensor as pt

    def zero(k2, k1):
        return pt.zeros_like(k2, dtype="float64")

    with pytest.raises(TypeError, match=match):
        UserPrior(zero, **kwargs)
    assert not UserPrior(zero, is_proper=np.bool_(False), log_weight_max=np.float64(0)).is_proper


@pytest.mark.parametrize("cls", [TruncatedUniform, PointMass])
def test_signature_names_the_documented_parameter(cls):
    """The reference page documents ``upper`` / ``k``: the constructor's parameter is so named
    (it was ``value``, positional-only, in the shared base class's signature)."""
    import inspect

    from numpydoc.docscrape import ClassDoc

    documented = [param.name for param in ClassDoc(cls)["Parameters"]]
    assert list(inspect.signature(cls).parameters) == documented == [cls.parameter]


class _Geometric(X2Prior):
    """X2 - X1 ~ Geometric(0.2) as logp; subclasses override the numpy log_weight."""

    def logp(self, k2, k1):
        import pytensor.tensor as pt

        return np.log(0.2) + pt.cast(k2 - k1, "float64") * np.log1p(-0.2)


class _GeometricNoBound(_Geometric):
    def log_weight(self, k2, k1):  # forgets -inf below k1
        return np.log(0.2) + np.abs(np.asarray(k2) - np.asarray(k1)) * np.log1p(-0.2)


class _GeometricOtherQ(_Geometric):
    def log_weight(self, k2, k1):  # q = 0.5, not logp's 0.2
        k2, k1 = np.asarray(k2), np.asarray(k1)
        return np.where(k2 >= k1, np.log(0.5) + (k2 - k1) * np.log1p(-0.5), -np.inf)


class _GeometricFast(_Geometric):
    def log_weight(self, k2, k1):  # the same prior, written in numpy
        k2, k1 = np.asarray(k2), np.asarray(k1)
        return np.where(k2 >= k1, np.log(0.2) + (k2 - k1) * np.log1p(-0.2), -np.inf)


def test_a_numpy_log_weight_override_must_be_the_logp_with_the_support():
    """A subclass may override log_weight with numpy (exact and Gibbs use it; PyMC uses logp):
    one forgetting -inf below k1 gave the exact P[X1 = 1 | D] = 0.876 (X2 = 0 < X1 = 1
    counted) and one with another q 0.849, PyMC 0.839 for both (D = (2, 1, -1), rho 0.5, d 3;
    logp's own prior: exact 0.831). Both are now refused for every method; an equal
    override is taken."""
    from dprisk.inference.two_level.exact import exact_posterior

    kwargs = {"rho1": 0.5, "rho2": 0.5, "d": 3}
    for prior, where in ((_GeometricNoBound(), "X2 = -2, X1 = 0"),
                         (_GeometricOtherQ(), "X2 = 0, X1 = 0")):
        with pytest.raises(ValueError, match=rf"numpy log_weight gives .* at {where}, its logp"):
            exact_posterior(2, 1, -1, **kwargs, prior=prior)
    fast = exact_posterior(2, 1, -1, **kwargs, prior=_GeometricFast()).prob_x1
    graph = exact_posterior(2, 1, -1, **kwargs, prior=_Geometric()).prob_x1
    assert fast == pytest.approx(graph, rel=1e-12) and graph == pytest.approx(0.8311, abs=1e-4)
