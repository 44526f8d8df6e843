"""Tests of validation.figures.agg_texts: plain texts laid out once per process, same pixels."""

import numpy as np
import pytest
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.font_manager import FontProperties

import dprisk.validation.figures.agg_texts as agg_texts

needs_cache = pytest.mark.skipif(not agg_texts.text_cache_agrees(),
                                 reason="this matplotlib draws texts otherwise (3.11's loop)")
#: Texts unlike the module's own sample: other sizes, fractional positions, angles, alpha,
#: math text (left to matplotlib), a repeated string in another size and colour.
TEXTS = [(3.37, 15.81, "Risk 0.731 (ε = 1.5)", 0.0, False, 8.5, True),
         (40.5, 130.25, "log-odds", 45.0, False, 11, True),
         (110.7, 120.1, "P[x₁ = 3]", 90.0, False, 7, False),
         (60.2, 70.6, r"$\sqrt{\rho_2}\,\frac{1}{2}$", 0.0, True, 10, True),
         (150.9, 40.3, "0.5", -20.0, False, 9, True),
         (150.2, 90.7, "0.5", 0.0, False, 12, True)]


def _draw(cached: bool, texts=TEXTS) -> tuple[list, np.ndarray]:
    renderer = RendererAgg(200, 140, 96)
    if cached:
        assert agg_texts.use_text_cache(renderer)
    gc = renderer.new_gc()
    gc.set_foreground((0.2, 0.3, 0.8))
    gc.set_alpha(0.7)
    measures = []
    for x, y, text, angle, ismath, size, antialiased in texts:
        prop = FontProperties(size=size)
        gc.set_antialiased(antialiased)
        measures.append(renderer.get_text_width_height_descent(text, prop, ismath))
        renderer.draw_text(gc, x, y, text, prop, angle, ismath=ismath)
    gc.restore()
    return measures, np.array(renderer.buffer_rgba())


@needs_cache
def test_cached_texts_are_matplotlibs_measures_and_pixels():
    theirs = _draw(False)
    assert (theirs[1][..., 3] > 0).sum() > 500  # the texts were drawn
    for _ in range(2):  # laid out, then from the cache
        ours = _draw(True)
        assert ours[0] == theirs[0]
        assert np.array_equal(ours[1], theirs[1])


@needs_cache
def test_the_cache_keys_on_the_dpi_and_the_hinting(monkeypatch):
    prop = FontProperties(size=10)
    sizes = []
    for dpi in (72, 144):
        renderer = RendererAgg(10, 10, dpi)
        agg_texts.use_text_cache(renderer)
        sizes.append(renderer.get_text_width_height_descent("0.25", prop, False))
    assert sizes[1][0] > 1.5 * sizes[0][0]
    with monkeypatch.context() as patch:
        patch.setitem(agg_texts.mpl.rcParams, "text.hinting", "no_hinting")
        renderer = RendererAgg(10, 10, 72)
        agg_texts.use_text_cache(renderer)
        unhinted = renderer.get_text_width_height_descent("0.25", prop, False)
        assert unhinted == RendererAgg.get_text_width_height_descent(renderer, "0.25", prop,
                                                                     False)
    assert unhinted != sizes[0]


@needs_cache
def test_the_cache_holds_at_most_its_size(monkeypatch):
    monkeypatch.setattr(agg_texts, "TEXT_CACHE_SIZE", 3)
    monkeypatch.setattr(agg_texts, "_TEXTS", {})
    renderer = RendererAgg(10, 10, 72)
    agg_texts.use_text_cache(renderer)
    for text in "abcde":
        renderer.get_text_width_height_descent(text, FontProperties(size=9), False)
    assert [key[0] for key in agg_texts._TEXTS] == ["c", "d", "e"]


def test_where_texts_are_drawn_otherwise_the_renderer_is_left_alone(monkeypatch):
    monkeypatch.setattr(agg_texts, "text_cache_agrees", lambda: False)
    renderer = RendererAgg(10, 10, 72)
    assert not agg_texts.use_text_cache(renderer)
    assert "draw_text" not in vars(renderer)
    assert "get_text_width_height_descent" not in vars(renderer)


def test_the_cache_is_used_only_with_matplotlib_3_10s_texts():
    # matplotlib 3.11 draws a text glyph by glyph (RendererAgg._draw_text_glyphs_and_boxes):
    # the bitmaps this module copies are not what it draws.
    if hasattr(RendererAgg, "_draw_text_glyphs_and_boxes"):
        assert not agg_texts.text_cache_agrees()
    else:
        assert agg_texts.text_cache_agrees()


@needs_cache
def test_a_cache_that_draws_otherwise_is_not_used(monkeypatch):
    def shifted(renderer, gc, x, y, s, prop, angle, ismath=False, mtext=None):  # a pixel off
        RendererAgg.draw_text(renderer, gc, x + 1, y, s, prop, angle, ismath, mtext)

    monkeypatch.setattr(agg_texts, "draw_text", shifted)
    assert not agg_texts.text_cache_agrees.__wrapped__()
