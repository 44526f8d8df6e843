"""Killed and concurrent writers of an output lose nothing and leave nothing for good.

Subprocesses (``output_helpers.py``) write a tiny report (a stub study, never the real
``dprisk reproduce``) or the resume tests' small exact sweep, and signal when they reach a
given moment: holding the lock before anything is written, or with the final files written
to their temporary names but not yet moved into place. Then:

* SIGKILL (no cleanup at all) leaves ``out`` as it was (the old report intact, no sweep
  file), and the next run removes every leftover (``.NAME-tmp-*``, the lock file,
  ``.FILE.nc.*.tmp``) and writes the complete output;
* a second run on the same ``out`` while the first holds it is refused -- ``ValueError``
  (``OutputInUse``) from the API, exit status 2 with one stderr line naming ``--out`` and
  the pid from the command line -- and touches nothing; the first then completes intact.

The writers are forks of the session's process server (``process_server``,
:mod:`tests.reliability.fork_runner`), each a process of its own that is killed or reaped,
without a new interpreter and its imports each (1-2 s of CPU a run).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
import xarray as xr

from dprisk.runtime.output_files import OutputInUse
from dprisk.validation.report.output import MARKER

HERE = Path(__file__).resolve().parent
#: Longest wait for a subprocess to reach its signal (imports included).
STARTUP_TIMEOUT = 120.0


@pytest.fixture
def start_helper(process_server):
    """Start ``output_helpers.main(argv)`` in a fork of the process server; return its pid."""
    def start(argv: list[str], env: dict | None = None) -> int:
        return process_server.start(call=("output_helpers", "main", [argv]),
                                    sys_path=[str(HERE)], env=env)
    return start


@pytest.fixture(scope="module")
def output_helpers():
    sys.path.insert(0, str(HERE))
    try:
        import output_helpers
    finally:
        sys.path.remove(str(HERE))
    return output_helpers


def _wait_for_signal(server, pid: int, signal_file: Path) -> int:
    """Return ``pid`` once it has created ``signal_file`` (it must be running)."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not signal_file.exists():
        if not server.running(pid):
            raise AssertionError(f"ended early: {server.wait(pid)!r}")
        if time.monotonic() > deadline:
            server.wait(pid, timeout=0)
            raise AssertionError("the subprocess never signalled")
        time.sleep(0.02)
    return pid


def _held_until(release: Path) -> dict:
    """The environment of a helper that holds (once it has signalled) until ``release`` exists
    (at most 120 s): the test ends the hold when it is done, not after a fixed wait (3 s before
    issue 36, idle)."""
    return {"OUTPUT_HELPERS_HOLD": "120", "OUTPUT_HELPERS_RELEASE": str(release)}


def _sigkill(server, pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    assert server.wait(pid).status == -signal.SIGKILL


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize("phase", ["study", "write"])
def test_reproduce_killed_keeps_the_old_report_and_the_rerun_cleans_up(
    phase, tmp_path, start_helper, output_helpers, process_server
):
    out, signal_file = tmp_path / "work" / "report", tmp_path / "signal"
    output_helpers.run_report(str(out))  # an earlier report
    before = (out / "results.json").read_bytes()
    (out / "results.json").write_text("[]\n")  # tell the old report from a new one
    pid = _wait_for_signal(process_server,
                           start_helper(["report", str(out), str(signal_file), phase]),
                           signal_file)
    _sigkill(process_server, pid)
    leftovers = _names(out.parent)
    assert ".report.lock" in leftovers
    if phase == "write":
        assert any(name.startswith(".report-tmp-") for name in leftovers), leftovers
    assert (out / "results.json").read_text() == "[]\n"  # the old report is intact

    summary = output_helpers.run_report(str(out))
    assert summary["n_records"] == 1
    assert _names(out.parent) == ["report"]  # the lock and the temporaries are gone
    assert (out / "results.json").read_bytes() == before and (out / MARKER).is_file()


def test_sweep_killed_during_the_final_write_then_rerun(tmp_path, start_helper, process_server,
                                                        helpers):
    out, signal_file = tmp_path / "work" / "s.nc", tmp_path / "signal"
    out.parent.mkdir()
    pid = _wait_for_signal(process_server, start_helper(["sweep", str(out), str(signal_file)]),
                           signal_file)
    _sigkill(process_server, pid)
    leftovers = _names(out.parent)
    assert "s.nc" not in leftovers and "s.nc.chunks" in leftovers
    assert any(n.startswith(".s.nc.") and n.endswith(".tmp") for n in leftovers), leftovers

    helpers.CALLS.clear()
    resumed = helpers.resumable_sweep(out, "exact")
    assert helpers.CALLS == []  # every chunk was finished: nothing recomputed
    assert _names(out.parent) == ["s.nc"]  # the hidden temporary and the chunks are gone
    reference = helpers.resumable_sweep(tmp_path / "reference.nc", "exact")
    xr.testing.assert_identical(resumed, reference)


def test_second_sweep_on_the_same_out_is_refused_and_the_first_completes(
    tmp_path, start_helper, process_server, helpers
):
    out, signal_file = tmp_path / "work" / "s.nc", tmp_path / "signal"
    release = tmp_path / "release"
    out.parent.mkdir()
    pid = _wait_for_signal(process_server, start_helper(["sweep", str(out), str(signal_file)],
                                                        _held_until(release)),
                           signal_file)
    try:
        with pytest.raises(OutputInUse, match=rf"out .*s\.nc.* another running process "
                                              rf"\(pid {pid}\)"):
            helpers.resumable_sweep(out, "exact")
        assert not out.exists()
        assert process_server.running(pid)  # the refusal came while the first held the lock
    finally:
        release.touch()
        first = process_server.wait(pid, timeout=120)
    assert first.status == 0, first.stderr[-2000:]
    assert _names(out.parent) == ["s.nc"]
    reference = helpers.resumable_sweep(tmp_path / "reference.nc", "exact")
    xr.testing.assert_identical(xr.load_dataset(out), reference)


def test_second_reproduce_on_the_same_out_is_exit_2_and_the_first_completes(
    tmp_path, start_helper, process_server
):
    """The second run is ``dprisk reproduce`` as its console script runs it (a fork)."""
    out, signal_file = tmp_path / "report", tmp_path / "signal"
    release = tmp_path / "release"
    pid = _wait_for_signal(process_server,
                           start_helper(["report", str(out), str(signal_file), "study"],
                                        _held_until(release)),
                           signal_file)
    try:
        second = process_server.wait(process_server.start(
            ["reproduce", "--out", str(out), "--quiet"], tmp_path), timeout=120)
        assert process_server.running(pid)  # the refusal came while the first held the lock
    finally:
        release.touch()
        first = process_server.wait(pid, timeout=120)
    assert second.status == 2, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "--out" in lines[0] and f"pid {pid}" in lines[0], lines
    assert second.stdout == ""
    assert first.status == 0, first.stderr[-2000:]
    assert _names(tmp_path) == ["release", "report", "signal"]
    records = json.loads((out / "results.json").read_text())
    assert [r["id"] for r in records] == ["stub/x"] and (out / MARKER).is_file()
