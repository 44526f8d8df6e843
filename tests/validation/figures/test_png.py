"""Tests of validation.figures.png: one draw, cropped as ``bbox_inches="tight"`` crops."""

import io

import numpy as np
import pytest
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.figure import Figure
from matplotlib.image import imsave
from PIL import Image

import dprisk.validation.figures.png as png
from dprisk.validation.figures.png import png_bytes

DPI = 80


def _figure(log: bool = True):
    """Two panels; the right one log-log with a mathtext title (``log``) or linear with a plain
    one (a third of the drawing time: log ticks and mathtext cost 0.5-1 s a draw)."""
    fig = Figure(figsize=(5, 3), layout="constrained")
    left, right = fig.subplots(1, 2)
    left.plot([1, 2, 3], [1, 4, 9], label="squares")
    left.legend()
    if log:
        right.loglog([1e-3, 1e2], [1, 1e4])
        right.set_title(r"$\sigma^2$ against $s$")
    else:
        right.plot([1e-3, 1e2], [1, 1e4])
        right.set_title("sigma^2 against s")
    fig.suptitle("two panels")
    return fig


def _tight_savefig(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return Image.open(buffer)


@pytest.fixture(scope="module")
def plain():
    """The two-panel figure drawn once by :func:`png_bytes` and once by a tight ``savefig``
    (each draw costs 0.5-1 s: log ticks and mathtext), read by the three tests below; also
    the figure :func:`png_bytes` drew, with its dpi and canvas from before."""
    fig = _figure()
    dpi, canvas = fig.dpi, fig.canvas
    image = Image.open(io.BytesIO(png_bytes(fig, DPI)))
    return image, _tight_savefig(_figure()), (fig, dpi, canvas)


def test_png_has_the_tight_box_of_savefig_within_a_few_pixels(plain):
    image, tight, _ = plain
    assert image.format == "PNG" and image.mode == "RGBA"
    assert np.allclose(image.info["dpi"], DPI, atol=0.01)
    assert np.abs(np.subtract(image.size, tight.size)).max() <= 4


def test_png_shows_what_savefig_shows(plain):
    ours = np.asarray(plain[0].convert("L"), float)
    theirs = np.asarray(plain[1].convert("L"), float)
    rows, cols = min(ours.shape[0], theirs.shape[0]), min(ours.shape[1], theirs.shape[1])
    # same ink (dark pixels) overall, and the same background padding
    assert abs((ours < 128).sum() - (theirs < 128).sum()) < 0.05 * (theirs < 128).sum()
    assert (ours[:3] == 255).all() and (ours[:, :3] == 255).all()
    assert np.mean(np.abs(ours[:rows, :cols] - theirs[:rows, :cols])) < 40


def test_the_file_holds_what_imsave_writes(monkeypatch):
    # png_bytes writes its PNG itself (rows not filtered): the same pixels, dpi and Software
    # text as matplotlib's imsave (through Pillow) of the same cropped pixels, the rows it
    # was handed (one draw, not a second draw of the same figure for imsave).
    handed = []
    written = png._png_file

    def recorded(rows, width, height, dpi):
        handed.append((rows.copy(), width, height, dpi))
        return written(rows, width, height, dpi)

    monkeypatch.setattr(png, "_png_file", recorded)
    ours = Image.open(io.BytesIO(png_bytes(_figure(log=False), DPI)))
    ((rows, width, height, dpi),) = handed
    buffer = io.BytesIO()
    imsave(buffer, rows[:, 1:].reshape(height, width, 4), format="png", dpi=dpi)
    theirs = Image.open(buffer)
    assert ours.mode == theirs.mode == "RGBA" and ours.info == theirs.info
    assert ours.size == theirs.size and np.array_equal(np.asarray(ours), np.asarray(theirs))


def test_png_restores_the_figure_dpi_and_canvas(plain):
    fig, dpi, canvas = plain[2]  # as they were before png_bytes drew it
    assert fig.dpi == dpi and fig.canvas is canvas and type(canvas) is FigureCanvasBase
    assert fig.axes[0].get_legend().get_texts()[0].get_text() == "squares"


def _text_outside(fig):
    fig.text(1.02, 0.5, "outside the figure", fontsize=14)  # the tight box reaches past it
    return fig


def _no_layout(fig):
    fig.set_layout_engine("none")
    fig.axes[0].set_position([0.0, 0.1, 0.4, 0.8])  # its tick labels are left of the figure
    return fig


def _edge_line(fig):
    ax = fig.axes[0]
    (line,) = ax.plot([-10, 2], [5, 5], clip_on=False)  # off the canvas
    ax.set_xlim(0.9, 3.1)
    line.set_in_layout(False)  # and the layout does not make room for it
    return fig


@pytest.mark.parametrize("change", [_text_outside, _no_layout, _edge_line])
def test_content_beyond_the_figure_is_drawn_as_savefig_draws_it(change):
    # The linear figure: what reaches beyond is in the left panel or the figure itself, and
    # png_bytes's choice of the tight box does not depend on the right panel's scale. Laid
    # out figures are drawn in their tight box by png_bytes itself: savefig's pixels.
    image = Image.open(io.BytesIO(png_bytes(change(_figure(log=False)), DPI)))
    tight = _tight_savefig(change(_figure(log=False)))
    assert image.size == tight.size and image.info == tight.info
    assert np.array_equal(np.asarray(image), np.asarray(tight))
