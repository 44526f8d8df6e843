"""A long run killed part-way loses nothing: it resumes and ends with the uninterrupted result.

A process (a fork of the session's ``process_server``) runs a resumable sweep
(``dprisk.inference.sweeps.sweep.sweep(..., out=FILE.nc, chunk_size=1)``, Monte Carlo and exact)
with a quantity from ``reliability_helpers`` that records its calls and, in the killed run only,
blocks after its first few points (the environment variable ``RELIABILITY_HOLD_AFTER``) so that
the kill lands part-way. Once those chunk files exist in ``FILE.nc.chunks/`` it gets SIGTERM
(Python's default action: die at once, no cleanup). Then:

* nothing is half-written: ``FILE.nc`` does not exist, no stray file sits beside it, and
  every chunk file present loads completely;
* the rerun in this process computes exactly the missing chunks, each once (the counting
  quantity records every point it evaluates);
* the final file is identical -- as a Dataset and byte for byte -- to an uninterrupted run,
  and the chunk directory is gone.

The same holds for ``dprisk sweep`` (exact, default chunking) killed as its console script runs
(a fork of the server) and rerun through the console script.
``dprisk.inference.studies.monte_carlo.simulate_p_correct`` has no chunk store of its own (a
single study is one call; its long runs are resumable when run through a sweep, as here).
"""

from __future__ import annotations

import filecmp
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

HERE = Path(__file__).resolve().parent
#: Chunk files to wait for before the kill: the killed run blocks after computing this many
#: points (before issue 36 it slept 0.2 s per point: about 0.7 s of idle waiting a case).
KILL_AFTER = 3
#: Longest wait for the subprocess to reach KILL_AFTER chunks (imports included).
STARTUP_TIMEOUT = 120.0


def _chunk_files(chunks: Path) -> list[Path]:
    return sorted(chunks.glob("chunk_*.npy"))


def _kill_part_way(server, pid: int, chunks: Path, minimum: int) -> None:
    """SIGTERM the started ``pid`` once ``minimum`` chunk files exist (it must be running)."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    try:
        while len(_chunk_files(chunks)) < minimum and server.running(pid):
            assert time.monotonic() < deadline, "no chunk files appeared in time"
            time.sleep(0.02)
        finished_early = not server.running(pid)
        if not finished_early:
            os.kill(pid, signal.SIGTERM)
        done = server.wait(pid, timeout=60)
    except BaseException:
        server.wait(pid, timeout=0)
        raise
    err = done.stderr
    assert not finished_early, f"finished (status {done.status}) before the kill:\n{err}"
    # The dprisk command stops cleanly (status 143, one line); a bare API process is killed.
    assert done.status in (-signal.SIGTERM, 128 + signal.SIGTERM), err[-2000:]
    if done.status > 0:
        assert err.splitlines() == [
            "dprisk sweep: interrupted by SIGTERM; rerunning the same command resumes from the "
            "chunks already computed"]


def _check_nothing_half_written(out: Path, n_chunks: int) -> set[int]:
    """``out`` absent, only the chunk directory beside it; returns the finished chunks."""
    chunks = out.with_name(out.name + ".chunks")
    assert not out.exists()
    assert sorted(p.name for p in out.parent.iterdir()) == [chunks.name]
    done = set()
    for path in _chunk_files(chunks):
        values = np.load(path, allow_pickle=False)  # complete (written then renamed)
        assert values.ndim == 2 and np.isfinite(values).all()
        done.add(int(path.stem.split("_")[1]))
    assert json.loads((chunks / "manifest.json").read_text())["n_chunks"] == n_chunks
    assert KILL_AFTER <= len(done) < n_chunks, f"killed too late: {sorted(done)}"
    return done


@pytest.mark.parametrize("method", ["mc", "exact"])
def test_sweep_killed_by_sigterm_resumes_to_the_uninterrupted_file(
    method, tmp_path, helpers, process_server
):
    killed_dir, reference_dir = tmp_path / "killed", tmp_path / "reference"
    killed_dir.mkdir()
    reference_dir.mkdir()
    out = killed_dir / "s.nc"
    chunks = out.with_name("s.nc.chunks")
    n_chunks = len(helpers.RESUME_GRID["d"]) * len(helpers.RESUME_GRID["x2"])

    pid = process_server.start(call=("reliability_helpers", "main", [["sweep", str(out), method]]),
                               sys_path=[str(HERE)], env={helpers.HOLD_AFTER_ENV: str(KILL_AFTER)})
    _kill_part_way(process_server, pid, chunks, KILL_AFTER)
    done = _check_nothing_half_written(out, n_chunks)

    helpers.CALLS.clear()
    resumed = helpers.resumable_sweep(out, method)
    computed = [helpers.flat_index(d, x2) for d, x2 in helpers.CALLS]
    assert sorted(computed) == sorted(set(range(n_chunks)) - done)  # the missing ones, once
    assert out.exists() and not chunks.exists()
    assert sorted(p.name for p in killed_dir.iterdir()) == ["s.nc"]

    helpers.CALLS.clear()
    reference_out = reference_dir / "s.nc"
    reference = helpers.resumable_sweep(reference_out, method)
    assert len(helpers.CALLS) == n_chunks
    xr.testing.assert_identical(resumed, reference)
    assert filecmp.cmp(out, reference_out, shallow=False), "files differ byte for byte"

    # a finished sweep run again is read back, not recomputed
    helpers.CALLS.clear()
    xr.testing.assert_identical(helpers.resumable_sweep(out, method), reference)
    assert helpers.CALLS == []


def test_dprisk_sweep_killed_and_rerun_writes_the_uninterrupted_file(tmp_path, subprocess_env,
                                                                     process_server):
    from dprisk.inference.sweeps.sweep import DEFAULT_CHUNK_SIZE, sweep

    exe = Path(sys.executable).parent / "dprisk"
    # the command line sweeps every option it is given (a single value: a grid of one point)
    grid = {"rho1": [0.05, 0.1], "rho2": [0.25], "d": [3, 27], "x2": list(range(1, 25)),
            "p": [0.5], "known": [0]}
    argv = ["sweep", "--rho1", "0.05,0.1", "--rho2", "0.25", "--d", "3,27", "--x2", "1:24",
            "--json"]
    n_chunks = -(-96 // DEFAULT_CHUNK_SIZE)
    out = tmp_path / "cli" / "s.nc"
    out.parent.mkdir()
    chunks = out.with_name("s.nc.chunks")

    # killed: a fork of the process server run as the console script; rerun: the script
    _kill_part_way(process_server, process_server.start([*argv, "--out", str(out)], tmp_path),
                   chunks, 1)
    assert not out.exists()
    done = {int(p.stem.split("_")[1]) for p in _chunk_files(chunks)}
    assert 1 <= len(done) < n_chunks, f"killed too late: {sorted(done)}"

    rerun = subprocess.run([str(exe), *argv, "--out", str(out)], capture_output=True, text=True,
                           env=subprocess_env, timeout=300, check=False)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["dims"] == {"rho1": 2, "rho2": 1, "d": 2, "x2": 24, "p": 1,
                                                "known": 1}
    assert out.exists() and not chunks.exists()

    reference_out = tmp_path / "reference" / "s.nc"
    reference = sweep(**grid, out=reference_out, progress=False)
    xr.testing.assert_identical(xr.load_dataset(out), reference)
    assert filecmp.cmp(out, reference_out, shallow=False), "files differ byte for byte"
