"""The report's study runner: worker processes give the results of one process, in order."""

import gc
import multiprocessing
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import report_helpers
from matplotlib.figure import Figure
from own_forkserver import own_forkserver

from dprisk.validation.figures.captions import FigureText, alt_text, caption, figure_text
from dprisk.validation.report import runner
from dprisk.validation.report.fork_server import fork_server_pid
from dprisk.validation.report.runner import available_cores, run_studies

#: What the stand-in studies import (xarray, matplotlib, the records), loaded once by the fork
#: server as the report's PRELOAD is, not again by each worker of each pool (about 2 s of CPU
#: a worker); the studies' results do not depend on where a module was imported.
#: Not ``dask.array``: xarray imported it in each process that makes a Dataset (each worker of
#: each of the module's six pools spent 2.6 s of CPU on imports for a 0.27 s study, measured
#: 29 Nov, until the server preloaded it); since ``import dprisk`` defers those imports
#: (:mod:`dprisk.runtime.deferred_dask`) nothing here imports Dask.
#: And the tick copies' check (:mod:`dprisk.validation.figures.tick_copies_checked`, last in
#: the report's own PRELOAD): made once by the server, not by each worker at its first figure
#: (a quarter of the workers' CPU, py-spy 1 Dec; the workers copy ticks as the report's do).
PRELOAD = ("report_helpers", "dprisk.validation.figures.tick_copies_checked")


@pytest.fixture(scope="module", autouse=True)
def _a_fork_server_that_imports_the_helpers():
    """This module's pools fork from one server of its own that imported :data:`PRELOAD`.

    Python 3.12's fork server imports its preload with ``PYTHONPATH``, not this process's
    ``sys.path`` (pytest's ``pythonpath = tests``): without ``tests/`` there, ``report_helpers``
    failed to import in the server, silently, and every worker of the six pools imported it
    (matplotlib, xarray) itself. A server left running by an earlier module of this test
    process (the explorer's sampling jobs start one) is stopped first, as it would serve
    these pools with its own preload; this module's server is stopped at the end, so its
    workers' CPU is counted to this module (tests/cpu_records.py). Measured (-n 0, 29 Nov):
    tests/explore (browser aside) then this module, 32.9 -> 25.3 s of CPU recorded.
    """
    tests_dir = str(Path(report_helpers.__file__).resolve().parent)
    saved_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (tests_dir, saved_path) if p)
    try:
        with own_forkserver():
            yield
    finally:
        if saved_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved_path


def _collect(studies, workers):
    out = {i: (result, pngs) for i, result, pngs in
           run_studies(studies, paper_scale=False, workers=workers, preload=PRELOAD)}
    return [out[i] for i in range(len(studies))]


def test_workers_give_the_same_results_as_one_process(monkeypatch):
    # taken first by the pool
    monkeypatch.setattr(report_helpers.study_b, "cost_hint", 1.0, raising=False)
    monkeypatch.setattr(runner, "LOCAL_START_SECONDS", 0.0)  # both in the pool
    studies = [report_helpers.study_a, report_helpers.study_b]
    serial = _collect(studies, workers=1)
    parallel = _collect(studies, workers=2)
    for (one, one_png), (two, two_png) in zip(serial, parallel, strict=True):
        assert one.name == two.name and one.records == two.records and one.seeds == two.seeds
        np.testing.assert_array_equal(one.datasets["draws"]["x"], two.datasets["draws"]["x"])
        assert one_png.keys() == two_png.keys()
        assert all(png.startswith(b"\x89PNG") for png in two_png.values())
        # a worker's figures come back as what the page reads of them, the caption and alt
        # text (titles, labels, legends), the same as of the figure itself
        ((stem, fig),) = one.figures.items()
        (text,) = two.figures.values()
        assert isinstance(fig, Figure) and isinstance(text, FigureText)
        assert text == figure_text(fig, stem)
        assert f"{two.name} draws" in text.alt and "(draws)" in text.alt
        assert caption(text, stem) == caption(fig, stem)
        assert alt_text(text, stem) == alt_text(fig, stem)
    assert [r.name for r, _ in parallel] == ["a", "b"]


def test_longest_study_is_taken_first(monkeypatch):
    monkeypatch.setattr(report_helpers.study_b, "cost_hint", 1.0, raising=False)
    assert runner._by_cost([report_helpers.study_a, report_helpers.study_b]) == [1, 0]


def test_the_cheapest_studies_within_the_start_budget_run_here(monkeypatch):
    for name, cost in (("study_a", 5.0), ("study_b", 0.5), ("pid_study", 1.0)):
        monkeypatch.setattr(getattr(report_helpers, name), "cost_hint", cost, raising=False)
    monkeypatch.setattr(runner, "LOCAL_START_SECONDS", 1.5)
    studies = [report_helpers.study_a, report_helpers.study_b, report_helpers.pid_study]
    # cheapest first while the sum stays within 1.5 s: b (0.5), then the pid study (1.0)
    assert runner._split_local(studies) == ([1, 2], [0])
    monkeypatch.setattr(runner, "LOCAL_START_SECONDS", 1.2)
    assert runner._split_local(studies) == ([1], [0, 2])
    monkeypatch.delattr(report_helpers.study_b, "cost_hint")  # a study without a hint: to the pool
    assert runner._split_local(studies) == ([2], [0, 1])


def test_a_cheap_study_runs_in_this_process_and_the_others_in_workers(monkeypatch):
    monkeypatch.setattr(report_helpers.pid_study, "cost_hint", 0.5, raising=False)
    monkeypatch.setattr(runner, "LOCAL_START_SECONDS", 1.0)
    studies = [report_helpers.study_a, report_helpers.pid_study]
    runs = list(run_studies(studies, paper_scale=False, workers=2, preload=PRELOAD))
    assert [i for i, _, _ in runs] == [1, 0]  # the local study first, while the server starts
    here = runs[0][1]
    assert here.datasets["where"].attrs["pid"] == os.getpid()
    monkeypatch.setattr(runner, "LOCAL_START_SECONDS", 0.0)
    pooled = _collect(studies, workers=2)[1][0]
    assert pooled.datasets["where"].attrs["pid"] != os.getpid()
    assert pooled.records == here.records
    # a worker's full collections skip the objects it inherited from the fork server
    assert pooled.datasets["where"].attrs["frozen"] > 10_000
    # studies run with the study thresholds, here and in a worker; here only meanwhile
    for result in (here, pooled):
        assert list(result.datasets["where"].attrs["gc_thresholds"]) == list(
            runner.STUDY_GC_THRESHOLDS)
    assert gc.get_threshold() != runner.STUDY_GC_THRESHOLDS


def test_collector_thresholds_are_restored_after_an_error():
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), runner.collector_thresholds((12_345, 6, 7)):
        assert gc.get_threshold() == (12_345, 6, 7)
        raise RuntimeError("stop")
    assert gc.get_threshold() == before


def test_studies_all_within_the_start_budget_run_here_without_a_pool(monkeypatch):
    monkeypatch.setattr(report_helpers.pid_study, "cost_hint", 0.5, raising=False)
    monkeypatch.setattr(report_helpers.study_b, "cost_hint", 0.4, raising=False)
    monkeypatch.setattr(runner, "LOCAL_START_SECONDS", 1.0)
    monkeypatch.setattr(runner.multiprocessing, "get_context", None)  # no fork server, no pool
    studies = [report_helpers.pid_study, report_helpers.study_b]
    runs = list(run_studies(studies, paper_scale=False, workers=2))
    assert [i for i, _, _ in runs] == [1, 0]  # cheapest first
    assert runs[1][1].datasets["where"].attrs["pid"] == os.getpid()
    assert all(png.startswith(b"\x89PNG") for _, _, pngs in runs for png in pngs.values())


def test_a_failing_worker_study_raises_its_error():
    studies = [report_helpers.study_a, report_helpers.failing_study]
    with pytest.raises(RuntimeError, match="boom in a worker"):
        _collect(studies, workers=2)


def test_available_cores_is_positive():
    assert available_cores() >= 1


def test_a_study_whose_result_does_not_pickle_runs_here():
    studies = [report_helpers.study_a, report_helpers.unpicklable_study]
    (a, _), (c, c_png) = _collect(studies, workers=2)
    assert (a.name, c.name) == ("a", "c") and c.records == _collect(studies[1:], 1)[0][0].records
    assert all(png.startswith(b"\x89PNG") for png in c_png.values())


def test_a_split_study_runs_its_parts_in_workers_and_gives_the_one_piece_result(monkeypatch):
    """A study registered with parts: each part a task of the pool, then the join; the same
    result (records, datasets, seeds, figures' text) as the study in one piece here."""
    monkeypatch.setattr(runner, "LOCAL_START_SECONDS", 0.0)
    split = report_helpers.split_study.report_study
    assert runner.study_parts(split) == ("short", "long")
    assert runner.cost_hint(split.part("long")) == 2.0
    assert runner.cost_hint(split.joined({})) == 3.0 - 2.5  # the rest of the study's cost
    studies = [report_helpers.study_a, split]
    ((one, one_png),) = _collect([split], workers=1)
    (_, _), (two, two_png) = _collect(studies, workers=2)
    assert one.records == two.records and one.seeds == two.seeds and one.name == two.name
    for key in ("draws", "parts"):
        assert one.datasets[key].identical(two.datasets[key])
    assert one_png.keys() == two_png.keys()
    assert figure_text(*one.figures.values(), *one.figures) == next(iter(two.figures.values()))
    pids = {line.split()[0]: line.split()[1] for line in two.diagnostics}
    values = {name: pids.pop(f"{name}-value") for name in ("short", "long")}
    assert str(os.getpid()) not in pids.values()  # the parts and the join ran in workers
    # each part's value was unpickled once, by the join's worker: this process passed the
    # bytes on without unpickling them (nor importing what they need)
    assert values == {name: f"{pids[name]},{pids['join']}" for name in ("short", "long")}
    assert all(line.split()[1] == str(os.getpid()) for line in one.diagnostics
               if "-value" not in line)


def test_a_split_study_is_not_run_here_at_the_start(monkeypatch):
    monkeypatch.setattr(runner, "LOCAL_START_SECONDS", 100.0)
    studies = [report_helpers.study_a, report_helpers.split_study.report_study]
    monkeypatch.setattr(report_helpers.study_a, "cost_hint", 1.0, raising=False)
    assert runner._split_local(studies) == ([0], [1])


def test_the_pool_takes_the_longest_task_first_a_part_counting_its_join(monkeypatch):
    # split study: parts long 2.0 and short 0.5, its join 3.0 - 2.5 = 0.5 after the last
    monkeypatch.setattr(report_helpers.study_a, "cost_hint", 1.2, raising=False)
    split = report_helpers.split_study.report_study
    tasks = runner._Tasks([report_helpers.study_a, split], [0, 1], paper_scale=False)
    assert [key for _, key, _ in tasks.waiting] == [("part", 1, "long"), ("study", 0),
                                                     ("part", 1, "short")]


def test_while_the_pool_starts_this_process_takes_the_next_cheapest_study(monkeypatch):
    """The pool's start is held until this process has given two results: the planned local
    study (b, 0.5 s) and then, the pool not ready, the cheapest pooled study within
    LOCAL_START_SECONDS (the pid study, 0.6 s: over the plan's budget, 1.0 s, with b); a
    study without a hint (a) still goes to the pool. Before, this process waited for the
    pool after b (held here until a 10 s timeout) and the pid study ran in a worker. The
    fork server is the module's (PRELOAD), so no new one is started for this test."""
    release = threading.Event()
    forkserver_context = multiprocessing.get_context("forkserver")

    class HeldStart:
        """The fork server's context, its Pool() held until ``release`` (at most 10 s)."""

        def set_forkserver_preload(self, modules):
            forkserver_context.set_forkserver_preload(modules)

        def Pool(self, *args, **kwargs):  # multiprocessing's name
            release.wait(10)
            return forkserver_context.Pool(*args, **kwargs)

    monkeypatch.setattr(runner.multiprocessing, "get_context", lambda method: HeldStart())
    monkeypatch.setattr(report_helpers.study_b, "cost_hint", 0.5, raising=False)
    monkeypatch.setattr(report_helpers.pid_study, "cost_hint", 0.6, raising=False)
    monkeypatch.setattr(runner, "LOCAL_START_SECONDS", 1.0)
    studies = [report_helpers.study_a, report_helpers.study_b, report_helpers.pid_study]
    assert runner._split_local(studies) == ([1], [2, 0])
    order = []
    try:
        for i, result, _ in run_studies(studies, paper_scale=False, workers=2,
                                        preload=PRELOAD):
            order.append((i, result.datasets.get("where")))
            if len(order) == 2:
                release.set()  # the pool may start
    finally:
        release.set()
    assert [i for i, _ in order] == [1, 2, 0]
    assert order[1][1].attrs["pid"] == os.getpid()  # the pid study ran here


def test_an_interrupt_while_the_fork_server_imports_stops_it_at_once(monkeypatch, tmp_path):
    """Ctrl-C or SIGTERM (a KeyboardInterrupt) in a study run here while the fork server is
    still importing its preload (the runner module, then a stub that sleeps 20 s): run_studies
    re-raises at once, not after the imports (the pool's start waited for them), and the fork
    server is gone, not left to finish them (as an orphan, after the forced exit of ``dprisk
    reproduce``). Bound: 10 s from the interrupt, half the stub's 20 s, for a kill and a reap
    on a loaded machine.

    The interrupt comes as soon as the server runs (it is then importing the runner, whose
    libraries take 1.7 s of CPU), not once it has reached the stub: the same stop of a server
    amid its imports, without those 1.7 s of imports done for nothing before the kill.
    """
    report_helpers.slow_preload("slow_preload_for_runner_test", tmp_path, monkeypatch)
    runner.stop_fork_server()  # the next fork server imports this test's preload
    when = {}

    def interrupted_here(*, paper_scale):
        when["server"] = fork_server_pid()
        os.kill(when["server"], 0)  # it runs (amid its imports: the stub's 20 s at the latest)
        when["interrupt"] = time.monotonic()
        raise KeyboardInterrupt

    interrupted_here.cost_hint = 0.1  # run here, first; study_a (no hint) goes to the pool
    try:
        with pytest.raises(KeyboardInterrupt):
            list(run_studies([report_helpers.study_a, interrupted_here], paper_scale=False,
                             workers=2, preload=("slow_preload_for_runner_test",)))
        assert time.monotonic() - when["interrupt"] < 10.0
        assert fork_server_pid() is None
        with pytest.raises(ProcessLookupError):  # killed and reaped
            os.kill(when["server"], 0)
    finally:
        runner.stop_fork_server()


def test_the_study_taken_here_is_the_cheapest_whole_study_within_the_limit(monkeypatch):
    monkeypatch.setattr(report_helpers.study_a, "cost_hint", 2.0, raising=False)
    monkeypatch.setattr(report_helpers.study_b, "cost_hint", 0.7, raising=False)
    monkeypatch.setattr(report_helpers.pid_study, "cost_hint", 0.4, raising=False)
    split = report_helpers.split_study.report_study  # parts 2.0 and 0.5: never taken here
    studies = [report_helpers.study_a, report_helpers.study_b, report_helpers.pid_study, split]
    tasks = runner._Tasks(studies, [0, 1, 2, 3], paper_scale=False)
    assert [tasks.take_cheapest(1.0), tasks.take_cheapest(1.0)] == [2, 1]
    assert tasks.take_cheapest(1.0) is None  # a (2.0) is over the limit; parts are not taken
    assert tasks.take_cheapest(5.0) == 0 and tasks.take_cheapest(5.0) is None
    assert [key for _, key, _ in tasks.waiting] == [("part", 3, "long"), ("part", 3, "short")]


def test_a_freed_worker_gets_its_next_task_before_the_answer_is_unpickled(monkeypatch):
    """The pool waits for this process only to be handed the next task: that comes before
    the answer is unpickled and given to the report (which may take a while on a loaded
    machine), not after. A pool that runs each task at once stands in for the workers."""
    events = []
    loads = runner.pickle.loads

    class InstantPool:
        def apply_async(self, func, args, callback, error_callback):
            events.append(("submit", args[0][0]))
            callback(func(*args))

    def recorded_loads(payload):
        events.append(("loads",))
        return loads(payload)

    monkeypatch.setattr(report_helpers.study_a, "cost_hint", 2.0, raising=False)
    monkeypatch.setattr(report_helpers.study_b, "cost_hint", 1.0, raising=False)
    tasks = runner._Tasks([report_helpers.study_a, report_helpers.study_b], [0, 1],
                          paper_scale=False)
    tasks.submit(InstantPool(), 1)
    monkeypatch.setattr(runner.pickle, "loads", recorded_loads)
    answers = tasks.run(InstantPool(), 1)
    assert next(answers)[0] == 0
    assert events == [("submit", ("study", 0)), ("submit", ("study", 1)), ("loads",)]
    assert [i for i, _, _ in answers] == [1]
