"""The explorer's views show the public API's numbers; downloads round-trip."""

import json

import pytest
import xarray as xr

from dprisk.explore import results
from dprisk.inference.privacy.accounting import epsilon_bun_steinke, epsilon_cks
from dprisk.inference.privacy.budget import rho_for_target
from dprisk.inference.single_level import closed_form as sl
from dprisk.inference.studies.p_correct import p_correct_two_level
from dprisk.inference.two_level.exact import exact_posterior

TWO = {"rho1": 0.0992, "rho2": 0.2465, "d": 27, "p": 0.5, "m": 0, "prior": "improper"}


def test_single_level_numbers_are_the_api():
    got = results.single_level_result(rho1=0.3, p=0.2, m=1, x1_star=4).numbers
    assert got["p_correct"] == sl.p_correct(0.3, 0.2, 1)  # the same call: exactly equal
    assert got["posterior"] == sl.posterior(4, 0.3, 0.2, 1)
    assert got["marginal_risk"] == sl.marginal_risk(0.3, 0.2, 1)


@pytest.mark.parametrize(("rho1", "m"), [(0.5, 0), (0.0992, 3), (2.0, 10)])
def test_single_level_release_curve_is_centred_on_the_truth(rho1, m):
    """The plotted and downloaded ``release_pmf_given_m_plus_1`` is P[X1* = x1* | x1 = m+1] =
    exp(-rho1 (x1* - m - 1)^2) / Z(rho1), computed here with numpy over |k| <= 200 (the
    terms left out are below exp(-0.0992 * 200^2), nothing in double precision). Before, it
    was that pmf one release to the right (its peak at x1* = m + 2): at rho1 = 0.5, m = 0 it
    showed 0.0540 at x1* = 0 where the pmf is 0.2420."""
    import numpy as np

    ds = results.single_level_result(rho1=rho1, p=0.2, m=m, x1_star=m + 4).dataset
    x1_star = ds["x1_star"].values
    k = np.arange(-200, 201)
    expected = np.exp(-rho1 * (x1_star - m - 1.0) ** 2) / np.exp(-rho1 * k**2.0).sum()
    np.testing.assert_allclose(ds["release_pmf_given_m_plus_1"].values, expected,
                               rtol=1e-12, atol=1e-300)


def test_two_level_numbers_are_the_api():
    got = results.two_level_result(**TWO, x1_star=2, x2_star=1, y1_star=-1)
    params = {**TWO, "known": 0}
    params.pop("m")
    assert got.numbers["posterior_x1"] == exact_posterior(2, 1, -1, **params).prob_x1
    grid = got.dataset["decision_posterior"]
    assert grid.sel(x1_star=2, x2_star=1).item() == pytest.approx(
        got.numbers["posterior_x1"], rel=1e-12)


def test_p_correct_budget_accounting_are_the_api():
    got = results.p_correct_result(**TWO, x2=1).numbers
    params = {k: v for k, v in TWO.items() if k != "m"}
    assert got["p_correct_two_level"] == p_correct_two_level(x2=1, known=0,
                                                                **params).p_correct
    budget = results.budget_result(measure="p-correct", target=0.6, p=0.5, m=0).numbers
    assert budget["rho"] == rho_for_target("p-correct", 0.6, p=(0.5,)).rho
    acct = results.accounting_result(rho=2.56, delta=1e-10).numbers
    assert acct["epsilon_cks"] == epsilon_cks(2.56, 1e-10)
    assert acct["epsilon_bun_steinke"] == epsilon_bun_steinke(2.56, 1e-10)


def test_downloads_round_trip(tmp_path):
    what = results.two_level_result(**{**TWO, "prior": "truncated:10"}, x1_star=2, x2_star=1,
                                    y1_star=-1)
    numbers = json.loads(what.to_json())
    assert numbers["view"] == "two-level" and numbers["prior"] == "truncated:10"
    (tmp_path / "two.nc").write_bytes(what.to_netcdf())
    back = xr.load_dataset(tmp_path / "two.nc")
    assert back["x2_pmf"].sum().item() == pytest.approx(1, abs=1e-9)
    assert back.attrs["prior"] == "truncated:10"
    assert what.to_png().startswith(b"\x89PNG")


@pytest.mark.parametrize(("x1_star", "x2_star"), [(2**53, 1), (2, -(2**53)), (2**53 - 3, 2**53)])
def test_two_level_map_stays_within_the_counts_range(x1_star, x2_star):
    """Finding "a release at the end of the range was refused quoting one nobody typed": the
    decision map spans x1*, x2* +- 8, so x1* = 2**53 (allowed, and computed by
    exact_posterior) was refused with "x1_star must be an integer ... <= 2**53 ..., got
    9007199254740993", and x2* = -2**53 quoted -9007199254741000. The map is now cut at
    +-2**53: the release is computed, and its own cell of the map agrees with it (1e-12, two
    evaluations of the same sums)."""
    got = results.two_level_result(**TWO, x1_star=x1_star, x2_star=x2_star, y1_star=-1)
    grid = got.dataset["decision_posterior"]
    assert abs(grid["x1_star"]).max() <= 2**53 and abs(grid["x2_star"]).max() <= 2**53
    assert grid.sel(x1_star=x1_star, x2_star=x2_star).item() == pytest.approx(
        got.numbers["posterior_x1"], rel=1e-12)


@pytest.mark.parametrize(("rho1", "m"), [(0.01, 2**53 - 10), (0.099, 2**53), (0.001, 2**53 - 60)])
def test_single_level_curve_stays_within_the_counts_range(rho1, m):
    """Finding "a known count near the end of the range was refused quoting a release nobody
    typed": the curve spans m - half .. m + half + 1 releases (half = 4 / sqrt(2 rho1) in
    5..60), so m = 2**53 - 10 at rho1 = 0.01 (half 28), answered by ``dprisk posterior`` and
    ``dprisk marginal``, was refused with "x1_star must be an integer ... <= 2**53 ..., got
    9007199254740993". The curve is now cut at 2**53: the view answers, its numbers are the
    API's (the same calls: equal), and the curve's point at x1* = m is the shown posterior
    (1e-12: the same expression, vectorised)."""
    got = results.single_level_result(rho1=rho1, p=0.5, m=m, x1_star=m)
    assert got.numbers["posterior"] == sl.posterior(m, rho1, 0.5, m)
    assert got.numbers["threshold"] == sl.decision_threshold(rho1, 0.5, m)
    curve = got.dataset["posterior"]
    assert curve["x1_star"].max().item() == 2**53  # m + half + 1 is beyond it in each case
    assert curve.sel(x1_star=m).item() == pytest.approx(got.numbers["posterior"], rel=1e-12)


def test_every_number_of_the_views_is_the_command_lines(capsys):
    """Each number a view shows (and downloads as JSON) is the one ``dprisk ... --json``
    prints for the same inputs: the same functions, so equal to 1e-12 relative (the CLI
    prints repr floats), except where the two take different routes (below)."""
    from cli_helpers import run_json

    single = results.single_level_result(rho1=0.3, p=0.2, m=1, x1_star=4).numbers
    base = ["--rho1", "0.3", "--p", "0.2", "--known", "1"]
    cli = {**run_json(["posterior", *base, "--x1-star", "4"], capsys),
           **run_json(["marginal", *base], capsys)}
    for key in ("posterior", "risk", "marginal_posterior", "marginal_risk", "p_correct",
                "threshold"):
        assert single[key] == pytest.approx(cli[key], rel=1e-12), key

    two_args = ["--rho1", "0.0992", "--rho2", "0.2465", "--d", "27", "--known", "1"]
    two = results.two_level_result(**{**TWO, "p": 0.3, "m": 1}, x1_star=3, x2_star=2,
                                   y1_star=-1).numbers
    cli = run_json(["posterior", *two_args, "--p", "0.3", "--x1-star", "3", "--x2-star", "2",
                    "--y1-star", "-1"], capsys)
    assert two["posterior_x1"] == pytest.approx(cli["posterior"], rel=1e-12)
    assert two["risk"] == pytest.approx(cli["risk"], rel=1e-12)
    # the CLI lists P[X2 = k2 | D] down to ~1e-12 (the tail it leaves out shifts the mean
    # by far less than 1e-9)
    mean = sum(int(k) * v for k, v in cli["x2_posterior"].items())
    assert two["x2_mean"] == pytest.approx(mean, rel=1e-9)

    here = results.p_correct_result(**{**TWO, "p": 0.3, "m": 1}, x2=3).numbers
    cli = run_json(["marginal", *two_args, "--p", "0.3", "--x2", "3"], capsys)
    assert here["p_correct_two_level"] == pytest.approx(cli["p_correct"], rel=1e-12)
    # the CLI sums the two-level grid without the block group, the explorer the single-level
    # closed form: the same number by two routes, 9e-11 apart here
    assert here["p_correct_single_level"] == pytest.approx(cli["p_correct_no_hierarchy"],
                                                           rel=1e-9)
    assert here["gain"] == pytest.approx(cli["gain"], rel=1e-12)
    assert here["loss"] == pytest.approx(cli["loss"], rel=1e-12)

    budget = results.budget_result(measure="p-correct", target=0.6, p=0.3, m=1).numbers
    cli = run_json(["budget", "--measure", "p-correct", "--target", "0.6", "--p", "0.3",
                    "--known", "1"], capsys)
    for key in ("rho", "value_at_rho", "epsilon_cks"):
        assert budget[key] == pytest.approx(cli[key], rel=1e-12), key
