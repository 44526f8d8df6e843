"""The Panel side of the notebooks' live controls (:mod:`dprisk.explore.notebook`).

Imported only when the controls are built: in a notebook kernel when :func:`~dprisk.explore.
notebook.live` is called, elsewhere (a plain ``python notebook.py``) when the controls, the
output or the layout of the :class:`~dprisk.explore.notebook.LiveView` are first used, so a
script that only computes its view does not import Panel and Bokeh (about 2 s).
"""

from __future__ import annotations

import math

import panel as pn
import param

from dprisk.explore.inputs import read_box
from dprisk.explore.notebook import (
    _TABLE_CSS,
    LIVE_FIGURE_DPI,
    decimals,
    format_typed,
    output_parts,
    slider_step,
    table_html,
)

__all__ = ["LIVE_FIGURE_DPI", "NumberControl", "panes", "settle_sliders", "widget"]


class NumberControl(pn.viewable.Viewer):
    """A number box, with a slider beside it when a range is given.

    The box is a text box that applies on Enter and on blur (see the module's docstring).
    ``value`` is the number the view receives; ``error`` is the one-line message of text
    that is not a number (``value`` then keeps the last good number). Setting ``value``
    from Python moves the slider and rewrites the box. A slider position is rounded to
    ``places`` decimals (those of the start and the step) and shown with exactly that many.

    Parameters
    ----------
    name : str
    value : int or float
    bounds : (start, end), optional
        The slider's range (its step is set from it); ``value`` or a typed value outside it
        widens the range. A typed value the view then refuses does not keep it widened:
        its ``settle`` puts back the range and the position of the last accepted value.
    """

    value = param.Parameter(doc="The current number.")
    error = param.String(default=None, allow_None=True, doc="Why the box's text is refused.")

    def __init__(self, name: str, value, bounds: tuple | None = None) -> None:
        super().__init__(value=value, name=name)
        self.integer = isinstance(value, int) and not isinstance(value, bool)
        self._syncing = False
        css = f"dprisk-live-{name}"
        self.box = pn.widgets.TextInput(value=format_typed(value, self.integer), width=110,
                                        css_classes=[f"{css}-box"])
        self.slider = None
        if bounds is None:
            self.box.name = name
            self.box.width = 200
            self.places = None
            layout = self.box
        else:
            start, end = bounds
            if self.integer:
                self.places = 0
                self.slider = pn.widgets.IntSlider(name=name, start=int(start), end=int(end),
                                                   value=value, step=1)
            else:
                step = slider_step(start, end)
                self.places = max(decimals(step), decimals(start))
                self.slider = pn.widgets.FloatSlider(name=name, start=float(start),
                                                     end=float(end), step=step,
                                                     value=float(value))
            self.slider.param.update(width=240, tooltips=False, show_value=False,
                                     css_classes=[f"{css}-slider"])
            self._place_slider(value)  # a value outside the range widens it, as a typed one
            self._accepted = (self.slider.start, self.slider.end, self.slider.value)
            self.slider.param.watch(self._slid, "value")
            layout = pn.Row(self.slider, self.box, align="end")
        self.box.param.watch(self._typed, "value")
        self.param.watch(self._show, "value")
        self._layout = pn.Column(layout, css_classes=[css], margin=(0, 10))

    def __panel__(self):
        return self._layout

    def _typed(self, event) -> None:
        if self._syncing:
            return
        try:
            value = read_box(event.new, self.name, self.integer)
        except ValueError as err:
            self.error = str(err)
            return
        self._syncing = True  # keep the typed text as typed (1/3 stays 1/3)
        try:
            self._place_slider(value)
            self.param.update(value=value, error=None)
        finally:
            self._syncing = False

    def _slid(self, event) -> None:
        if self._syncing:
            return
        value = round(event.new) if self.integer else round(float(event.new), self.places)
        self._syncing = True
        try:
            self.box.value = f"{value:.{self.places}f}" if not self.integer else str(value)
            self.param.update(value=value, error=None)
        finally:
            self._syncing = False

    def _show(self, event) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            self.box.value = format_typed(event.new, self.integer)
            self._place_slider(event.new)
            if self.error is not None:  # the box now shows a good number
                self.error = None
        finally:
            self._syncing = False

    def settle(self, accepted: bool) -> None:
        """After the view ran: keep or put back the slider's range and position.

        If the view ``accepted`` the values the slider stays as it is; else it gets back the
        range and position of the last accepted values (those at construction if none was):
        a refused value, such as ``rho1 = -1``, leaves no widened range.

        The position is set without recomputing, and inside the range, so the browser has
        nothing to clamp and send back; the box keeps the refused text.
        """
        if self.slider is None:
            return
        if accepted:
            self._accepted = (self.slider.start, self.slider.end, self.slider.value)
            return
        start, end, position = self._accepted
        if (self.slider.start, self.slider.end) == (start, end):
            return  # not widened: the slider already shows a position of its range
        syncing, self._syncing = self._syncing, True
        try:
            self.slider.param.update(value=position, start=start, end=end)
        finally:
            self._syncing = syncing

    def _place_slider(self, value) -> None:
        if self.slider is None or not math.isfinite(value):
            return
        if value < self.slider.start:
            self.slider.start = value
        if value > self.slider.end:
            self.slider.end = value
        self.slider.value = value


def widget(name: str, value, ranges: dict):
    """The control of one parameter (see :func:`dprisk.explore.notebook.live`)."""
    if isinstance(value, bool):
        return pn.widgets.Checkbox(name=name, value=value)
    if isinstance(value, (int, float)):
        return NumberControl(name, value, ranges.get(name))
    if isinstance(value, (list, tuple)):
        return pn.widgets.TextInput(name=f"{name} (a Python list)", value=repr(list(value)),
                                    width=420, css_classes=[f"dprisk-live-{name}-box"])
    return pn.widgets.TextInput(name=name, value=str(value), width=420,
                                css_classes=[f"dprisk-live-{name}-box"])


def settle_sliders(controls: dict, accepted: bool) -> None:
    """``NumberControl.settle`` for each number control of ``controls``."""
    for control in controls.values():
        if isinstance(control, NumberControl):
            control.settle(accepted)


def panes(output) -> list:
    """The panes showing what a view returned, part by part.

    The parts are :func:`~dprisk.explore.notebook.output_parts`. A figure is shown as a PNG
    at :data:`LIVE_FIGURE_DPI`, cropped to what it draws, made by
    :func:`~dprisk.validation.figures.png.png_bytes` as the report's figures are: drawn once
    with its layout, then cropped, where Panel's Matplotlib pane (``tight=True``) saves it
    with ``bbox_inches="tight"`` and so lays it out and draws it twice. Each update of a live
    view redraws its figure: the single-level notebook's view figure took 50-60 ms of CPU
    this way against 130-190 ms through the pane (the same picture; its edges may differ by a
    pixel or two, and its lines by sub-pixel offsets).
    """
    shown = []
    for kind, value in output_parts(output):
        if kind == "png":
            shown.append(pn.pane.PNG(value))
        elif kind == "table":
            shown.append(pn.pane.HTML(table_html(value), stylesheets=[_TABLE_CSS]))
        else:
            shown.append(pn.pane.Markdown(value))
    return shown
