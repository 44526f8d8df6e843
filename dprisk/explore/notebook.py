"""Live controls for the what-if notebooks: :func:`live` turns parameters into widgets.

A notebook keeps its ``parameters`` cell (papermill and the tests set values there) and adds

.. code-block:: python

    from dprisk.explore.notebook import live

    def view(rho1, p, known):          # computes with dprisk.inference, draws a figure
        ...
        return fig, {"P[correct]": value}

    live(view, rho1=rho1, p=p, known=known, ranges={"rho1": (0.001, 2.0)})

:func:`live` builds one control per keyword (a slider with a number box for the names in
``ranges``, a number box for other numbers, a text box for strings and lists), calls
``view`` once at the parameters' values, and calls it again whenever a control changes; the
output pane then shows the new figure and numbers. In a headless run (papermill, nbclient,
``python notebook.py``) nothing changes the controls, so the output is the view at the
parameters cell's values, computed eagerly when :func:`live` is called. Bad input (text in a
number box or a list box, a value the view refuses with ``ValueError``) shows one line
instead of a result; a stale output is never shown as current
(:class:`dprisk.explore.inputs.Sequencer`).

Number boxes are text boxes (:class:`NumberControl`), read as the served explorer reads its
boxes (:func:`dprisk.explore.inputs.read_number`: ``0.05``, ``1/3``). They apply on Enter and
when they lose focus, in JupyterLab as in a plain page: Bokeh's spinner box commits only on
the browser's ``change`` event, and JupyterLab's Enter shortcut (enter a cell's edit mode)
cancels the key press inside an output, so Enter did nothing there; a text box also applies
on Enter from its key-up event, which no shortcut cancels. A slider's value is rounded to
the precision of its step (:func:`slider_step`, a 1, 2 or 5 times a power of ten) before it
is shown or used, and the slider shows no tooltip (the box beside it shows the value).

``view`` may return a Matplotlib figure (closed in pyplot after drawing, so the inline
backend does not show it twice), a dict of numbers (an HTML table: any label, ``|``
included, is shown as written), a string (Markdown), or a tuple of these.
"""

from __future__ import annotations

import ast
import html
import math
import numbers
from decimal import Decimal

import panel as pn
import param

from dprisk.explore.inputs import Sequencer, read_number

__all__ = ["LiveView", "NumberControl", "live", "message_html", "slider_step", "table_html"]

#: Slider positions over a range (at least; the step is rounded to 1, 2 or 5 x 10^k).
SLIDER_POSITIONS = 1000
#: Significant digits of a float in the result table.
TABLE_DIGITS = 6
_TABLE_CSS = """
table.dprisk-live-table { border-collapse: collapse; font-size: 0.95em; }
table.dprisk-live-table th, table.dprisk-live-table td {
    border: 1px solid #bbb; padding: 3px 8px; }
table.dprisk-live-table th { font-weight: normal; text-align: left; }
table.dprisk-live-table td { text-align: right; font-variant-numeric: tabular-nums; }
table.dprisk-live-table thead th { font-weight: bold; text-align: center; }
"""


def slider_step(start: float, end: float, positions: int = SLIDER_POSITIONS) -> float:
    """The slider step over ``[start, end]``: the smallest 1, 2 or 5 x 10^k >= span/positions.

    A step of that form has a short decimal expansion, so every slider position
    ``start + i * step`` has at most :func:`decimals` ``(start)`` or ``(step)`` decimals.
    """
    raw = (float(end) - float(start)) / positions
    if not raw > 0 or not math.isfinite(raw):
        raise ValueError(f"a slider range needs start < end, got ({start}, {end})")
    exponent = math.floor(math.log10(raw))
    for mantissa in (1, 2, 5, 10):
        step = round(mantissa * 10.0 ** exponent, max(0, 1 - exponent))
        if step >= raw * (1 - 1e-12):
            return step
    raise AssertionError("unreachable: 10 x 10^k >= raw")


def decimals(value: float) -> int:
    """Decimals of the shortest decimal form of ``value`` (``0.005`` -> 3, ``5.0`` -> 0)."""
    exponent = Decimal(repr(float(value))).normalize().as_tuple().exponent
    return max(0, -int(exponent))


def format_typed(value, integer: bool) -> str:
    """A number as a box shows it: an int, or a float's shortest exact form (``0.5``)."""
    if integer:
        return str(int(value))
    return repr(float(value))


def read_box(text: str, name: str, integer: bool):
    """The number in a box's text (``0.05``, ``1/3``, ``-2``); ValueError naming ``name``."""
    value = read_number(text, name)
    if not integer:
        return value
    if not value.is_integer():
        raise ValueError(f"{name} must be an integer, got {text!r}")
    return int(value)


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
        The slider's range; a typed value outside it widens the range.
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

    def _place_slider(self, value) -> None:
        if self.slider is None or not math.isfinite(value):
            return
        if value < self.slider.start:
            self.slider.start = value
        if value > self.slider.end:
            self.slider.end = value
        self.slider.value = value


def _widget(name: str, value, ranges: dict):
    if isinstance(value, bool):
        return pn.widgets.Checkbox(name=name, value=value)
    if isinstance(value, (int, float)):
        return NumberControl(name, value, ranges.get(name))
    if isinstance(value, (list, tuple)):
        return pn.widgets.TextInput(name=f"{name} (a Python list)", value=repr(list(value)),
                                    width=420, css_classes=[f"dprisk-live-{name}-box"])
    return pn.widgets.TextInput(name=name, value=str(value), width=420,
                                css_classes=[f"dprisk-live-{name}-box"])


def _read(widget, original):
    if isinstance(widget, NumberControl):
        if widget.error is not None:
            raise ValueError(widget.error)
        return widget.value
    if isinstance(original, (list, tuple)):
        try:
            value = ast.literal_eval(widget.value)
        except (ValueError, SyntaxError):
            raise ValueError(f"{widget.name} must be a Python list such as [1, 2], got "
                             f"{widget.value!r}") from None
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{widget.name} must be a list, got {widget.value!r}")
        return list(value)
    return widget.value


def _cell(value) -> str:
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        return f"{float(value):.{TABLE_DIGITS}g}"
    return str(value)


def table_html(numbers_by_label: dict) -> str:
    """The result table as HTML: one row per label, the label and its value escaped.

    Floats show :data:`TABLE_DIGITS` significant digits, other values as ``str``. HTML
    rather than Markdown, where a ``|`` in a label (``P[X1 = m+1 | D]``) splits the cell.
    """
    rows = "".join(f"<tr><th>{html.escape(str(label))}</th>"
                   f"<td>{html.escape(_cell(value))}</td></tr>"
                   for label, value in numbers_by_label.items())
    return ("<table class=\"dprisk-live-table\"><thead><tr><th>quantity</th><th>value</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>")


#: How a message looks: the colours of a "danger" alert, kept as typed (no Markdown).
_MESSAGE_STYLE = ("color: #842029; background: #f8d7da; border: 1px solid #f5c2c7; "
                  "border-radius: 4px; padding: 6px 10px; white-space: pre-wrap; "
                  "overflow-wrap: anywhere")


def message_html(text: str) -> str:
    """A one-line message as HTML that shows exactly its text.

    Escaped and put in an HTML pane, never a Markdown one: ``2**53``, ``__init__``, a path
    ``PATH.py``, ``![](http://...)`` or ``<img ...>`` in a message (which quotes what a
    person typed) show as written, with no emphasis, no automatic link and nothing loaded.
    """
    return (f"<div class=\"dprisk-message-text\" role=\"alert\" style=\"{_MESSAGE_STYLE}\">"
            f"{html.escape(str(text))}</div>")


def _panes(output) -> list:
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    parts = output if isinstance(output, tuple) else (output,)
    panes = []
    for part in parts:
        if isinstance(part, Figure):
            plt.close(part)
            panes.append(pn.pane.Matplotlib(part, format="png", dpi=80, tight=True))
        elif isinstance(part, dict):
            panes.append(pn.pane.HTML(table_html(part), stylesheets=[_TABLE_CSS]))
        elif part is not None:
            panes.append(pn.pane.Markdown(str(part)))
    return panes


class LiveView:
    """Controls bound to a view function; ``layout`` is what the notebook displays.

    Attributes
    ----------
    controls : dict of str to widget
        A :class:`NumberControl` per number, a ``Checkbox`` per bool, a ``TextInput``
        per string or list; setting ``.value`` of one recomputes.
    output : panel.Column
        The view's current output (or the message of bad input).
    last : object
        What ``view`` returned for the current values (None after bad input).
    """

    def __init__(self, view, parameters: dict, ranges: dict | None = None) -> None:
        self.view, self.parameters = view, dict(parameters)
        self.controls = {name: _widget(name, value, ranges or {})
                         for name, value in parameters.items()}
        self.sequencer = Sequencer()
        self.output = pn.Column()
        self.last = None
        for widget in self.controls.values():
            names = ["value", "error"] if isinstance(widget, NumberControl) else ["value"]
            widget.param.watch(self.update, names)
        self.layout = pn.Column(pn.pane.Markdown("**Live controls** (change a value: the "
                                                 "output below updates)"),
                                pn.FlexBox(*self.controls.values()), self.output)
        self.update()

    def values(self) -> dict:
        """The controls' values, read back as the parameters' types."""
        return {name: _read(widget, self.parameters[name])
                for name, widget in self.controls.items()}

    def update(self, *_events) -> None:
        """Recompute at the controls' values and show the result (or the message)."""
        ticket = self.sequencer.next()
        try:
            result = self.view(**self.values())
        except ValueError as err:
            result, error = None, str(err)
        else:
            error = None
        if not self.sequencer.is_current(ticket):
            return
        self.last = result
        if error is not None:
            self.output.objects = [pn.pane.HTML(message_html(error))]
        else:
            self.output.objects = _panes(result)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.layout._repr_mimebundle_(include, exclude)


def live(view, *, ranges: dict | None = None, **parameters) -> LiveView:
    """Live controls for ``view(**parameters)``; display the result in a notebook cell.

    Parameters
    ----------
    view : callable
        ``view(**parameters)`` returning a figure, a dict of numbers, Markdown text, or a
        tuple of these; raises ``ValueError`` on bad input.
    ranges : dict of str to (start, end), optional
        Parameters shown as a slider with a number box over ``[start, end]``.
    **parameters
        The parameters' current values (those of the notebook's parameters cell).

    Returns
    -------
    LiveView
        Computed once at ``parameters``; it updates when a control changes.
    """
    pn.extension(notifications=False)
    return LiveView(view, parameters, ranges)
