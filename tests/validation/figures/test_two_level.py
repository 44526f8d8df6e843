"""Figures 5 and 6 (validation/figures/two_level.py): two panels, the zoom, legend, title.

Drawn from small hand-made Datasets (the figures only read them), so no study runs here.
"""

import numpy as np
import pytest
import xarray as xr

from dprisk.validation.figures.two_level import figure5, figure6

ATTRS = {"rho1": 0.09923, "d": 27, "p": 0.5, "prior": "improper"}


def _figure5_data():
    x2 = np.array([1, 4, 10])
    return xr.Dataset(
        {"p_correct": ("x2", [0.62, 0.59, 0.58]),
         "p_correct_variant": ("x2", [0.63, 0.60, 0.59]),
         "p_correct_no_hierarchy": ((), 0.57),
         "p_correct_plateau": ((), 0.585)},
        coords={"x2": x2}, attrs={**ATTRS, "rho2": 0.24648})


def _figure6_data():
    return xr.Dataset(
        {"p_correct": (("x2", "rho2"), [[0.6, 0.62], [0.58, 0.59]]),
         "p_correct_variant": (("x2", "rho2"), [[0.61, 0.63], [0.59, 0.6]]),
         "p_correct_no_hierarchy": ((), 0.57)},
        coords={"x2": [1, 10], "rho2": [0.1, 1.0]}, attrs={**ATTRS, "rho2_census": 0.24648})


def test_figure5_panels_zoom_and_title():
    fig = figure5(_figure5_data())
    axes = fig.get_axes()
    assert len(axes) == 2
    assert axes[1].get_ylim() == pytest.approx((0.57 - 0.008, 0.57 + 0.010), abs=1e-15)
    assert [ax.get_title() for ax in axes] == ["all curves", "zoom on the paper's range"]
    assert all(ax.get_xlabel().startswith("x2 (") for ax in axes)
    assert fig._suptitle.get_text() == (
        "Figure 5: P[correct] vs x2; ρ1 = 0.0992, ρ2 = 0.2465, d = 27, p = 0.5, truth x1 = 1, "
        "prior improper")
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert labels == ["exact posterior (model)", "constraint-dropping Gibbs variant (stationary)",
                      "without the block group", "exact, mean over 4 ≤ x2 ≤ 10"]


def test_figure6_title_has_no_rho2_and_log_axes():
    fig = figure6(_figure6_data())
    axes = fig.get_axes()
    assert len(axes) == 2 and all(ax.get_xscale() == "log" for ax in axes)
    assert axes[1].get_ylim() == pytest.approx((0.57 - 0.008, 0.57 + 0.012), abs=1e-15)
    assert fig._suptitle.get_text() == (
        "Figure 6: P[correct] vs ρ2; ρ1 = 0.0992, d = 27, p = 0.5, truth x1 = 1, prior improper")
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert labels[:2] == ["x2 = 1, exact posterior", "x2 = 1, Gibbs variant"]
    assert labels[-2:] == ["without the block group", "Census ρ2 = 0.2465"]
