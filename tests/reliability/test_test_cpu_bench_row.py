"""benchmarks/bench_test_cpu.py's per-directory sums and benchmarks/run.py's row (issue 36).

The row names every test directory's CPU seconds (so growth is visible in ``make bench``) and
the CPU spent outside the tests (the workers' start and collection); it passes only for a
clean run within the target, and fails just past it.
"""

import pytest
from benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench_run():
    return load_benchmark("run")


@pytest.fixture(scope="module")
def bench_test_cpu():
    return load_benchmark("bench_test_cpu")


def test_by_directory_sums_each_tests_dir_and_sorts_by_cpu(bench_test_cpu):
    records = [{"nodeid": "tests/inference/a/test_x.py::t[1]", "cpu_s": 1.5},
               {"nodeid": "tests/inference/test_y.py::t", "cpu_s": 0.25},
               {"nodeid": "tests/reliability/test_z.py::t", "cpu_s": 3.0},
               {"nodeid": "tests/test_top.py::t", "cpu_s": 0.5}]
    assert list(bench_test_cpu.by_directory(records).items()) == [
        ("tests/reliability", 3.0), ("tests/inference", 1.75), ("test_top.py", 0.5)]


def _figures(wall_s: float, exit_status: int = 0) -> dict:
    return {"figures": {"wall_s": wall_s, "cpu_s": 400.0, "run_cpu_s": 452.0, "tests": 7900,
                        "exit_status": exit_status, "target_s": 240.0,
                        "by_directory": {"tests/reliability": 150.0, "tests/inference": 130.0,
                                         "tests/docs": 31.0}}}


def test_row_lists_every_directory_and_the_cpu_outside_the_tests(bench_run):
    ((target, measured, met),) = bench_run._test_cpu_lines({"bench_test_cpu": _figures(200.0)})
    assert "240 s" in target and met
    assert "reliability 150, inference 130, docs 31" in measured
    assert "+ 52 s outside them" in measured


@pytest.mark.parametrize(("wall_s", "exit_status"), [(240.5, 0), (100.0, 1)])
def test_row_fails_past_the_target_or_on_a_failing_run(bench_run, wall_s, exit_status):
    ((_, _, met),) = bench_run._test_cpu_lines({"bench_test_cpu": _figures(wall_s, exit_status)})
    assert not met


@pytest.mark.parametrize(("seconds", "returncode", "met"), [(240.0, 0, True), (240.5, 0, False),
                                                           (200.0, 1, False)])
def test_a_fresh_clones_make_test_of_the_same_run_is_a_row_of_its_own(bench_run, seconds,
                                                                       returncode, met):
    """With ``bench_filing`` in the run, issue 36's measure itself: set-up included."""
    filing = {"figures": {"current_commit": "abc1234", "make_test": {"current": {
        "seconds": seconds, "returncode": returncode, "summary": "6880 passed in 210.0s"}}}}
    rows = bench_run._test_cpu_lines({"bench_test_cpu": _figures(200.0), "bench_filing": filing})
    assert len(rows) == 2
    (target, measured, ok) = rows[1]
    assert target == ("make test from a fresh clone of abc1234, set-up included, within 240 s "
                      "(issue 36)")
    assert measured == f"{seconds:.0f} s (6880 passed in 210.0s)" and ok is met


def test_tests_are_counted_without_the_module_entries_but_with_any_parameters(bench_test_cpu):
    """A parameter may hold ``<`` (``rho < 0``); the modules' and session's entries do not count."""
    records = [{"nodeid": "tests/cli/test_a.py::t[--rho < 0]"},
               {"nodeid": "tests/cli/test_a.py::t[plain]"},
               {"nodeid": "tests/cli/test_a.py::<module teardown>"},
               {"nodeid": "<session fixture sizing_server>"}]
    assert bench_test_cpu.count_tests(records) == 2


def test_a_red_fresh_clone_run_names_its_failed_tests(bench_run):
    """The clone is deleted after the run: the row must say which tests were red."""
    filing = {"figures": {"current_commit": "abc1234", "make_test": {"current": {
        "seconds": 201.0, "returncode": 2, "summary": "1 failed, 8183 passed in 191.8s",
        "failed": ["tests/cli/test_a.py::t[3]"]}}}}
    rows = bench_run._test_cpu_lines({"bench_test_cpu": _figures(200.0), "bench_filing": filing})
    (_, measured, ok) = rows[1]
    assert measured == "201 s (1 failed, 8183 passed in 191.8s); failed: tests/cli/test_a.py::t[3]"
    assert not ok


def test_the_failed_ids_are_read_from_pytests_short_summary():
    bench_filing = load_benchmark("bench_filing")
    output = ("tests/cli/test_a.py ....F\n"
              "=========================== short test summary info ===========================\n"
              "FAILED tests/cli/test_a.py::t[rho 0.5] - AssertionError: assert 1 == 2\n"
              "ERROR tests/io/test_b.py::test_c - OSError: gone\n"
              "======= 1 failed, 8183 passed, 5 skipped, 1 error in 191.80s (0:03:11) =======\n")
    assert bench_filing.failed_tests(output) == ["tests/cli/test_a.py::t[rho 0.5]",
                                                 "tests/io/test_b.py::test_c"]
    assert bench_filing.failed_tests("FAILED tests/x.py::y\n") == ["tests/x.py::y"]
