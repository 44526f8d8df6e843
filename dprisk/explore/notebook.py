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
instead of a result; so does any other exception of the view, with its type, which is then
raised again (:meth:`LiveView.update`); a stale output is never shown as current
(:class:`dprisk.explore.inputs.Sequencer`).

Number boxes are text boxes (:class:`NumberControl`), read as the served explorer reads its
boxes (:func:`dprisk.explore.inputs.read_box`: ``0.05``, ``1/3``, integers exactly). They
apply on Enter and when they lose focus, in JupyterLab as in a plain page: Bokeh's spinner
box commits only on the browser's ``change`` event, and JupyterLab's Enter shortcut (enter a
cell's edit mode) cancels the key press inside an output, so Enter did nothing there; a text
box also applies on Enter from its key-up event, which no shortcut cancels. A slider's value
is rounded to the precision of its step (:func:`slider_step`, a 1, 2 or 5 times a power of
ten) before it is shown or used, and the slider shows no tooltip (the box beside it shows
the value).

``view`` may return a Matplotlib figure (closed in pyplot after drawing, so the inline
backend does not show it twice), a dict of numbers (an HTML table: any label, ``|``
included, is shown as written), a string (Markdown), or a tuple of these.

A page with no kernel behind it (the documentation site, whose notebooks ``make docs``
executes) cannot run controls: with the environment variable ``DPRISK_LIVE=static``
(:data:`STATIC_ENV`; ``docs/conf.py`` sets it for the kernels it starts), :func:`live` returns
a :class:`StaticView`, which shows the view at the parameters cell's values as plain outputs
(the figure as a PNG, the numbers as an HTML table) under a line saying so, and never imports
Panel. Panel's outputs are its browser loaders and views (``application/vnd.holoviews_*``),
which a static page cannot run and Sphinx refuses (``skipping unknown output mime type``).
"""

from __future__ import annotations

import ast
import html
import math
import numbers
import sys
from decimal import Decimal

from dprisk.explore.inputs import Sequencer

#: NumberControl is in dprisk.explore.live_widgets (with Panel), given by __getattr__ below.
__all__ = ["LIVE_FIGURE_DPI", "STATIC_ENV", "LiveView", "NumberControl",  # noqa: F822
           "StaticView", "live", "message_html", "output_parts", "slider_step", "static_bundles",
           "table_html"]

#: Slider positions over a range (at most; the step is rounded up to 1, 2 or 5 x 10^k).
SLIDER_POSITIONS = 1000
#: Significant digits of a float in the result table.
TABLE_DIGITS = 6
#: Resolution of a view's figure in the live output and in a static one (PNG, dots per inch).
LIVE_FIGURE_DPI = 80
#: The environment variable read by :func:`live` (through :mod:`dprisk.runtime.settings`):
#: ``static`` shows the view without controls (:class:`StaticView`); unset, empty or ``live``,
#: the controls.
STATIC_ENV = "DPRISK_LIVE"
#: The line above a static view's output.
STATIC_NOTE = ("The output at the parameters cell's values. In a notebook (JupyterLab, VS Code) "
               "this cell shows controls, and the output follows them.")
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


def _read_text(label: str, text: str, original):
    """A list box's value: ``text`` read as a Python list (``label``: the box's name)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ValueError(f"{label} must be a Python list such as [1, 2], got "
                         f"{text!r}") from None
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{label} must be a list, got {text!r}")
    return list(value)


def _read(widget, original):
    """The value of a control, as the type of the parameter's ``original`` value."""
    from dprisk.explore.live_widgets import NumberControl

    if isinstance(widget, NumberControl):
        if widget.error is not None:
            raise ValueError(widget.error)
        return widget.value
    if isinstance(original, (list, tuple)):
        return _read_text(widget.name, widget.value, original)
    return widget.value


def _plain(value):
    """A parameter as its control holds it: a NumPy scalar as its Python value.

    ``np.int64(3)``, ``np.float32(0.5)``, ``np.bool_(True)`` become the ``int``, ``float``
    or ``bool`` (``.item()``), which get a number box or a check box; anything else is
    returned as it is.
    """
    if getattr(value, "ndim", None) == 0 and callable(getattr(value, "item", None)):
        return value.item()
    return value


def _initial(name: str, value):
    """What :func:`_read` gives for the control of ``name`` before anyone changes it.

    The controls are those :func:`dprisk.explore.live_widgets.widget` builds: a checkbox
    and a number control keep the value, a list box holds ``repr(list(value))`` and a
    text box ``str(value)``.
    """
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return _read_text(f"{name} (a Python list)", repr(list(value)), value)
    return str(value)


def _close_figures(output) -> None:
    """Close in pyplot the figures a view returned (as the output panes do)."""
    figure = sys.modules.get("matplotlib.figure")  # a view that made one imported it
    if figure is None:
        return
    parts = output if isinstance(output, tuple) else (output,)
    for part in parts:
        if isinstance(part, figure.Figure):
            import matplotlib.pyplot as plt

            plt.close(part)


def _pyplot_figures() -> set:
    """The numbers of pyplot's open figures (none if pyplot was never imported)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    return set(pyplot.get_fignums()) if pyplot is not None else set()


def _close_figures_since(opened: set) -> None:
    """Close the pyplot figures opened since ``opened`` (:func:`_pyplot_figures`).

    A view that made its figure and then refused its input leaves it open in pyplot; the
    inline backend would show it under the next cell a person runs.
    """
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    for number in set(pyplot.get_fignums()) - opened:
        pyplot.close(number)


def _in_kernel() -> bool:
    """True inside an IPython kernel (JupyterLab, VS Code, papermill, nbclient)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


class LiveView:
    """Controls bound to a view function; ``layout`` is what the notebook displays.

    The view is computed when the object is made. The Panel objects (``controls``,
    ``output``, ``layout``) are built then in a notebook kernel, elsewhere (a plain
    ``python notebook.py``, which shows nothing) when one of them is first used; they are
    the same either way, and the view is not computed again to build them.

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

    def __init__(self, view, parameters: dict, ranges: dict | None = None, *,
                 build: bool = True) -> None:
        self.view = view
        self.parameters = {name: _plain(value) for name, value in parameters.items()}
        self.ranges = dict(ranges or {})
        self.sequencer = Sequencer()
        self.last = None
        self._built = False
        self._shown = (None, None)  # (result, error) until the output pane exists
        if build:
            self._build()
        self.update()

    def __getattr__(self, name: str):
        if name in ("controls", "output", "layout") and not self.__dict__.get("_built", True):
            self._build()
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _build(self) -> None:
        import panel as pn

        from dprisk.explore import live_widgets

        pn.extension(notifications=False)
        self.controls = {name: live_widgets.widget(name, value, self.ranges)
                         for name, value in self.parameters.items()}
        self.output = pn.Column()
        for widget in self.controls.values():
            names = (["value", "error"] if isinstance(widget, live_widgets.NumberControl)
                     else ["value"])
            widget.param.watch(self.update, names)
        self.layout = pn.Column(pn.pane.Markdown("**Live controls** (change a value: the "
                                                 "output below updates)"),
                                pn.FlexBox(*self.controls.values()), self.output)
        self._built = True
        self._show(*self._shown)

    def values(self) -> dict:
        """The controls' values, read back as the parameters' types."""
        if not self._built:
            return {name: _initial(name, value) for name, value in self.parameters.items()}
        return {name: _read(widget, self.parameters[name])
                for name, widget in self.controls.items()}

    def update(self, *_events) -> None:
        """Recompute at the controls' values and show the result (or the message).

        A ``ValueError`` (bad input) shows its message. Any other exception (a wrong type
        in a list box, such as ``['a']`` for numbers, which the API refuses with a
        ``TypeError``; a failure of the view) shows one line, ``TypeName: message``, and is
        raised again, so its traceback is reported (in the cell for the first computation,
        in the kernel's log for a control's change); the previous result is never left
        shown as the current one.
        """
        ticket = self.sequencer.next()
        failure = None
        opened = _pyplot_figures()
        try:
            result = self.view(**self.values())
        except ValueError as err:
            result, error = None, str(err)
        except Exception as err:
            result, error, failure = None, f"{type(err).__name__}: {err}", err
        else:
            error = None
        if error is not None:  # figures the view made before it failed: never shown
            _close_figures_since(opened)
        if not self.sequencer.is_current(ticket):
            return
        self.last = result
        self._show(result, error)
        if failure is not None:
            raise failure

    def _show(self, result, error) -> None:
        if not self._built:
            _close_figures(result)  # as the panes would: the inline backend shows none twice
            self._shown = (result, error)
            return
        self._shown = (None, None)
        from dprisk.explore.live_widgets import panes, settle_sliders

        settle_sliders(self.controls, accepted=error is None)  # a refused value: no widening
        if error is not None:
            import panel as pn

            self.output.objects = [pn.pane.HTML(message_html(error))]
        else:
            self.output.objects = panes(result)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.layout._repr_mimebundle_(include, exclude)


def _check_live_arguments(view, ranges, parameters: dict) -> None:
    """The checks of :func:`live` (each message names ``view`` or the ``ranges`` entry)."""
    if not callable(view):
        raise TypeError(f"view must be a callable view(**parameters), got {view!r}")
    if ranges is None:
        return
    if not isinstance(ranges, dict):
        raise TypeError(f"ranges must be a dict {{name: (start, end)}}, got {ranges!r}")
    for name, bounds in ranges.items():
        value = parameters.get(name)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"ranges[{name!r}] names no numeric parameter of the view (the "
                             f"parameters: {', '.join(parameters) or 'none'})")
        try:
            start, end = (float(b) for b in bounds)
        except (TypeError, ValueError):
            raise ValueError(f"ranges[{name!r}] must be two numbers (start, end), got "
                             f"{bounds!r}") from None
        if not (math.isfinite(start) and math.isfinite(end) and start < end):
            raise ValueError(f"ranges[{name!r}] must be finite with start < end, got {bounds!r}")


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
        Computed once at ``parameters``; it updates when a control changes. Outside a
        notebook kernel its Panel objects are built when first used (Panel is not imported
        by a script that never shows them). With ``DPRISK_LIVE=static``
        (:data:`STATIC_ENV`) a :class:`StaticView`: the output without controls.

    Raises
    ------
    dprisk.runtime.settings.SettingError
        A ``ValueError``: ``DPRISK_LIVE`` set to something other than ``live`` or ``static``
        (:mod:`dprisk.runtime.settings`, where every ``DPRISK_*`` variable is read).
    TypeError, ValueError
        ``view`` not callable; a ``ranges`` entry that names no numeric parameter or is not
        two finite numbers ``start < end`` (naming the entry), checked before any control
        is built.
    """
    from dprisk.runtime.settings import setting

    _check_live_arguments(view, ranges, parameters)

    if setting(STATIC_ENV) == "static":
        return StaticView(view, parameters, ranges, build=False)
    return LiveView(view, parameters, ranges, build=_in_kernel())


def output_parts(output) -> list[tuple[str, object]]:
    """What a view returned, part by part, as the live and the static outputs show it.

    For each part of ``output`` (a tuple's parts in order; ``None`` skipped): a figure as
    ``("png", bytes)`` (closed in pyplot; drawn at :data:`LIVE_FIGURE_DPI` and cropped by
    :func:`~dprisk.validation.figures.png.png_bytes`, as the report's figures are), a dict as
    ``("table", dict)`` (shown by :func:`table_html`), anything else as ``("markdown", str)``.
    """
    figure = sys.modules.get("matplotlib.figure")  # a view that made one imported it
    parts = []
    for part in output if isinstance(output, tuple) else (output,):
        if figure is not None and isinstance(part, figure.Figure):
            import matplotlib.pyplot as plt

            from dprisk.validation.figures.png import png_bytes

            plt.close(part)
            parts.append(("png", png_bytes(part, LIVE_FIGURE_DPI)))
        elif isinstance(part, dict):
            parts.append(("table", part))
        elif part is not None:
            parts.append(("markdown", str(part)))
    return parts


def static_bundles(output, error: str | None = None) -> list[dict]:
    """What a :class:`StaticView` displays: one MIME bundle per output, under :data:`STATIC_NOTE`.

    The note as HTML; then, for ``error``, :func:`message_html`; else each of
    :func:`output_parts`: a figure as ``image/png``, a table as :func:`table_html` with its
    style, Markdown as ``text/markdown``. Each bundle has a ``text/plain`` form too.
    """
    bundles = [{"text/html": f"<p class=\"dprisk-static-note\"><em>{html.escape(STATIC_NOTE)}"
                             "</em></p>", "text/plain": STATIC_NOTE}]
    if error is not None:
        return [*bundles, {"text/html": message_html(error), "text/plain": str(error)}]
    for kind, value in output_parts(output):
        if kind == "png":
            bundles.append({"image/png": value, "text/plain": "<Figure>"})
        elif kind == "table":
            bundles.append({"text/html": f"<style>{_TABLE_CSS}</style>{table_html(value)}",
                            "text/plain": "\n".join(f"{label}: {_cell(number)}"
                                                    for label, number in value.items())})
        else:
            bundles.append({"text/markdown": value, "text/plain": value})
    return bundles


class StaticView(LiveView):
    """A :class:`LiveView` shown as its output at the parameters' values, with no controls.

    What :func:`live` returns under ``DPRISK_LIVE=static`` (:data:`STATIC_ENV`): for a page
    with no kernel behind it, such as the documentation site. Displayed in IPython, it
    publishes :func:`static_bundles` of the view's output (or of its message), one display
    output each, and imports no Panel; ``last`` and ``values()`` are those of a
    :class:`LiveView` whose controls nobody moved.
    """

    def _ipython_display_(self) -> None:
        from IPython.display import display

        for bundle in static_bundles(*self._shown):
            display(bundle, raw=True)


def __getattr__(name: str):
    if name == "NumberControl":  # in dprisk.explore.live_widgets, with Panel
        from dprisk.explore.live_widgets import NumberControl

        return NumberControl
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
