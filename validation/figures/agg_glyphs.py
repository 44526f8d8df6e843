"""Agg's glyph loop with its per-glyph constants computed once per text.

matplotlib (from 3.11) draws a text on an Agg canvas glyph by glyph
(``RendererAgg._draw_text_glyphs_and_boxes``): for each glyph it sets the font's size, sets its
transform (a 2x2 matrix in 16.16 fixed point, built with NumPy for every glyph although it
depends only on the text's angle and the glyph's slant and stretch, and the glyph's position in
26.6 fixed point), renders the glyph with FreeType and copies its bitmap into the canvas. The
Python around those calls (mostly the matrix) costs about as much as the calls themselves:
about 60 % of the time of drawing a glyph, and the report's 28 figures draw about 16,000.

:func:`use_fast_glyphs` gives a renderer :func:`draw_glyphs_and_boxes`, the same loop making
the same calls with the same arguments in the same order (so the same pixels), with the
matrix built once per slant and stretch, and the antialiasing and render mode read once per
text. It is used only where matplotlib's loop is the one it mirrors: once per process a text
of each kind (plain, rotated, math text with a fraction bar) is drawn by both into two small
canvases, and the fast loop is used only if the pixels are the same (:func:`fast_glyphs_agree`).
"""

from __future__ import annotations

import functools
import math
import types

import numpy as np
from matplotlib.backends import backend_agg
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.font_manager import FontProperties

__all__ = ["draw_glyphs_and_boxes", "fast_glyphs_agree", "use_fast_glyphs"]


def draw_glyphs_and_boxes(renderer: RendererAgg, gc, x: float, y: float, angle: float,
                          glyphs, boxes) -> None:
    """``renderer._draw_text_glyphs_and_boxes(gc, x, y, angle, glyphs, boxes)``, faster.

    Parameters
    ----------
    renderer : RendererAgg
        Draws into its canvas.
    gc : GraphicsContextBase
        Colour, alpha, clipping and antialiasing of the text.
    x, y : float
        The text's origin in pixels, ``y`` downwards from the top.
    angle : float
        The text's rotation in degrees.
    glyphs : iterable of (font, size, glyph_index, slant, extend, dx, dy)
        Each glyph's FreeType font, size in points, index, slant, horizontal stretch and offset
        from the origin in pixels (``dy`` upwards).
    boxes : iterable of (dx, dy, width, height)
        Filled rectangles (fraction bars, roots), drawn by matplotlib's own method.

    Notes
    -----
    For each glyph, as matplotlib does: ``font.set_size(size, dpi)``; the transform
    ``round(0x10000 * R(angle) @ [[extend, extend * slant], [0, 1]])`` with the offset
    ``(round(64 (x + dx cos - dy sin)), round(64 (height - y + dx sin + dy cos)))``; the glyph
    rendered (antialiased or monochrome, as ``gc``) and its bitmap copied with its bottom side at
    ``int(height) - top + rows``.
    """
    cos = math.cos(math.radians(angle))
    sin = math.sin(math.radians(angle))
    load_flags = backend_agg.get_hinting_flag()
    antialiased = gc.get_antialiased()
    mode = backend_agg.RenderMode.NORMAL if antialiased else backend_agg.RenderMode.MONO
    height, rows, dpi = renderer.height, int(renderer.height), renderer.dpi
    draw_text_image = renderer._renderer.draw_text_image
    rotation = np.array([[cos, -sin], [sin, cos]])
    matrices = {}
    for font, size, glyph_index, slant, extend, dx, dy in glyphs:  # dy is upwards.
        font.set_size(size, dpi)
        matrix = matrices.get((slant, extend))
        if matrix is None:
            matrix = (0x10000 * rotation @ [[extend, extend * slant], [0, 1]]).round().astype(int)
            matrices[slant, extend] = matrix
        font._set_transform(matrix, [round(0x40 * (x + dx * cos - dy * sin)),
                                     round(0x40 * (height - y + dx * sin + dy * cos))])
        bitmap = font._render_glyph(glyph_index, load_flags, mode)
        buffer = bitmap.buffer
        if not antialiased:
            buffer *= 0xff
        draw_text_image(buffer, bitmap.left, rows - bitmap.top + buffer.shape[0], 0, gc)
    if not isinstance(boxes, (list, tuple)) or boxes:
        RendererAgg._draw_text_glyphs_and_boxes(renderer, gc, x, y, angle, (), boxes)


def use_fast_glyphs(renderer: RendererAgg) -> bool:
    """Give ``renderer`` :func:`draw_glyphs_and_boxes` if :func:`fast_glyphs_agree`.

    Returns whether it did. The method is the renderer's own (an attribute of this renderer
    only); nothing of matplotlib's changes.
    """
    if not fast_glyphs_agree():
        return False
    renderer._draw_text_glyphs_and_boxes = types.MethodType(draw_glyphs_and_boxes, renderer)
    return True


@functools.cache
def fast_glyphs_agree() -> bool:
    """Whether :func:`draw_glyphs_and_boxes` draws what this matplotlib's loop draws.

    False when matplotlib has no such loop (before 3.11) or when a plain, a rotated and a math
    text (with a fraction bar and a slanted letter) drawn by both differ in any pixel.
    """
    if not (hasattr(RendererAgg, "_draw_text_glyphs_and_boxes")
            and hasattr(backend_agg, "RenderMode")):
        return False
    try:
        theirs, ours = _sample(fast=False), _sample(fast=True)
    except Exception:  # any failure means: keep matplotlib's loop
        return False
    return bool(theirs[..., 3].any() and np.array_equal(theirs, ours))


def _sample(fast: bool) -> np.ndarray:
    renderer = RendererAgg(160, 120, 110)
    if fast:
        renderer._draw_text_glyphs_and_boxes = types.MethodType(draw_glyphs_and_boxes, renderer)
    gc = renderer.new_gc()
    gc.set_foreground("black")
    prop = FontProperties(size=9)
    renderer.draw_text(gc, 5.3, 20.7, "P[correct] 0.25", prop, 0.0)
    renderer.draw_text(gc, 20.6, 110.2, "log10 x", prop, 90.0)
    renderer.draw_text(gc, 60.1, 60.4, r"$\frac{\rho_1}{10^{-2}}\ \mathit{x}$", prop, 0.0,
                       ismath=True)
    renderer.draw_text(gc, 100.45, 100.3, r"$\sqrt{2}$", prop, 30.0, ismath=True)
    gc.restore()
    return np.array(renderer.buffer_rgba())
