"""Tests of validation.figures.log_ticks: fewer minor ticks on wide log axes only."""

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import AutoMinorLocator

from dprisk.validation.figures.log_ticks import (
    DENSE_DECADES,
    SparseMinorLocator,
    thin_log_minor_ticks,
)


def _minor_ticks_drawn(axis):
    """Minor tick locations in view after a draw (what matplotlib draws)."""
    FigureCanvasAgg(axis.figure).draw()
    low, high = sorted(axis.get_view_interval())
    ticks = axis.get_minorticklocs()
    return ticks[(ticks >= low * (1 - 1e-9)) & (ticks <= high * (1 + 1e-9))]


def _log_axes(low, high):
    fig = Figure(figsize=(5, 3), layout="constrained")
    ax = fig.subplots()
    ax.loglog([low, high], [low, high])
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    return fig, ax


def test_wide_axis_keeps_minor_ticks_at_2_and_5_only():
    fig, ax = _log_axes(1e-4, 1e3)  # 7 decades
    before = _minor_ticks_drawn(ax.xaxis)
    thin_log_minor_ticks(fig)
    after = _minor_ticks_drawn(ax.xaxis)
    multiples = after / 10.0 ** np.floor(np.log10(after))
    assert np.allclose(np.sort(np.unique(np.round(multiples, 9))), [2.0, 5.0])
    assert set(np.round(np.log10(after), 9)) <= set(np.round(np.log10(before), 9))
    assert after.size == 14 and before.size == 56


def test_narrow_axis_draws_the_same_minor_ticks():
    fig, ax = _log_axes(0.05, 20.0)  # 2.6 decades
    assert np.log10(20.0 / 0.05) <= DENSE_DECADES
    before = _minor_ticks_drawn(ax.yaxis)
    made_before = len(ax.yaxis.get_minorticklocs())
    thin_log_minor_ticks(fig)
    assert isinstance(ax.yaxis.get_minor_locator(), SparseMinorLocator)
    np.testing.assert_array_equal(_minor_ticks_drawn(ax.yaxis), before)
    # only the ticks outside the view are no longer made
    assert len(ax.yaxis.get_minorticklocs()) == before.size < made_before


def test_axes_with_their_own_minor_ticks_and_linear_axes_are_left_alone():
    fig = Figure()
    log_ax, linear_ax = fig.subplots(1, 2)
    log_ax.set_xscale("log")
    log_ax.xaxis.set_minor_locator(AutoMinorLocator())
    own = log_ax.xaxis.get_minor_locator()
    thin_log_minor_ticks(fig)
    assert log_ax.xaxis.get_minor_locator() is own
    assert isinstance(log_ax.yaxis.get_minor_locator(), type(linear_ax.yaxis.get_minor_locator()))
    assert not isinstance(linear_ax.xaxis.get_minor_locator(), SparseMinorLocator)


def test_secondary_axes_are_thinned_and_a_second_call_changes_nothing():
    fig, ax = _log_axes(1e-3, 1e3)
    top = ax.secondary_xaxis("top", functions=(lambda x: 1 / x, lambda x: 1 / x))
    thin_log_minor_ticks(fig)
    locator = top.xaxis.get_minor_locator()
    assert isinstance(locator, SparseMinorLocator)
    thin_log_minor_ticks(fig)
    assert top.xaxis.get_minor_locator() is locator
    assert ax.xaxis.get_minor_locator().minor.axis is ax.xaxis
