"""Fewer and cheaper pytest-xdist messages per test (issue 36).

Loaded by ``tests/conftest.py`` (``pytest_plugins``); does something only in an xdist session.

A worker sends six messages per test (``logstart``, a report each for setup, call and teardown,
``logfinish``, ``runtest_protocol_complete``); execnet serializes each in pure Python, the
controller's receiving thread unserializes it (pure Python too), rebuilds each report and hands
each to the main thread, which runs its hooks. Two changes:

* **Reports that show nothing are not sent.** A setup or teardown that passed with nothing to
  show -- no captured output or log (``sections``), no ``longrepr``, no ``user_properties`` and
  no attribute any plugin added (Hypothesis' statistics, a ``wasxfail``, ...) -- is filed by the
  controller's terminal reporter under the empty category and never shown: it prints no letter,
  counts for no progress and no summary. The worker does not send those two reports
  (:func:`carries_nothing_shown`); every other report, each failure, error, skip, xfail,
  warning and captured output, is sent as before. They do carry each phase's ``duration``,
  which ``--durations`` lists and ``--junitxml`` adds up (and its teardown report closes each
  test case): with either option, or a plugin's report file (:data:`REPORT_WRITERS`), every
  report is sent (:func:`_reports_all_needed`).
* **One message per test.** The worker keeps a test's events and sends them together, pickled
  (C, not execnet's pure-Python serializer), with its ``runtest_protocol_complete``
  (:class:`EventBatches`); the controller unpickles them and hands each to xdist as if it had
  come alone (:func:`pytest_configure_node`), in the same order. The controller learns each
  test's events when the test has ended, no longer phase by phase: what it prints is the same.
  Only where the controller asked for it (``workerinput``), so a worker never sends a batch to a
  controller that would refuse it.
"""

from __future__ import annotations

import pickle

import pytest

#: The event name of a batch of a test's events, and the ``workerinput`` key by which the
#: controller asks its workers for them.
BATCH_EVENT = "dprisk_event_batch"

#: The events a worker keeps until its test has ended (``runtest_protocol_complete``).
TEST_EVENTS = frozenset({"logstart", "testreport", "logfinish", "warning_recorded"})

#: The attributes of a plain :class:`pytest.TestReport` (those its constructor sets); a report
#: with any other (set by a plugin) is always sent.
PLAIN_ATTRIBUTES = frozenset(pytest.TestReport(
    "x", ("x", 0, "x"), {}, "passed", None, "setup").__dict__)

#: Marker of a report serialized as "not sent" (the key is never in a real report's data).
UNSENT = "dprisk-xdist-unsent"


def carries_nothing_shown(report: pytest.TestReport) -> bool:
    """Whether ``report`` is a passed setup or teardown with nothing the controller shows."""
    return (report.when in ("setup", "teardown") and report.outcome == "passed"
            and report.longrepr is None and not report.sections
            and not report.user_properties and report.__dict__.keys() <= PLAIN_ATTRIBUTES)


#: Options (their ``dest``) of plugins that write every report out: ``--junitxml``, and where
#: installed ``--report-log`` (pytest-reportlog) and ``--html`` (pytest-html).
REPORT_WRITERS = ("xmlpath", "report_log", "htmlpath")


def _reports_all_needed(config: pytest.Config) -> bool:
    """Options whose output reads passed setup and teardown reports: ``--durations`` and
    :data:`REPORT_WRITERS`."""
    return (config.getoption("durations", None) is not None
            or any(config.getoption(name, None) for name in REPORT_WRITERS))


class _UnsentReports:
    """Worker-side plugin: the reports of :func:`carries_nothing_shown` serialize to the
    :data:`UNSENT` marker, which :class:`EventBatches` drops."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_to_serializable(self, config, report):
        if isinstance(report, pytest.TestReport) and carries_nothing_shown(report):
            return {UNSENT: True}
        return None


class EventBatches:
    """Replaces a worker's ``WorkerInteractor.sendevent``: drops :data:`UNSENT` reports and,
    when ``batched``, sends a test's :data:`TEST_EVENTS` with its ``runtest_protocol_complete``
    as one :data:`BATCH_EVENT` (any other event first sends what is kept, in order)."""

    def __init__(self, send, batched: bool) -> None:
        self.send = send
        self.batched = batched
        self.kept: list[tuple[str, dict]] = []

    def __call__(self, name: str, **kwargs) -> None:
        if name == "testreport" and UNSENT in kwargs.get("data", ()):
            return
        if not self.batched:
            self.send(name, **kwargs)
        elif name in TEST_EVENTS:
            self.kept.append((name, kwargs))
        elif name == "runtest_protocol_complete":
            self.kept.append((name, kwargs))
            self.flush()
        else:
            self.flush()
            self.send(name, **kwargs)

    def flush(self) -> None:
        """Send the events kept, as one batch."""
        if self.kept:
            events, self.kept = self.kept, []
            self.send(BATCH_EVENT, events=pickle.dumps(events, pickle.HIGHEST_PROTOCOL))


def unbatched(process_from_remote):
    """Wrap a ``WorkerController.process_from_remote``: each event of a :data:`BATCH_EVENT`
    goes to it in turn, as if it had come alone; any other event goes to it as before."""

    def process(eventcall) -> None:
        if type(eventcall) is tuple and eventcall[0] == BATCH_EVENT:
            for event in pickle.loads(eventcall[1]["events"]):
                process_from_remote(event)
        else:
            process_from_remote(eventcall)

    return process


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """In the xdist controller, before ``node`` starts: take its batches apart, and ask for
    them (xdist's ``setup`` registers ``node.process_from_remote`` as the channel's callback
    right after this hook)."""
    if callable(getattr(node, "process_from_remote", None)) and isinstance(
            getattr(node, "workerinput", None), dict):
        node.process_from_remote = unbatched(node.process_from_remote)
        node.workerinput[BATCH_EVENT] = True


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """In an xdist worker (``config.workerinput``): fewer reports unless
    :func:`_reports_all_needed`, batches where the controller asked for them."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return
    interactors = [plugin for plugin in config.pluginmanager.get_plugins()
                   if type(plugin).__name__ == "WorkerInteractor"
                   and callable(getattr(plugin, "sendevent", None))]
    if len(interactors) != 1:  # xdist's internals changed: send everything, as before
        return
    interactors[0].sendevent = EventBatches(interactors[0].sendevent,
                                            batched=bool(workerinput.get(BATCH_EVENT)))
    if not _reports_all_needed(config):
        config.pluginmanager.register(_UnsentReports(), "dprisk-unsent-reports")
