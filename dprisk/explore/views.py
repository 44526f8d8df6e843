"""Panel views of the explorer: controls, the current answer, and its downloads.

A :class:`WhatIfView` owns a few controls (text boxes and sliders), a function that reads them
and returns a :class:`dprisk.explore.results.WhatIf`, and the panes that show it: a message
line, a status line, a table of numbers and a Bokeh plot, with downloads of the numbers (JSON),
the data (netCDF) and the figure (PNG).

Update rules:

- every control change takes a ticket from the view's :class:`~dprisk.explore.inputs.Sequencer`;
  a result is shown only if its ticket is still the newest, so an answer to an older request is
  dropped, never shown as current;
- *fast* views (the exact closed forms and tables, well under 200 ms) compute in the callback;
  *slow* views compute in a worker thread (``loop.run_in_executor``) with the status line and
  a busy indicator saying so, and the old numbers marked as the previous input's; a request
  overtaken by a newer one while it waits for the pool is dropped without computing, and a
  client address has one slow computation in the pool at a time (:func:`_client_turn`);
- a view with a ``size`` function (:mod:`dprisk.explore.limits`) has each request sized
  first, on the event loop, from the parameters alone: a request above the limits is refused
  at once with one message and never reaches the pool;
- bad input (text in a number box, a prior file that does not load, a value out of range)
  shows one line in the page and marks the shown numbers stale; the server keeps serving;
- the downloads are of the current result only: with none (before the first answer, after
  bad input, which clears the numbers and says "no current result") their buttons are
  disabled, never a download of an empty file or of the previous input's numbers.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import io
import logging
import math
import os
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from types import SimpleNamespace

import panel as pn

from dprisk.explore.inputs import Sequencer
from dprisk.explore.notebook import message_html

__all__ = ["WhatIfView", "client_of", "format_number", "set_max_jobs"]

_LOG = logging.getLogger(__name__)
#: The server-wide pool of slow computations (:func:`set_max_jobs`; default: the cores).
_POOL: ThreadPoolExecutor | None = None


def set_max_jobs(n: int | None = None) -> None:
    """Run at most ``n`` slow computations at once, server-wide (default: the core count).

    Requests beyond ``n`` wait in the pool's queue; the event loop never computes them.
    """
    global _POOL
    _POOL = ThreadPoolExecutor(max_workers=n or os.cpu_count() or 1,
                               thread_name_prefix="dprisk-view")


def _pool() -> ThreadPoolExecutor:
    if _POOL is None:
        set_max_jobs()
    return _POOL


#: Each client address's turn at the pool, ``{client: [asyncio.Lock, requests holding or
#: awaiting it]}`` (on the event loop; an entry goes with its last request).
_TURNS: dict = {}


def client_of(doc) -> str | None:
    """The client address of a served session's document (None outside a server).

    As the page-load limit counts it (:func:`dprisk.explore.access.client_address`).
    """
    request = getattr(getattr(doc, "session_context", None), "request", None)
    if request is None:
        return None
    from dprisk.explore.access import client_address

    return client_address(SimpleNamespace(request=request))


@contextlib.asynccontextmanager
async def _client_turn(client: str | None):
    """Hold ``client``'s turn: one slow computation of a client address in the pool at once.

    So one visitor's requests (many pages, many views) take at most one of the pool's
    threads, and another visitor's request starts as soon as a thread is free; before, the
    pool served requests in arrival order, and one client's queue held every thread.
    """
    if client is None:
        yield
        return
    entry = _TURNS.setdefault(client, [asyncio.Lock(), 0])
    entry[1] += 1
    try:
        async with entry[0]:
            yield
    finally:
        entry[1] -= 1
        if entry[1] == 0:
            del _TURNS[client]


def format_number(value) -> str:
    """A number as shown in the page: 10 significant digits (ints and strings unchanged)."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    return f"{value:.10g}" if math.isfinite(value) else str(value)


class WhatIfView:
    """One tab of the explorer.

    Parameters
    ----------
    name : str
        Short name, used in element ids (``{name}-numbers``) and download file names.
    title : str
        The tab's title.
    controls : dict of str to panel widget
        The inputs, by the keyword name ``compute`` receives.
    compute : callable
        ``compute(**values) -> WhatIf`` from the raw widget values; raises ``ValueError``
        (one line naming the control) on bad input.
    plot : CurvePlot or TwoLevelPlot
        The Bokeh plot updated from each result (:mod:`dprisk.explore.plots`).
    slow : bool
        Compute in a worker thread instead of the callback.
    extra : list, optional
        More panes shown under the figure (e.g. the sampling check).
    size : callable, optional
        ``size(**values)``: raises ``ValueError`` (one line) if the request would exceed the
        limits (:mod:`dprisk.explore.limits`); cheap, called before ``compute``.
    """

    def __init__(self, name: str, title: str, controls: dict, compute, plot, *,
                 slow: bool = False, extra: list | None = None, size=None) -> None:
        self.name, self.title, self.plot = name, title, plot
        self.controls, self.compute, self.slow = controls, compute, slow
        self.size = size
        self.sequencer = Sequencer()
        self.current = None  # the WhatIf shown as current
        self.message = pn.pane.HTML("", visible=False, css_classes=["dprisk-message"],
                                    name=f"{name}-message")  # text, never Markdown
        self.status = pn.pane.HTML("", css_classes=["dprisk-status"])
        self.busy = pn.indicators.LoadingSpinner(value=False, size=20)
        self.numbers = pn.pane.HTML("", css_classes=["dprisk-numbers"], min_width=320)
        self.figure = pn.pane.Bokeh(plot.figure)
        self.figure_box = pn.Column(self.figure)  # dimmed while its plot is not current
        self.downloads = [  # disabled while there is no current result (see _finish)
            pn.widgets.FileDownload(callback=self._download("json"), filename=f"{name}.json",
                                    label="numbers (JSON)", button_type="light"),
            pn.widgets.FileDownload(callback=self._download("netcdf"), filename=f"{name}.nc",
                                    label="data (netCDF)", button_type="light"),
            pn.widgets.FileDownload(callback=self._download("png"), filename=f"{name}.png",
                                    label="figure (PNG)", button_type="light"),
        ]
        for button in self.downloads:
            button.disabled = True
        for key, widget in controls.items():
            widget.css_classes = [*widget.css_classes, f"dprisk-{name}-{key}"]  # for tests
            widget.param.watch(self._changed if slow else self._refresh_sync, "value")
        self.layout = pn.Row(
            pn.Column(*controls.values(), self.message, width=300),
            pn.Column(pn.Row(self.busy, self.status), self.numbers, self.figure_box,
                      pn.Row(*self.downloads), *(extra or [])),
            name=title,
        )

    def values(self) -> dict:
        """The controls' raw values, by keyword name."""
        return {key: widget.value for key, widget in self.controls.items()}

    # -- updates -------------------------------------------------------------------------
    def refresh(self) -> None:
        """Compute at the current values, in the calling thread (first render, benchmarks)."""
        ticket = self.sequencer.next()
        self._finish(ticket, *self._attempt(self.values()))

    def _refresh_sync(self, *_events) -> None:
        ticket = self.sequencer.next()
        self._show(pn.state.curdoc, ticket, *self._attempt(self.values()))

    def _show(self, doc, ticket: int, result, error) -> None:
        """Show an answer; in a served session, from a next-tick callback.

        Bokeh changes a served document only while holding its lock; Panel runs some widget
        callbacks without it (a text box's Enter), so the plot's new data is applied from a
        next-tick callback, which holds the lock.
        """
        if doc is not None and doc.session_context is not None:
            doc.add_next_tick_callback(partial(self._finish, ticket, result, error))
        else:
            self._finish(ticket, result, error)

    def _changed(self, *_events) -> None:
        """A control of a slow view changed: compute off the event loop when served.

        Outside a server (a test, a notebook without one) it computes at once.
        """
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None:
            doc.add_next_tick_callback(self.refresh_off_loop)
        else:
            self.refresh()

    async def refresh_off_loop(self) -> None:
        """Compute at the current values in a worker thread; show it if still current."""
        ticket = self.sequencer.next()
        values = self.values()
        self.busy.value = True
        self.status.object = (f"<span class='dprisk-stale'>computing request #{ticket}; the "
                              "numbers below are for the previous input</span>")
        self.figure_box.styles = {"opacity": "0.3"}
        doc = pn.state.curdoc  # the session's document (None outside a server)
        refused = self._refusal(values)
        if refused is not None:  # above the limits: refused at once, nothing sent to the pool
            self._show(doc, ticket, None, refused)
            return
        loop = asyncio.get_running_loop()
        async with _client_turn(client_of(doc)):
            outcome = await loop.run_in_executor(_pool(), self._attempt_if_current, ticket,
                                                 values)
        self._show(doc, ticket, *outcome)

    def _attempt_if_current(self, ticket: int, values: dict):
        """:meth:`_attempt`, unless a newer request of this view came while it waited.

        A superseded request is never shown, so it is not computed either (``(None, None)``,
        dropped by :meth:`_finish`): before, each change queued a full computation in the
        server-wide pool, and five quick changes of a view kept every visitor's slow views
        waiting for all five.
        """
        if not self.sequencer.is_current(ticket):
            return None, None
        return self._attempt(values)

    def _refusal(self, values: dict) -> str | None:
        """The one-line refusal of a request above the limits (None: it may run).

        Whatever the sizing raises ends the request with a message (:meth:`_failure`).
        """
        if self.size is None:
            return None
        try:
            self.size(**values)
        except Exception as err:
            return self._failure(err)
        return None

    def _attempt(self, values: dict):
        """``(result, None)`` or ``(None, message)``; never raises.

        So no request is left computing (a stuck busy indicator) or showing the previous
        numbers as current.
        """
        refused = self._refusal(values)
        if refused is not None:
            return None, refused
        try:
            return self.compute(**values), None
        except Exception as err:
            return None, self._failure(err)

    def _failure(self, err: Exception) -> str:
        """The page's one line for ``err``.

        A ``ValueError``'s own (bad input, a limit); any other exception is a programming
        error, logged with its traceback on the server and shown by its type only.
        """
        if isinstance(err, ValueError):
            return str(err)
        _LOG.error("dprisk explore: view %r failed at %r", self.name, self.values(),
                   exc_info=err)
        return (f"{self.title}: this request failed ({type(err).__name__}); the server's log "
                "has the details")

    def _finish(self, ticket: int, result, error: str | None) -> None:
        if not self.sequencer.is_current(ticket):
            return  # a newer request is pending or shown: this answer is stale
        self.busy.value = False
        if error is not None:
            self.message.object = message_html(error)
            self.message.visible = True
            self.current = None
            self.status.object = (f"<span class='dprisk-stale'>request #{ticket}: bad input; "
                                  "no current result</span>")
            self.numbers.object = ""
            self.figure_box.styles = {"opacity": "0.3"}  # the previous input's plot, dimmed
            self._enable_downloads(False)
            return
        self.message.visible = False
        self.message.object = ""
        self.current = result
        self.status.object = f"<span class='dprisk-current'>current: request #{ticket}</span>"
        self.numbers.object = self._table(result.numbers)
        self.plot.update(result)
        self.figure_box.styles = {"opacity": "1"}
        self._enable_downloads(True)

    def _enable_downloads(self, enabled: bool) -> None:
        """Enable the download buttons with a current result, disable them without one."""
        for button in self.downloads:
            button.disabled = not enabled

    def _table(self, numbers: dict) -> str:
        rows = "".join(
            f"<tr><th>{html.escape(key)}</th><td id='{self.name}-{key}' data-name='{key}'>"
            f"{html.escape(format_number(value))}</td></tr>"
            for key, value in numbers.items()
        )
        return f"<table class='dprisk-table' id='{self.name}-numbers'>{rows}</table>"

    def _download(self, kind: str):
        """The callback of a download button: the current result's ``kind`` as a file.

        The buttons are disabled while there is no current result; a click that reached the
        server just before that (``current`` None) raises ``ValueError`` rather than send an
        empty file or the previous input's numbers.
        """
        def callback():
            if self.current is None:
                raise ValueError(f"{self.title}: no current result to download (bad input)")
            data = {"json": self.current.to_json, "netcdf": self.current.to_netcdf,
                    "png": self.current.to_png}[kind]()
            return io.BytesIO(data)

        return callback
