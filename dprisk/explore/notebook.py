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
list box, a value the view refuses with ``ValueError``) shows one line instead of a result;
a stale output is never shown as current (:class:`dprisk.explore.inputs.Sequencer`).

``view`` may return a Matplotlib figure (closed in pyplot after drawing, so the inline
backend does not show it twice), a dict of numbers (a table), a string (Markdown), or a tuple
of these.
"""

from __future__ import annotations

import ast
import html

import panel as pn

from dprisk.explore.inputs import Sequencer

__all__ = ["LiveView", "live"]


def _widget(name: str, value, ranges: dict):
    if name in ranges:
        start, end = ranges[name]
        if isinstance(value, int) and not isinstance(value, bool):
            return pn.widgets.EditableIntSlider(name=name, start=int(start), end=int(end),
                                                value=value, width=280)
        return pn.widgets.EditableFloatSlider(name=name, start=float(start), end=float(end),
                                              value=float(value), step=(end - start) / 1000,
                                              width=280)
    if isinstance(value, bool):
        return pn.widgets.Checkbox(name=name, value=value)
    if isinstance(value, int):
        return pn.widgets.IntInput(name=name, value=value, width=200)
    if isinstance(value, float):
        return pn.widgets.FloatInput(name=name, value=value, width=200)
    if isinstance(value, (list, tuple)):
        return pn.widgets.TextInput(name=f"{name} (a Python list)", value=repr(list(value)),
                                    width=420)
    return pn.widgets.TextInput(name=name, value=str(value), width=420)


def _read(widget, original):
    if isinstance(original, (list, tuple)):
        try:
            value = ast.literal_eval(widget.value)
        except (ValueError, SyntaxError):
            raise ValueError(f"{widget.name} must be a Python list such as [1, 2], got "
                             f"{widget.value!r}") from None
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{widget.name} must be a list, got {widget.value!r}")
        return list(value)
    if isinstance(original, float) and widget.value is None:
        raise ValueError(f"{widget.name} must be a number")
    return widget.value


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
            rows = "\n".join(f"| {k} | {v:.6g} |" if isinstance(v, float) else f"| {k} | {v} |"
                             for k, v in part.items())
            panes.append(pn.pane.Markdown(f"| quantity | value |\n|---|---|\n{rows}"))
        elif part is not None:
            panes.append(pn.pane.Markdown(str(part)))
    return panes


class LiveView:
    """Controls bound to a view function; ``layout`` is what the notebook displays.

    Attributes
    ----------
    controls : dict of str to widget
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
            widget.param.watch(self.update, "value")
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
            self.output.objects = [pn.pane.Alert(html.escape(error), alert_type="danger")]
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
