"""Tests of validation.figures.tick_copies: new ticks copied, the same ticks and pixels."""

import importlib
import sys

import numpy as np
import pytest
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import dprisk.validation.figures.tick_copies as tick_copies


def _figure() -> Figure:
    # Unlike the module's own sample: a twin axes, shared axes, a polar axes (left to
    # matplotlib), log axes with many decades, set tick labels and many ticks.
    fig = Figure(figsize=(7, 5), dpi=80, layout="constrained")
    grid = fig.subplots(2, 2, sharex="col")
    ax, log, bars, other = grid.ravel()
    x = np.linspace(0.0, 7.3, 50)
    ax.plot(x, np.sin(x), marker="o", markevery=7)
    ax.twinx().plot(x, 100 * np.cos(x), color="tab:orange")
    ax.tick_params(axis="x", labelrotation=40, length=5, color="tab:purple")
    ax.minorticks_on()
    log.loglog(x + 1e-4, np.exp(3 * x), label="exp")
    log.grid(True, which="both", alpha=0.3)
    log.legend()
    bars.bar(np.arange(12), np.arange(12) % 5)
    bars.set_xticks(np.arange(12), [f"c{i}" for i in range(12)])
    other.set_ylim(-3, 1e4)
    other.tick_params(direction="inout", pad=6, labelsize=7, right=True, labelright=True)
    other.remove()
    polar = fig.add_subplot(2, 2, 4, projection="polar")
    polar.plot(x, 1 + x)
    return fig


def _small_figure() -> Figure:
    # One axes and its twin, minor ticks on and more major ticks than the first: each kind
    # of tick is copied (about a fifth of _figure's drawing).
    fig = Figure(figsize=(3, 2), dpi=80)
    ax = fig.subplots()
    x = np.linspace(0.0, 7.3, 20)
    ax.plot(x, np.sin(x))
    ax.twinx().plot(x, 100 * np.cos(x), color="tab:orange")
    ax.tick_params(axis="x", labelrotation=40, length=5, color="tab:purple")
    ax.minorticks_on()
    return fig


def _pixels(fig: Figure) -> np.ndarray:
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.array(canvas.buffer_rgba())


def test_the_copies_are_matplotlibs_ticks_here():
    assert tick_copies.tick_copies_agree()
    pairs = tick_copies._sample_ticks()
    assert len(pairs) == 48
    # Each copy is its own object, parts and all, and equal to matplotlib's tick.
    theirs, ours = pairs[1]
    assert theirs is not ours and theirs.label1 is not ours.label1
    assert ours.tick1line._marker is not pairs[2][1].tick1line._marker
    assert tick_copies._equal(theirs, ours, {})


def test_a_copy_that_leaves_a_property_out_is_not_used(monkeypatch):
    # The sample's changed first tick has a green tick line: a copy without the edge colour
    # differs from matplotlib's tick.
    lines = tuple(name for name in tick_copies._LINE_COPIED if name != "_markeredgecolor")
    monkeypatch.setattr(tick_copies, "_LINE_COPIED", lines)
    assert not tick_copies.tick_copies_agree.__wrapped__()


def test_a_figure_draws_the_same_pixels_and_axis_gets_its_methods_back():
    methods = {name: Axis.__dict__[name] for name in tick_copies._REPLACED}
    theirs = _pixels(_figure())
    fig = _figure()
    with tick_copies.ticks_copied():
        assert Axis.get_major_ticks is not methods["get_major_ticks"]
        ours = _pixels(fig)
    assert (theirs[..., :3] < 128).any()
    assert np.array_equal(theirs, ours)
    assert {name: Axis.__dict__[name] for name in tick_copies._REPLACED} == methods
    # The copies were made: more ticks than the first of each kind, and each its own.
    ticks = fig.axes[0].xaxis.majorTicks
    assert len(ticks) > 3 and len({id(tick.label1) for tick in ticks}) == len(ticks)


def test_the_methods_come_back_after_an_error():
    methods = {name: Axis.__dict__[name] for name in tick_copies._REPLACED}
    with pytest.raises(RuntimeError), tick_copies.ticks_copied():
        raise RuntimeError
    assert {name: Axis.__dict__[name] for name in tick_copies._REPLACED} == methods


@pytest.mark.parametrize("make_figure", [
    # the many-axes figure in make bench (its copies against matplotlib's pixels are the test
    # above's); nested blocks draw the small one alike (0.2 s of CPU against 2.2 s)
    pytest.param(_figure, marks=pytest.mark.slow, id="figure"),
    pytest.param(_small_figure, id="small_figure"),
])
def test_nested_blocks_give_matplotlibs_methods_back(make_figure):
    methods = {name: Axis.__dict__[name] for name in tick_copies._REPLACED}
    with tick_copies.ticks_copied():
        with tick_copies.ticks_copied():
            assert tick_copies.tick_copies_agree.__wrapped__()  # compared with matplotlib's
            theirs, ours = _pixels(make_figure()), None
        ours = _pixels(make_figure())
    assert (theirs[..., :3] < 128).any()
    assert np.array_equal(theirs, ours)
    assert {name: Axis.__dict__[name] for name in tick_copies._REPLACED} == methods


def test_without_agreement_nothing_is_replaced(monkeypatch):
    monkeypatch.setattr(tick_copies, "tick_copies_agree", lambda: False)
    methods = {name: Axis.__dict__[name] for name in tick_copies._REPLACED}
    with tick_copies.ticks_copied():
        assert {name: Axis.__dict__[name] for name in tick_copies._REPLACED} == methods


def test_importing_tick_copies_checked_answers_once_for_the_process():
    """The report's fork server imports it: its workers inherit the answer, asked no more.

    In a fork of this process with the answer forgotten and the module not yet imported,
    importing it asks once, and a fork of that process (a worker) asks no more. (Its import in
    a new interpreter is test_runner's: that module's fork server preloads it.)"""
    from fresh_python import answer_of_a_fork

    name = "dprisk.validation.figures.tick_copies_checked"
    agree = tick_copies.tick_copies_agree

    def imported_then_forked():
        agree.cache_clear()
        sys.modules.pop(name, None)
        importlib.import_module(name)
        imported = agree.cache_info()
        worker = answer_of_a_fork(lambda: (agree(), agree.cache_info().misses))
        return imported.currsize, imported.misses, worker

    assert answer_of_a_fork(imported_then_forked) == (1, 1, (True, 1))
    from dprisk.validation.report.fork_server import PRELOAD

    assert PRELOAD[-1] == name
