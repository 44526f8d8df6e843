"""Supplement S4 prior sensitivity (validation.prior_sensitivity)."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from dprisk.inference.studies.p_correct import p_correct_two_level
from dprisk.validation.crosschecks.prior_sensitivity import (
    SCENARIOS,
    figure9a,
    figure9b,
    prior_sensitivity_figure,
    prior_sensitivity_maps,
    prior_sensitivity_table,
)
from dprisk.validation.figures.two_level import census_rhos


@pytest.fixture(scope="module")
def table():
    return prior_sensitivity_table(draws=200)


def test_table_matches_direct_calls(table):
    rho1, rho2 = census_rhos()
    assert list(table["scenario"].values) == [s[0] for s in SCENARIOS]
    for label, prior, x1, x2 in SCENARIOS:
        direct = p_correct_two_level(x2=x2, x1=x1, rho1=rho1, rho2=rho2, d=27, prior=prior)
        row = table.sel(scenario=label)
        assert float(row["p_correct"]) == direct.p_correct
        assert int(row["x1"]) == x1 and str(row["prior"].values) == prior


def test_point_mass_priors_do_not_depend_on_the_sampler(table):
    """With X2 fixed the constraint k1 <= k2 never binds: variant == exact posterior."""
    for label in ("point:1", "point:25", "point:25, truth 0"):
        row = table.sel(scenario=label)
        assert float(row["p_correct_variant"]) == pytest.approx(float(row["p_correct"]),
                                                                abs=1e-12)
        assert float(row["tie_mass"]) > 1e-3


def test_tie_rule_direction(table):
    truth_one = table.where(table["x1"] == 1, drop=True)
    assert np.all(truth_one["p_correct_ties_up"] >= truth_one["p_correct"])
    cf = table.sel(scenario="point:25, truth 0")
    assert float(cf["p_correct_ties_up"]) < float(cf["p_correct"])
    improper = table.sel(scenario="improper")
    assert float(improper["tie_mass"]) == 0.0
    assert "p_correct_variant_draws" in table and table.attrs["draws"] == 200


def test_figures(table):
    maps = prior_sensitivity_maps(scenarios=SCENARIOS[:4])
    assert set(maps) == {s[0] for s in SCENARIOS[:4]}
    for fig in (figure9a(maps), figure9b(maps), prior_sensitivity_figure(table, {"point:1": 0.59})):
        assert isinstance(fig, Figure)
        assert any(ax.get_ylabel() for ax in fig.axes)
