"""Fewer and cheaper xdist messages per test (tests/xdist_messages.py, issue 36).

A small pytest session on xdist workers, with the plugin on two and without it on one, on a module
of every kind of outcome: the controller's output (every failure's and error's text, captured
output, skips, xfails, the warning, the short summary and the final counts) is the same, while the
controller receives fewer setup and teardown reports; with ``--durations`` or a report file a
worker sends them all.
A worker's batches give the controller each event it kept, in order. The controller's count of
a worker's pending tests (tests/conftest.py's scheduler) is xdist's.
"""

import random
import re
import subprocess
import sys
import types
from pathlib import Path

import xdist_messages
from xdist_messages import BATCH_EVENT, UNSENT, EventBatches, _reports_all_needed, unbatched

#: A test of each outcome: passed, failed, error in setup, error in teardown, skipped in the
#: call and by a mark, xfailed, xpassed, output printed before a failure, output printed in a
#: passing test's setup and teardown, a warning, a ``record_property``.
CASES = '''
import warnings
import pytest

@pytest.fixture
def broken_setup():
    raise RuntimeError("setup breaks")

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown breaks")

@pytest.fixture
def noisy():
    print("printed in setup")
    yield
    print("printed in teardown")

@pytest.fixture
def recorded(record_property):
    record_property("answer", 42)

def test_pass():
    pass

def test_fail():
    assert 1 == 2

def test_setup_error(broken_setup):
    pass

def test_teardown_error(broken_teardown):
    pass

def test_skip():
    pytest.skip("skipped in the call")

@pytest.mark.skip(reason="skipped by its mark")
def test_skip_mark():
    pass

@pytest.mark.xfail(reason="expected to fail")
def test_xfail():
    assert False

@pytest.mark.xfail(reason="expected to fail but passes")
def test_xpass():
    pass

def test_print_and_fail():
    print("printed before failing")
    assert False

def test_noisy_passes(noisy):
    pass

def test_warns():
    warnings.warn("a warning", UserWarning)

def test_property(recorded):
    pass
'''

#: The controller counts the reports it receives per phase, those of ``test_pass``'s teardown
#: carrying an attribute a plugin added (as Hypothesis adds its statistics), and the workers
#: that sent their tests' events in batches.
CONFTEST = '''
import collections
import pytest

SEEN = collections.Counter()

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if item.name == "test_pass" and report.when == "teardown":
        report.added_by_a_plugin = True

def pytest_runtest_logreport(report):
    SEEN[report.when] += 1
    SEEN["added"] += getattr(report, "added_by_a_plugin", False)

def pytest_sessionfinish(session):
    """In a worker: whether it sent its tests' events in batches."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["batched"] = any(
            getattr(plugin.sendevent, "batched", False)
            for plugin in session.config.pluginmanager.get_plugins()
            if type(plugin).__name__ == "WorkerInteractor")

@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    SEEN["batched"] += node.workeroutput.get("batched", False)

def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line("received " + " ".join(
        f"{key}={SEEN[key]}" for key in ("setup", "call", "teardown", "added", "batched")))
'''

ENV = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
       "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def _session(folder: Path, workers: int, *args: str) -> tuple[str, dict[str, int]]:
    """The controller's output of a run of :data:`CASES` on ``workers`` xdist workers and its
    report counts."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p",
                           "xdist.plugin", "-n", str(workers), "-q", "-rA", *args], cwd=folder,
                          capture_output=True, text=True, timeout=120, check=False, env=ENV)
    assert done.returncode == 1, done.stdout + done.stderr
    counts = re.search(r"^received (.*)$", done.stdout, re.MULTILINE)
    assert counts, done.stdout
    return done.stdout, {key: int(value) for key, value in
                         (pair.split("=") for pair in counts.group(1).split())}


def _blocks(output: str) -> list[str]:
    """``output`` as a sorted list of its sections (the workers' order varies), without what
    differs between runs: the worker names, object addresses, the run time, the counts line,
    the order of the progress letters and of the short summary's lines."""
    output = re.sub(r"\[gw\d+\]", "[gw]", output)
    output = re.sub(r"0x[0-9a-f]+", "0x", output)
    output = re.sub(r" in [0-9.]+s\b", "", output)
    lines = []
    for line in output.splitlines():
        if line.startswith("received "):
            continue
        progress = re.fullmatch(r"([.FEsxX]+)( +\[100%\])", line)
        lines.append("".join(sorted(progress.group(1))) + progress.group(2) if progress
                     else line)
    blocks, block = [], []
    for line in [*lines, "=== end"]:
        if re.match(r"^(_{3,}|={3,}) ", line) and block:
            # the short summary's lines come in the order the tests ended
            listed = "short test summary info" in block[0]
            blocks.append("\n".join(sorted(block) if listed else block))
            block = []
        block.append(line)
    return sorted(blocks)


def test_the_controller_shows_the_same_from_fewer_reports(tmp_path):
    (tmp_path / "test_cases.py").write_text(CASES)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    # xdist's own output, the reference, from one worker (the sections compared are sorted, so
    # the workers' order and number do not show; one interpreter fewer, about 0.6 s of CPU);
    # the plugin's from two, each sending its own batches
    plain, plain_counts = _session(tmp_path, 1)
    fewer, fewer_counts = _session(tmp_path, 2, "-p", "xdist_messages")
    assert _blocks(fewer) == _blocks(plain), fewer
    summary = "2 failed, 5 passed, 2 skipped, 1 xfailed, 1 xpassed, 1 warning, 2 errors"
    assert summary in fewer
    for text in ("printed before failing", "printed in setup", "printed in teardown",
                 "RuntimeError: setup breaks", "RuntimeError: teardown breaks",
                 "UserWarning: a warning", "[100%]"):
        assert text in fewer, text
    assert plain_counts == {"setup": 12, "call": 10, "teardown": 12, "added": 1, "batched": 0}
    # sent: the setup error, the setup skip, the setups and teardowns with output (a teardown
    # report carries the call's too) or a property, the teardown error and the teardown with a
    # plugin's attribute
    assert fewer_counts == {"setup": 4, "call": 10, "teardown": 5, "added": 1, "batched": 2}


class WorkerInteractor:
    """Stands for xdist's worker-side plugin of that name (what :func:`pytest_configure` finds
    by its class name)."""

    def sendevent(self, name, **kwargs):
        raise AssertionError("replaced")


def test_durations_and_report_files_need_every_report(pytestconfig):
    """A worker registers the plugin that drops reports only without ``--durations`` and
    report files; it batches where the controller asked. pytest's options' names are right
    (``getoption`` raises for an unknown name). In process: a worker's session is two xdist
    processes more (about 1.5 s of CPU)."""
    for name in ("durations", "xmlpath"):
        pytestconfig.getoption(name)
    unset = {"durations": None, "xmlpath": None, "report_log": None, "htmlpath": None}
    for name, value in ((None, None), ("durations", 0), ("xmlpath", "report.xml"),
                        ("report_log", "log.jsonl"), ("htmlpath", "report.html")):
        options = {**unset, **({name: value} if name else {})}
        registered, interactor = [], WorkerInteractor()
        config = types.SimpleNamespace(
            workerinput={BATCH_EVENT: True},
            getoption=lambda option, default=None, options=options: options[option],
            pluginmanager=types.SimpleNamespace(
                get_plugins=lambda interactor=interactor: [object(), interactor],
                register=lambda plugin, plugin_name, registered=registered: registered.append(
                    plugin_name)))
        assert _reports_all_needed(config) == (name is not None), name
        xdist_messages.pytest_configure(config)
        assert isinstance(interactor.sendevent, EventBatches) and interactor.sendevent.batched
        assert registered == ([] if name else ["dprisk-unsent-reports"]), name
    xdist_messages.pytest_configure(types.SimpleNamespace())  # not a worker: nothing to do


def test_a_batch_gives_the_controller_each_event_in_order():
    sent, received = [], []
    batches = EventBatches(lambda name, **kwargs: sent.append((name, kwargs)), batched=True)
    test_events = [("logstart", {"nodeid": "t.py::a", "location": ("t.py", 1, "a")}),
                   ("testreport", {"data": {"when": "call", "outcome": "failed"}}),
                   ("warning_recorded", {"when": "runtest", "nodeid": "t.py::a"}),
                   ("logfinish", {"nodeid": "t.py::a", "location": ("t.py", 1, "a")}),
                   ("runtest_protocol_complete", {"item_index": 0, "duration": 0.5})]
    batches("collectionfinish", ids=["t.py::a"])
    for name, kwargs in test_events[:2]:
        batches(name, **kwargs)
    batches("testreport", data={UNSENT: True})  # dropped
    for name, kwargs in test_events[2:]:
        batches(name, **kwargs)
    batches("logstart", nodeid="t.py::b", location=("t.py", 2, "b"))
    batches("workerfinished", workeroutput={})  # sends what is kept first
    assert [name for name, _ in sent] == ["collectionfinish", BATCH_EVENT, BATCH_EVENT,
                                          "workerfinished"]
    process = unbatched(received.append)
    for name, kwargs in sent:
        process((name, kwargs))
    assert received == [("collectionfinish", {"ids": ["t.py::a"]}), *test_events,
                        ("logstart", {"nodeid": "t.py::b", "location": ("t.py", 2, "b")}),
                        ("workerfinished", {"workeroutput": {}})]
    unbatched_sent = []
    EventBatches(lambda name, **kwargs: unbatched_sent.append(name), batched=False)(
        "logstart", nodeid="t.py::a", location=("t.py", 1, "a"))
    assert unbatched_sent == ["logstart"]


def test_pending_counts_are_xdists(pytestconfig):
    """tests/conftest.py's scheduler skips the work units found done: the same counts as
    xdist's ``LoadScopeScheduling`` while tests are marked done one by one."""
    from xdist.scheduler.loadscope import LoadScopeScheduling

    conftest = next(plugin for plugin in pytestconfig.pluginmanager.get_plugins()
                    if hasattr(plugin, "_shared_scope_scheduling"))
    ours = object.__new__(conftest._shared_scope_scheduling())  # only _pending_of is called
    xdists = object.__new__(LoadScopeScheduling)
    generator = random.Random(36)
    workload = {f"m{unit}.py": {f"m{unit}.py::t{test}": False
                                for test in range(generator.randint(1, 6))}
                for unit in range(8)}
    tests = [(unit, test) for unit, unit_tests in workload.items() for test in unit_tests]
    generator.shuffle(tests)
    counts = []
    for unit, test in tests:
        counts.append((ours._pending_of(workload), xdists._pending_of(workload)))
        workload[unit][test] = True
    counts.append((ours._pending_of(workload), xdists._pending_of(workload)))
    assert all(mine == theirs for mine, theirs in counts), counts
    assert [theirs for _, theirs in counts] == list(range(len(tests), -1, -1))


def test_work_units_are_handed_out_as_xdist_hands_them(pytestconfig):
    """tests/conftest.py's scheduler finds the tests' positions in a table made once per
    worker: each unit is sent as xdist's ``LoadScopeScheduling`` sends it (the positions of
    its pending tests in that worker's collection, in the unit's order)."""
    from collections import OrderedDict

    from xdist.scheduler.loadscope import LoadScopeScheduling

    conftest = next(plugin for plugin in pytestconfig.pluginmanager.get_plugins()
                    if hasattr(plugin, "_shared_scope_scheduling"))

    class Node:
        def __init__(self):
            self.sent = []

        def send_runtest_some(self, indices):
            self.sent.append(list(indices))

    generator = random.Random(36)
    collection = [f"m{unit}.py::t{test}" for unit in range(6)
                  for test in range(generator.randint(1, 5))]
    generator.shuffle(collection)  # a worker's collection order need not be the units'
    sent = []
    for scheduling in (conftest._shared_scope_scheduling(), LoadScopeScheduling):
        scheduler = object.__new__(scheduling)  # only what _assign_work_unit reads is set
        node = Node()
        scheduler.registered_collections = {node: collection}
        scheduler.assigned_work = {}
        scheduler.workqueue = OrderedDict(
            (f"m{unit}.py", {nodeid: nodeid.endswith("t0")  # t0 done: not sent
                             for nodeid in sorted(collection)
                             if nodeid.startswith(f"m{unit}.py")})
            for unit in range(6))
        while scheduler.workqueue:
            scheduler._assign_work_unit(node)
        sent.append((node.sent, scheduler.assigned_work[node]))
    assert sent[0] == sent[1]
    assert sum(map(len, sent[0][0])) == sum(not n.endswith("t0") for n in collection)
