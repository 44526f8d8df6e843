"""The "check by sampling" panel of the two-level view.

A button starts a :class:`dprisk.explore.jobs.SamplingJob` (exact Gibbs, one chain at a time,
in a worker process) at the two-level view's current values; a periodic callback on the
page's event loop copies the job's progress into a progress bar, and when the job is done
shows ``az.summary`` for X1 and X2, the verdict of the convergence report and its trace and
rank plots. "Cancel" kills the job's worker at once, and so does the page going away: the
same periodic callback cancels the job as soon as the session has no connection left (a
closed tab, a lost network), without waiting for Bokeh to discard the session (15 s and
more); the session's on-destroy callback cancels it too. The panel's own
:class:`~dprisk.explore.inputs.Sequencer` makes sure that a job started before a newer one
(or before the controls changed) is never shown as current: its output is labelled with the
release it was run at, and the result of a superseded job is dropped. A change of the
two-level view's controls cancels a running job and hides a shown result, the status saying
it was for the previous input.
"""

from __future__ import annotations

import html

import panel as pn

from dprisk.explore.inputs import (
    PriorChoice,
    PriorPolicy,
    Sequencer,
    read_count,
    read_scenario,
)
from dprisk.explore.jobs import SamplingJob
from dprisk.explore.views import client_of

__all__ = ["POLL_MS", "SamplingPanel"]

#: How often the page polls a running job (milliseconds).
POLL_MS = 200


class SamplingPanel:
    """Controls and output of the sampling check (attach it to a two-level view)."""

    def __init__(self, policy: PriorPolicy | None = None) -> None:
        self.policy = policy or PriorPolicy()
        self.sequencer = Sequencer()
        self.job: SamplingJob | None = None
        self.view = None
        self._doc = None  # the page's document, while a job runs
        self._poll = None
        self._watching = False
        self.draws = pn.widgets.TextInput(name="draws per chain", value="5000", width=120,
                                          css_classes=["dprisk-sampling-draws"])
        self.chains = pn.widgets.TextInput(name="chains", value="4", width=80)
        self.seed = pn.widgets.TextInput(name="random_seed", value="1", width=100)
        self.start_button = pn.widgets.Button(name="Check by sampling (Gibbs)",
                                              button_type="primary")
        self.cancel_button = pn.widgets.Button(name="Cancel", button_type="warning",
                                               disabled=True)
        self.progress = pn.indicators.Progress(value=0, max=100, width=300, visible=False)
        self.status = pn.pane.HTML("", css_classes=["dprisk-sampling-status"])
        self.summary = pn.pane.DataFrame(None, visible=False)
        self.trace = pn.pane.PNG(None, width=640, visible=False)
        self.rank = pn.pane.PNG(None, width=640, visible=False)
        self.start_button.on_click(self._start)
        self.cancel_button.on_click(self._cancel)
        self.layout = pn.Card(
            pn.Row(self.draws, self.chains, self.seed),
            pn.Row(self.start_button, self.cancel_button, self.progress),
            self.status, self.summary, self.trace, self.rank,
            title="Check by sampling", collapsed=False, width=700,
        )

    def attach(self, view) -> None:
        """Sample at ``view``'s values (a two-level :class:`WhatIfView`).

        A change of any of the view's controls supersedes the check (:meth:`_inputs_changed`).
        """
        self.view = view
        for widget in view.controls.values():
            widget.param.watch(self._inputs_changed, "value")

    def _inputs_changed(self, *_events) -> None:
        """The view's inputs changed: the check running or shown is for the previous ones.

        A running job is cancelled; its result, or the result shown, is no longer current:
        the summary and plots are hidden and the status says so.
        """
        job = self.job
        if job is None:
            return
        self.sequencer.next()  # the job's ticket is no longer the newest: never shown
        if not job.finished:
            job.cancel()
        for pane in (self.summary, self.trace, self.rank):
            pane.visible = False
        self.progress.visible = False
        self.status.object = (f"<span class='dprisk-stale'>sampling #{job.ticket} was for the "
                              "previous input (stopped if it was running); check again for "
                              "the current one</span>")

    def _inputs(self):
        values = self.view.values()
        scenario = read_scenario(values, self.policy)
        release = [read_count(values[k], k.replace("_star", "*"))
                   for k in ("x1_star", "x2_star", "y1_star")]
        # the prior as its text (read and checked above): the worker reads it again under
        # the same policy (a model file's prior object cannot be sent to another process)
        prior = PriorChoice(self.policy, str(values["prior"]), values.get("prior_file") or None,
                            known=scenario["m"])
        params = {"rho1": scenario["rho1"], "rho2": scenario["rho2"], "d": scenario["d"],
                  "p": scenario["p"], "known": scenario["m"], "prior": prior}
        seed_text = self.seed.value.strip()
        seed = read_count(seed_text, "random_seed", minimum=0) if seed_text else None
        return release, params, {"draws": read_count(self.draws.value, "draws", minimum=1),
                                 "chains": read_count(self.chains.value, "chains", minimum=2),
                                 "random_seed": seed}

    def _start(self, _event=None) -> None:
        ticket = self.sequencer.next()
        try:  # sized (memory, work) before anything runs: refused at once
            if self.view.size is not None:  # the release's tables, as the view sizes them
                self.view.size(**self.view.values())
            release, params, options = self._inputs()
            job = SamplingJob(release, params, ticket=ticket,
                              client=client_of(pn.state.curdoc), **options)
        except ValueError as err:
            self.status.object = f"<span class='dprisk-error'>{html.escape(str(err))}</span>"
            return
        if self.job is not None:  # one sampling job per session
            self.job.cancel()
        self._cancel_on_close()
        self._doc = pn.state.curdoc
        self.job = job.start()
        self.cancel_button.disabled = False
        self.progress.visible, self.progress.value = True, 0
        for pane in (self.summary, self.trace, self.rank):
            pane.visible = False
        self.status.object = (f"sampling #{ticket}: {options['chains']} chains x "
                              f"{options['draws']} draws at D = {tuple(release)} ...")
        if self._poll is None:
            self._poll = pn.state.add_periodic_callback(self._check, period=POLL_MS)

    def _cancel_on_close(self) -> None:
        """Cancel the running job when the page's session ends (closed tab, lost network)."""
        doc = pn.state.curdoc
        if self._watching or doc is None or doc.session_context is None:
            return
        self._watching = True
        doc.on_session_destroyed(lambda _context: self.job and self.job.cancel())

    def _cancel(self, _event=None) -> None:
        if self.job is not None:
            self.job.cancel()
            self.status.object = f"sampling #{self.job.ticket}: cancelling ..."

    def _page_gone(self) -> bool:
        """Whether the served page that started the job has no connection left."""
        context = getattr(self._doc, "session_context", None)
        session = getattr(context, "session", None)
        return session is not None and (session.destroyed or session.connection_count == 0)

    def _check(self) -> None:
        job = self.job
        if job is None:
            return
        if not job.finished and self._page_gone():  # a closed tab: stop the job now
            job.cancel()
        self.progress.value = int(100 * job.progress)
        if not job.finished:
            return
        self._stop_polling()
        self.cancel_button.disabled = True
        if not self.sequencer.is_current(job.ticket):
            return
        if job.status == "cancelled":
            self.status.object = f"sampling #{job.ticket}: cancelled"
        elif job.status == "failed":
            self.status.object = (f"<span class='dprisk-error'>sampling #{job.ticket} failed: "
                                  f"{html.escape(job.error or '')}</span>")
        else:
            self._show(job)

    def _show(self, job: SamplingJob) -> None:
        report = job.report
        verdict = "converged" if report.converged else "NOT converged"
        self.status.object = (
            f"<span class='dprisk-current'>sampling #{job.ticket} at D = {job.release}: "
            f"P[X1 = m+1 | D] = {report.posterior:.4f} &plusmn; {report.posterior_mcse:.4f} "
            f"(MCSE); {verdict}: {html.escape('; '.join(report.reasons))}</span>")
        self.summary.object = job.summary
        self.trace.object = job.figures["trace"]
        self.rank.object = job.figures["rank"]
        for pane in (self.summary, self.trace, self.rank):
            pane.visible = True

    def _stop_polling(self) -> None:
        if self._poll is not None:
            self._poll.stop()
            self._poll = None
