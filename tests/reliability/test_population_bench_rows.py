"""benchmarks/run.py's rows for issue 34 (bench_population, bench_population_measure).

The rows are fed the figures' shape the benchmark modules return (numbers of the run recorded
in docs/population.md) and checked for pass and for fail at the targets' edges: a row that
cannot fail would hide a regression.
"""

import copy

import pytest
from benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench_run():
    return load_benchmark("run")


POPULATION = {
    "persons": 1_000_000,
    "risk_informed": {"wall_s": 33.1, "cpu_s": 36.9, "peak_bytes": 0.86 * 1024**3,
                      "partitions": 4, "map_correct_nonmodal": 0.162},
    "risk_outsider": {"wall_s": 41.6, "cpu_s": 44.4, "peak_bytes": 0.94 * 1024**3,
                      "partitions": 4, "map_correct_nonmodal": 0.061},
    "kernels": {"outsider_numpy_ratio_to_exp": 0.25, "outsider_compiled_ratio_to_exp": 0.26,
                "informed_ratio_to_exp": 0.027, "np_exp_per_s": 1e9},
    "national": {"informed_end_to_end_projected_hours_2_cores": 1.6,
                 "outsider_end_to_end_projected_hours_2_cores": 1.9,
                 "informed_projected_hours_2_cores": 0.04,
                 "outsider_projected_hours_2_cores": 0.05,
                 "informed_linearity_ratio": 0.99, "outsider_linearity_ratio": 0.97},
}
MEASURE = {"figures": {
    "table": {"seconds": 10.6, "cpu_seconds": 10.6, "peak_mb": 530, "blocks": 22487,
              "over_raw_draws": 5.0},
    "nmf": {"seconds": 20.0, "cpu_seconds": 20.0, "peak_mb": 700, "blocks": 22487,
            "over_raw_draws": 9.0},
    "read-table": {"seconds": 3.0, "cpu_seconds": 3.0, "peak_mb": 900, "blocks": 22487},
    "read-nmf": {"seconds": 4.0, "cpu_seconds": 4.0, "peak_mb": 900, "blocks": 22487},
    "raw_draws_seconds": 2.1}}


def _rows(bench_run, population=POPULATION, measure=MEASURE):
    results = {"bench_population": {"figures": population},
               "bench_population_measure": {"figures": measure}}
    return bench_run._population_lines(results) + bench_run._population_measure_lines(results)


def test_rows_pass_on_the_recorded_run(bench_run):
    rows = _rows(bench_run)
    assert len(rows) == 4 + 4  # two adversaries, kernels, national; four measure processes
    assert all(met for _, _, met in rows), [r for r in rows if not r[2]]
    assert "33.1 s wall" in rows[0][1] and "1.6 h end to end" in rows[3][1]


@pytest.mark.parametrize("path, value, row", [
    (("risk_outsider", "wall_s"), 60.5, 1),                 # over 60 s
    (("risk_informed", "peak_bytes"), 2.1 * 1024**3, 0),    # over 2 GB
    (("kernels", "informed_ratio_to_exp"), 0.012, 2),       # a kernel twice as slow
    (("national", "outsider_linearity_ratio"), 1.3, 3),     # not linear: projection unsound
])
def test_rows_fail_past_their_targets(bench_run, path, value, row):
    figures = copy.deepcopy(POPULATION)
    figures[path[0]][path[1]] = value
    rows = _rows(bench_run, population=figures)
    assert [i for i, (_, _, met) in enumerate(rows) if not met] == [row]


def test_measure_row_fails_over_target(bench_run):
    measure = copy.deepcopy(MEASURE)
    measure["figures"]["nmf"]["seconds"] = 61.0
    rows = _rows(bench_run, measure=measure)
    assert [i for i, (_, _, met) in enumerate(rows) if not met] == [5]


def test_no_rows_without_the_modules(bench_run):
    assert bench_run._population_lines({}) == []
    assert bench_run._population_measure_lines({}) == []
