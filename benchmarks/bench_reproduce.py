"""Whole-process time of ``dprisk reproduce`` at the default budget, and its records checked.

The console script run into a temporary directory (``--quiet``), as a user runs it;
its ``results.json`` is then compared with ``records_baseline.json`` as
``check_records.py`` does (so the figure is of a report with the same records). Target
(issue 12): at most ``TARGET_SECONDS`` on the 2-core machine. ``ROUNDS`` runs (about half a
minute each with the baseline), the figures their medians.
The wall time is the target's figure; the CPU time (user + system, from ``getrusage``) of
the command and of every process it started is printed beside it, since on a shared machine
the wall time also counts the time other jobs held the cores. The study workers are children
of multiprocessing's fork server, which the command leaves to exit on its own: this process
makes itself their reaper (``PR_SET_CHILD_SUBREAPER``) and waits for them, so their CPU time
is counted too (without it, only the command's own 5-10 s would be);
the machine's load is recorded beside it by ``run.py``.

Issue 36's row: each run also times ``benchmarks/fig5_baseline.py`` (the Figure 5
P[correct] curve over its x2 grid by straightforward NumPy sums, whole process, just before
the report) and reports ``dprisk reproduce``'s wall time as a ratio to it (target
``TARGET_RATIO``), the CPU ratio beside it: the row is the median of the runs' ratios, each
run's pair printed beside it. The system part of both CPU times is printed too: about half of
the baseline's CPU is the kernel's zeroing of the fresh pages its large temporaries are given,
and its NumPy sums run about twice as fast with AVX-512 kernels as without (on one such
machine: 1.3-1.7 s of user time, 2.9-3.3 s with numpy's CPU features off; 2.6-3.8 s of
wall there, 6-9 s on the machine of the session before), while the report's CPU is mostly
Python's: the ratio moves with the machine more than the report does (docs/speed.md).
So each run also times the same script with glibc's allocator on transparent huge pages
(:func:`huge_pages_env`: ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``, where glibc >= 2.35 and
the kernel's huge pages are not ``never``), and counts both runs' minor page faults: not the
row's baseline (a user's script runs with the allocator as it comes), but its reading says
how much of the baseline was this machine's page faults in that run (2026-12-02, slow spell:
1.18 million faults and 10.0 s plain, 8,476 and 5.3 s on huge pages).
``python benchmarks/bench_reproduce.py``.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from check_records import BASELINE, compare

TARGET_SECONDS = 60.0
#: Issue 36: ``dprisk reproduce`` within this many times the plain Figure 5 computation.
TARGET_RATIO = 2.5
#: Runs of the pair (the baseline, then the report) in one benchmark; the row's figures are the
#: medians (of the pairs' ratios for the ratios). This machine's speed moves by a fifth or more
#: between runs minutes apart, and the baseline's by more (6.2-8.9 s within one evening hour,
#: docs/speed.md): one pair's ratio is one draw of that. ``DPRISK_BENCH_REPRODUCE_ROUNDS``
#: overrides it (1: a single pair).
ROUNDS = max(1, int(os.environ.get("DPRISK_BENCH_REPRODUCE_ROUNDS", "3")))
BASELINE_SCRIPT = Path(__file__).resolve().parent / "fig5_baseline.py"


#: ``prctl`` option: orphaned descendants are re-parented to this process, not to init.
_PR_SET_CHILD_SUBREAPER = 36


def _adopt_orphans() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); False if not."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children() -> set[int]:
    """PIDs of this process's children (Linux ``/proc``; empty where it cannot be read)."""
    pids = set()
    try:
        for task in Path("/proc/self/task").iterdir():
            pids.update(int(pid) for pid in (task / "children").read_text().split())
    except OSError:
        pass
    return pids


def _reap_orphans(own: set[int]) -> None:
    """Wait for the adopted descendants (the fork server and its workers), not for ``own``.

    ``own``: this process's children before the command ran. An earlier benchmark in the same
    process may have started one that lives as long as this process (multiprocessing's
    resource tracker, started by a Dask cluster in ``bench_sweeps``): waiting for every child
    would wait for it for ever.
    """
    while adopted := _children() - own:
        for pid in adopted:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:  # reaped already, or not a child any more
                own.add(pid)


def huge_pages_env() -> dict[str, str] | None:
    """This process's environment with glibc's allocator on transparent huge pages, or None.

    ``GLIBC_TUNABLES`` gains ``glibc.malloc.hugetlb=1`` (kept beside any tunables already
    set): ``malloc`` then asks the kernel for huge pages (``madvise``) for the memory it takes,
    so a process whose large temporaries are handed back and taken again faults 2 MiB at a
    time, not 4 KiB. None where that cannot work: not glibc >= 2.35 (the tunable's first
    release), or the kernel's transparent huge pages set to ``never`` (or absent).
    """
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
        thp = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except (ValueError, OSError, AttributeError):
        return None
    if name != "glibc" or tuple(int(v) for v in version.split(".")[:2]) < (2, 35):
        return None
    if "[never]" in thp:
        return None
    tunables = [t for t in os.environ.get("GLIBC_TUNABLES", "").split(":") if t]
    tunables = [t for t in tunables if not t.startswith("glibc.malloc.hugetlb=")]
    return {**os.environ, "GLIBC_TUNABLES": ":".join([*tunables, "glibc.malloc.hugetlb=1"])}


def _measured(argv: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """``argv`` run to its end: its wall seconds, and the CPU seconds (``cpu``, ``system``) and
    minor page faults (``minor_faults``) of every process it started.

    From ``getrusage`` of the children reaped meanwhile, the adopted descendants included
    (module notes); ``system`` is the kernel's work for them, chiefly taking the page faults
    and zeroing the pages they are given. ``env``: the command's environment (this
    process's when None).
    """
    own = _children()
    adopted = _adopt_orphans()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    seconds = time.perf_counter() - start
    if adopted:
        _reap_orphans(own)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    system = after.ru_stime - before.ru_stime
    return {"wall": seconds, "cpu": (after.ru_utime - before.ru_utime) + system,
            "system": system, "minor_faults": after.ru_minflt - before.ru_minflt}


def _timed(argv: list[str]) -> tuple[float, float, float]:
    """``(wall, cpu, system)`` seconds of ``argv`` run to its end, the CPU of every process it
    started (:func:`_measured`)."""
    measured = _measured(argv)
    return measured["wall"], measured["cpu"], measured["system"]


def run() -> dict:
    script = Path(sys.executable).with_name("dprisk")
    dprisk = [str(script)] if script.exists() else [sys.executable, "-m", "dprisk.cli"]
    adopted = _adopt_orphans()
    baseline = json.loads(BASELINE.read_text())
    rounds = []
    huge_env = huge_pages_env()
    for _ in range(ROUNDS):
        base = _measured([sys.executable, str(BASELINE_SCRIPT)])
        base_seconds, base_cpu, base_system = base["wall"], base["cpu"], base["system"]
        # the same curve, its allocator on huge pages: a reading of the spell, not the row
        huge = (_measured([sys.executable, str(BASELINE_SCRIPT)], env=huge_env)
                if huge_env is not None else None)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report"
            seconds, cpu, system = _timed([*dprisk, "reproduce", "--out", str(out), "--quiet"])
            results = json.loads((out / "results.json").read_text())
            n_figures = len(list(out.rglob("*.png"))) + len(list(out.rglob("*.svg")))
        changed = len({line.split(":")[0] for line in compare(results, baseline)})
        rounds.append({"seconds": seconds, "cpu_seconds": cpu, "baseline_seconds": base_seconds,
                       "baseline_cpu_seconds": base_cpu, "system_seconds": system,
                       "baseline_system_seconds": base_system, "ratio": seconds / base_seconds,
                       "cpu_ratio": cpu / base_cpu, "unchanged_records": len(baseline) - changed,
                       "baseline_minor_faults": base["minor_faults"]})
        if huge is not None:
            rounds[-1].update({"huge_pages_baseline_seconds": huge["wall"],
                               "huge_pages_baseline_system_seconds": huge["system"],
                               "huge_pages_baseline_minor_faults": huge["minor_faults"],
                               "ratio_to_huge_pages_baseline": seconds / huge["wall"]})
    unchanged = min(r["unchanged_records"] for r in rounds)
    keys = ["seconds", "cpu_seconds", "baseline_seconds", "baseline_cpu_seconds", "ratio",
            "cpu_ratio", "system_seconds", "baseline_system_seconds", "baseline_minor_faults"]
    if huge_env is not None:
        keys += ["huge_pages_baseline_seconds", "huge_pages_baseline_system_seconds",
                 "huge_pages_baseline_minor_faults", "ratio_to_huge_pages_baseline"]
    figures = {key: statistics.median(r[key] for r in rounds) for key in keys}
    whose = "all processes" if adopted else "the command only, not its workers"
    each = "; ".join(f"{r['seconds']:.1f} / {r['baseline_seconds']:.1f} s = {r['ratio']:.3f}x"
                     for r in rounds)
    print(f"  dprisk reproduce (whole process, median of {len(rounds)} interleaved runs): "
          f"{figures['seconds']:.1f} s wall, {figures['cpu_seconds']:.1f} s CPU ({whose}; "
          f"{figures['system_seconds']:.1f} s of it system) "
          f"(target <= {TARGET_SECONDS:.0f} s); {unchanged} of {len(baseline)} records "
          f"unchanged in every run; {len(results)} records, {n_figures} figure files")
    print(f"  plain Figure 5 curve (benchmarks/fig5_baseline.py, whole process, each run just "
          f"before the report's): median {figures['baseline_seconds']:.1f} s wall, "
          f"{figures['baseline_cpu_seconds']:.1f} s CPU ({figures['baseline_system_seconds']:.1f}"
          f" s of it system); reproduce / baseline, median of the "
          f"runs' ratios {figures['ratio']:.3f}x wall, {figures['cpu_ratio']:.2f}x CPU "
          f"(target <= {TARGET_RATIO:g}x); each run (report / baseline): {each}; "
          f"{figures['baseline_minor_faults']:,.0f} minor page faults")
    if huge_env is not None:
        print(f"  the same curve, glibc's allocator on transparent huge pages "
              f"(GLIBC_TUNABLES=glibc.malloc.hugetlb=1; a reading of this machine's page "
              f"faults, not the row's baseline): median "
              f"{figures['huge_pages_baseline_seconds']:.1f} s wall "
              f"({figures['huge_pages_baseline_system_seconds']:.1f} s system, "
              f"{figures['huge_pages_baseline_minor_faults']:,.0f} minor page faults); "
              f"reproduce / it {figures['ratio_to_huge_pages_baseline']:.3f}x")
    return {**figures, "cpu_of_workers": adopted,
            "target_seconds": TARGET_SECONDS, "target_ratio": TARGET_RATIO,
            "records": len(results),
            "baseline_records": len(baseline), "unchanged_records": unchanged,
            "figure_files": n_figures, "rounds": rounds}


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    run()
