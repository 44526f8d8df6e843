"""Heavy libraries are imported only where they are used (docs/architecture.md, issue 12 item 1).

Each check runs in a new process and reads ``sys.modules`` at the end: the closed-form
and exact paths (library and command line) load no PyMC, PyTensor, ArviZ, Dask or
distributed, and, except the sweep (which writes its netCDF file with ``netCDF4``), no xarray,
pandas or netCDF.

numba (the fused exact kernels, issue 12 item 2) follows a pay-back rule
(``dprisk.inference.kernels.fused_kernels``): measured on the 2-core machine, importing numba costs
0.25-0.3 s and the first call of a cached kernel 0.55-0.7 s more, against 0.2-0.3 s for a whole
``python -c "import numpy, scipy"``; the numpy path does about 2e7 table cells per second.
So the compiled kernel is loaded only once the numpy work of the process (so far plus this
call) would take ``LOAD_SECONDS`` (0.9 s), or when numba is already loaded. The small exact
paths below (one release, one P[correct] point, a 10-point sweep) therefore still load no
numba; a 5e5-release batch does, and never PyMC, PyTensor, ArviZ or Dask with it.

The new processes are forks of one fresh interpreter (:func:`fresh`, one per module) that has
imported NumPy alone: every path checked here imports NumPy first (it is none of the checked
libraries), and NumPy's import was 0.2 s of the 0.3-0.45 s of CPU each new interpreter took.
Each fork runs its code and reports ``sys.modules`` as a new interpreter would. The four
library paths run one after another in one fork, and the command lines in another (census
and the single-level commands first): each check reads ``sys.modules`` after its path and
the paths before it, which holds all that its path loaded (a superset: a heavy module
loaded by any of them fails the check of the path that loaded it or of an earlier one), and
census, run first, is read alone. Two forks instead of ten: about 1 s of CPU less (measured
29 Nov: 1.6-1.9 s -> 0.6-0.8 s).
"""

import pytest
from fresh_python import ForkedInterpreter

#: Never loaded by a closed-form or exact computation of the sizes below (numba: pay-back
#: rule of the module docstring).
SAMPLING = {"pymc", "pytensor", "arviz", "arviz_base", "arviz_stats", "numba", "dask",
            "distributed"}
#: Loaded only where a labelled result or a file is produced.
LABELLED = {"xarray", "pandas", "netCDF4", "h5netcdf"}

LIBRARY_PATHS = {
    "single level": (
        "from dprisk.inference.single_level import closed_form as single_level\n"
        "single_level.posterior(3, 0.1)\n"
        "single_level.marginal_posterior(0.1)\n"
        "single_level.p_correct(0.1)\n"
    ),
    "two-level exact": (
        "from dprisk.inference.two_level.exact import exact_posterior\n"
        "post = exact_posterior(3, 30, 27, rho1=0.1, rho2=0.25, d=27)\n"
        "post.prob_x1, post.x2_pmf\n"
    ),
    "nested exact": (
        "from dprisk.inference.nested.exact import exact_posterior\n"
        "exact_posterior([3, 30, 100], [27, 95], rhos=[0.1, 0.25, 0.5], siblings=[27, 4])\n"
    ),
    "two-level P[correct]": (
        "from dprisk.inference.studies.p_correct import marginal_summary, p_correct_two_level\n"
        "p_correct_two_level(x2=3, rho1=0.1, rho2=0.25, d=27)\n"
        "marginal_summary(x2=3, rho1=0.1, rho2=0.25, d=27)\n"
    ),
}


#: What the fresh interpreter of :func:`fresh` imports before its forks: NumPy, which every
#: checked path imports (never one of the checked libraries; :func:`fresh` asserts it).
PRELOAD = ("numpy",)

@pytest.fixture(scope="module")
def fresh():
    """One fresh interpreter that imported :data:`PRELOAD`, forked for each check."""
    forks = ForkedInterpreter(PRELOAD)
    preloaded = forks.modules_loaded_by("")
    assert not {name.split(".")[0] for name in preloaded} & (SAMPLING | LABELLED)
    assert not {name for name in preloaded if name.startswith(("scipy", "dprisk"))}
    yield forks
    forks.close()


@pytest.fixture(scope="module")
def library_modules(fresh):
    """Path -> ``sys.modules`` after it and the paths before it (sorted), all in one fork."""
    paths = sorted(LIBRARY_PATHS)
    after = fresh.modules_loaded_after_each([LIBRARY_PATHS[path] for path in paths])
    return dict(zip(paths, after, strict=True))


@pytest.mark.parametrize("path", sorted(LIBRARY_PATHS))
def test_exact_library_paths_import_nothing_heavy(path, library_modules):
    heavy = {name.split(".")[0] for name in library_modules[path]} & (SAMPLING | LABELLED)
    assert not heavy, f"{path} (or a path before it) loaded {sorted(heavy)}"


def test_large_exact_batch_loads_numba_and_nothing_else_heavy(fresh):
    """A batch whose numpy work exceeds the load cost takes the compiled kernel (numba only)."""
    loaded = fresh.packages_loaded_by(
        "import numpy as np\n"
        "from dprisk.inference.two_level.exact import posterior_x1\n"
        "x = np.arange(500_000) % 7\n"
        "posterior_x1(x, x + 1, 3 * x, rho1=0.1, rho2=0.25, d=27)\n"
    )
    assert "numba" in loaded
    assert not loaded & (SAMPLING - {"numba"}), sorted(loaded & SAMPLING)


def _cli(*argv: str) -> str:
    """Run ``dprisk ARGV`` as the console script does (``main()`` reads ``sys.argv``)."""
    return (
        "import sys\n"
        f"sys.argv = ['dprisk', *{list(argv)!r}]\n"
        "from dprisk.cli import main\n"
        "status = main()\n"
        "assert status == 0, status\n"
    )


CLI_PATHS = {
    "census": ("census", "--json"),
    "posterior single level": ("posterior", "--rho1", "census:block", "--x1-star", "3",
                               "--json"),
    "posterior two-level exact": ("posterior", "--rho1", "census:block", "--rho2",
                                  "census:block-group", "--d", "27", "--x1-star", "3",
                                  "--x2-star", "30", "--y1-star", "27", "--json"),
    "posterior nested exact": ("posterior", "--rhos", "census:3", "--siblings", "27,4",
                               "--stars", "3,30,100,27,95", "--json"),
    "marginal single level": ("marginal", "--rho1", "census:block", "--json"),
    "marginal two-level exact": ("marginal", "--rho1", "census:block", "--rho2",
                                    "census:block-group", "--d", "27", "--x2", "3", "--json"),
}


#: The order of the command lines in their one fork: census first (read alone by
#: test_subcommand_modules_are_imported_lazily), then the single-level commands (their
#: ``sys.modules`` must hold no ``scipy.special``: one loaded by a command before them would
#: fail their check).
CLI_ORDER = ("census", "marginal single level", "posterior single level",
             "marginal two-level exact", "posterior nested exact", "posterior two-level exact")


@pytest.fixture(scope="module")
def cli_modules(fresh):
    """``cli_modules(command)``: ``sys.modules`` after the ``CLI_PATHS[command]`` run and the
    runs before it in :data:`CLI_ORDER`, all in one fork (as ``main()`` runs in turn)."""
    assert sorted(CLI_ORDER) == sorted(CLI_PATHS)
    after = fresh.modules_loaded_after_each([_cli(*CLI_PATHS[command]) for command in CLI_ORDER])
    found = {command: frozenset(modules) for command, modules in zip(CLI_ORDER, after,
                                                                     strict=True)}
    return found.__getitem__


@pytest.mark.parametrize("command", sorted(CLI_PATHS))
def test_exact_commands_import_nothing_heavy(command, cli_modules):
    heavy = {name.split(".")[0] for name in cli_modules(command)} & (SAMPLING | LABELLED)
    assert not heavy, f"dprisk {command} (or a command before it) loaded {sorted(heavy)}"


@pytest.mark.parametrize("command", ["census", "marginal single level", "posterior single level"])
def test_census_and_single_level_commands_import_no_scipy_special(command, cli_modules):
    """``scipy.special`` costs about 0.4 s, more than these whole commands (0.25-0.3 s); the
    worst-case kernels once pulled it in through the unique-levels kernels."""
    assert "scipy.special" not in cli_modules(command)


def test_sweep_without_scheduler_imports_no_xarray_pandas_or_dask(tmp_path, fresh):
    """The 10-point sweep writes its labelled file with netCDF4 alone: no xarray, pandas, Dask."""
    out = tmp_path / "sweep.nc"
    modules = fresh.modules_loaded_by(_cli("sweep", "--rho1", "census:block", "--rho2",
                                      "census:block-group", "--d", "27", "--x2", "1:10",
                                      "--out", str(out), "--json"))
    loaded = {name.split(".")[0] for name in modules}
    assert out.is_file()
    assert "netCDF4" in loaded
    heavy = loaded & (SAMPLING | {"xarray", "pandas"})
    assert not heavy, sorted(heavy)
    # The exact sweep's checks once imported the Monte Carlo study to compare its function:
    # SciPy's special functions, 0.38 s of the command's 0.6 s (issue 12's 2.5x row failed).
    assert {"scipy.special", "dprisk.inference.studies.monte_carlo"}.isdisjoint(modules)


def test_subcommand_modules_are_imported_lazily(cli_modules):
    """``dprisk census`` imports the census subcommand's module, not the other four."""
    modules = {name for name in cli_modules("census") if name.startswith("dprisk.cli.")}
    assert "dprisk.cli.commands.census" in modules
    assert not modules & {"dprisk.cli.commands.posterior", "dprisk.cli.commands.marginal",
                          "dprisk.cli.commands.sweep", "dprisk.cli.commands.reproduce",
                          "dprisk.cli.grids"}
