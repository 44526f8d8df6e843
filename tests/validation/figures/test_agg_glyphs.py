"""Tests of validation.figures.agg_glyphs: matplotlib's glyph loop, the same pixels, less Python."""

import types

import numpy as np
import pytest
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.font_manager import FontProperties

import dprisk.validation.figures.agg_glyphs as agg_glyphs

needs_loop = pytest.mark.skipif(not hasattr(RendererAgg, "_draw_text_glyphs_and_boxes"),
                                reason="matplotlib before 3.11 has no glyph loop to mirror")


def _draw(fast: bool, texts) -> np.ndarray:
    renderer = RendererAgg(200, 140, 96)
    if fast:
        assert agg_glyphs.use_fast_glyphs(renderer)
    gc = renderer.new_gc()
    gc.set_foreground((0.2, 0.3, 0.8))
    gc.set_alpha(0.7)
    for x, y, text, angle, ismath, size in texts:
        renderer.draw_text(gc, x, y, text, FontProperties(size=size), angle, ismath=ismath)
    gc.restore()
    return np.array(renderer.buffer_rgba())


@needs_loop
def test_the_fast_loop_draws_matplotlibs_pixels():
    # Texts unlike the module's own sample: other sizes, fractional positions, angles
    # (a tick label at 45 degrees), alpha, and math text with a root's bar (boxes).
    texts = [(3.37, 15.81, "Risk 0.731 (ε = 1.5)", 0.0, False, 8.5),
             (40.5, 130.25, "log-odds", 45.0, False, 11),
             (110.7, 120.1, "P[x₁ = 3]", 90.0, False, 7),
             (60.2, 70.6, r"$\sqrt{\rho_2}\,\frac{1}{2}$", 0.0, True, 10),
             (150.9, 40.3, r"$10^{-3}$", -20.0, True, 9)]
    theirs, ours = _draw(False, texts), _draw(True, texts)
    assert (theirs[..., 3] > 0).sum() > 500  # the texts were drawn
    assert np.array_equal(theirs, ours)


@needs_loop
def test_a_loop_that_draws_otherwise_is_not_used(monkeypatch):
    assert agg_glyphs.fast_glyphs_agree()

    def shifted(renderer, gc, x, y, angle, glyphs, boxes):  # a loop one pixel off
        agg_glyphs.RendererAgg._draw_text_glyphs_and_boxes(
            renderer, gc, x + 1, y, angle, glyphs, boxes)

    monkeypatch.setattr(agg_glyphs, "draw_glyphs_and_boxes", shifted)
    assert not agg_glyphs.fast_glyphs_agree.__wrapped__()


@needs_loop
def test_without_the_loop_the_renderer_is_left_alone(monkeypatch):
    monkeypatch.setattr(agg_glyphs, "fast_glyphs_agree", lambda: False)
    renderer = RendererAgg(10, 10, 72)
    assert not agg_glyphs.use_fast_glyphs(renderer)
    assert isinstance(renderer._draw_text_glyphs_and_boxes, types.MethodType)
    assert renderer._draw_text_glyphs_and_boxes.__func__ is \
        getattr(RendererAgg, "_draw_text_glyphs_and_boxes", None)


def test_without_matplotlibs_glyph_loop_the_fast_loop_switches_itself_off():
    # matplotlib before 3.11 draws a text's glyphs in C++ (no Python loop to mirror): the
    # renderer keeps its own drawing, whatever the version.
    renderer = RendererAgg(10, 10, 72)
    used = agg_glyphs.use_fast_glyphs(renderer)
    if hasattr(RendererAgg, "_draw_text_glyphs_and_boxes"):
        assert used and agg_glyphs.fast_glyphs_agree()
    else:
        assert not used and not agg_glyphs.fast_glyphs_agree()
        assert "_draw_text_glyphs_and_boxes" not in vars(renderer)
