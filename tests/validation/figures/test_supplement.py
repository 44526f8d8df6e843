"""Tests of validation.figures_supplement: figure structure, drawn data, PNG output."""

import figure_checks
import matplotlib._pylab_helpers as pylab_helpers
import numpy as np
import pytest
from census_values import RHO_BLOCK
from matplotlib.figure import Figure

from dprisk.validation.figures import supplement as figs
from dprisk.validation.paper import supplement as supp
from dprisk.validation.paper import supplement_s6


def assert_png(fig, tmp_path, name):
    figure_checks.assert_png(fig, tmp_path, name, dpi=50)


def labels(ax):
    return [line.get_label() for line in ax.get_lines()]


def test_figure7_structure_and_png(tmp_path):
    managers = pylab_helpers.Gcf.get_num_fig_managers()
    data = supp.figure7_data(np.logspace(-2, 2, 81))
    fig = figs.figure7(data)
    assert isinstance(fig, Figure)
    assert pylab_helpers.Gcf.get_num_fig_managers() == managers  # no pyplot state
    ax_var, ax_gap = fig.axes
    for ax in (ax_var, ax_gap):
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        assert "s = 1/(2" in ax.get_xlabel() and "persons" in ax.get_xlabel()
        (top,) = ax.child_axes  # the rho axis on top
        assert "rho" in top.get_xlabel()
        assert ax.get_legend() is not None
    dashed = [line for line in ax_var.get_lines() if line.get_linestyle() == "--"
              and "sigma^2 = s" in line.get_label()]
    assert len(dashed) == 1
    np.testing.assert_array_equal(dashed[0].get_ydata(), data["s"].values)
    census = [line for line in ax_var.get_lines() if "Census" in line.get_label()]
    assert census[0].get_xdata()[0] == pytest.approx(1 / (2 * RHO_BLOCK))
    assert_png(fig, tmp_path, "figure7")


def test_figure8_structure_and_png(tmp_path):
    data = supp.figure8_data()
    fig = figs.figure8(data)
    assert len(fig.axes) == 4
    for i, ax in enumerate(fig.axes):
        rho, n = supp.FIGURE8_CASES[i]
        title = ax.get_title()
        assert f"n = {n}" in title and f"{rho:.4g}" in title and "TV = " in title
        assert f"{float(data['total_variation'][i]):.2g}" in title
        # the exact pmf as unit-wide bars: one filled step patch over the shown values
        (bars,) = ax.patches
        heights, edges = bars.get_data().values, bars.get_data().edges
        shown = np.isin(data["value"].values, edges[:-1] + 0.5)
        assert heights.size > 10 and np.all(np.diff(edges) == 1.0) and bars.get_fill()
        np.testing.assert_array_equal(heights, data["pmf_sum"][i].values[shown])
        assert bars.get_label() == r"exact $\sum_{i=1}^n Z_i$"
        assert labels(ax) == [r"DG$(0, n/(2\rho))$"]
        assert "probability" in ax.get_ylabel() and "persons" in ax.get_xlabel()
    assert_png(fig, tmp_path, "figure8")


def test_figure10_structure_and_png(tmp_path):
    left, right = supplement_s6.figure10_data(rho_grid=[0.01, 0.3, 3.0], x2_tilde_max=8,
                                     x2_tilde_lines=(1, 10, 100))
    fig = figs.figure10(left, right)
    ax_x2, ax_rho = fig.axes
    assert any("without post-processing" in lab for lab in labels(ax_x2))
    np.testing.assert_array_equal(ax_x2.get_lines()[0].get_ydata(),
                                  left["marginal_posterior"].values)
    with_pp = [lab for lab in labels(ax_rho) if lab.startswith("with post-processing")]
    assert len(with_pp) == 3
    purple = [line for line in ax_rho.get_lines() if line.get_color() == "tab:purple"]
    assert len(purple) == 1
    census = [line for line in ax_rho.get_lines() if "Census" in line.get_label()]
    assert census[0].get_xdata()[0] == pytest.approx(RHO_BLOCK)
    assert ax_rho.get_xscale() == "log"
    for ax in (ax_x2, ax_rho):
        assert "marginal posterior" in ax.get_ylabel() and "(probability)" in ax.get_ylabel()
        (risk_axis,) = ax.child_axes
        assert "R" in risk_axis.get_ylabel()
    assert_png(fig, tmp_path, "figure10")


def test_figure11_structure_and_png(tmp_path):
    data = supp.figure11_data(n_levels=3)
    fig = figs.figure11(data)
    ax_post, ax_risk = fig.axes
    expected = [f"p = {lab}" for lab in data["p_label"].values]
    assert labels(ax_post) == expected and labels(ax_risk) == expected
    np.testing.assert_array_equal(ax_risk.get_lines()[4].get_ydata(),
                                  data["marginal_risk"][:, 4].values)
    assert ax_post.get_yscale() == "log"
    ticks = [t.get_text() for t in ax_post.get_xticklabels()]
    assert "block" in ticks[0] and "0.0992" in ticks[0]
    assert "(ratio)" in ax_risk.get_ylabel()
    assert_png(fig, tmp_path, "figure11")
