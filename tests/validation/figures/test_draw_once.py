"""Tests of validation.figures.draw_once: ticks placed once per place, texts laid out once,
math text parsed once, the garbage collector paused while figures draw.

Each is checked against matplotlib itself: the tick placements it skips return what
matplotlib's method returns at that place, and ``png_bytes`` draws the same pixels with and
without it (exactly: the same calls with the same arguments reach the Agg canvas).
"""

import contextlib
import gc
import io
import types

import matplotlib as mpl
import numpy as np
import pytest
from matplotlib._mathtext import Parser
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from matplotlib.offsetbox import HPacker, VPacker
from matplotlib.text import Text
from PIL import Image

import dprisk.validation.figures.png as png
import dprisk.validation.report.runner as runner
from dprisk.validation.figures.draw_once import (
    boxes_packed_once,
    shared_math_parser,
    texts_laid_out_once,
    ticks_placed_once,
    view_limits_settled,
)
from dprisk.validation.figures.log_ticks import thin_log_minor_ticks

DPI = 60  # low: these figures only need to be the same, not readable


def _panels():
    """Like the report's risk figures: log x shared by two rows, math-text labels, a legend,
    a suptitle and labels aligned across rows (each axis then measures its siblings' ticks)."""
    fig = Figure(figsize=(4, 3), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    x = np.logspace(-2, 1, 10)
    top.semilogx(x, x / 10, label="linear")
    bottom.loglog(x, x**2, label="square")
    top.legend()
    top.set_ylabel(r"$P[\mathrm{correct}]$")
    bottom.set_xlabel(r"$\rho_1$ (zCDP)")
    fig.suptitle("two panels")
    fig.align_ylabels()
    return fig


def _subfigures():
    """Subfigures, a colorbar and a twin axis (linear ticks with an offset)."""
    fig = Figure(figsize=(4, 2.5), layout="constrained")
    left, right = fig.subfigures(1, 2)
    ax = left.subplots()
    mesh = ax.pcolormesh(np.arange(12.0).reshape(3, 4))
    left.colorbar(mesh, ax=ax, label=r"$\epsilon$")
    ax2 = right.subplots()
    ax2.plot([1e5, 1e5 + 3], [0.1, 0.4])
    ax2.twinx().plot([1e5, 1e5 + 3], [10, 20], color="C1")
    right.suptitle("right")
    return fig


def _polar_and_inset():
    """A polar axes (whose angle locator belongs to a wrapper of its axis, not an axis: its
    ticks are placed as matplotlib places them) and an inset axes (a child of its axes)."""
    fig = Figure(figsize=(4, 2), layout="constrained")
    polar = fig.add_subplot(121, projection="polar")
    polar.plot(np.linspace(0, 6, 20), np.linspace(0, 3, 20))
    ax = fig.add_subplot(122)
    ax.plot([1, 10], [1, 1e3])
    ax.inset_axes([0.5, 0.5, 0.4, 0.4]).semilogy([1, 2], [1, 100])
    return fig


def _plain_png(fig):
    """png_bytes without draw_once's, agg_glyphs's and agg_texts's shortcuts: matplotlib's
    own draw."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(png, "ticks_placed_once", lambda fig: contextlib.nullcontext())
        mp.setattr(png, "texts_laid_out_once", contextlib.nullcontext)
        mp.setattr(png, "boxes_packed_once", contextlib.nullcontext)
        mp.setattr(png, "view_limits_settled", lambda fig: contextlib.nullcontext())
        mp.setattr(png, "shared_math_parser", lambda: None)
        mp.setattr(png, "use_fast_glyphs", lambda renderer: False)
        mp.setattr(png, "use_text_cache", lambda renderer: False)
        return png.png_bytes(fig, DPI)


def _pixels(data):
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGBA"))


def _counting_update_ticks(mp):
    """Count calls of matplotlib's ``Axis._update_ticks`` (the method itself, not the memo)."""
    calls = {"n": 0}
    original = Axis._update_ticks

    def counted(self):
        calls["n"] += 1
        return original(self)

    mp.setattr(Axis, "_update_ticks", counted)
    return calls


@pytest.mark.parametrize("make", [_panels, _subfigures, _polar_and_inset])
def test_png_bytes_draws_the_pixels_matplotlib_draws(make):
    # Exact equality: the shortcuts only skip repeated computations, each of which returns
    # what it returned before (an off-by-one-pixel tick label would show here).
    ours, theirs = make(), make()
    thin_log_minor_ticks(ours)
    thin_log_minor_ticks(theirs)
    assert np.array_equal(_pixels(png.png_bytes(ours, DPI)), _pixels(_plain_png(theirs)))


@pytest.fixture(scope="module")
def drawn():
    """``_panels()`` drawn by png_bytes, and how many times matplotlib's ``_update_ticks``
    ran: in that draw, and in a plain Agg draw of the same figure (matplotlib alone)."""
    with pytest.MonkeyPatch.context() as mp:
        calls = _counting_update_ticks(mp)
        fig = _panels()
        png.png_bytes(fig, DPI)
        ours = calls["n"]
        calls["n"] = 0
        FigureCanvasAgg(_panels()).draw()
        return fig, ours, calls["n"]


def test_ticks_are_placed_once_per_place(drawn):
    fig, ours, theirs = drawn
    n_axis = 2 * len(fig.axes)
    # at most one placement per axis for each place (the layout's two passes and the
    # draw), where matplotlib alone places them about ten times an axis
    assert 0 < ours <= 3 * n_axis < theirs


def test_methods_are_restored_and_the_figure_behaves_as_before(drawn):
    fig = drawn[0]
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            assert "_update_ticks" not in vars(axis)
            assert "_get_ticklabel_bboxes" not in vars(axis)
    # after the draw, a change of view places the ticks anew, as on a figure never drawn here
    fresh = _panels()
    for f in (fig, fresh):
        f.axes[0].set_xlim(2e-2, 5e1)
        f.set_layout_engine("none")  # a cheap draw: the ticks are what is compared
        FigureCanvasAgg(f).draw()
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == \
        [t.get_text() for t in fresh.axes[0].get_xticklabels()]
    assert np.array_equal(fig.axes[0].get_xticks(), fresh.axes[0].get_xticks())


def test_methods_are_restored_when_the_draw_fails():
    fig = _panels()
    axis = fig.axes[0].xaxis
    with pytest.raises(RuntimeError), ticks_placed_once(fig):
        assert "_update_ticks" in vars(axis)
        raise RuntimeError("draw failed")
    assert "_update_ticks" not in vars(axis)


def test_ticks_follow_the_axis_whose_locator_they_share():
    # sharex: both axes use one locator, attached to one of them, which counts the ticks
    # by its own length. When only that axis moves, the other's ticks change too.
    fig = Figure(figsize=(6, 3))
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.set_xlim(0, 1)
    owner = bottom.xaxis.major.locator.axis
    other = top if owner is bottom.xaxis else bottom
    FigureCanvasAgg(fig).draw()
    with ticks_placed_once(fig):
        wide = other.xaxis._update_ticks()
        owner.axes.set_position([0.1, 0.1, 0.1, 0.3])  # a tenth as long: fewer ticks
        narrow = other.xaxis._update_ticks()
        expected = Axis._update_ticks(other.xaxis)
    assert [t.get_loc() for t in narrow] == [t.get_loc() for t in expected]
    assert len(narrow) < len(wide)


def test_ticks_are_not_placed_again_when_only_the_box_moves(monkeypatch):
    # matplotlib's locators read the axis's length only through its tick space: an axes
    # moved by a few pixels (a constrained layout's second pass) keeps its ticks, and they
    # are those matplotlib places there
    calls = _counting_update_ticks(monkeypatch)
    fig = Figure(figsize=(6, 3))
    ax = fig.subplots()
    ax.set_xlim(0, 7)
    FigureCanvasAgg(fig).draw()
    with ticks_placed_once(fig):
        ax.set_position([0.1, 0.1, 0.8, 0.8])
        space = ax.xaxis.get_tick_space()
        first = ax.xaxis._update_ticks()
        ax.set_position([0.11, 0.12, 0.795, 0.79])  # a few pixels: the same tick space
        assert ax.xaxis.get_tick_space() == space
        calls["n"] = 0
        again = ax.xaxis._update_ticks()
        assert calls["n"] == 0
        expected = Axis._update_ticks(ax.xaxis)
    assert [t.get_loc() for t in again] == [t.get_loc() for t in first]
    assert [t.get_loc() for t in again] == [t.get_loc() for t in expected]


def test_a_locator_of_unknown_make_places_its_ticks_when_the_box_moves(monkeypatch):
    # a locator that is not matplotlib's may read the axes' box itself: its axis's ticks
    # are placed again whenever the box moves, as before
    from matplotlib.ticker import MaxNLocator

    class BoxLocator(MaxNLocator):
        pass

    calls = _counting_update_ticks(monkeypatch)
    fig = Figure(figsize=(6, 3))
    ax = fig.subplots()
    ax.xaxis.set_major_locator(BoxLocator())
    FigureCanvasAgg(fig).draw()
    with ticks_placed_once(fig):
        ax.set_position([0.1, 0.1, 0.8, 0.8])
        ax.xaxis._update_ticks()
        ax.set_position([0.11, 0.12, 0.795, 0.79])
        calls["n"] = 0
        ax.xaxis._update_ticks()
        assert calls["n"] == 1


def test_math_text_is_parsed_once_across_figures(monkeypatch):
    calls = {"n": 0}
    original = Parser.parse

    def counted(self, *args, **kwargs):
        calls["n"] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Parser, "parse", counted)
    label = r"$\sigma_{17}^{2}$ by draw_once"  # parsed by no other test
    for _ in range(2):
        fig = Figure(figsize=(2, 2), layout="constrained")
        fig.subplots().set_title(label)
        png.png_bytes(fig, DPI)
        if _ == 0:
            assert calls["n"] >= 1
            calls["n"] = 0
    assert calls["n"] == 0


def test_math_text_settings_are_part_of_the_key():
    parser = shared_math_parser()
    if parser is None:
        pytest.skip("this matplotlib's parser cannot be wrapped")
    prop = mpl.font_manager.FontProperties(size=12)
    widths = []
    for default in ("it", "bf"):  # the font of letters without a font command: read at parse
        with mpl.rc_context({"mathtext.default": default}):
            ours = parser.parse(r"$x_1 + \mathrm{d}$", 100, prop)
            theirs = RendererAgg(1, 1, 72).mathtext_parser.parse(r"$x_1 + \mathrm{d}$", 100, prop)
        assert ours.width == theirs.width and ours.height == theirs.height
        widths.append(ours.width)
    assert widths[0] != widths[1]


def test_the_shared_parser_makes_what_agg_draws():
    # matplotlib 3.11's Agg renderer draws math text from glyphs and boxes ("path"), 3.10's
    # from a bitmap ("agg"): a parser of the other kind fails to unpack in draw_mathtext.
    parser = shared_math_parser()
    if parser is None:
        pytest.skip("this matplotlib's parser cannot be wrapped")
    agg_parser = RendererAgg(1, 1, 72).mathtext_parser
    assert parser._output_type == agg_parser._output_type
    prop = mpl.font_manager.FontProperties(size=9)
    assert type(parser.parse(r"$10^{-2}$", 110, prop)) is type(
        agg_parser.parse(r"$10^{-2}$", 110, prop))
    renderer = RendererAgg(60, 30, 110)
    renderer.mathtext_parser = parser
    renderer.draw_text(renderer.new_gc(), 5, 25, r"$10^{-2}$", prop, 0.0, ismath=True)
    assert np.asarray(renderer.buffer_rgba())[..., 3].any()


def test_render_figures_draws_with_the_collector_paused(monkeypatch):
    seen = []
    monkeypatch.setattr(runner, "png_bytes", lambda fig, dpi: seen.append(gc.isenabled()) or b"")
    result = types.SimpleNamespace(figures={"a": Figure(), "b": Figure()})
    assert runner.render_figures(result) == {"a": b"", "b": b""}
    assert seen == [False, False]


def test_a_text_is_laid_out_again_only_when_its_layout_would_change(monkeypatch):
    calls = {"n": 0}
    original = Text._get_layout

    def counted(self, renderer):
        calls["n"] += 1
        return original(self, renderer)

    monkeypatch.setattr(Text, "_get_layout", counted)
    fig = Figure(figsize=(3, 2))
    renderer = FigureCanvasAgg(fig).get_renderer()
    text = fig.text(0.2, 0.5, "0.25")
    wrapped = fig.text(0.2, 0.2, "long text " * 8, wrap=True)
    changes = [lambda: None, lambda: text.set_text(r"$10^{-2}$"), lambda: text.set_fontsize(14),
               lambda: text.set_rotation(30), lambda: text.set_ha("right"),
               lambda: text.set_position((0.6, 0.7))]  # moving it keeps its layout
    expected_calls = [1, 1, 1, 1, 1, 0]
    with texts_laid_out_once():
        for change, expected in zip(changes, expected_calls, strict=True):
            change()
            calls["n"] = 0
            ours = [text.get_window_extent(renderer).bounds for _ in range(3)]
            assert calls["n"] == expected
            assert ours == [original(text, renderer)[0].translated(
                *text.get_transform().transform(text.get_position())).bounds] * 3
        calls["n"] = 0
        wrapped.get_window_extent(renderer)
        wrapped.get_window_extent(renderer)
        assert calls["n"] == 2  # a wrapping text's layout depends on its place: not kept
    assert Text._get_layout is counted


def test_a_packer_packs_again_only_when_it_or_the_renderer_changed(monkeypatch):
    calls = {"n": 0}
    original = VPacker.__dict__["_get_bbox_and_child_offsets"]

    def counted(self, renderer):
        calls["n"] += self is box
        return original(self, renderer)

    monkeypatch.setattr(VPacker, "_get_bbox_and_child_offsets", counted)
    fig = Figure(figsize=(3, 2))
    ax = fig.add_subplot()
    ax.plot([0, 1], label="a line")
    ax.plot([1, 0], label=r"$x^2$, another")
    box = ax.legend()._legend_box  # a VPacker of the title and an HPacker of the columns
    renderer = FigureCanvasAgg(fig).get_renderer()
    other = FigureCanvasAgg(Figure(figsize=(3, 2), dpi=200)).get_renderer()
    changes = [lambda: None, lambda: setattr(box, "sep", box.sep + 1),
               lambda: setattr(box, "width", 80.0),
               lambda: ax.get_legend().set_title("entries")]  # a child shown
    with boxes_packed_once():
        for change in changes:
            change()
            calls["n"] = 0
            ours = [box.get_bbox(renderer).bounds for _ in range(3)]
            assert calls["n"] == 1
            assert ours == [original(box, renderer)[0].bounds] * 3
        calls["n"] = 0
        assert box.get_bbox(other).bounds == original(box, other)[0].bounds
        assert calls["n"] == 1  # another renderer (dpi): packed again
    assert VPacker._get_bbox_and_child_offsets is counted
    assert "_get_bbox_and_child_offsets" in HPacker.__dict__


def _shared_pair():
    fig = Figure(figsize=(3, 2))
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.plot([0, 1], [0, 1])
    return fig, top, bottom


def test_view_limits_are_checked_until_settled_and_again_after_a_request():
    base = next(kind for kind in type(Figure().add_subplot()).__mro__
                if "_unstale_viewLim" in vars(kind))
    original = base.__dict__["_unstale_viewLim"]
    ours, theirs = _shared_pair(), _shared_pair()
    with view_limits_settled(ours[0]):
        assert base._unstale_viewLim is not original
        for step in (lambda fig, top, bottom: None,
                     lambda fig, top, bottom: bottom.plot([0, 5], [3, 4]),  # shared x: both
                     lambda fig, top, bottom: top.set_yscale("log")):
            step(*ours)
            step(*theirs)
            for _ in range(2):
                assert [ax.viewLim.bounds for ax in ours[1:]] == [
                    ax.viewLim.bounds for ax in theirs[1:]]
    assert base.__dict__["_unstale_viewLim"] is original
