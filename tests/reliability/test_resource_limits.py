"""Requests too large for the memory limit are refused before anything is allocated.

Each row is a command line whose memory is known from its parameters (a window of a tiny
rho, draws x chains, sweep points, a release grid). Run through ``dprisk.cli.main.main`` in
this process under :mod:`tracemalloc` (NumPy reports its arrays to it), each must give exit
status 2 with one stderr line naming the parameter, the estimate and the budget's
environment variable, allocate less than :data:`PEAK_LIMIT`, and write nothing. The budget
(``DPRISK_MEMORY_LIMIT``, :mod:`dprisk.runtime.memory_limit`) can be raised and lowered; a Dask
scheduler that does not answer or has no worker is refused within its timeout.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest
from cli_helpers import check_contract, run_cli

from dprisk.cli.main import main
from dprisk.runtime.memory_limit import (
    DEFAULT_MEMORY_LIMIT,
    LIMIT_ENV,
    MemoryLimitError,
    check_memory,
    format_bytes,
    memory_limit,
)

#: Most memory a refused request may allocate (imports of lazily loaded modules included).
PEAK_LIMIT = 64 * 1024**2

TWO_LEVEL = ["--rho1", "0.1", "--rho2", "0.25", "--d", "3"]
GIBBS = ["posterior", *TWO_LEVEL, "--x1-star", "1", "--x2-star", "3", "--y1-star", "2",
         "--method", "gibbs", "--seed", "1"]
SWEEP = ["sweep", "--rho2", "0.25", "--d", "3", "--x2", "2", "--out", "s.nc"]

#: name -> (argv, text the message must hold)
TOO_LARGE = {
    "unique levels, rho 1e-9": (["marginal", "--rhos", "1e-9,1e-9"], "rhos"),
    "unique levels, rho 1e-12 and 1e8": (["marginal", "--rhos", "1e-12,1e8"], "rhos"),
    "gibbs, 1e9 draws": ([*GIBBS, "--draws", "1000000000"], "draws"),
    "gibbs, 1e8 chains": ([*GIBBS, "--chains", "100000000"], "chains"),
    "sweep, 1e9 rho1 points": ([*SWEEP, "--rho1", "0.1:1:1000000000"], "--rho1"),
    "sweep, 3e6 points of two grids": (["sweep", "--rho1", "0.1", "--rho2", "0.25", "--d",
                                        "1:1000", "--x2", "1:3000", "--out", "s.nc"], "--x2"),
    "sweep, a long comma list": ([*SWEEP, "--rho1", ",".join(["0.1"] * 3_000_000)], "--rho1"),
    "two levels, rho1 1e-12": (["marginal", "--rho1", "1e-12", "--rho2", "0.25", "--d", "3",
                                "--x2", "3"], "rho1"),
    "two levels, rho2 1e-12": (["marginal", "--rho1", "0.1", "--rho2", "1e-12", "--d", "3",
                                "--x2", "3"], "rho2"),
}


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    return tmp_path


def _refused(capsys, argv) -> str:
    tracemalloc.start()
    try:
        start = time.perf_counter()
        status, out, err = run_cli(argv, capsys)
        seconds = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status == 2, err
    check_contract(status, out, err)
    assert peak < PEAK_LIMIT, f"allocated {format_bytes(peak)} before refusing"
    assert seconds < 30
    return err.strip()


@pytest.mark.parametrize("case", list(TOO_LARGE))
def test_too_large_requests_are_refused_before_allocation(case, in_tmp, capsys):
    argv, parameter = TOO_LARGE[case]
    line = _refused(capsys, argv)
    assert parameter in line and "memory limit of 2 GiB" in line and LIMIT_ENV in line, line
    assert "GiB of memory" in line or "TiB of memory" in line, line
    assert list(in_tmp.iterdir()) == []  # nothing written (no s.nc, no chunk store)


def test_the_estimates_of_the_issue_examples(in_tmp, capsys):
    """The estimates printed are within a small factor of the measured peaks."""
    line = _refused(capsys, ["marginal", "--rhos", "1e-9,1e-9"])  # measured peak 6.8 GB
    assert "6.96 GiB" in line, line
    # draws, diagnostics and ArviZ groups: 160 bytes per draw and chain (run_options)
    line = _refused(capsys, [*GIBBS, "--draws", "1000000000"])
    assert "596 GiB" in line, line


def test_the_budget_is_raised_and_lowered_by_the_environment(in_tmp, capsys, monkeypatch):
    # 4 chains x 1e4 draws x 160 B: 6.1 MiB, above 1 MiB (1e5 draws, 61 MiB, sampled the
    # same check's two runs in ten times the CPU)
    argv = [*GIBBS, "--draws", "10000", "--json"]
    assert main(argv) == 0
    capsys.readouterr()
    monkeypatch.setenv(LIMIT_ENV, "1MiB")
    line = _refused(capsys, argv)
    assert "6.1 MiB" in line and "limit of 1 MiB" in line, line
    monkeypatch.setenv(LIMIT_ENV, "1 GB")
    assert main(argv) == 0
    capsys.readouterr()
    monkeypatch.setenv(LIMIT_ENV, "lots")
    assert LIMIT_ENV in _refused(capsys, argv)


@pytest.mark.parametrize(("text", "expected"), [
    ("", DEFAULT_MEMORY_LIMIT), ("1000", 1000), ("512M", 512 * 1024**2),
    ("16GiB", 16 * 1024**3), ("2 gb", 2 * 1024**3), ("1.5K", 1536), ("1e9", 10**9),
    ("1T", 1024**4),
])
def test_memory_budget_parses_sizes(text, expected, monkeypatch):
    monkeypatch.setenv(LIMIT_ENV, text)
    assert memory_limit() == expected


@pytest.mark.parametrize("text", ["abc", "0", "-1", "1X", "nan", "inf", "0.5"])
def test_memory_budget_refuses_nonsense(text, monkeypatch):
    monkeypatch.setenv(LIMIT_ENV, text)
    with pytest.raises(ValueError, match=LIMIT_ENV):
        memory_limit()


def test_check_memory_names_the_parameter(monkeypatch):
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    check_memory(DEFAULT_MEMORY_LIMIT, parameter="draws", what="x")  # at the budget: fine
    with pytest.raises(MemoryLimitError, match=r"^draws: 3 arrays needs about 2 GiB"):
        check_memory(DEFAULT_MEMORY_LIMIT + 1, parameter="draws", what="3 arrays")
    assert issubclass(MemoryLimitError, ValueError)


def test_api_refuses_before_allocating(monkeypatch):
    from dprisk.inference.nested.unique_levels import marginal_posterior_unique_levels
    from dprisk.inference.sweeps.sweep import sweep
    from dprisk.inference.two_level.gibbs import gibbs_sample

    monkeypatch.delenv(LIMIT_ENV, raising=False)
    with pytest.raises(ValueError, match="draws, chains"):
        gibbs_sample(1, 3, 2, rho1=0.1, rho2=0.25, d=3, draws=10**9, random_seed=1)
    with pytest.raises(ValueError, match="rhos"):
        marginal_posterior_unique_levels([1e-9, 1e-9], method="contour")
    with pytest.raises(ValueError, match="x2: a sweep of 100000000 grid points"):
        sweep(rho1=0.1, rho2=0.25, d=3, x2=range(1, 10**8 + 1), progress=False)


def _p_map_correct(**kwargs):
    from dprisk.inference.attribute.design import p_map_correct

    return p_map_correct(**kwargs)


def _expected_true_posterior(**kwargs):
    from dprisk.inference.attribute.design import expected_true_posterior

    return expected_true_posterior(**kwargs)


def _synthesize(**kwargs):
    from dprisk.inference.population.synth import synthesize

    return synthesize(**kwargs)


def _nested_exact(**kwargs):
    from dprisk.inference.nested.exact import exact_posterior

    return exact_posterior([1, 2, 3], [1, 2], siblings=[3, 3], **kwargs)


def _nested_exact_releases(releases):
    import numpy as np

    from dprisk.inference.nested.exact import exact_posterior

    return exact_posterior(np.zeros((releases, 3), dtype=np.int8),
                           np.zeros((releases, 2), dtype=np.int8), rhos=[0.1] * 3,
                           siblings=[3, 3])


def _nested_gibbs(**kwargs):
    from dprisk.inference.nested.gibbs import gibbs_sample

    return gibbs_sample([1, 2, 3], [1, 2], siblings=[3, 3], draws=10, random_seed=1, **kwargs)


def _kcell_map_correct(**kwargs):
    from dprisk.inference.product.histogram_attribute import p_map_correct_mc

    return p_map_correct_mc([1, 2], [[1, 2]], 0, 0.1, 0.2, random_seed=1, **kwargs)


#: name -> (call, keyword arguments, text the message must hold): API calls whose size is a
#: number, refused under tracemalloc below PEAK_LIMIT (before the fix, p_map_correct(0.1,
#: 10**9) made a 7.45 GiB uniform prior and raised numpy's MemoryError; synthesize(10**12,
#: 1) a 77.9 GiB array of block sizes; the nested-levels posterior at rho = 1e-6, windows of
#: about 10**4 values per level, numpy's MemoryError after allocating 5 GiB; the K-cell
#: product study, 10**13 releases: no check, running for years).
API_TOO_LARGE = {
    "kcell_map_correct, 1e13 releases": (_kcell_map_correct, {"releases": 10**13},
                                         r"^releases: 10000000000000 simulated releases"),
    "kcell_map_correct, 1e9 releases": (_kcell_map_correct, {"releases": 10**9}, "releases"),
    "nested exact_posterior, rho 1e-6": (_nested_exact, {"rhos": [1e-6] * 3},
                                         r"^rhos, siblings: the nested-levels windows"),
    # before: about 135 us and 2.7 kB a release, 10**7 releases: 23 min, then MemoryError
    "nested exact_posterior, 1e6 releases": (_nested_exact_releases, {"releases": 10**6},
                                             r"^x_stars, y_stars: the level posteriors of "
                                             r"1000000 release"),
    "nested gibbs_sample, rho 1e-6": (_nested_gibbs, {"rhos": [1e-6] * 3},
                                      r"^rhos, siblings: the nested-levels windows"),
    "synthesize, 1e12 persons": (_synthesize, {"persons": 10**12, "seed": 1},
                                 r"^persons: a population of 1000000000000 persons needs"),
    "p_map_correct, 1e9 cells": (_p_map_correct, {"rho": 0.1, "n_cells": 10**9},
                                 r"^n_cells: 1000000000 cells needs about 59.6 GiB"),
    "expected_true_posterior, 1e8 cells": (_expected_true_posterior,
                                           {"rho": 0.1, "n_cells": 10**8}, r"^n_cells: "),
}


@pytest.mark.parametrize("case", sorted(API_TOO_LARGE))
def test_api_sizes_are_refused_before_allocating(case, monkeypatch):
    call, kwargs, message = API_TOO_LARGE[case]
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    small = {"n_cells": 3, "persons": 10, "rhos": [0.5] * 3, "releases": 10}
    call(**{**kwargs, **{key: small[key] for key in kwargs if key in small}})  # imports, warm
    tracemalloc.start()
    try:
        with pytest.raises(MemoryLimitError, match=message):
            call(**kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < PEAK_LIMIT, format_bytes(peak)


# --------------------------------------------------------------------------- scheduler
#: The Dask timeout where no scheduler can answer (a refused or unresolvable address): the
#: answer is the same for any timeout, so a short one (1 s before issue 36: idle waiting).
NO_ANSWER_TIMEOUT = "0.25"


def test_a_scheduler_that_does_not_answer_is_exit_2(in_tmp, capsys, monkeypatch):
    monkeypatch.setenv("DPRISK_SCHEDULER_TIMEOUT", NO_ANSWER_TIMEOUT)
    line = _refused(capsys, [*SWEEP, "--rho1", "0.1", "--scheduler", "tcp://127.0.0.1:1"])
    assert line.startswith("dprisk sweep: error: --scheduler: no Dask scheduler answered")
    assert list(in_tmp.iterdir()) == []


@pytest.mark.parametrize("address", ["bogus", "tcp://bogus", "tcp://127.0.0.1:1"])
def test_a_refused_scheduler_leaves_no_dask_client_in_the_process(in_tmp, capsys, monkeypatch,
                                                                  address):
    """A refused address registered no default client (xarray's file locks went to it)."""
    import distributed

    monkeypatch.setenv("DPRISK_SCHEDULER_TIMEOUT", NO_ANSWER_TIMEOUT)
    line = _refused(capsys, [*SWEEP, "--rho1", "0.1", "--scheduler", address])
    assert line.startswith("dprisk sweep: error: --scheduler: ")
    with pytest.raises(ValueError, match="No clients found"):
        distributed.default_client()


def test_a_scheduler_without_workers_is_exit_2(in_tmp, capsys, monkeypatch):
    from distributed import LocalCluster

    monkeypatch.setenv("DPRISK_SCHEDULER_TIMEOUT", "1")
    with LocalCluster(n_workers=0, processes=False, protocol="tcp", dashboard_address=None,
                      scheduler_kwargs={"dashboard_address": ":0"}) as cluster:
        start = time.perf_counter()
        status = main([*SWEEP, "--rho1", "0.1", "--scheduler", cluster.scheduler_address])
        seconds = time.perf_counter() - start
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and "--scheduler" in lines[0], lines
    assert "has no worker" in lines[0] and seconds < 10
    assert list(in_tmp.iterdir()) == []
