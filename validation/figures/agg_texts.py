"""Plain texts laid out by FreeType once per process, not once per figure (matplotlib 3.10).

matplotlib 3.10's Agg renderer measures a plain (not math) text
(``RendererAgg.get_text_width_height_descent``) and draws it (``RendererAgg.draw_text``) by
the same steps: the font of its properties, cleared and set to its size at the renderer's dpi
(``_prepare_font``), then ``font.set_text(s, 0, flags)``, which loads, hints and places each
glyph (about 30 us a glyph here). A measure reads the string's width, height and descent off
it; a draw renders the glyphs into the font's bitmap (``draw_glyphs_to_bitmap``), reads the
bitmap's offset and the descent, and copies the bitmap into the canvas at the text's position,
rotated by its angle. matplotlib remembers measures per renderer only, and each figure drawn to
PNG has a renderer of its own: the report's 28 figures measured 846 plain texts (474 distinct)
and drew 1,223 (469 distinct: tick labels such as ``0.5`` or ``10`` recur in figure after
figure), each time from ``set_text``.

:func:`use_text_cache` gives a renderer the same two methods, computed from what one ``set_text``
of the string gave: the measure ``(w / 64, h / 64, d / 64)``, and for each antialiasing the
bitmap (a copy of the font's), its offset and the descent, kept per process for the string,
the font files (as matplotlib finds them for the properties), size, dpi, hinting flags,
hinting factor and kerning factor (all that ``set_text`` and the bitmap depend on). The copy
into the canvas is matplotlib's own call with the position computed as matplotlib computes it,
so the pixels are the same. Math and TeX texts are left to matplotlib. It is used only where
matplotlib draws texts that way: once per process a few texts (plain, rotated, at fractional
positions, with and without antialiasing) are measured and drawn both ways into two canvases,
and the cache is used only if the measures and the pixels are the same
(:func:`text_cache_agrees`).
"""

from __future__ import annotations

import functools
import math
import types

import matplotlib as mpl
import numpy as np
from matplotlib.backends import backend_agg
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.font_manager import FontProperties, fontManager

__all__ = ["TEXT_CACHE_SIZE", "text_cache_agrees", "use_text_cache"]

#: Distinct plain texts (by string, font, size, dpi and FreeType settings) a process keeps.
TEXT_CACHE_SIZE = 4096


#: The cache: per key (see :func:`_entry`), the measure and the bitmaps drawn, as found.
_TEXTS: dict[tuple, dict] = {}


def _entry(renderer: RendererAgg, s: str, prop: FontProperties) -> dict:
    """The cache's entry of ``s`` in ``prop`` at the renderer's dpi (made empty if new).

    Keyed by what ``_prepare_font`` and ``set_text`` read: the string, the font files
    matplotlib finds for ``prop``, its size in points, the dpi, the hinting flags, and the
    ``text.hinting_factor`` and ``text.kerning_factor`` the font was loaded with.
    """
    key = (s, tuple(fontManager._find_fonts_by_props(prop)), prop.get_size_in_points(),
           renderer.dpi, backend_agg.get_hinting_flag(), mpl.rcParams["text.hinting_factor"],
           mpl.rcParams["text.kerning_factor"])
    entry = _TEXTS.get(key)
    if entry is None:
        if len(_TEXTS) >= TEXT_CACHE_SIZE:
            del _TEXTS[next(iter(_TEXTS))]  # the oldest
        entry = _TEXTS[key] = {}
    return entry


def _font_set(renderer: RendererAgg, s: str, prop: FontProperties):
    """The font of ``prop`` with ``s`` laid out, as matplotlib's Agg renderer does it."""
    font = renderer._prepare_font(prop)
    font.set_text(s, 0, flags=backend_agg.get_hinting_flag())
    return font


def get_text_width_height_descent(renderer: RendererAgg, s, prop, ismath):
    """``RendererAgg.get_text_width_height_descent``, a plain text's measure from the cache.

    The width, height and descent (pixels) are FreeType's, in 26.6 fixed point, over 64.
    """
    if ismath:
        return RendererAgg.get_text_width_height_descent(renderer, s, prop, ismath)
    entry = _entry(renderer, s, prop)
    measure = entry.get("measure")
    if measure is None:
        font = _font_set(renderer, s, prop)
        width, height = font.get_width_height()
        measure = entry["measure"] = (width / 64.0, height / 64.0, font.get_descent() / 64.0)
    return measure


def draw_text(renderer: RendererAgg, gc, x, y, s, prop, angle, ismath=False, mtext=None):
    """``RendererAgg.draw_text``, a plain text's bitmap from the cache.

    The bitmap's corner is placed as matplotlib places it: with the descent ``d`` and the
    bitmap's offset ``(xo, yo)`` (pixels), at ``(round(x + xo + d sin(angle)),
    round(y + yo + d cos(angle)) + 1)``, rotated by ``angle`` about it.
    """
    if ismath:
        return RendererAgg.draw_text(renderer, gc, x, y, s, prop, angle, ismath, mtext)
    entry = _entry(renderer, s, prop)
    antialiased = gc.get_antialiased()
    drawn = entry.get(("bitmap", antialiased))
    if drawn is None:
        font = _font_set(renderer, s, prop)
        font.draw_glyphs_to_bitmap(antialiased=antialiased)
        xo, yo = font.get_bitmap_offset()
        drawn = entry["bitmap", antialiased] = (np.array(font), xo / 64.0, yo / 64.0,
                                                font.get_descent() / 64.0)
    bitmap, xo, yo, descent = drawn
    xd = descent * math.sin(math.radians(angle))
    yd = descent * math.cos(math.radians(angle))
    x = round(x + xo + xd)
    y = round(y + yo + yd)
    renderer._renderer.draw_text_image(bitmap, x, y + 1, angle, gc)
    return None


def use_text_cache(renderer: RendererAgg) -> bool:
    """Give ``renderer`` the cached :func:`draw_text` and measure if :func:`text_cache_agrees`.

    Returns whether it did. The methods are the renderer's own (attributes of this renderer
    only); nothing of matplotlib's changes.
    """
    if not text_cache_agrees():
        return False
    _give(renderer)
    return True


def _give(renderer: RendererAgg) -> None:
    renderer.draw_text = types.MethodType(draw_text, renderer)
    renderer.get_text_width_height_descent = types.MethodType(
        get_text_width_height_descent, renderer)


@functools.cache
def text_cache_agrees() -> bool:
    """Whether the cached texts are measured and drawn as this matplotlib measures and draws.

    False with a matplotlib that draws texts otherwise (3.11's glyph-by-glyph loop), or when a
    few sample texts measured or drawn both ways differ in a measure or a pixel.
    """
    if hasattr(RendererAgg, "_draw_text_glyphs_and_boxes"):
        return False
    try:
        theirs = _sample(cached=False)
        ours = [_sample(cached=True) for _ in range(2)]  # the second from the cache
    except Exception:  # any failure means: keep matplotlib's texts
        return False
    return bool(theirs[1][..., 3].any() and all(
        measures == theirs[0] and np.array_equal(pixels, theirs[1]) for measures, pixels in ours))


def _sample(cached: bool) -> tuple[list, np.ndarray]:
    renderer = RendererAgg(160, 120, 110)
    if cached:
        _give(renderer)
    gc = renderer.new_gc()
    gc.set_foreground("black")
    measures = []
    for x, y, text, size, angle, antialiased in (
            (5.3, 20.7, "P[correct] 0.25", 9, 0.0, True), (20.6, 110.2, "log10 x", 8, 90.0, True),
            (60.45, 70.3, "Äy 0.5", 11, 30.0, True), (80.2, 100.8, "0.5", 7, -45.0, False)):
        prop = FontProperties(size=size)
        gc.set_antialiased(antialiased)
        measures.append(renderer.get_text_width_height_descent(text, prop, False))
        renderer.draw_text(gc, x, y, text, prop, angle)
    gc.restore()
    return measures, np.array(renderer.buffer_rgba())
