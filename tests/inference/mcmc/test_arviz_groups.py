"""Draws in ArviZ's layout (``inference.mcmc.arviz_groups.arviz_tree``), netCDF round trip.

References: the numpy discrete-Gaussian log pmf (``models.mechanism.discrete_gaussian.logpmf``)
for ``log_likelihood`` and ``sample_stats.lp``; the prior's own weights for the prior group's
frequencies (tolerance 5 binomial standard errors of a frequency over 2 x 400 draws).
"""

import numpy as np
import pytest
import xarray as xr

from dprisk.inference.mcmc.arviz_groups import GROUPS, arviz_tree
from dprisk.inference.nested.posterior import summarize_posterior as nested_summary
from dprisk.inference.two_level.sampling import summarize_posterior
from dprisk.models.mechanism.discrete_gaussian import logpmf

H = {"rho1": 0.1, "rho2": 0.25, "d": 3}
SMALL = {"draws": 400, "chains": 2, "random_seed": 5}


def _summary(prior="improper", method="gibbs"):
    return summarize_posterior(1, 2, 1, **H, prior=prior, method=method, **SMALL)


def _tree(summary, seed=1):
    return arviz_tree(summary.result, summary.scenario, summary.release, random_seed=seed)


def test_improper_prior_gives_every_group_but_the_prior_ones():
    tree = _tree(_summary())
    assert list(tree.children) == [g for g in GROUPS if not g.startswith("prior")]
    assert set(tree["posterior"].data_vars) == {"X1", "X2"}
    assert tree["posterior"]["X1"].dims == ("chain", "draw")
    assert tree["posterior"].attrs["method"] == "gibbs"
    assert {k: int(v) for k, v in tree["observed_data"].items()} == {
        "x1_star": 1, "x2_star": 2, "y1_star": 1}
    assert tree["constant_data"]["rho"].values.tolist() == [0.1, 0.25]
    assert tree["constant_data"]["siblings"].values.tolist() == [3]


@pytest.mark.parametrize(("prior", "p"), [("improper", 0.5), ("truncated:6", 0.3)])
def test_log_likelihood_and_lp_are_the_discrete_gaussian_terms(prior, p):
    """``lp`` = log P[X1] + log w(X2 | X1) + the three log likelihoods. At p = 1/2 under the
    improper prior both prior terms are constant; p = 0.3 with truncated:6 (w = 1/(7 - X1)
    on X1..6) checks that P[X1 = 1] is p, not 1 - p, and that w(X2 | X1) is added."""
    summary = summarize_posterior(1, 2, 1, **H, prior=prior, p=p, method="gibbs", **SMALL)
    tree = _tree(summary)
    x1 = tree["posterior"]["X1"].values
    x2 = tree["posterior"]["X2"].values
    ll = tree["log_likelihood"]
    np.testing.assert_allclose(ll["x1_star"].values, logpmf(1, x1, 0.1), rtol=1e-13)
    np.testing.assert_allclose(ll["x2_star"].values, logpmf(2, x2, 0.25), rtol=1e-13)
    np.testing.assert_allclose(ll["y1_star"].values, logpmf(1, x2 - x1, 0.1 / 3), rtol=1e-13)
    log_prior = np.where(x1 == 1, np.log(p), np.log1p(-p))
    if prior == "truncated:6":
        log_prior = log_prior - np.log(7 - x1)
    assert np.unique(x1).tolist() == [0, 1]  # both branches of P[X1] are checked
    total = log_prior + ll["x1_star"] + ll["x2_star"] + ll["y1_star"]
    np.testing.assert_allclose(tree["sample_stats"]["lp"].values, total.values, rtol=1e-13)


def test_posterior_predictive_is_centred_on_the_draws():
    tree = _tree(_summary())
    replicated = tree["posterior_predictive"]["x2_star"].values
    residual = replicated - tree["posterior"]["X2"].values
    # DG(0, 1/(2 rho2)) noise: mean 0, sd about sqrt(1/(2*0.25)) = 1.41; 800 draws
    assert abs(residual.mean()) < 5 * 1.42 / np.sqrt(residual.size)


def test_proper_prior_adds_prior_groups_that_follow_the_prior():
    tree = _tree(_summary(prior="truncated:6"))
    assert list(tree.children) == list(GROUPS)
    prior = tree["prior"]
    x1, x2 = prior["X1"].values.ravel(), prior["X2"].values.ravel()
    assert prior["X1"].dims == ("chain", "draw") and prior.sizes["chain"] == 1
    assert set(np.unique(x1)) <= {0, 1} and (x2 >= x1).all() and (x2 <= 6).all()
    # X2 | X1 = 0 uniform on {0..6}: each value has probability 1/7
    freq = np.bincount(x2[x1 == 0], minlength=7) / (x1 == 0).sum()
    se = np.sqrt((1 / 7) * (6 / 7) / (x1 == 0).sum())
    assert np.all(np.abs(freq - 1 / 7) < 5 * se)
    assert set(tree["prior_predictive"].data_vars) == {"x1_star", "x2_star", "y1_star"}


def test_prior_group_draws_x1_with_probability_p():
    """P[X1 = m + 1] = p in the prior group, at p = 0.3 (at the p = 1/2 above, drawing with
    1 - p gave the same law: that mutation passed every test). 2 x 400 draws: within 5
    binomial standard errors, sqrt(0.3 * 0.7 / 800) = 0.016."""
    summary = summarize_posterior(1, 2, 1, **H, prior="truncated:6", p=0.3, method="gibbs",
                                  **SMALL)
    x1 = _tree(summary)["prior"]["X1"].values.ravel()
    assert abs((x1 == 1).mean() - 0.3) < 5 * np.sqrt(0.3 * 0.7 / x1.size)


def test_prior_group_gives_no_mass_to_values_the_next_level_rules_out():
    """Priors truncated:5 then truncated:3: X2 = 4 or 5 leaves X3 no value, so the joint
    prior P[X1] w(X2 | X1) w(X3 | X2), normalised, puts no mass there (and P[X1 = 1] is
    0.278, not p = 0.3). Drawing X3 | X2 = 4 raised 'cannot unpack non-iterable NoneType'.
    Each level's frequencies against the enumerated joint prior, within 5 binomial standard
    errors of 2 x 400 draws."""
    summary = nested_summary(rhos=[0.3, 0.5, 0.8], siblings=[2, 3], x_stars=[1, 3, 3],
                             y_stars=[2, 0], prior=["truncated:5", "truncated:3"], p=0.3,
                             method="gibbs", **SMALL)
    prior = _tree(summary)["prior"]
    joint = {}
    for x1, p_x1 in ((0, 0.7), (1, 0.3)):
        for x2 in range(x1, 6):
            for x3 in range(x2, 4):
                joint[x1, x2, x3] = p_x1 / (6 - x1) / (4 - x2)
    total = sum(joint.values())
    for level in range(3):
        draws = prior[f"X{level + 1}"].values.ravel()
        for value in range(6):
            want = sum(w for key, w in joint.items() if key[level] == value) / total
            se = np.sqrt(want * (1 - want) / draws.size)  # 0 where no mass: none drawn
            assert abs((draws == value).mean() - want) <= 5 * se, (level + 1, value, want)


def test_pymc_draws_drop_the_duplicated_indicator_and_keep_pymc_stats():
    summary = summarize_posterior(1, 2, 1, **H, method="pymc-gibbs", draws=50, chains=2,
                                  tune=20, random_seed=2)
    assert "target_has_c" in summary.result["posterior"]
    tree = _tree(summary)
    assert set(tree["posterior"].data_vars) == {"X1", "X2"}
    assert "sample_stats" in tree.children and "lp" not in tree["sample_stats"]


def test_netcdf_round_trip(tmp_path):
    tree = _tree(_summary(prior="truncated:6"))
    path = tmp_path / "draws.nc"
    tree.to_netcdf(path)
    back = xr.open_datatree(path)
    try:
        assert list(back.children) == list(tree.children)
        for group in tree.children:
            xr.testing.assert_identical(back[group].to_dataset(), tree[group].to_dataset())
        assert back.attrs["method"] == "gibbs"
    finally:
        back.close()


def test_nested_levels():
    summary = nested_summary(rhos=[0.1, 0.25, 0.5], siblings=[3, 2], x_stars=[1, 2, 4],
                             y_stars=[1, 2], method="gibbs", draws=100, chains=2,
                             random_seed=4)
    tree = _tree(summary)
    assert set(tree["posterior"].data_vars) == {"X1", "X2", "X3"}
    assert set(tree["log_likelihood"].data_vars) == {"x1_star", "x2_star", "x3_star",
                                                     "y1_star", "y2_star"}
    x2, x3 = tree["posterior"]["X2"].values, tree["posterior"]["X3"].values
    np.testing.assert_allclose(tree["log_likelihood"]["y2_star"].values,
                               logpmf(2, x3 - x2, 0.25 / 2), rtol=1e-13)


def test_wrong_number_of_levels_is_refused():
    summary = _summary()
    tree = summary.result.copy()
    tree["posterior"] = tree["posterior"].to_dataset().drop_vars("X2")
    with pytest.raises(ValueError, match=r"X1 \.\.\. X2"):
        arviz_tree(tree, summary.scenario, summary.release)
