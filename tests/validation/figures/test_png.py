"""Tests of validation.figures.png: one draw, cropped as ``bbox_inches="tight"`` crops."""

import io

import numpy as np
import pytest
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.figure import Figure
from PIL import Image

from dprisk.validation.figures.png import png_bytes

DPI = 80


def _figure():
    fig = Figure(figsize=(5, 3), layout="constrained")
    left, right = fig.subplots(1, 2)
    left.plot([1, 2, 3], [1, 4, 9], label="squares")
    left.legend()
    right.loglog([1e-3, 1e2], [1, 1e4])
    right.set_title(r"$\sigma^2$ against $s$")
    fig.suptitle("two panels")
    return fig


def _tight_savefig(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return Image.open(buffer)


def test_png_has_the_tight_box_of_savefig_within_a_few_pixels():
    image = Image.open(io.BytesIO(png_bytes(_figure(), DPI)))
    tight = _tight_savefig(_figure())
    assert image.format == "PNG" and image.mode == "RGBA"
    assert np.allclose(image.info["dpi"], DPI, atol=0.01)
    assert np.abs(np.subtract(image.size, tight.size)).max() <= 4


def test_png_shows_what_savefig_shows():
    ours = np.asarray(Image.open(io.BytesIO(png_bytes(_figure(), DPI))).convert("L"), float)
    theirs = np.asarray(_tight_savefig(_figure()).convert("L"), float)
    rows, cols = min(ours.shape[0], theirs.shape[0]), min(ours.shape[1], theirs.shape[1])
    # same ink (dark pixels) overall, and the same background padding
    assert abs((ours < 128).sum() - (theirs < 128).sum()) < 0.05 * (theirs < 128).sum()
    assert (ours[:3] == 255).all() and (ours[:, :3] == 255).all()
    assert np.mean(np.abs(ours[:rows, :cols] - theirs[:rows, :cols])) < 40


def test_png_restores_the_figure_dpi_and_canvas():
    fig = _figure()
    dpi, canvas = fig.dpi, fig.canvas
    png_bytes(fig, DPI)
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
def test_content_beyond_the_figure_is_saved_by_savefig(change):
    image = Image.open(io.BytesIO(png_bytes(change(_figure()), DPI)))
    tight = _tight_savefig(change(_figure()))
    assert image.size == tight.size
