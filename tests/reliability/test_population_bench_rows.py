"""benchmarks/run.py's rows for issue 34 (bench_population, bench_population_measure).

The rows are fed the figures' shape the benchmark modules return (numbers of the run recorded
in docs/population.md) and checked for pass and for fail at the targets' edges: a row that
cannot fail would hide a regression.
"""

import copy

import pytest
from benchmark_scripts import BENCHMARKS, load_benchmark


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
                "informed_ratio_to_exp": 0.027, "np_exp_per_s": 1e9, "np_exp_kernel": "X86_V3"},
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


#: The kernels' ratios measured against AVX-512's ``np.exp`` (``X86_V4``) on the Xeon of
#: 2026-11-30, the lowest of 16 runs (run.py's floors for that kernel are half their medians).
X86_V4_LOWEST = {"outsider_numpy_ratio_to_exp": 0.0229, "outsider_compiled_ratio_to_exp": 0.0206,
                 "informed_ratio_to_exp": 0.0031, "np_exp_per_s": 1.38e9,
                 "np_exp_kernel": "X86_V4"}


def _kernel_row(bench_run, kernels):
    figures = copy.deepcopy(POPULATION)
    figures["kernels"] = kernels
    return _rows(bench_run, population=figures)[2]


def test_the_kernel_floors_follow_the_exp_kernel_they_were_recorded_against(bench_run):
    """The same kernels' ratios against AVX-512's ``np.exp``, 6-10 times faster than AVX2's,
    pass the floors recorded against it and would fail those recorded against AVX2's."""
    title, text, met = _kernel_row(bench_run, X86_V4_LOWEST)
    assert met and "X86_V4" in title and "(floor 0.0025x)" in text
    assert not _kernel_row(bench_run, {**X86_V4_LOWEST, "np_exp_kernel": "X86_V3"})[2]
    twice_as_slow = {**X86_V4_LOWEST, "informed_ratio_to_exp": 0.0051 / 2 - 1e-4}
    assert not _kernel_row(bench_run, twice_as_slow)[2]


def test_an_unrecorded_exp_kernel_takes_the_default_floors(bench_run):
    """A run that did not record the kernel (an older ``last_run.json``) or a kernel with no
    floors of its own (e.g. an ARM CPU's) is held to the ``"*"`` floors."""
    kernels = {k: v for k, v in POPULATION["kernels"].items() if k != "np_exp_kernel"}
    title, _, met = _kernel_row(bench_run, kernels)
    assert met and "not recorded" in title
    assert bench_run._population_kernel_floors("ASIMD") == bench_run.POPULATION_KERNEL_FLOORS["*"]


def test_the_bench_names_numpys_exp_kernel_on_this_cpu(monkeypatch):
    """``bench_population`` records the float64 ``exp`` kernel numpy dispatched here: one of
    those ``numpy.lib.introspect`` lists for it on this CPU."""
    from numpy.lib.introspect import opt_func_info

    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the script imports timing beside it
    bench = load_benchmark("bench_population")
    available = opt_func_info(func_name="^exp$", signature="float64")["exp"]["dd"]["available"]
    kernel = bench._exp_kernel()
    assert kernel != "unknown" and kernel in available
