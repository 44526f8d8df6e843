"""New outputs (``prior --plot``, ``posterior --save-draws/--plots``, every ``--out``) never
replace what appeared during the run, leave no temporary on any exit, and collide never.

Issue 32, "A user's file replaced" (dprisk/runtime/new_outputs.py, ``NewOutput``):

* a file that appears at an output path during the run -- made by the prior's own file, or
  by the user while the draws are written -- is not replaced: exit status 2, one stderr line
  naming the option, nothing written (the other output of the same run neither), no
  temporary and no lock file left; likewise ``sweep --out`` and ``reproduce --out``;
* a stop signal while the outputs are written (SIGINT, SIGTERM; the interrupt swallowed by
  the library writing, so that the watchdog forces the exit) leaves nothing; a run killed
  outright (SIGKILL) leaves its temporaries and lock, and the next run on the same path
  removes them -- and only them: names of the pattern of another path, of a live process,
  or of the user's are kept (``sweep --out`` cleans beside its file by the same rule);
* ``--save-draws X.nc --plots X.nc`` (and one inside the other) is refused before sampling.

The sampler, the ArviZ tree and the plots are stand-ins (``writer_helpers.py``): the writers
are real, each run costs milliseconds; the two subprocess cases cost about 2 s of CPU each
(imports; the watchdog waits 0.75 s).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import assert_refused, run_cli

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import writer_helpers  # noqa: E402

sys.path.remove(str(HERE))

#: A pid no process has (Linux pids are at most 2**22): the owner of a stale temporary.
GONE = 4194305
USER = b"the user's file\n"
STARTUP_TIMEOUT = 120.0


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# ------------------------------------------------------------------ appeared during the run
PRIOR_FILE = '''
from pathlib import Path

import numpy as np

from dprisk.models.priors.library import UserPrior


def make():
    """A zero-argument factory that writes the user's figure where --plot points."""
    Path("x.png").write_bytes({user!r})
    return UserPrior(lambda k2, k1: np.float64(0.0) * k2, is_proper=False,
                     description="flat, made by a factory")
'''


def test_prior_plot_made_by_the_prior_file_is_not_replaced(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "maker.py").write_text(PRIOR_FILE.format(user=USER))
    line = assert_refused(["prior", "maker.py:make", "--plot", "x.png"], "--plot", capsys)
    assert "appeared" in line
    assert (tmp_path / "x.png").read_bytes() == USER
    assert _names(tmp_path) == ["maker.py", "x.png"]  # no temporary, no lock


def test_posterior_draws_appearing_while_written_are_not_replaced(tmp_path, monkeypatch,
                                                                  capsys):
    """The user's d.nc appears after the netCDF temporary is written: neither output is made."""
    monkeypatch.chdir(tmp_path)
    writer_helpers.install_posterior_stubs(
        monkeypatch.setattr, on_rank=lambda path: Path("d.nc").write_bytes(USER))
    argv = [*writer_helpers.POSTERIOR, "--save-draws", "d.nc", "--plots", "p"]
    line = assert_refused(argv, "--save-draws", capsys)
    assert "appeared" in line
    assert (tmp_path / "d.nc").read_bytes() == USER
    assert _names(tmp_path) == ["d.nc"]  # no plots directory either: all or nothing


def test_posterior_plots_filled_meanwhile_keep_the_users_file(tmp_path, monkeypatch, capsys):
    """--plots named an empty directory; the user puts a file in it during the run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p").mkdir()
    writer_helpers.install_posterior_stubs(
        monkeypatch.setattr, on_rank=lambda path: Path("p/notes.txt").write_bytes(USER))
    argv = [*writer_helpers.POSTERIOR, "--save-draws", "d.nc", "--plots", "p"]
    line = assert_refused(argv, "--plots", capsys)
    assert "appeared" in line or "non-empty" in line
    assert _names(tmp_path) == ["p"] and _names(tmp_path / "p") == ["notes.txt"]
    assert (tmp_path / "p" / "notes.txt").read_bytes() == USER


def test_posterior_writes_both_outputs_when_nothing_appears(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    writer_helpers.install_posterior_stubs(monkeypatch.setattr)
    status, out, err = run_cli([*writer_helpers.POSTERIOR, "--save-draws", "d.nc", "--plots",
                                "p", "--json"], capsys)
    assert status == 0, err
    payload = json.loads(out)
    assert payload["saved_draws"] == str(tmp_path / "d.nc")
    assert _names(tmp_path) == ["d.nc", "p"] and _names(tmp_path / "p") == ["rank.png",
                                                                              "trace.png"]
    import xarray as xr

    with xr.open_datatree(tmp_path / "d.nc") as tree:
        assert tree["posterior"]["X1"].shape == (2, 20)


def test_sweep_out_appearing_during_the_sweep_is_not_replaced(tmp_path, monkeypatch, capsys):
    from dprisk.inference.sweeps import store

    monkeypatch.chdir(tmp_path)
    write_table = store.write_table

    def appearing(path, table):  # the final write: the user's o.nc appears meanwhile
        write_table(path, table)
        Path("o.nc").write_bytes(USER)

    monkeypatch.setattr(store, "write_table", appearing)
    assert_refused(["sweep", "--rho1", "0.1", "--rho2", "0.25", "--d", "3", "--x2", "2",
                    "--out", "o.nc"], "--out", capsys)
    assert (tmp_path / "o.nc").read_bytes() == USER
    assert [n for n in _names(tmp_path) if n.endswith(".tmp")] == []


@pytest.mark.parametrize("what", ["file", "directory"])
def test_reproduce_out_appearing_during_the_report_is_not_replaced(what, tmp_path,
                                                                   monkeypatch, capsys):
    from dprisk.validation.report import build as report

    monkeypatch.chdir(tmp_path)

    def study(*, paper_scale):  # the user makes report/ (a file, or a directory of theirs)
        if what == "file":
            Path("report").write_bytes(USER)
        else:
            Path("report").mkdir()
            Path("report/notes.txt").write_bytes(USER)
        return writer_helpers_stub_study()

    monkeypatch.setattr(report, "STUDIES", [("stub", study)])
    assert_refused(["reproduce", "--out", "report", "--quiet"], "--out", capsys)
    assert _names(tmp_path) == ["report"]  # no temporary directory, no lock
    kept = tmp_path / "report" if what == "file" else tmp_path / "report" / "notes.txt"
    assert kept.read_bytes() == USER


def writer_helpers_stub_study():
    sys.path.insert(0, str(HERE))
    try:
        import output_helpers
    finally:
        sys.path.remove(str(HERE))
    return output_helpers.stub_study(paper_scale=False)


# ------------------------------------------------------------------ colliding outputs
@pytest.mark.parametrize(("draws", "plots"), [("X.nc", "X.nc"), ("P/d.nc", "P"),
                                              ("./X.nc", "X.nc"), ("d.nc", ".d.nc.lock")])
def test_colliding_outputs_are_refused_before_sampling(draws, plots, tmp_path, monkeypatch,
                                                       capsys):
    from dprisk.inference.two_level import sampling

    def never(*args, **kwargs):
        raise AssertionError("sampled before refusing colliding outputs")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sampling, "summarize_posterior", never)
    line = assert_refused([*writer_helpers.POSTERIOR, "--save-draws", draws, "--plots",
                          plots], "--save-draws", capsys)
    assert "--plots" in line
    assert _names(tmp_path) == []


# ------------------------------------------------------------------ stale temporaries
def _layout_leftovers(root: Path, target: str, *, directory: bool) -> dict[str, bool]:
    """Leftovers beside ``root/target``; returns {name: removed by the next run?}."""
    def make(name: str, as_dir: bool) -> None:
        path = root / name
        if as_dir:
            path.mkdir()
            (path / "trace.png").write_bytes(b"half")
        else:
            path.write_bytes(b"half")

    cases = {
        f".{target}.{GONE}.0a1b2c3d.tmp": True,  # a killed run's: removed
        f".{target}.{os.getpid()}.0a1b2c3d.tmp": False,  # a live process's: kept
        f".{target}.notes.tmp": False,  # the user's, not our pattern: kept
        f".other.{GONE}.0a1b2c3d.tmp": False,  # another output's: kept
        f".{target}.{GONE}.0a1b2c3d.tmp.bak": False,  # not exactly our pattern: kept
    }
    for name in cases:
        make(name, directory and name.startswith(f".{target}.{GONE}.0a1b2c3d.tmp")
             and name.endswith(".tmp"))
    (root / f".{target}.lock").write_text(f"{GONE}\n")  # a dead writer's lock: taken over
    cases[f".{target}.lock"] = True
    return cases


def test_the_next_run_removes_only_stale_temporaries_of_its_outputs(tmp_path, monkeypatch,
                                                                    capsys):
    monkeypatch.chdir(tmp_path)
    cases = _layout_leftovers(tmp_path, "d.nc", directory=False)
    cases.update(_layout_leftovers(tmp_path, "p", directory=True))
    writer_helpers.install_posterior_stubs(monkeypatch.setattr)
    status, _, err = run_cli([*writer_helpers.POSTERIOR, "--save-draws", "d.nc", "--plots",
                              "p", "--json"], capsys)
    assert status == 0, err
    kept = sorted(name for name, removed in cases.items() if not removed)
    assert _names(tmp_path) == sorted(["d.nc", "p", *kept])


# ------------------------------------------------------------------ stop signals and kills
@pytest.fixture(scope="module")
def helper_command():
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); "
            "import writer_helpers as h; h.main(sys.argv[1:])")
    return [sys.executable, "-c", code]


def _start(argv: list[str], cwd: Path, signal_file: Path, env) -> subprocess.Popen:
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not signal_file.exists():
        if proc.poll() is not None:
            raise AssertionError(f"ended ({proc.returncode}) early: {proc.stderr.read()!r}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the subprocess never signalled")
        time.sleep(0.02)
    return proc


def test_ctrl_c_while_writing_leaves_nothing(tmp_path, helper_command, subprocess_env):
    """SIGINT while both temporaries are filled; the interrupt is swallowed where the files
    are written, so the watchdog forces the exit (SIGTERM takes the same path: the handler
    and the watchdog are shared, dprisk/cli/stopping.py)."""
    argv = [*writer_helpers.POSTERIOR, "--save-draws", "sub/d.nc", "--plots", "p"]
    signum = signal.SIGINT
    work, signal_file = tmp_path / "work", tmp_path / "signal"
    work.mkdir()
    proc = _start([*helper_command, str(signal_file), "rank", *argv], work, signal_file,
                  subprocess_env)
    filling = _names(work) + _names(work / "sub")  # the netCDF and the plots' temporaries
    assert any(n.startswith(".d.nc.") and n.endswith(".tmp") for n in filling), filling
    assert any(n.startswith(".p.") and n.endswith(".tmp") for n in filling), filling
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err.decode()[-1000:]
    assert err.decode().strip().splitlines()[-1].startswith(
        f"dprisk {argv[0]}: interrupted by {signal.Signals(signum).name}")
    assert _names(work) == []  # no temporary file or directory, no lock, no sub/ made


def test_a_killed_save_is_cleaned_by_the_next_run(tmp_path, helper_command, subprocess_env,
                                                  monkeypatch, capsys):
    work, signal_file = tmp_path / "work", tmp_path / "signal"
    work.mkdir()
    argv = [*writer_helpers.POSTERIOR, "--save-draws", "d.nc", "--plots", "p"]
    proc = _start([*helper_command, str(signal_file), "rank", *argv], work, signal_file,
                  subprocess_env)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    left = _names(work)
    assert ".d.nc.lock" in left and ".p.lock" in left
    assert any(n.startswith(f".d.nc.{proc.pid}.") for n in left), left
    assert any(n.startswith(f".p.{proc.pid}.") for n in left), left

    monkeypatch.chdir(work)
    writer_helpers.install_posterior_stubs(monkeypatch.setattr)
    status, _, err = run_cli([*argv, "--json"], capsys)
    assert status == 0, err
    assert _names(work) == ["d.nc", "p"]  # the killed run's temporaries and locks are gone


def test_sweep_removes_only_its_stale_temporaries(tmp_path, monkeypatch, capsys):
    """``sweep --out`` cleans beside ``out`` by the same rule: a gone pid, the exact pattern."""
    monkeypatch.chdir(tmp_path)
    stale, kept = f".o.nc.{GONE}.0a1b2c3d.tmp", [".o.nc.notes.tmp",
                                                 f".o.nc.{os.getpid()}.0a1b2c3d.tmp"]
    for name in [stale, *kept]:
        (tmp_path / name).write_bytes(USER)
    status, _, err = run_cli(["sweep", "--rho1", "0.1", "--rho2", "0.25", "--d", "3", "--x2",
                              "2", "--out", "o.nc", "--json"], capsys)
    assert status == 0, err
    assert _names(tmp_path) == sorted(["o.nc", *kept])
    assert all((tmp_path / name).read_bytes() == USER for name in kept)


# ------------------------------------------------------------------ the current directory
@pytest.mark.parametrize("plots", [".", "..", "HOME"])
def test_plots_naming_the_current_or_home_directory_is_refused(plots, tmp_path, monkeypatch,
                                                               capsys):
    """``--plots .`` from an empty directory was accepted and that directory replaced by the
    plots' (another inode): the user's shell was left in a deleted directory, ``ls`` empty.
    An empty home directory likewise; ``..`` (holding the current one) is named so too."""
    from dprisk.inference.two_level import sampling

    def never(*args, **kwargs):
        raise AssertionError("sampled before refusing --plots")

    here = tmp_path / "home" / "empty"
    here.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(here if plots != "HOME" else tmp_path)
    if plots == "HOME":
        here.rmdir()
        plots = str(tmp_path / "home")
    inode = os.stat(plots).st_ino
    monkeypatch.setattr(sampling, "summarize_posterior", never)
    line = assert_refused([*writer_helpers.POSTERIOR, "--plots", plots], "--plots", capsys)
    assert "current directory" in line or "home directory" in line
    assert os.stat(plots).st_ino == inode
