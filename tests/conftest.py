"""Shared test configuration: one BLAS thread per process, a non-interactive matplotlib backend,
the libraries' docstrings left as written, Hypothesis's storage in dprisk's cache, seeded
generators, the garbage collector's thresholds and the order and grouping of modules over the
xdist workers."""

import gc
import os
import re

from dprisk.runtime.import_costs import matplotlib_skips_property_docs, scipy_skips_capability_notes
from dprisk.runtime.worker_threads import one_thread_per_worker

#: One BLAS and OpenMP thread in each test process, set before NumPy loads here: the xdist
#: workers (one per core) and the tests' subprocesses inherit it. OpenBLAS's second thread
#: otherwise spun after each threaded call and at each process's start on the core the other
#: worker needed: 2 % of a ``make test`` run's CPU (633 of 31,896 ``perf`` samples, 2026-11-30).
#: A value set in the environment is kept.
one_thread_per_worker()

#: Matplotlib's property tables are not written into its artists' docstrings as each test
#: process defines them (``matplotlib_skips_property_docs``, as in the fork servers and ``dprisk
#: reproduce``; SciPy's notes: :func:`pytest_sessionstart`). Called before matplotlib's artist
#: classes other than ``Artist`` are defined (it applies to classes defined afterwards).
matplotlib_skips_property_docs()

import hypothesis  # noqa: E402
import matplotlib  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dprisk.runtime.cache import cache_root  # noqa: E402

matplotlib.use("Agg")

#: Where Hypothesis keeps what it reads from the package's modules: the constants of each
#: "local" module's source (``hypothesis.internal.constants_ast``, by the source's hash), which
#: it reads in each test process at collection. Kept in the default ``.hypothesis/`` of the
#: working tree, a fresh clone's two workers parsed all ~260 of the package's modules, each
#: (1.9-2.2 s of CPU per worker against 0.5 s with them kept, 2026-12-01); kept in dprisk's
#: cache directory (beside ``make setup``'s compiled libraries and the kept assertion rewrites),
#: one run's are read by the next clone's. One folder per Hypothesis version: another version
#: may find other constants. The profiles keep no example database (tests/properties/conftest.py).
#: A value set in the environment is kept.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                      str(cache_root() / "hypothesis" / hypothesis.__version__))

#: The cyclic garbage collector's thresholds in each test process (Python's default: 700, 10,
#: 10). A worker holds 300,000 objects and more (PyMC, PyTensor, SciPy, Panel), so every full
#: collection walks them all: with the defaults each worker made 21-22 full and about 6,000
#: young collections, 7-8 s of CPU, in a run of ``make test``; with these, 0-1 full and about
#: 400, 3 s (peak RSS about 1.1 GB per worker). Only when garbage is reclaimed changes (what
#: reference counting frees is freed as before); measured 2026-11-26 on the 2-core machine:
#: the whole run 5 min 6 s -> 4 min 37-53 s, 25-55 s less CPU.
GC_THRESHOLDS = (10_000, 20, 100)
gc.set_threshold(*GC_THRESHOLDS)


def pytest_sessionstart(session):
    """In a process that collects tests (an xdist worker, or a run without ``-n``), before any
    test module imports SciPy: SciPy's Array API notes are not written into its functions'
    docstrings (``scipy_skips_capability_notes``; the xdist controller imports no SciPy).

    No test reads SciPy's or matplotlib's docstrings (the documentation build renders dprisk's
    own; ``tests/runtime/test_import_costs.py`` compares both ways in new interpreters); the
    Array API table, the numbers and the pixels are the libraries' own. Collecting every module
    in one process, two rounds: 17.8 / 18.4 -> 17.2 / 17.1 s of CPU; SciPy, matplotlib, PyMC
    and ArviZ imported in a new interpreter, three interleaved rounds: 3.9-4.6 -> 2.1-2.7 s.
    """
    if not session.config.pluginmanager.has_plugin("dsession"):
        scipy_skips_capability_notes()


@pytest.fixture(autouse=True)
def _mpmath_precision_restored():
    """mpmath's precision is one global: a test that sets ``mp.dps`` leaves it to the next test
    on the worker (a reference computed at 20 digits instead of 50 failed that way). Restore it."""
    import sys

    mpmath = sys.modules.get("mpmath")
    prec = mpmath.mp.prec if mpmath is not None else None
    yield
    mpmath = sys.modules.get("mpmath")
    if mpmath is not None:
        mpmath.mp.prec = prec if prec is not None else 53


@pytest.fixture
def rng():
    """A fresh, fixed-seed numpy Generator for each test."""
    return np.random.default_rng(20201)


@pytest.fixture(scope="module")
def empty_accounting_cache(tmp_path_factory):
    """An empty cache directory for one test module: each accounting value is computed there.

    The accounting functions store what they compute in the user's cache
    (:mod:`dprisk.inference.privacy.accounting_cache`); read from there, a value computed once
    -- by an earlier version, or before a defect -- answers every later run, and the tests that
    check the computation against an independent reference cannot fail. The shipped seed (the
    2020 strategy's fine compositions, recomputed by ``test_accounting_seed.py``) still answers.
    Used by the modules that check the accounting's numbers (``pytestmark``).
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DPRISK_CACHE_DIR", str(tmp_path_factory.mktemp("accounting-cache")))
        yield


#: The test modules whose tests import Panel in the test process (``dprisk.explore``'s served
#: views, its access checks, ``dprisk explore`` run in the process; the documentation build's
#: autodoc and the public API's check resolve ``dprisk.serve_explorer``): :data:`SHARED_SCOPES`
#: runs them as one scope. The browser test serves ``dprisk explore`` in a process of its own.
PANEL_MODULES = (
    *(f"tests/explore/{name}.py" for name in (
        "test_notebook_controls", "test_serving_access", "test_serving_limits",
        "test_serving_messages", "test_serving_priors", "test_serving_sessions", "test_views")),
    "tests/cli/test_explore.py",
    "tests/reliability/test_generated_inputs_output_paths.py",
    "tests/docs/test_docs_build.py",
    "tests/packaging/test_public_api.py",
)


#: CPU seconds each of the default run's costliest test modules took (setup + call + teardown,
#: own and child processes, ``benchmarks/bench_test_cpu.py``'s records summed per module,
#: 2026-11-28, 2-core machine, 7,814 tests, 775 s CPU in all; the notebooks, docs and
#: reliability modules measured again later that day, after issue 36's cuts).
#: Only the order matters: :func:`pytest_collection_modifyitems` puts these modules first,
#: longest first, so that the two xdist workers (``--dist loadscope``, one module per worker
#: at a time; ``--no-loadscope-reorder`` keeps this order) do not end with one long module
#: running alone.
#: Modules not listed keep their collection order after these.
MODULE_SECONDS = {
    # the notebook group (SHARED_SCOPES): the notebooks in one kernel, then the README's
    # commands (75 s), and one JupyterLab server and page (system Chromium): mostly waiting,
    # 27 s CPU, ~40 s wall
    "notebooks/test_notebooks.py": 115,
    "notebooks/test_jupyterlab.py": 115,
    "reliability/test_reproducibility.py": 19,
    "validation/crosschecks/test_crosscheck.py": 10,  # every method on the first release (issue 36)
    "explore/test_browser.py": 24,
    # the fork-server group (SHARED_SCOPES): the process server's six modules, the sizing
    # server's two and both servers, one worker
    "reliability/test_interrupts.py": 50,
    "reliability/test_output_kills.py": 50,  # the fork-server group
    "reliability/test_address_space.py": 50,  # the fork-server group
    "inference/nested/test_posterior.py": 6,
    "reliability/test_rho_sizing.py": 50,  # the fork-server group
    "cli/test_options.py": 1.5,  # pymc seed cases slow (issue 36)
    "validation/paper/test_supplement.py": 13,  # with test_numbering (SHARED_SCOPES)
    "validation/test_numbering.py": 13,  # runs with paper/test_supplement (SHARED_SCOPES)
    "validation/paper/test_single_level.py": 13,  # with test_numbering (SHARED_SCOPES)
    "validation/paper/test_studies.py": 12,
    "reliability/test_extremes_io.py": 50,  # the fork-server group
    "validation/figures/test_png.py": 4,
    "packaging/test_imports.py": 4,  # forks of one NumPy-loaded interpreter (issue 36)
    "reliability/test_generated_inputs_files.py": 8,
    "reliability/test_generated_inputs.py": 5,
    "cli/test_posterior_diagnostics.py": 2.5,
    "models/builders/test_two_level.py": 4,
    "reliability/test_stop_watchdog.py": 50,  # the fork-server group
    "reliability/test_generated_inputs_product.py": 4,
    "inference/mcmc/test_compiled_chain.py": 4,
    "reliability/test_bad_input.py": 5.5,  # one console-script row, one directory (issue 36)
    "validation/figures/test_supplement.py": 4,  # figures drawn once (png_bytes, issue 36)
    "inference/privacy/test_budget_worst_case.py": 7,
    "runtime/test_cache.py": 2.5,
    "properties/test_extremes.py": 4,
    "validation/sbc/test_calibration.py": 8,  # with the parts check (issue 36)
    "inference/two_level/test_trusted_steps.py": 2,
    "inference/privacy/test_budget_two_level.py": 4,
    "cli/test_posterior_tune.py": 2,
    "properties/test_properties_risk.py": 6,
    "models/builders/test_single_level.py": 2,
    "inference/unknown_others/test_sampling.py": 4,
    "inference/nested/test_unique_levels_kernels.py": 2,
    "reliability/test_hostile_priors.py": 50,  # the fork-server group
    "inference/attribute/test_sampling.py": 4,
    "inference/product/test_rounding_ties.py": 3,
    "inference/studies/test_monte_carlo.py": 6,
    "inference/product/test_exact.py": 2,
    "validation/report/test_build.py": 3,  # imports checked in the worker (issue 36)
    "packaging/test_structure.py": 2.5,  # one module-size test (issue 36)
    "reliability/test_resume.py": 50,  # the fork-server group
    "inference/product/test_histogram_tree.py": 3,
    # Modules that were not listed and ran last, the costliest of them measured in a quiet run
    # of 2026-11-29 evening (wall s per module, per-test records): the report runner's pools
    # (10 s, 17 s of CPU) was the last module of one worker, which ended 6 s after the other.
    "validation/report/test_runner.py": 10,
    "reliability/test_process_costs.py": 4,
    "reliability/test_xdist_messages.py": 3.6,
    "validation/figures/test_tick_copies.py": 3.5,
    "inference/population/test_population_stream.py": 3.4,
    "properties/test_properties_mechanism.py": 3.3,
    "models/mechanism/test_dg_sampling.py": 3.1,
    "cli/test_population.py": 3.1,
    "validation/figures/test_draw_once.py": 3,
    "validation/report/test_screenshot.py": 3,
    # computed in an empty accounting cache (``empty_accounting_cache``), not read from the
    # user's: wall s per module, one process, 2026-11-30
    "inference/privacy/test_accounting.py": 3.4,
    "inference/privacy/test_worst_case.py": 2.7,
    "reliability/test_conversions.py": 2.6,
    # the Panel group (SHARED_SCOPES, PANEL_MODULES), one worker: the documentation build's
    # 17 s (one Sphinx build of the site, in the worker, no notebooks run) and 14 s for the
    # others, 2026-11-29
    **{path.removeprefix("tests/"): 31 for path in PANEL_MODULES},
}


#: Test modules that read one session-scoped study (``tests/validation/conftest.py``): xdist
#: runs them as one scope, on one worker, so the study is computed once instead of once per
#: worker. Their entries in :data:`MODULE_SECONDS` are the seconds of the group.
SHARED_SCOPES = {
    "tests/validation/paper/test_supplement.py": "supplement study",
    "tests/validation/test_numbering.py": "supplement study",
    # and the single-level study (single_level_study_result), read by test_numbering too
    "tests/validation/paper/test_single_level.py": "supplement study",
    # modules of the session-scoped fork servers (tests/reliability/conftest.py): each started
    # once, the process server forked from the sizing server (their shared imports made once)
    **{f"tests/reliability/{name}.py": "reliability fork servers"
       for name in ("test_interrupts", "test_output_kills", "test_extremes_io", "test_resume",
                    "test_hostile_priors", "test_stop_watchdog", "test_rho_sizing",
                    "test_address_space")},
    # modules whose tests import Panel (and Bokeh, Param) in the test process: one worker imports
    # it, not both (about 1.5-3 s of CPU; their test modules import it on first use,
    # tests/deferred_modules.py)
    **{path: "Panel in the test process" for path in PANEL_MODULES},
    # the notebook modules: one worker imports jupytext, nbformat, nbclient and jupyter_client
    # (and jupytext's jupyter_server contents manager), not both (about 0.4-0.6 s of CPU after
    # a whole collection; the modules import them on first use, not at collection)
    "tests/notebooks/test_notebooks.py": "notebook tooling",
    "tests/notebooks/test_jupyterlab.py": "notebook tooling",
}


def _module_seconds(item) -> float:
    path = item.nodeid.split("::", 1)[0].removeprefix("tests/")
    return MODULE_SECONDS.get(path, 0.0)


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` with :data:`SHARED_SCOPES` grouped; other modes unchanged."""
    if config.getvalue("dist") != "loadscope":
        return None
    return _shared_scope_scheduling()(config, log)


def _shared_scope_scheduling():
    """xdist's ``LoadScopeScheduling`` with :data:`SHARED_SCOPES` grouped, counting pending tests
    without walking the work units already done (imported here: xdist is loaded only with
    ``-n``)."""
    from xdist.scheduler.loadscope import LoadScopeScheduling

    class SharedScopeScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return SHARED_SCOPES.get(nodeid.split("::", 1)[0], super()._split_scope(nodeid))

        def _pending_of(self, workload: dict[str, dict[str, bool]]) -> int:
            """xdist's count of ``workload``'s pending tests, which it makes after every test
            (and, once every unit is given out, after every message) over every unit the worker
            was ever given: 0.64 s of the controller's CPU over 6,500 tests in 220 units. A
            unit all done stays done (xdist marks tests done, never pending again), so it is
            remembered and skipped."""
            done = self.__dict__.setdefault("_units_done", {})
            pending = 0
            for unit in workload.values():
                if id(unit) not in done:
                    left = list(unit.values()).count(False)
                    if not left:
                        done[id(unit)] = unit  # held: its id is not reused
                    pending += left
            return pending

        def _assign_work_unit(self, node) -> None:
            """xdist's: hand the next unit to ``node`` by the positions of its tests in the
            worker's collection, found in a table made once per worker instead of by
            ``list.index`` over the whole collection for each test (6,900 searches of a
            6,900-long list, 0.8 s of the controller's CPU under the profiler)."""
            assert self.workqueue
            scope, work_unit = self.workqueue.popitem(last=False)
            self.assigned_work.setdefault(node, {})[scope] = work_unit
            tables = self.__dict__.setdefault("_positions", {})
            if node not in tables:
                tables[node] = {}
                for i, nodeid in enumerate(self.registered_collections[node]):
                    tables[node].setdefault(nodeid, i)  # the first, as list.index
            positions = tables[node]
            node.send_runtest_some([positions[nodeid] for nodeid, completed in work_unit.items()
                                    if not completed])

    return SharedScopeScheduling


#: Cases of an expensive check that a cheaper case of the same test already makes in the
#: default run (same code path, same assertion): marked ``slow``, so ``make bench`` runs them
#: (``-m slow``) and ``make test`` does not. Each entry says which case covers it.
SLOW_CASES = {
    "reliability/test_interrupts.py::test_long_run_shows_a_bar_and_stops_cleanly"
    "[marginal-exact-SIGTERM]":
        "test_exact_study_shows_its_elapsed_line_after_the_delay_and_stops_cleanly (the same "
        "study, stopped by SIGINT after 1 s); SIGTERM is sent in the sweep-exact, reproduce "
        "and PyMC cases",
    "reliability/test_interrupts.py::test_long_run_shows_a_bar_and_stops_cleanly"
    "[marginal-exact-SIGINT]":
        "test_exact_study_shows_its_elapsed_line_after_the_delay_and_stops_cleanly: the same "
        "study, line and stop with the line after 1 s instead of 10 s (5-9 s of CPU less)",
    **{"reliability/test_interrupts.py::test_long_run_shows_a_bar_and_stops_cleanly"
       f"[{case}-SIGTERM]":
       f"the {case} case with SIGINT: both signals take one handler (dprisk.cli.stopping), "
       "which SIGTERM reaches in the sweep-exact, reproduce and PyMC cases"
       for case in ("posterior-gibbs", "posterior-save-draws", "nested-gibbs", "marginal-mc",
                    "sweep-mc")},
    **{f"cli/test_options.py::test_readable_summary_reports_the_seed[posterior {form} pymc]":
       f"the posterior {form} gibbs case: the summary's seed line is added by "
       "dprisk.cli.common.run_form for every method of the form alike; the pymc seed's "
       "reporting and reproduction are checked by test_random_result_reports_its_seed_and_the_"
       f"seed_reproduces_it[posterior {form} pymc] (about 1.7 s of CPU each: two PyMC models)"
       for form in ("two-level", "nested")},
    "runtime/test_cache.py::test_compiled_kernels_are_cached_under_the_cache_dir_not_the_"
    "source_tree[cli marginal]":
        "test_a_kernel_is_cached_by_its_source_and_read_again_from_another_path: the same "
        "loader (fused_kernels.compiled_kernels, which points numba's cache) and a compiled "
        "kernel in a new process, cached under DPRISK_CACHE_DIR and not in the source tree, "
        "2.5 s of CPU instead of 6",
    "reliability/test_stop_watchdog.py::test_stopped_within_two_seconds_wherever_it_is"
    "[compiled-SIGINT]":
        "the [compiled-SIGTERM] case: the same kernel, the same wakeup-pipe thread starting the "
        "watchdog for either signal (dprisk.cli.stopping); SIGINT's exit 130 is checked by the "
        "swallowed, shutdown and held-block cases (the kernel's spin, in a fork of the process "
        "server that has numba imported)",
    "validation/crosschecks/test_crosscheck.py::test_small_battery_passes[pymc]":
        "test_small_battery_passes_on_its_first_release[pymc]: the same runs (budgets, seeds) "
        "on the Table 6 release, all five priors; the second release's runs (about 4 s of "
        "CPU) here",
    **{f"validation/crosschecks/test_crosscheck.py::test_small_battery_passes[{method}]":
       f"test_small_battery_passes_on_its_first_release[{method}]: the same runs (budgets, "
       f"seeds) on the Table 6 release, all five priors; the second release's runs (about "
       f"{cpu} s of CPU) here"
       for method, cpu in (("gibbs", 1.2), ("pymc-gibbs", 2.5))},
    "notebooks/test_notebooks.py::test_notebook_executes[single_level_what_if]":
        "the README's commands run this notebook in a kernel (papermill, full budget, its "
        "live cell static; its output notebook checked as this test checks a notebook: every "
        "code cell ran, no warning printed) and as a script (which fails on any warning it "
        "prints); its live cell with Panel's controls runs quietly in JupyterLab's kernel "
        "(tests/notebooks/test_jupyterlab.py)",
    "notebooks/test_notebooks.py::test_the_commands_a_notebook_quotes_run"
    "[population_what_if-as-quoted]":
        "[population_what_if]: the same three quoted commands, options and files in order, "
        "for a state of 10,000 persons instead of 100,000 (about 2 s of CPU here)",
    "notebooks/test_notebooks.py::test_the_whole_record_monte_carlo_check_holds_at_the_census_"
    "rho[whole-notebook]":
        "[check-cells]: the same Monte Carlo check cell at the Census block rho, after the "
        "parameters and set-up cells it reads; the notebook's other cells run at its own rho1 "
        "in test_notebook_executes[whole_record_what_if] (about 1.3 s of the kernel's CPU)",
    "notebooks/test_notebooks.py::test_notebook_executes[policy_sweep]":
        "the README's commands run this notebook as a script at its full budget (which fails on "
        "any warning it prints); dr.live in a kernel is run by the other notebooks' cases",
    # -- tests/inference, tests/models, tests/properties (issue 36: the same check, cheaper case)
    "inference/privacy/test_budget_jumps.py::test_priors_near_one_half_inside_the_stated_"
    "range_are_answered[tail-1.0002]":
        "[p-correct-0.4999]: the level 0.5001 at p = 0.5 has that prior's delta (to rounding), "
        "the same 10,000-piece enumeration (budget_jumps.first_crossing); the tail measure's "
        "own rounding of delta near 1/2 in [tail-1.00099] and [tail-1.00266] (1.4 s of CPU)",
    **{f"inference/nested/test_posterior.py::{name}[{method}-1e-05]":
       f"[{method}-4e-05]: the same refusal (box_kernels.too_narrow at the first windows, "
       "already the widest) at a quarter of the cells; the refusal at rho 1e-05 by the "
       f"command line's exact case, {cli}[exact] (the same prior, release and rhos through "
       "the same summarize_posterior, its message's words checked as here; about 0.4-1.3 s "
       "of CPU here)"
       for name, cli in (
           ("test_pymc_refuses_a_prior_the_exact_windows_refuse",
            "test_cli_refuses_a_prior_without_finite_posterior_mass_as_the_two_level_form"),
           ("test_every_method_refuses_a_declared_bound_the_nested_windows_cannot_close",
            "test_cli_refuses_a_declared_bound_the_nested_windows_cannot_close"))
       for method in ("exact", "gibbs", "pymc")},
    "inference/nested/test_posterior.py::test_refuses_a_declared_bound_the_nested_windows_"
    "cannot_close[1e-05-129.8]":
        "[4e-05-128.3]: the same prior just under the bound the windows close (64.1 there, "
        "the first windows already the widest) answered as the default bound's, and the same "
        "refusal of per-level priors by their summed bounds; the refusal at rho 1e-05 by "
        "test_cli_refuses_a_declared_bound_the_nested_windows_cannot_close[exact] (about 2 s "
        "of CPU here)",
    **{"inference/single_level/test_closed_form.py::test_every_marginal_form_stays_within_its_"
       f"exact_bounds_at_rho_1e_12[{p}]":
       f"test_marginal_stays_within_its_exact_bounds_at_tiny_rho[{p}-1e-12] holds the one sum "
       "(closed_form_kernels.marginal_posterior_and_risk) the three forms index, at this rho "
       "and p; the forms themselves at rho 1e-10 and 1e-9 (about 1.6 s of CPU here)"
       for p in (0.999, 1 - 1e-9)},
    **{"models/builders/test_single_level.py::TestSampling::test_posterior_matches_closed_form"
       f"[{case}]":
       "[6-0.25-0.2-3] (the same pm.sample check, known > 0 and p != 1/2); every case's model "
       "log-odds against the closed form in TestStructure::test_logp_difference_is_closed_form"
       "_log_odds"
       for case in ("1-0.5-0.5-0", "-2-0.09922635422547502-0.5-0")},
    "models/builders/test_two_level.py::TestJointMatchesExact::"
    "test_point_logps_finite_and_normalised_joint[truncated:10-0]":
        "[truncated:6-2]: the truncated prior, at its edge U = m + 4 and with known > 0",
    "models/builders/test_two_level.py::TestJointMatchesExact::"
    "test_point_logps_finite_and_normalised_joint[point:25-0]":
        "[point:1-0]: a point mass X1 = m + 1 allows (25 only lies further from the release)",
    "models/builders/test_two_level.py::TestJointMatchesExact::"
    "test_point_logps_finite_and_normalised_joint[point:0-0]":
        "[point:3-3]: a point mass at m (X1 = m + 1 impossible), with known > 0",
    **{f"inference/mcmc/test_compiled_chain.py::test_batched_values_equal_point_by_point"
       f"[pymc-{prior}]":
       f"[pymc-gibbs-{prior}]: the batched values are one function of the model's values "
       "(_batched_integer_function), whichever steps drew them; PyMC's own steps are run by "
       "the CompiledChain in test_same_draws_as_pm_sample[pymc] and test_trusted_steps"
       for prior in ("truncated:10", "point:6")},
    "inference/two_level/test_trusted_steps.py::test_trusted_steps_draw_the_same[point:6]":
        "[truncated:10]: the same trusted BinaryGibbsMetropolis functions, and LeanMetropolis' "
        "too",
    "inference/two_level/test_trusted_steps.py::test_pm_sample_with_trusted_steps_draws_the_same":
        "test_trusted_steps_draw_the_same[truncated:10] (trusted = checked steps, bit for bit, "
        "in CompiledChain) with inference/mcmc/test_compiled_chain.py::test_same_draws_as_pm_"
        "sample[pymc] (CompiledChain = pm.sample with these trusted steps, bit for bit)",
    "inference/nested/test_unique_levels_kernels.py::test_census_levels_increase_with_levels[6]":
        "[4]: the same increase over 1-4 census levels; the 6-level sum is checked against "
        "the sweep in test_unique_levels.py::test_six_census_levels_against_contour_and_budget",
    "inference/attribute/test_sampling.py::test_pymc_categorical_matches_exact"
    "[release1-known1-0.8-None]":
        "[release0-known0-0.4-prior0]: the same PyMC categorical sampler against the exact "
        "posterior (the uniform default prior's posterior is checked exactly in "
        "attribute/test_posterior.py)",
    # -- tests/cli, tests/inference (issue 36, second pass: the same check, cheaper case)
    "cli/test_options.py::test_random_result_reports_its_seed_and_the_seed_reproduces_it"
    "[posterior nested pymc]":
        "[posterior nested gibbs] (the nested form's drawn seed, reported and passed to "
        "summarize_posterior alike for every method) with nested/test_posterior.py::test_pymc_"
        "tune_default_is_pm_sample_s_and_a_given_tune_is_passed_down (the nested pymc draws at "
        "a seed are pm.sample's at that seed, bit for bit); about 1.8 s of CPU: two PyMC models",
    "cli/test_options.py::test_random_result_reports_its_seed_and_the_seed_reproduces_it"
    "[posterior two-level pymc]":
        "[posterior two-level gibbs] (the two-level form's drawn seed, reported and passed to "
        "summarize_posterior alike for every method) with inference/mcmc/test_compiled_chain.py"
        "::test_same_draws_as_pm_sample[pymc] (two separately built pymc-method samplers draw "
        "the same at one seed); about 1.5 s of CPU: two PyMC models",
    "cli/test_posterior_diagnostics.py::test_every_unknown_is_diagnosed_and_one_verdict_given"
    "[two-level pymc]":
        "[two-level pymc-gibbs]: the same pm.sample DataTree (sample_model, other steps) "
        "through the same summary and convergence verdict (about 1.2 s of CPU more: "
        "PyMC's Metropolis steps compiled)",
    "cli/test_posterior_diagnostics.py::test_too_few_draws_are_not_converged_and_undefined_"
    "numbers_are_null[pymc 2x3]":
        "[pymc-gibbs 2x3]: the same pm.sample DataTree of 2 chains x 3 draws (sample_model, "
        "other steps) through the same summary, nulls and verdict; its model's functions are "
        "compiled once in the process by [two-level pymc-gibbs] above (0.2 s of CPU), PyMC's "
        "Metropolis steps here again at each run (about 1 s)",
    "inference/product/test_exact.py::test_product_table_matches_brute_force"
    "[4.0-4.0-others3-0-none]":
        "[8.0-8.0-others4-0-none]: the same four blocks against the same brute force, its "
        "noise box 5^4 instead of 7^4 vectors (the reference's exact projections: 0.02 s of "
        "CPU instead of 1.5 s)",
    # -- tests/packaging (issue 36)
    "packaging/test_structure.py::test_exact_paths_import_no_pymc":
        "packaging/test_imports.py::test_exact_library_paths_import_nothing_heavy[single level] "
        "and [two-level exact]: the same modules imported (and called) in a new process, and "
        "none of pymc, pytensor, arviz, dask, distributed (nor numba, xarray, pandas) loaded",
    # -- tests/models, tests/properties, tests/inference (issue 36, third pass)
    **{"models/mechanism/test_discrete_gaussian.py::test_support_halfwidth_bound_holds"
       f"[{tail_mass}-1e-06]":
       "[1e-06-1e-06] and [1e-20-1e-06]: the same bound and tightness at rho = 1e-6 for the "
       "largest and smallest tail masses (every tail mass is run at the other five rho); "
       "0.15 s of CPU each (brute-force tails of ~5,000 terms)"
       for tail_mass in ("1e-12", "1e-17")},
    "inference/population/test_population_stream.py::test_memory_does_not_grow_with_the_"
    "population[4]":
        "[2]: the same streamed run's peak against one copy's; a whole-table path's peak is "
        "1.87x at two copies (3.61x at four), over the 1.25x bound (about 1.3 s of CPU less)",
    # -- tests/validation/report: every number of results.nc has units and a long_name
    **{"validation/report/test_results_units.py::test_every_number_of_results_nc_has_units_"
       f"and_a_long_name[{case}]":
       f"[beyond.decision_summary] (the same write_report, results.nc read back and checked) "
       f"with {covered}, which checks the same study's datasets (2-17 s of CPU each here: the "
       "study and its figures)"
       for case, covered in (
           ("paper.single_level", "paper/test_single_level.py::test_study_for_the_report"),
           ("paper.two_level", "paper/test_two_level.py::TestStudy::test_every_number_has_"
                               "units and crosschecks/test_crosscheck.py::test_every_number_of_"
                               "the_table_has_units"),
           ("paper.studies", "paper/test_studies.py::test_every_quantity_of_the_study_data_"
                             "has_units"),
           ("paper.supplement", "paper/test_supplement.py::test_every_number_of_the_study_"
                                "has_units"),
           ("sbc.study", "sbc/test_calibration.py::test_every_number_of_the_study_has_units"),
           ("beyond.decisions", "beyond/test_decisions.py::test_every_number_of_the_section_"
                                "has_units"),
           ("beyond.whole_record", "beyond/test_whole_record.py::test_study_records_and_"
                                   "figures"),
           ("beyond.unknown_others", "beyond/test_unknown_others.py::test_every_number_of_the_"
                                     "data_has_units"),
           ("beyond.product", "beyond/test_product.py::test_every_number_of_the_data_has_"
                              "units"),
           ("beyond.population", "beyond/test_population_section.py::test_every_number_of_"
                                 "the_data_has_units"))},
    **{"inference/nested/test_posterior.py::test_cli_refuses_a_declared_bound_the_nested_"
       f"windows_cannot_close[{method}]":
       "[exact] (the command line's refusal: exit 2, one line naming --prior and the bound "
       "the windows close) with test_refuses_a_declared_bound_the_nested_windows_cannot_close "
       f"(the {method} method's own refusal, the same message): the command passes --method "
       "to the same summarize_posterior and words its ValueError alike for every method "
       "(about 0.8 s of CPU each)"
       for method in ("gibbs", "pymc")},
    "inference/nested/test_posterior.py::test_cli_refuses_a_prior_without_finite_posterior_"
    "mass_as_the_two_level_form[gibbs]":
        "[exact] (the command line's refusal, worded as the two-level form's) with "
        "test_pymc_refuses_a_prior_the_exact_windows_refuse (the gibbs method's own refusal, "
        "the same ValueError): the command passes --method to the same summarize_posterior",
    "inference/attribute/test_posterior.py::test_risk_never_exceeds_one_over_the_prior[3000]":
        "[1000]: the same bound on the first 1,000 of the same random releases (computed as "
        "exp(log posterior - log pi_c), as before the fix, 282 of them break it), about 1 s "
        "of CPU less",
    "inference/privacy/test_accounting.py::test_pld_of_one_and_two_queries_brackets_the_exact_"
    "epsilon[0.5-2e-05]":
        "[0.01-2e-05] (the exact epsilon of one and two queries inside their brackets at the "
        "default grid, the two queries self-composed by the same dense FFT path, 3.3e5 loss "
        "points instead of 2.3e6) with [0.5-0.0001] (the same rho, its sparse "
        "self-composition), and test_pld_bracket_one_query_and_relations (the replace-one "
        "relation as two queries, at rho 0.5 on the grid 1e-4): 3.2 s of CPU here",
    "inference/privacy/test_accounting_cache.py::test_census_pld_cached_equals_fresh[0.0001]":
        "[0.001]: the same 65 queries of the 2020 strategy composed fresh (the seed off) by the "
        "same code, stored and read back bit for bit, at a 10x coarser loss grid (0.4 s of CPU "
        "instead of 1.7 s); the seeded value at the default grid is recomputed within its "
        "stated tolerance by test_accounting_seed.py's slow test",
    "inference/privacy/test_budget_sums.py::test_sums_equal_the_tables[case1-False]":
        "[case1-True]: the same census-share grid, its sums laid out in blocks that must "
        "together equal the tables; the one-block path is run by every other case",
}


#: Key of :data:`pytest.Config.stash` holding every test of the collected modules, slow ones
#: included, as collected (before ``-m``, ``--deselect``), when whole modules were collected
#: (no ``-k``, no node ids): ``tests/docs/test_validation_counts.py`` counts a module's tests
#: from it instead of collecting the modules again in a new process.
COLLECTED_ITEMS = pytest.StashKey[list]()


@pytest.fixture
def collected_items(request) -> list | None:
    """Every test of the collected modules, slow ones included (:data:`COLLECTED_ITEMS`), or
    ``None`` when not whole modules were collected."""
    return request.config.stash.get(COLLECTED_ITEMS, None)


@pytest.hookimpl(tryfirst=True)  # before the -m 'not slow' deselection
def pytest_collection_modifyitems(config, items):
    """Mark :data:`SLOW_CASES` slow; run the costliest modules first (LPT order over workers).

    Raises ``pytest.UsageError`` for an entry of :data:`SLOW_CASES` that names no test of its
    module when whole modules were collected (a renamed or removed case).
    """
    by_id = {item.nodeid.removeprefix("tests/"): item for item in items}
    modules = {nodeid.split("::", 1)[0] for nodeid in by_id}
    whole_modules = not config.getoption("keyword") and not any("::" in str(arg)
                                                                for arg in config.args)
    if whole_modules:  # before any deselection: every test of the collected modules
        config.stash[COLLECTED_ITEMS] = list(items)
    for nodeid in SLOW_CASES:
        if nodeid in by_id:
            by_id[nodeid].add_marker(pytest.mark.slow)
        elif whole_modules and nodeid.split("::", 1)[0] in modules:
            raise pytest.UsageError(f"tests/conftest.py SLOW_CASES names no test: {nodeid}")
    items.sort(key=lambda item: -_module_seconds(item))  # stable: order within a module kept


#: The per-test CPU records (``DPRISK_TEST_CPU_DIR``, ``benchmarks/bench_test_cpu.py``); a test
#: process's costs besides its tests (assertion rewriting once for all workers, no collections at
#: exit: ``tests/process_costs.py``); one xdist message per test, without the reports the
#: controller would not show (``tests/xdist_messages.py``).
pytest_plugins = ["cpu_records", "process_costs", "xdist_messages"]


#: A test module that holds the ``pymc`` module itself as a global (``import pymc as pm``).
_IMPORTS_PYMC = re.compile(r"^import pymc\b", re.MULTILINE)


def _pymc_private_names_not_resolved() -> None:
    """Make ``pymc``'s root ``__getattr__`` refuse names that start with ``_`` at once.

    At collection pytest probes every global of a test module for ``_mock_name`` and
    ``__wrapped__`` (its check for wrapped fixtures). PyMC 6 resolves an unknown root name by
    importing its deprecated submodules, ``pymc.plots`` among them, whose ``__getattr__`` imports
    ArviZ's plotting (``arviz_plots``, Matplotlib's pyplot, Bokeh/Plotly backends: about 2 s
    of CPU) -- in every xdist worker, for a probe whose answer is "no such attribute" either
    way. PyMC's deprecated root names are all public, so the answer for private names is
    unchanged; public names go to PyMC's own resolver as before.
    """
    import pymc

    resolve = pymc.__dict__.get("__getattr__")
    if resolve is None or getattr(resolve, "refuses_private_names", False):
        return

    def __getattr__(name: str):
        if name.startswith("_"):
            raise AttributeError(f"module 'pymc' has no attribute {name!r}")
        return resolve(name)

    __getattr__.refuses_private_names = True
    pymc.__getattr__ = __getattr__


def pytest_collectstart(collector):
    """Before a test module that imports ``pymc`` itself is imported: see
    :func:`_pymc_private_names_not_resolved` (the module imports PyMC next anyway)."""
    if isinstance(collector, pytest.Module) and _IMPORTS_PYMC.search(
            collector.path.read_text(encoding="utf-8")):
        _pymc_private_names_not_resolved()
