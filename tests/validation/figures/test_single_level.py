"""Tests of validation.figures_single_level: data, figure structure, PNG output."""

import figure_checks
import matplotlib._pylab_helpers as pylab_helpers
import numpy as np
import pytest
from census_values import RHO_BLOCK
from matplotlib.figure import Figure

from dprisk.inference.single_level import closed_form as sl
from dprisk.validation.figures import single_level as figs

PRIOR_LABELS = ["p = 1/2", "p = 1/5", "p = 1/10", "p = 1/50", "p = 1/864"]


def prior_lines(ax):
    return [line for line in ax.get_lines() if line.get_label().startswith("p = ")]


def census_lines(ax):
    return [line for line in ax.get_lines() if "Census" in line.get_label()]


def assert_png(fig, tmp_path, name):
    figure_checks.assert_png(fig, tmp_path, name, dpi=60)


def test_figure1_structure_and_png(tmp_path):
    managers = pylab_helpers.Gcf.get_num_fig_managers()
    fig = figs.figure1()
    assert isinstance(fig, Figure)
    assert pylab_helpers.Gcf.get_num_fig_managers() == managers  # no pyplot state
    ax_post, ax_risk = fig.axes
    assert [line.get_label() for line in prior_lines(ax_post)] == PRIOR_LABELS
    assert len(prior_lines(ax_risk)) == 5 and len(ax_risk.get_lines()) == 6  # + R' = 1
    assert "x_1^*" in ax_post.get_xlabel() and "(probability)" in ax_post.get_ylabel()
    assert_png(fig, tmp_path, "figure1")


def test_figure2_structure_and_png(tmp_path):
    fig = figs.figure2(rho_grid=np.logspace(-3, 2, 60))
    assert len(fig.axes) == 2
    for ax in fig.axes:
        assert len(prior_lines(ax)) == 5 and len(census_lines(ax)) == 1
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        assert census_lines(ax)[0].get_xdata()[0] == pytest.approx(RHO_BLOCK)
        assert "rho" in ax.get_xlabel()
    assert_png(fig, tmp_path, "figure2")


def test_figure3_structure_and_png(tmp_path):
    fig = figs.figure3(rho_grid=np.logspace(-3, 2, 60))
    (ax,) = fig.axes
    assert len(prior_lines(ax)) == 5 and len(census_lines(ax)) == 1
    assert ax.get_xscale() == "log"
    assert ax.get_legend() is not None
    assert_png(fig, tmp_path, "figure3")


def test_figure_data_agree_with_inference():
    d1 = figs.figure1_data()
    assert d1["posterior"].shape == (figs.DEFAULT_X1_STAR.size, 5)
    np.testing.assert_array_equal(d1["risk"].sel(x1_star=3).values,
                                  sl.risk(3, RHO_BLOCK, d1["p"].values))
    d2 = figs.figure2_data()
    assert d2["marginal_posterior"].shape == (500, 5)
    np.testing.assert_allclose(d2["marginal_risk"], d2["marginal_posterior"] / d2["p"],
                               rtol=1e-14)
    i = 123
    np.testing.assert_allclose(d2["marginal_posterior"][i],
                               sl.marginal_posterior(d2["rho1"].values[i], d2["p"].values),
                               rtol=1e-14)
    d3 = figs.figure3_data()
    np.testing.assert_array_equal(d3["p_correct"].sel(p=0.5).values,
                                  sl.p_correct(d3["rho1"].values, 0.5))
    # the jaggedness of §4.2: P[correct] for p = 1/5 is not monotone in rho
    assert np.any(np.diff(d3["p_correct"].sel(p=0.2).values) < 0)
