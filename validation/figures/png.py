"""A figure as PNG bytes, laid out and drawn once, cropped to what it draws.

``fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")`` of a figure with a
layout engine (the report's are constrained) draws the figure three times over: once with
drawing disabled to run the layout, once more to measure the tight bounding box
(``Figure.get_tightbbox``: every axis locates and formats its ticks again), and a third time
into the pixels it writes. :func:`png_bytes` draws it once, with the layout, into an Agg
canvas at ``dpi``, and crops those pixels to the box of everything drawn (the pixels that
differ from the background), padded by ``savefig.pad_inches`` as ``bbox_inches="tight"``
pads its box. The crop is the same picture as the tight box's: the layout is the same (run at
the same dpi) and nothing is drawn again; edges may differ by a pixel (the tight box counts the
full boxes of texts, the crop only their drawn pixels).

What lies beyond the canvas, the tight box would include and a crop cannot: when something is
drawn up to the canvas's edge (it may go on beyond), or when an artist of the figure itself (a
text, a legend, of it or of a subfigure) reaches past the edge, the figure is drawn a second
time, as ``savefig`` draws it, into its tight box (:func:`_tight_pixels`: the same pixels,
``savefig``'s layout pass spared, the first draw's layout and renderer used instead); a figure
without a layout engine (nothing then keeps the axes' decorations inside the figure) is saved
by ``savefig``. The decorations of the axes of a laid-out figure are inside: its layout engine
put them there.

Within that one draw, each axis places its ticks and measures their labels once for each place
it is laid out at, each text is laid out once while it is unchanged, and math text is parsed
once over the figures drawn here (:mod:`dprisk.validation.figures.draw_once`); an axis's new
ticks are copies of one tick it built, not each built anew
(:mod:`dprisk.validation.figures.tick_copies`); glyphs are
drawn by a loop without matplotlib's per-glyph NumPy matrix under matplotlib 3.11
(:mod:`dprisk.validation.figures.agg_glyphs`); under 3.10 a plain text is laid out by FreeType
once per process, its measure and bitmap then reused by each figure that draws it
(:mod:`dprisk.validation.figures.agg_texts`). The same pixels (the report's 28 figures
compared), in about a third less CPU. The PNG file is written here, its rows not filtered
(:func:`_png_file`: the same pixels and the same chunks as Pillow writes, in a third of the
time).
"""

from __future__ import annotations

import io
import struct
import zlib

import matplotlib as mpl
import numpy as np
from matplotlib._tight_bbox import adjust_bbox
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure, SubFigure

from dprisk.validation.figures.agg_glyphs import use_fast_glyphs
from dprisk.validation.figures.agg_texts import use_text_cache
from dprisk.validation.figures.draw_once import (
    boxes_packed_once,
    shared_math_parser,
    texts_laid_out_once,
    ticks_placed_once,
    view_limits_settled,
)
from dprisk.validation.figures.tick_copies import ticks_copied

__all__ = ["png_bytes"]

#: zlib's level for the PNG's pixels (see :func:`_png_file`).
_ZLIB_LEVEL = 3
#: The PNG file's signature, before its chunks.
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_bytes(fig: Figure, dpi: float) -> bytes:
    """``fig`` as PNG at ``dpi``, cropped to its drawn content (``bbox_inches="tight"``).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        Drawn (and laid out by its layout engine, if any) here; its dpi and canvas are
        restored afterwards.
    dpi : float
        Resolution of the PNG, as ``savefig``'s ``dpi``.

    Returns
    -------
    bytes
        The PNG file.
    """
    drawn = _draw_pixels(fig, dpi) if fig.get_layout_engine() is not None else None
    if drawn is None:  # no layout engine (nothing keeps the decorations inside)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
        return buffer.getvalue()
    pixels, box = drawn
    if box is None:  # the tight box's pixels, as savefig draws them
        height, width = pixels.shape[:2]
        rows = np.empty((height, 1 + 4 * width), dtype=np.uint8)
        rows[:, 0] = 0  # no filter
        rows[:, 1:] = pixels.reshape(height, 4 * width)
        return _png_file(rows, width, height, dpi)
    top, bottom, left, right = box
    pad = round(mpl.rcParams["savefig.pad_inches"] * dpi)
    height, width = bottom - top + 2 * pad, right - left + 2 * pad
    rows = np.empty((height, 1 + 4 * width), dtype=np.uint8)  # each row: its filter, RGBA
    rows[:, 0] = 0  # no filter
    cropped = rows[:, 1:].reshape(height, width, 4)  # a view of the rows' pixels
    cropped[...] = pixels[0, 0]
    cropped[pad:pad + bottom - top, pad:pad + right - left] = pixels[top:bottom, left:right]
    return _png_file(rows, width, height, dpi)


def _png_file(rows: np.ndarray, width: int, height: int, dpi: float) -> bytes:
    """A PNG file of 8-bit RGBA pixels, ``rows`` each its filter type byte and its pixels.

    The chunks ``savefig`` writes (through Pillow): the header, the ``Software`` text,
    the resolution (``round(dpi / 0.0254)`` pixels a metre) and the pixels, deflated by zlib
    at :data:`_ZLIB_LEVEL`, each chunk with its CRC-32. Pillow filters each row by the
    filter of the least sum of absolute differences (PNG's "adaptive" filtering); these rows
    are not filtered: the same pixels, deflated in about 0.3 s of CPU over the report's 28
    figures against Pillow's 0.9 s at the same level, into files about 5 % larger
    (3.0 MB against 2.87 MB).
    """
    per_metre = int(dpi / 0.0254 + 0.5)
    software = f"Matplotlib version{mpl.__version__}, https://matplotlib.org/"
    chunks = ((b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)),
              (b"tEXt", b"Software\0" + software.encode("latin-1")),
              (b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)),
              (b"IDAT", zlib.compress(rows, _ZLIB_LEVEL)),
              (b"IEND", b""))
    return _PNG_SIGNATURE + b"".join(
        struct.pack(">I", len(data)) + kind + data
        + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))  # the CRC of type and data
        for kind, data in chunks)


def _draw_pixels(fig: Figure, dpi: float) -> tuple[np.ndarray, tuple | None]:
    """RGBA pixels of ``fig`` drawn (layout included) at ``dpi``, rows from the top, and a box.

    The box is :func:`_drawn_box`'s crop of the pixels of the figure drawn once. When the crop
    cannot be the tight box (an artist of the figure itself reaches beyond the canvas, or the
    drawn pixels touch its edge), the pixels are those ``savefig(bbox_inches="tight")`` draws
    (:func:`_tight_pixels`), and the box is None.
    """
    canvas, figure_dpi = fig.canvas, fig.dpi
    try:
        fig.dpi = dpi
        with (ticks_placed_once(fig), texts_laid_out_once(), boxes_packed_once(),
              view_limits_settled(fig), ticks_copied()):
            agg = _agg_canvas(fig)
            agg.draw()
            renderer = agg.get_renderer()
            pixels = np.array(agg.buffer_rgba())
            box = None if _figure_artist_outside(fig, renderer) else _drawn_box(pixels)
            if box is None:
                pixels = _tight_pixels(fig, renderer, dpi)
        return pixels, box
    finally:
        fig.dpi = figure_dpi
        fig.set_canvas(canvas)


def _agg_canvas(fig: Figure) -> FigureCanvasAgg:
    """An Agg canvas of ``fig`` whose renderer has the shortcuts of the module notes."""
    agg = FigureCanvasAgg(fig)
    renderer = agg.get_renderer()  # the one draw() uses
    parser = shared_math_parser()
    if parser is not None:
        renderer.mathtext_parser = parser
    use_fast_glyphs(renderer)
    use_text_cache(renderer)
    return agg


def _tight_pixels(fig: Figure, renderer, dpi: float) -> np.ndarray:
    """The pixels ``savefig(bbox_inches="tight")`` draws of ``fig``, laid out and drawn here.

    ``savefig`` lays the figure out (a draw with drawing disabled), measures the figure's
    tight box (``Figure.get_tightbbox``) with that draw's renderer, pads it by
    ``savefig.pad_inches``, moves the figure so that the box is its canvas
    (``matplotlib._tight_bbox.adjust_bbox``, the axes fixed where the layout put them) and
    draws it there without its layout engine. The same here, after the draw ``renderer``
    made (layout included, at ``dpi``): one draw fewer than ``savefig``.
    """
    box = fig.get_tightbbox(renderer).padded(mpl.rcParams["savefig.pad_inches"])
    restore = adjust_bbox(fig, box, fig.canvas.fixed_dpi)
    engine = fig.get_layout_engine()
    try:
        fig.set_layout_engine("none")
        agg = _agg_canvas(fig)
        agg.draw()
        return np.array(agg.buffer_rgba())
    finally:
        fig.set_layout_engine(engine)
        restore()


def _figure_artist_outside(fig: Figure, renderer) -> bool:
    """Whether an artist of ``fig`` or of a subfigure (not of an axes) leaves the canvas."""
    width, height = fig.bbox.width, fig.bbox.height
    pending = [fig]
    while pending:
        parent = pending.pop()
        for artist in parent.get_children():
            if isinstance(artist, SubFigure):
                pending.append(artist)
            elif (artist is not parent.patch and not isinstance(artist, Axes)
                  and artist.get_visible()):
                box = artist.get_window_extent(renderer)
                if (box.x0 < -0.5 or box.y0 < -0.5 or box.x1 > width + 0.5
                        or box.y1 > height + 0.5):
                    return True
    return False


def _drawn_box(pixels: np.ndarray) -> tuple[int, int, int, int] | None:
    """``(top, bottom, left, right)`` (end-exclusive) of the pixels unlike the top-left one.

    None when there are none, or when they touch an edge of the canvas.
    """
    packed = pixels.view(np.uint32)[..., 0]
    drawn = packed != packed[0, 0]
    rows = np.flatnonzero(drawn.any(axis=1))
    cols = np.flatnonzero(drawn.any(axis=0))
    if rows.size == 0:
        return None
    top, bottom, left, right = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    if top == 0 or left == 0 or bottom == packed.shape[0] or right == packed.shape[1]:
        return None
    return int(top), int(bottom), int(left), int(right)
