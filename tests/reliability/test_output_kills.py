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
"""

from __future__ import annotations

import json
import signal
import subprocess
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


@pytest.fixture(scope="module")
def output_command():
    """``argv`` prefix running ``output_helpers.main()`` in a fresh interpreter."""
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); "
            "import output_helpers as h; h.main(sys.argv[1:])")
    return [sys.executable, "-c", code]


@pytest.fixture(scope="module")
def output_helpers():
    sys.path.insert(0, str(HERE))
    try:
        import output_helpers
    finally:
        sys.path.remove(str(HERE))
    return output_helpers


def _start_and_wait(argv, env, signal_file: Path) -> subprocess.Popen:
    """Start ``argv`` and return once it has created ``signal_file`` (it must be running)."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not signal_file.exists():
        if proc.poll() is not None:
            raise AssertionError(f"ended ({proc.returncode}) early: {proc.stderr.read()!r}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the subprocess never signalled")
        time.sleep(0.02)
    return proc


def _sigkill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize("phase", ["study", "write"])
def test_reproduce_killed_keeps_the_old_report_and_the_rerun_cleans_up(
    phase, tmp_path, output_command, output_helpers, subprocess_env
):
    out, signal_file = tmp_path / "work" / "report", tmp_path / "signal"
    output_helpers.run_report(str(out))  # an earlier report
    before = (out / "results.json").read_bytes()
    (out / "results.json").write_text("[]\n")  # tell the old report from a new one
    proc = _start_and_wait([*output_command, "report", str(out), str(signal_file), phase],
                           subprocess_env, signal_file)
    _sigkill(proc)
    leftovers = _names(out.parent)
    assert ".report.lock" in leftovers
    if phase == "write":
        assert any(name.startswith(".report-tmp-") for name in leftovers), leftovers
    assert (out / "results.json").read_text() == "[]\n"  # the old report is intact

    summary = output_helpers.run_report(str(out))
    assert summary["n_records"] == 1
    assert _names(out.parent) == ["report"]  # the lock and the temporaries are gone
    assert (out / "results.json").read_bytes() == before and (out / MARKER).is_file()


def test_sweep_killed_during_the_final_write_then_rerun(tmp_path, output_command,
                                                        subprocess_env, helpers):
    out, signal_file = tmp_path / "work" / "s.nc", tmp_path / "signal"
    out.parent.mkdir()
    proc = _start_and_wait([*output_command, "sweep", str(out), str(signal_file)],
                           subprocess_env, signal_file)
    _sigkill(proc)
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
    tmp_path, output_command, subprocess_env, helpers
):
    out, signal_file = tmp_path / "work" / "s.nc", tmp_path / "signal"
    out.parent.mkdir()
    proc = _start_and_wait([*output_command, "sweep", str(out), str(signal_file)],
                           {**subprocess_env, "OUTPUT_HELPERS_HOLD": "3"}, signal_file)
    try:
        with pytest.raises(OutputInUse, match=rf"out .*s\.nc.* another running process "
                                              rf"\(pid {proc.pid}\)"):
            helpers.resumable_sweep(out, "exact")
        assert not out.exists()
    finally:
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-2000:]
    assert _names(out.parent) == ["s.nc"]
    reference = helpers.resumable_sweep(tmp_path / "reference.nc", "exact")
    xr.testing.assert_identical(xr.load_dataset(out), reference)


def test_second_reproduce_on_the_same_out_is_exit_2_and_the_first_completes(
    tmp_path, output_command, subprocess_env
):
    out, signal_file = tmp_path / "report", tmp_path / "signal"
    proc = _start_and_wait([*output_command, "report", str(out), str(signal_file), "study"],
                           {**subprocess_env, "OUTPUT_HELPERS_HOLD": "3"}, signal_file)
    try:
        exe = Path(sys.executable).parent / "dprisk"
        second = subprocess.run([str(exe), "reproduce", "--out", str(out), "--quiet"],
                                capture_output=True, text=True, env=subprocess_env,
                                timeout=120, check=False)
    finally:
        _, err = proc.communicate(timeout=120)
    assert second.returncode == 2, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "--out" in lines[0] and f"pid {proc.pid}" in lines[0], lines
    assert second.stdout == ""
    assert proc.returncode == 0, err.decode()[-2000:]
    assert _names(tmp_path) == ["report", "signal"]
    records = json.loads((out / "results.json").read_text())
    assert [r["id"] for r in records] == ["stub/x"] and (out / MARKER).is_file()
