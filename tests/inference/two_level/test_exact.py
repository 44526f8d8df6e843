"""Tests of inference/two_level/exact.py against a brute-force double sum written from the paper.

The reference sums the joint posterior (paper §3.2, S3) term by term, in
the raw (not completed-square) form, over k1 in {m, m+1} and every k2 from m to K2_MAX
(several hundred), with each prior's weight typed in independently (``reference_log_weight``,
as in tests/models/test_priors.py). Tolerances are numerical: the reference itself is
exact to about 1e-12 relative in float64 log space.
"""

import math

import numpy as np
import pytest
from census_values import CENSUS_TWO_LEVEL as CENSUS
from census_values import RHO_BLOCK, RHO_BLOCK_GROUP
from reference_priors import NB_SPEC, reference_log_weight
from scipy.special import logsumexp

from dprisk.inference.two_level.exact import (
    GridTooNarrowError,
    exact_posterior,
    joint_log_table,
    posterior_x1,
)
from dprisk.models.priors.library import UserPrior

K2_MAX = 900


def brute_force(x1s, x2s, y1s, *, rho1, rho2, d, p, known, spec, k2_max=K2_MAX):
    """P[X1 = m+1 | D] and P[X2 = k2 | D] for k2 = known..k2_max by a double loop."""
    k2 = np.arange(known, k2_max + 1)
    rows = []
    for k1, prior_prob in ((known, 1 - p), (known + 1, p)):
        with np.errstate(divide="ignore"):
            log_prior = math.log(prior_prob)
        rows.append(
            log_prior
            - rho1 * (x1s - k1) ** 2
            - rho2 * (x2s - k2) ** 2
            - (rho1 / d) * (y1s - (k2 - k1)) ** 2
            + reference_log_weight(spec, k2, k1)
        )
    log_joint = np.array(rows)
    log_total = logsumexp(log_joint)
    joint = np.exp(log_joint - log_total)
    return joint[1].sum(), k2, joint.sum(0)


def brute_force_log_odds(*release, **kwargs):
    """``log P[X1 = m+1 | D] - log P[X1 = m | D]`` from the same double loop, in log space."""
    known, k2 = kwargs["known"], np.arange(kwargs["known"], K2_MAX + 1)
    rho1, rho2, d, p = kwargs["rho1"], kwargs["rho2"], kwargs["d"], kwargs["p"]
    x1s, x2s, y1s = release
    branch = []
    for k1, prior_prob in ((known, 1 - p), (known + 1, p)):
        terms = (
            math.log(prior_prob)
            - rho1 * (x1s - k1) ** 2
            - rho2 * (x2s - k2) ** 2
            - (rho1 / d) * (y1s - (k2 - k1)) ** 2
            + reference_log_weight(kwargs["spec"], k2, k1)
        )
        branch.append(logsumexp(terms))
    return branch[1] - branch[0]


RELEASES = [(2, 1, -1), (0, 3, 5), (1, -2, 30), (-1, 0, -20), (4, 12, 9), (0, -4, 0)]
SPECS = ["improper", "truncated:10", "point:1", "point:25", "point:0", NB_SPEC]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize(("known", "p"), [(0, 0.5), (2, 0.2)])
def test_matches_brute_force(spec, known, p):
    kind, _, value = spec.partition(":")
    if kind in ("truncated", "point"):  # the same prior relative to m
        spec = f"{kind}:{int(value) + known}"
    x1s, x2s, y1s = (np.array(c) + known for c in zip(*RELEASES, strict=True))
    post = exact_posterior(x1s, x2s, y1s, **CENSUS, p=p, known=known, prior=spec)
    assert post.prob_x1.shape == (len(RELEASES),)
    for i in range(len(RELEASES)):
        want_x1, k2, want_x2 = brute_force(
            x1s[i], x2s[i], y1s[i], **CENSUS, p=p, known=known, spec=spec
        )
        assert post.prob_x1[i] == pytest.approx(want_x1, rel=1e-10, abs=1e-300)
        got_x2 = post.x2_pmf_at(k2[:, None])[:, i]
        np.testing.assert_allclose(got_x2, want_x2, rtol=1e-9, atol=1e-15)
        assert post.neglected_mass[i] < 1e-12
        assert post.x2_pmf[i].sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(
    ("release", "d"),
    [((-300, 200, -300), 27), ((5, 200, -300), 27), ((1, 0, -300), 27), ((1, 3, 250), 10**5),
     ((300, -200, 300), 27)],
)
@pytest.mark.parametrize("spec", ["improper", "truncated:10", "point:25", NB_SPEC])
def test_far_tails_and_large_d(release, d, spec):
    params = {**CENSUS, "d": d}
    post = exact_posterior(*release, **params, prior=spec)
    _, k2, want_x2 = brute_force(*release, **params, p=0.5, known=0, spec=spec)
    # Far in the tails P[X1 = 1 | D] can be 1e-26 or 1 - 1e-26; compare log-odds.
    want = brute_force_log_odds(*release, **params, p=0.5, known=0, spec=spec)
    assert float(post.log_odds_x1) == pytest.approx(want, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(post.x2_pmf_at(k2), want_x2, rtol=1e-8, atol=1e-14)
    assert float(post.neglected_mass) < 1e-12


def test_point_mass_below_target_rules_out_x1_plus_one():
    post = exact_posterior([3, -2], [0, 5], [1, 1], **CENSUS, prior="point:0")
    np.testing.assert_array_equal(post.prob_x1, 0.0)
    np.testing.assert_array_equal(post.log_odds_x1, -np.inf)
    np.testing.assert_array_equal(post.x2_pmf_at(0), 1.0)


def test_far_user_prior_mass_widens_the_grid():
    # A prior that only allows X2 - X1 = 150, with no support hint: the initial window
    # (around the likelihood's centre, ~0) misses it and must grow until the bound holds.
    import pytensor.tensor as pt

    far = UserPrior(
        lambda k2, k1: pt.switch(pt.eq(k2 - k1, 150), 0.0, -np.inf).astype("float64"),
        spec="far",
    )
    post = exact_posterior(2, 1, -1, **CENSUS, prior=far)
    assert post.x2_pmf_at(150) + post.x2_pmf_at(151) == pytest.approx(1.0, abs=1e-12)
    # Branch k1 puts X2 at k1 + 150: log-odds = 3 rho1 - rho2 (150^2 - 149^2), the y1* term
    # (-1 - 150)^2 being the same in both branches.
    want_log_odds = 3 * RHO_BLOCK - RHO_BLOCK_GROUP * (150**2 - 149**2)
    assert float(post.log_odds_x1) == pytest.approx(want_log_odds, rel=1e-12, abs=0)


def test_narrow_grid_raises_and_wide_grid_passes():
    with pytest.raises(GridTooNarrowError, match="leaves out"):
        exact_posterior(2, 1, -1, **CENSUS, halfwidth=2)
    with pytest.raises(GridTooNarrowError):
        joint_log_table([2, 0], [1, 40], [-1, 0], **CENSUS, halfwidth=5, tail_mass=1e-12)
    fixed = exact_posterior(2, 1, -1, **CENSUS, halfwidth=20)
    chosen = exact_posterior(2, 1, -1, **CENSUS)
    assert float(fixed.prob_x1) == pytest.approx(float(chosen.prob_x1), rel=1e-13, abs=0)
    # The same narrow window passes for a prior whose support it covers.
    exact_posterior(2, 1, -1, **CENSUS, prior="truncated:3", halfwidth=1)


def _scaled_improper(log_weight):
    """The improper uniform prior times ``exp(log_weight)``: the same posterior as "improper",
    but weights (and a declared ``log_weight_max``) above 1."""
    import pytensor.tensor as pt

    return UserPrior(lambda k2, k1: pt.zeros_like(k2, dtype="float64") + log_weight,
                     is_proper=False, log_weight_max=log_weight, spec="scaled")


@pytest.mark.parametrize("log_weight", [None, 5.0])
def test_neglected_mass_bound_is_a_bound(log_weight):
    # With a loose tolerance the window is narrow; the true neglected mass (from the wide
    # brute force) must not exceed the reported bound, which must not exceed tail_mass. The
    # bound is tight here (within 1e-4 relative of the true mass): a prior whose weights reach
    # exp(5) must enter it through log_weight_max, or the bound is e^5 = 148 times too small.
    prior = "improper" if log_weight is None else _scaled_improper(log_weight)
    for release in [(2, 1, -1), (0, 6, 2), (1, -3, 20)]:
        post = exact_posterior(*release, **CENSUS, tail_mass=1e-3, prior=prior)
        _, k2, want_x2 = brute_force(*release, **CENSUS, p=0.5, known=0, spec="improper")
        inside = np.isin(k2, post.k2_values)
        true_neglected = want_x2[~inside].sum()
        assert true_neglected <= float(post.neglected_mass) < 1e-3


def test_vectorised_equals_one_by_one_and_posterior_x1():
    rng = np.random.default_rng(7)
    x1s = rng.integers(-6, 8, size=(4, 5))
    x2s = rng.integers(-6, 12, size=(4, 5))
    y1s = rng.integers(-40, 40, size=(1, 5))
    batch = exact_posterior(x1s, x2s, y1s, **CENSUS, prior="truncated:10")
    assert batch.prob_x1.shape == (4, 5) and batch.x2_pmf.shape[:2] == (4, 5)
    fast = posterior_x1(x1s, x2s, y1s, **CENSUS, prior="truncated:10")
    # posterior_x1 may take the fused kernel (inference.fused_kernels): equal within 1e-13.
    np.testing.assert_allclose(fast, batch.prob_x1, rtol=1e-13, atol=0)
    for i, j in [(0, 0), (3, 4), (2, 1)]:
        one = exact_posterior(x1s[i, j], x2s[i, j], y1s[0, j], **CENSUS, prior="truncated:10")
        assert float(one.prob_x1) == pytest.approx(batch.prob_x1[i, j], rel=1e-14, abs=0)
        got = batch.x2_pmf_at(one.k2_values[:, None, None])[:, i, j]
        np.testing.assert_allclose(got, one.x2_pmf, atol=1e-16)


def test_dataset_and_summaries():
    post = exact_posterior([2, 0], [1, 30], [-1, 4], **CENSUS, prior="improper")
    ds = post.to_dataset()
    assert dict(ds.sizes)["release"] == 2
    np.testing.assert_allclose(ds["x2_pmf"].sum("k2"), 1.0, atol=1e-12)
    np.testing.assert_allclose(ds["prob_x1"], post.prob_x1)
    assert ds.attrs["prior"] == "improper" and ds.attrs["d"] == 27
    mean = (ds["x2_pmf"] * ds["k2"]).sum("k2").values
    np.testing.assert_allclose(post.x2_mean(), mean, rtol=1e-12)


def test_tables_3_to_5_release():
    """Paper §4.3, release D = (2, 1, -1), Census rho, d = 27, p = 1/2: exact values.

    The paper's MCMC estimates (tab:tab4, tab:tab5) are not asserted here; the exact values
    are checked against the brute force (the report's records compare them with the paper).
    """
    post = exact_posterior(2, 1, -1, **CENSUS, p=0.5, known=0)
    want_x1, k2, want_x2 = brute_force(2, 1, -1, **CENSUS, p=0.5, known=0, spec="improper")
    assert float(post.prob_x1) == pytest.approx(want_x1, rel=1e-12, abs=0)
    np.testing.assert_allclose(post.x2_pmf_at(k2), want_x2, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"rho1": 0.0}, "rho1"),
        ({"rho2": -1.0}, "rho2"),
        ({"d": 0}, "d"),
        ({"p": 1.0}, "p"),
        ({"known": -1}, "known"),
        ({"tail_mass": 0.0}, "tail_mass"),
        ({"prior": "truncated:0"}, "prior"),
        ({"prior": "nonsense"}, "prior"),
        ({"prior": "point:0", "known": 2}, "prior"),
        ({"halfwidth": -1}, "halfwidth"),
    ],
)
def test_validation(kwargs, fragment):
    params = {**CENSUS, **kwargs}
    with pytest.raises(ValueError, match=fragment):
        exact_posterior(2, 1, -1, **params)


def test_release_validation():
    with pytest.raises(ValueError, match="x1_star"):
        exact_posterior(1.5, 1, -1, **CENSUS)
    with pytest.raises(ValueError, match="y1_star"):
        posterior_x1(1, 1, np.nan, **CENSUS)
    with pytest.raises(ValueError, match="rho1 must be a scalar"):
        exact_posterior(1, 1, 1, rho1=[0.1, 0.2], rho2=0.2, d=27)


def test_scalar_release_gives_python_floats_and_scenario_is_accepted():
    from dprisk.models.scenario import Scenario

    post = exact_posterior(2, 1, -1, **CENSUS)
    assert type(post.prob_x1) is float and isinstance(round(post.prob_x1, 5), float)
    assert type(posterior_x1(2, 1, -1, **CENSUS)) is float
    scenario = Scenario.two_level(CENSUS["rho1"], CENSUS["rho2"], CENSUS["d"])
    assert exact_posterior(2, 1, -1, scenario=scenario).prob_x1 == post.prob_x1
    with pytest.raises(TypeError, match="scenario"):
        exact_posterior(2, 1, -1, scenario=scenario, rho1=0.1)


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    # before: numpy's MemoryError (14.6 TiB, 2.98 GiB) instead of a refusal of halfwidth
    ((1, 2, 1), {"halfwidth": 10**12}, r"^halfwidth must be an integer >= 0 and <= 2097150"),
    ((1, 2, 1), {"halfwidth": 10**8}, r"allowed range: 0 <= halfwidth <= 2097150"),
    # before: 1e8 releases gave MemoryError after 26 s and 4.5 GB (their tables: 123 GiB);
    # here 1e6 releases under a 256 MiB limit (tables of 1.23 GiB; the validated int64
    # releases, 24 MB, are made before the check)
    ((np.zeros(10**6, dtype=np.int8), 0, 0), {},
     r"^x1_star, x2_star, y1_star: the X2 tables of 1000000 release\(s\) x 33 values"),
    # one release's tables are wide by their window alone (rho1 = rho2 = 1e-12: 3.8e7 values,
    # 1.4 GiB): the window's parameters are named, not the release ('dprisk posterior' said
    # '--x1-star, --x2-star, --y1-star' at rho 1e-14)
    ((1, 1, 0), {"rho1": 1e-12, "rho2": 1e-12, "d": 3},
     r"^rho1, rho2, d: the X2 tables of 1 release\(s\)"),
])
def test_sizes_refused_before_allocating(args, kwargs, match, monkeypatch):
    """Refused under tracemalloc below 64 MiB."""
    import tracemalloc

    monkeypatch.setenv("DPRISK_MEMORY_LIMIT", "256MiB")
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=match):
            exact_posterior(*args, **{"rho1": 0.1, "rho2": 0.2, "d": 27, **kwargs})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024**2


def test_largest_halfwidth_the_refusals_allow_runs(monkeypatch):
    """The bound 2097150 named by :func:`test_sizes_refused_before_allocating`'s refusals is a
    halfwidth that runs, under their 256 MiB limit (once here: 0.7 s of CPU, not one per
    refusal)."""
    monkeypatch.setenv("DPRISK_MEMORY_LIMIT", "256MiB")
    assert exact_posterior(1, 2, 1, rho1=0.1, rho2=0.2, d=27, halfwidth=2097150).prob_x1 > 0
