"""The fused (compiled) two-level kernel against the numpy path and an mpmath reference.

``DPRISK_KERNELS`` forces a path (inference/kernels/fused_kernels.py). The compiled kernel sums
the Gaussian factor by a ratio recurrence restarted every 16 steps; its rounding is a few
ulps near the centre (tens of ulps far out), so the tolerance against the numpy path (itself
exact to a few ulps per cell) is 1e-13 relative on P[X1 = m+1 | D] and 1e-13 absolute on
the log-odds. The mpmath reference sums the same terms at 40 digits. The compiled Gibbs
block loop and alias builder use the same uniforms and arithmetic: their draws are equal.
"""

import math

import mpmath
import numpy as np
import pytest
from census_values import CENSUS_PRIOR_CASES, RHO_BLOCK, RHO_BLOCK_GROUP

from dprisk.inference.kernels import fused_kernels
from dprisk.inference.kernels.table_kernels import checked_table
from dprisk.inference.studies.monte_carlo import unique_releases
from dprisk.inference.studies.p_correct import p_correct_two_level
from dprisk.inference.two_level.exact import GridTooNarrowError, posterior_x1
from dprisk.inference.two_level.gibbs import alias_table, gibbs_sample, gibbs_x1_counts
from dprisk.models.numerics import expit
from dprisk.models.scenario import Release, Scenario

CENSUS = {"rho1": RHO_BLOCK, "rho2": RHO_BLOCK_GROUP, "d": 27}
CASES = [
    *CENSUS_PRIOR_CASES,
    ({"rho1": 1e-3, "rho2": 2e-3, "d": 5, "prior": "improper"}, 2, 0.5),
    ({"rho1": 2.0, "rho2": 5.0, "d": 3, "prior": "truncated:40"}, 7, 0.9),
    ({"rho1": 0.1, "rho2": 0.25, "d": 27, "prior": "improper"}, 10**7, 0.5),
]


def _releases(known: int, n: int = 3000):
    rng = np.random.default_rng(11)
    x1s = known + rng.integers(-30, 30, n)
    x2s = known + rng.integers(-60, 80, n)
    y1s = rng.integers(-200, 300, n)
    # far tails and large counts
    x1s[:4] = [known - 500, known + 900, known, 2**40]
    y1s[:4] = [10**6, -400, 0, 5]
    return x1s, x2s, y1s


def _masses(monkeypatch, mode, x1s, x2s, y1s, scenario, **kwargs):
    monkeypatch.setenv("DPRISK_KERNELS", mode)
    return fused_kernels.checked_masses(x1s, x2s, y1s, scenario, 1e-12, None, **kwargs)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_compiled_equals_numpy(monkeypatch, case):
    params, known, p = CASES[case]
    scenario = Scenario.two_level(**params, p=p, known=known)
    releases = _releases(known)
    mass_c, neglected_c = _masses(monkeypatch, "compiled", *releases, scenario)
    table = checked_table(*releases, scenario, 1e-12, None)
    mass_n, neglected_n = table.log_branch_mass, table.log_neglected
    odds_c, odds_n = mass_c[:, 1] - mass_c[:, 0], mass_n[:, 1] - mass_n[:, 0]
    finite = np.isfinite(odds_n)
    np.testing.assert_array_equal(np.isfinite(odds_c), finite)
    np.testing.assert_allclose(odds_c[finite], odds_n[finite], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(expit(odds_c[finite]), expit(odds_n[finite]), rtol=1e-13, atol=0)
    both = np.isfinite(neglected_n)
    np.testing.assert_array_equal(np.isfinite(neglected_c), both)
    np.testing.assert_allclose(neglected_c[both], neglected_n[both], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_probability_written_by_the_kernel_equals_numpy(monkeypatch, case):
    """``out_prob`` (expit inside the compiled pass) against the numpy path's expit of the
    numpy log-odds, 1e-13 relative; both paths fill it; posterior_x1 returns it."""
    params, known, p = CASES[case]
    scenario = Scenario.two_level(**params, p=p, known=known)
    releases = _releases(known)
    probs = {}
    for mode in ("compiled", "numpy"):
        probs[mode] = np.full(releases[0].size, np.nan)
        _masses(monkeypatch, mode, *releases, scenario, want_neglected=False,
                out_prob=probs[mode])
    table = checked_table(*releases, scenario, 1e-12, None)
    reference = expit(table.log_branch_mass[:, 1] - table.log_branch_mass[:, 0])
    np.testing.assert_array_equal(probs["numpy"], reference)
    np.testing.assert_allclose(probs["compiled"], reference, rtol=1e-13, atol=0)
    monkeypatch.setenv("DPRISK_KERNELS", "compiled")
    public = posterior_x1(*releases, **params, p=p, known=known, tail_mass=1e-12)
    np.testing.assert_array_equal(public, probs["compiled"])


def test_cheap_neglected_bound_is_above_the_exact_bound(monkeypatch):
    scenario = Scenario.two_level(**CENSUS)
    releases = _releases(0)
    _, exact = _masses(monkeypatch, "compiled", *releases, scenario)
    _, cheap = _masses(monkeypatch, "compiled", *releases, scenario, want_neglected=False)
    finite = np.isfinite(exact)
    assert (cheap[finite] >= exact[finite] - 1e-12).all()


def _mpmath_prob(x1s, x2s, y1s, rho1, rho2, d, p):
    """P[X1 = 1 | D] by the raw joint posterior (improper prior, known = 0) at 40 digits."""
    mpmath.mp.dps = 40
    branch = []
    for k1, prior in ((0, 1 - p), (1, p)):
        total = mpmath.mpf(0)
        for k2 in range(k1, 400):
            total += mpmath.exp(-rho1 * (x1s - k1) ** 2 - rho2 * (x2s - k2) ** 2
                                - (mpmath.mpf(rho1) / d) * (y1s - (k2 - k1)) ** 2)
        branch.append(prior * total)
    return float(branch[1] / (branch[0] + branch[1]))


def test_compiled_matches_mpmath(monkeypatch):
    monkeypatch.setenv("DPRISK_KERNELS", "compiled")
    for release in [(2, 1, -1), (0, 6, 2), (1, -3, 20), (-4, 40, 35), (9, 0, -30)]:
        got = posterior_x1(*release, **CENSUS)
        want = _mpmath_prob(*release, CENSUS["rho1"], CENSUS["rho2"], CENSUS["d"], 0.5)
        assert got == pytest.approx(want, rel=1e-13, abs=0)


def test_fixed_window_too_narrow_raises_on_the_compiled_path(monkeypatch):
    scenario = Scenario.two_level(**CENSUS)
    monkeypatch.setenv("DPRISK_KERNELS", "compiled")
    with pytest.raises(GridTooNarrowError):
        fused_kernels.checked_masses(*_releases(0, 10), scenario, 1e-12, 1)


def test_user_prior_takes_the_numpy_path():
    user = "models/examples/negative_binomial_prior.py:prior"
    scenario = Scenario.two_level(**CENSUS, prior=user)
    assert fused_kernels.branch_constant_weights(scenario) is None
    assert not fused_kernels.serves(scenario)
    weights = fused_kernels.branch_constant_weights(Scenario.two_level(**CENSUS,
                                                                       prior="truncated:10"))
    feasible, _, highs, has_high, log_weights = weights
    assert feasible.all() and has_high.all() and list(highs) == [10, 10]
    np.testing.assert_allclose(log_weights, [-math.log(11), -math.log(10)], rtol=1e-15)


def test_p_correct_equal_on_both_paths(monkeypatch):
    monkeypatch.setenv("DPRISK_KERNELS", "numpy")
    numpy_result = p_correct_two_level(x2=3, **CENSUS, prior="truncated:12")
    monkeypatch.setenv("DPRISK_KERNELS", "compiled")
    compiled_result = p_correct_two_level(x2=3, **CENSUS, prior="truncated:12")
    for name in ("p_correct", "gain", "loss", "tie_mass"):
        assert getattr(compiled_result, name) == pytest.approx(
            getattr(numpy_result, name), rel=1e-13, abs=1e-15), name


def test_kernel_mode_rejects_unknown_values(monkeypatch):
    monkeypatch.setenv("DPRISK_KERNELS", "fast")
    with pytest.raises(ValueError, match="DPRISK_KERNELS"):
        fused_kernels.kernel_mode()


# --------------------------------------------------------------------------- Gibbs
def _gibbs_releases():
    rng = np.random.default_rng(3)
    return rng.integers(-3, 5, 120), rng.integers(-3, 12, 120), rng.integers(-20, 30, 120)


@pytest.mark.parametrize("prior", ["improper", "truncated:8", "point:4"])
def test_compiled_gibbs_draws_are_identical(monkeypatch, prior):
    """Same uniforms, same arithmetic: the compiled block loop gives the numpy draws exactly."""
    draws = {}
    for mode in ("numpy", "compiled"):
        monkeypatch.setenv("DPRISK_KERNELS", mode)
        out = gibbs_sample(*_gibbs_releases(), **CENSUS, prior=prior, draws=150, chains=3,
                           tune=37, random_seed=5)
        draws[mode] = (out.x1, out.x2)
    np.testing.assert_array_equal(draws["numpy"][0], draws["compiled"][0])
    np.testing.assert_array_equal(draws["numpy"][1], draws["compiled"][1])


def test_compiled_alias_tables_are_identical():
    rng = np.random.default_rng(4)
    prob = rng.random((300, 29))
    prob[:, 3] = 0.0
    prob[:7] = 0.0
    prob[:7, 5] = 1.0
    prob /= prob.sum(1, keepdims=True)
    q_numpy, alias_numpy = alias_table(prob)
    q_compiled, alias_compiled = alias_table(prob, compiled=True)
    np.testing.assert_array_equal(q_numpy, q_compiled)
    np.testing.assert_array_equal(alias_numpy, alias_compiled)


def test_x1_counts_on_distinct_releases_equal_gibbs_sample(monkeypatch):
    """Tables per distinct release, batches with gibbs_sample's random stream: same counts."""
    monkeypatch.setenv("DPRISK_KERNELS", "compiled")
    x1s, x2s, y1s = (np.tile(a[:15], 20) for a in _gibbs_releases())  # many repeats
    unique, inverse = unique_releases(np.stack([x1s, x2s, y1s], axis=1))
    scenario = Scenario.two_level(**CENSUS)
    counts = gibbs_x1_counts(Release.two_level(*unique.T), inverse, scenario, draws=200,
                             generator=np.random.default_rng(9), tail_mass=1e-12, batch=128)
    rng = np.random.default_rng(9)
    want = np.concatenate([
        (gibbs_sample(x1s[lo:lo + 128], x2s[lo:lo + 128], y1s[lo:lo + 128], scenario=scenario,
                      draws=200, chains=1, random_seed=rng).x1[:, 0] == 1).sum(-1)
        for lo in range(0, x1s.size, 128)])
    np.testing.assert_array_equal(counts, want)
