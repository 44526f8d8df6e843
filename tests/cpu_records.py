"""Per-test CPU records of a test run, for ``benchmarks/bench_test_cpu.py`` (issue 36).

With :data:`CPU_RECORD_ENV` naming a folder, each test process (an xdist worker, or the one
process of ``-n 0``) appends one JSON object per test to ``cpu-<worker>.jsonl`` there:
``nodeid``, ``cpu_s`` (``getrusage`` of the process and of its waited-for children, over setup,
call and teardown) and ``wall_s``. Loaded by ``tests/conftest.py`` (``pytest_plugins``).
"""

from __future__ import annotations

import pytest

#: Environment variable naming a folder: when set, each test process writes the CPU seconds of
#: every test (its own and its children's: ``getrusage`` of self and of waited-for children,
#: setup + call + teardown) to ``cpu-<worker>.jsonl`` there. ``benchmarks/bench_test_cpu.py``
#: sets it and prints the suite's CPU per directory, so growth is visible in ``make bench``.
CPU_RECORD_ENV = "DPRISK_TEST_CPU_DIR"


def pytest_configure(config):
    """Refuse to start when :data:`CPU_RECORD_ENV` names no folder (a usage error, exit 4).

    Otherwise the first test's record could not be written: pytest stopped there with an
    internal error and printed a short summary that read like a passing run.
    """
    import os
    from pathlib import Path

    folder = os.environ.get(CPU_RECORD_ENV)
    if folder and not Path(folder).is_dir():
        raise pytest.UsageError(f"{CPU_RECORD_ENV} must name an existing folder; got {folder!r}")


def _cpu_seconds() -> float:
    import resource

    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


#: Key of :data:`pytest.Item.stash` holding the CPU seconds of a test's teardown when it also
#: tore down its module's (and, for the worker's last test, the session's) fixtures.
_BOUNDARY_TEARDOWN_CPU = pytest.StashKey[float]()

#: Key of :data:`pytest.Item.stash` holding ``(fixture name, CPU seconds)`` of each
#: session-scoped fixture ended in that teardown (:func:`pytest_fixture_post_finalizer`).
_SESSION_FIXTURES_CPU = pytest.StashKey[list[tuple[str, float]]]()

#: A session-scoped fixture whose end took less CPU than this stays in the
#: ``<module teardown and session teardown>`` record (no record of its own).
SESSION_FIXTURE_MIN_S = 0.1

#: While a boundary teardown runs: the CPU seconds when the last fixture before ended, and
#: the session-scoped fixtures ended so far with their CPU.
_ENDING: dict = {}


def pytest_fixture_post_finalizer(fixturedef, request):
    """In a boundary teardown, the CPU of each session-scoped fixture's end apart: a fork
    server reaped there brings all its children's CPU (the tests of several modules that
    used it), which :func:`pytest_runtest_protocol` records under the fixture's name."""
    if _ENDING:
        now = _cpu_seconds()
        if fixturedef.scope == "session":
            _ENDING["session"].append((fixturedef.argname, now - _ENDING["mark"]))
        _ENDING["mark"] = now


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Measure the teardown that also ends a module's fixtures (:data:`CPU_RECORD_ENV` set).

    A module- or session-scoped fixture's helper process (a fork server, a notebook kernel, a
    server) is reaped when that fixture ends, in the teardown of the last test that used it:
    its whole CPU would land on that one test. It is recorded apart instead
    (:func:`pytest_runtest_protocol`).
    """
    import os

    boundary = os.environ.get(CPU_RECORD_ENV) and (
        nextitem is None or nextitem.path != item.path)
    cpu_before = _cpu_seconds() if boundary else 0.0
    if boundary:
        _ENDING.update(mark=cpu_before, session=[])
    try:
        yield
    finally:
        if boundary:
            item.stash[_BOUNDARY_TEARDOWN_CPU] = _cpu_seconds() - cpu_before
            item.stash[_SESSION_FIXTURES_CPU] = _ENDING.pop("session")
            _ENDING.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Record the CPU seconds of ``item`` when :data:`CPU_RECORD_ENV` is set.

    One JSON object per test (``nodeid``, ``cpu_s``, ``wall_s``); where the test's teardown
    also ended its module's fixtures, that teardown's CPU is a record of its own, named
    ``<module>::<module teardown>``, or ``<module teardown and session teardown>`` after the
    worker's last test (the session's fixtures, whatever directory they serve, end there),
    with each session-scoped fixture's end a record of its own, ``<session fixture NAME>``.
    """
    import os

    folder = os.environ.get(CPU_RECORD_ENV)
    if not folder:
        yield
        return
    import json
    import time
    from pathlib import Path

    cpu_before, wall_before = _cpu_seconds(), time.perf_counter()
    yield
    cpu = _cpu_seconds() - cpu_before
    boundary = item.stash.get(_BOUNDARY_TEARDOWN_CPU, 0.0)
    records = [{"nodeid": item.nodeid, "cpu_s": cpu - boundary,
                "wall_s": time.perf_counter() - wall_before}]
    rest = boundary
    for name, fixture_cpu in item.stash.get(_SESSION_FIXTURES_CPU, []):
        if fixture_cpu >= SESSION_FIXTURE_MIN_S:
            records.append({"nodeid": f"<session fixture {name}>", "cpu_s": fixture_cpu,
                            "wall_s": 0.0})
            rest -= fixture_cpu
    if boundary:
        module = item.nodeid.split("::", 1)[0]
        records.append({"nodeid": "<module teardown and session teardown>" if nextitem is None
                        else f"{module}::<module teardown>", "cpu_s": rest, "wall_s": 0.0})
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with (Path(folder) / f"cpu-{worker}.jsonl").open("a") as out:
        out.writelines(json.dumps(record) + "\n" for record in records)
