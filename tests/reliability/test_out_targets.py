"""Every kind of ``--out`` target: written, replaced, or refused with nothing touched.

One table for ``dprisk reproduce --out`` and one for ``dprisk sweep --out``, run through the
command line in this process (``dprisk.cli.main.main``). ``reproduce`` runs one stub study
(``output_helpers.stub_study``), never the real studies; the sweep is one exact grid point.

A refused target gives exit status 2, exactly one stderr line naming ``--out``, nothing on
stdout, and leaves the whole directory tree as it was (names, contents and modes). An
accepted target ends with exactly the output (a report directory with its marker, or the
``.nc`` file), the leftovers of killed runs removed, and permissions following the umask.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from cli_helpers import assert_refused

from dprisk.cli.main import main
from dprisk.runtime.output_files import file_mode
from dprisk.validation.report import build as report
from dprisk.validation.report.output import MARKER

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import output_helpers  # noqa: E402

sys.path.remove(str(HERE))

SWEEP_ARGS = ["sweep", "--rho1", "0.1", "--rho2", "0.25", "--d", "3", "--x2", "2", "--json"]


def _layout(paths: dict, target: str):
    """A case that lays out ``paths`` (name: text or bytes of a file, ``None`` for a directory)
    under the test's root and returns ``target``, the ``--out`` value."""

    def make(root):
        for name, content in paths.items():
            path = root / name
            if content is None:
                path.mkdir(parents=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
        return target

    return make


# --------------------------------------------------------------------------- reproduce
def _parent_of_cwd(root):
    (root / "sub").mkdir()
    os.chdir(root / "sub")
    return ".."


def _home(root, monkeypatch):
    (root / "home").mkdir()
    (root / "home" / ".bashrc").write_text("x")
    monkeypatch.setenv("HOME", str(root / "home"))
    return str(root / "home")


def _empty_home(root, monkeypatch):
    (root / "home").mkdir()
    monkeypatch.setenv("HOME", str(root / "home"))
    return str(root / "home")


def _symlink_to_report(root):
    output_helpers.run_report(str(root / "real"))
    (root / "link").symlink_to(root / "real")
    return "link"


REFUSED_REPORTS = {
    "non-empty directory": _layout({"d/keep.txt": "x"}, "d"),
    "current directory": _layout({"keep.txt": "x"}, "."),
    "empty current directory": _layout({}, "."),
    "parent of the current directory": _parent_of_cwd,
    "home directory": _home,
    "empty home directory": _empty_home,
    "a file": _layout({"f": "x"}, "f"),
    "below a file": _layout({"f": "x"}, "f/report"),
    "symbolic link to a report": _symlink_to_report,
    "marker that is a directory": _layout({f"d/{MARKER}": None, "d/keep.txt": "x"}, "d"),
}


@pytest.fixture
def stub_report(monkeypatch, tmp_path):
    monkeypatch.setattr(report, "STUDIES", [("stub", output_helpers.stub_study)])
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("case", list(REFUSED_REPORTS))
def test_reproduce_refuses_what_it_did_not_write(case, stub_report, capsys, monkeypatch):
    make = REFUSED_REPORTS[case]
    out = make(stub_report, monkeypatch) if "home" in case else make(stub_report)
    assert_refused(["reproduce", "--out", out, "--quiet"], "--out", capsys, root=stub_report)


def _earlier_report(root):
    output_helpers.run_report(str(root / "report"))
    (root / "report" / "notes.txt").write_text("x")  # the user's: moved into the new report
    return "report"


def _leftovers_of_killed_runs(root):
    output_helpers.run_report(str(root / "report"))
    return _layout({".report-tmp-abc123/figures": None, f".report-tmp-abc123/{MARKER}": "{}",
                    ".report-old-def456/report": None,
                    ".report.lock": "999999999\n"},  # a dead writer's lock
                   "report")(root)


#: Case: (how to lay it out, returning the --out value; the names beside it that are kept).
ACCEPTED_REPORTS = {
    "missing path": (_layout({}, "new/nested/report"), []),
    "empty directory": (_layout({"report": None}, "report"), []),
    "earlier report": (_earlier_report, []),
    "leftovers of killed runs": (_leftovers_of_killed_runs, []),
    # ".report-notes" is not a leftover's name: kept
    "other files beside it": (_layout({"keep.txt": "x", ".report-notes": "x"}, "report"),
                              ["keep.txt", ".report-notes"]),
}


@pytest.mark.parametrize("case", list(ACCEPTED_REPORTS))
def test_reproduce_writes_new_empty_or_its_own_directories(case, stub_report, capsys):
    make, kept = ACCEPTED_REPORTS[case]
    out = make(stub_report)
    assert main(["reproduce", "--out", out, "--quiet", "--json"]) == 0, capsys.readouterr().err
    path = stub_report / out
    users = ["notes.txt"] if case == "earlier report" else []  # never deleted (writers.py)
    assert sorted(p.name for p in path.iterdir()) == sorted(
        [MARKER, "figures", "index.html", "results.json", "results.nc", *users])
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, *kept])
    if case != "missing path":
        assert sorted(p.name for p in stub_report.iterdir()) == sorted(["report", *kept])


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_report_and_sweep_files_follow_the_umask(umask, stub_report, capsys):
    old = os.umask(umask)
    try:
        assert main(["reproduce", "--out", "report", "--quiet", "--json"]) == 0
        assert main([*SWEEP_ARGS, "--out", "s.nc"]) == 0
    finally:
        os.umask(old)
    capsys.readouterr()
    assert file_mode() == 0o666 & ~old
    mode = stat.S_IMODE
    assert mode((stub_report / "report").stat().st_mode) == 0o777 & ~umask
    assert mode((stub_report / "report" / "figures").stat().st_mode) == 0o777 & ~umask
    assert mode((stub_report / "report" / "results.json").stat().st_mode) == 0o666 & ~umask
    assert mode((stub_report / "report" / MARKER).stat().st_mode) == 0o666 & ~umask
    assert mode((stub_report / "s.nc").stat().st_mode) == 0o666 & ~umask


# --------------------------------------------------------------------------- sweep
def _sweep_other_netcdf(root):
    xr.Dataset({"v": ("x", np.arange(3.0))}).to_netcdf(root / "o.nc")
    return "o.nc"


def _link_to_finished_sweep(root):
    assert main([*SWEEP_ARGS, "--out", "real.nc"]) == 0
    (root / "link.nc").symlink_to("real.nc")
    return "link.nc"


def _dangling_link(root):
    (root / "elsewhere").mkdir()
    (root / "link.nc").symlink_to("elsewhere/target.nc")  # must not be created through it
    return "link.nc"


def _link_to_directory(root):
    (root / "dir").mkdir()
    (root / "link.nc").symlink_to("dir")
    return "link.nc"


REFUSED_SWEEPS = {
    "dangling symbolic link": _dangling_link,
    "symbolic link to a finished sweep": _link_to_finished_sweep,
    "symbolic link to a directory": _link_to_directory,
    "directory named .nc": _layout({"o.nc": None}, "o.nc"),
    "directory": _layout({"o": None}, "o"),
    "text file": _layout({"o.nc": "not netCDF"}, "o.nc"),
    "empty file": _layout({"o.nc": b""}, "o.nc"),
    "netCDF file of no sweep": _sweep_other_netcdf,
    "chunk store that is a file": _layout({"o.nc.chunks": "x"}, "o.nc"),
    "/dev/full": _layout({}, "/dev/full"),
    "not .nc": _layout({}, "o.txt"),
    "below a file": _layout({"f": "x"}, "f/o.nc"),
}


@pytest.mark.parametrize("case", list(REFUSED_SWEEPS))
def test_sweep_refuses_what_it_cannot_or_may_not_write(case, stub_report, capsys):
    out = REFUSED_SWEEPS[case](stub_report)
    capsys.readouterr()  # a case's own earlier run
    # nothing written: no o.nc.chunks/ either
    err = assert_refused([*SWEEP_ARGS, "--out", out], "--out", capsys, root=stub_report)
    if "symbolic link" in case:  # never followed, as --save-draws, --plot and reproduce
        assert "is a symbolic link; refusing to replace it" in err


def _sweep_finished(root):
    assert main([*SWEEP_ARGS, "--out", "o.nc"]) == 0
    return "o.nc"


ACCEPTED_SWEEPS = {
    "missing path": _layout({}, "new/o.nc"),
    "finished sweep (read back)": _sweep_finished,
    "leftovers of a killed run": _layout({
        # a killed final write: pid 4194305 is above Linux's largest pid (2**22), so gone
        ".o.nc.4194305.0a1b2c3d.tmp": b"half",
        "o.nc.chunks/.chunk_0000000.npy.z.tmp": b"half",
        "o.nc.chunks/lock": "999999999\n",  # a dead writer's lock
    }, "o.nc"),
    # a rejected run's store: a manifest, no chunk
    "store of a rejected run": _layout({"o.nc.chunks/manifest.json": '{"another": "sweep"}'},
                                       "o.nc"),
}


@pytest.mark.parametrize("case", list(ACCEPTED_SWEEPS))
def test_sweep_writes_resumes_or_reads_back(case, stub_report, capsys):
    out = ACCEPTED_SWEEPS[case](stub_report)
    capsys.readouterr()
    assert main([*SWEEP_ARGS, "--out", out]) == 0, capsys.readouterr().err
    path = stub_report / out
    assert sorted(p.name for p in path.parent.iterdir()) == ["o.nc"]
    assert float(xr.load_dataset(path)["p_correct"].values.ravel()[0]) == pytest.approx(
        0.46606889045519606, rel=1e-12)


def test_a_rejected_sweep_leaves_nothing_and_the_corrected_rerun_runs(tmp_path):
    from dprisk.inference.sweeps.sweep import sweep

    def rejecting(**kwargs):
        raise ValueError("prior: refused at the first point")

    def standin(*, rho1, rho2, d, x2, p=0.5, known=0, prior="improper"):
        return {"p_correct": rho1, "p_correct_no_hierarchy": rho2, "gain": d, "loss": x2}

    out = tmp_path / "o.nc"
    with pytest.raises(ValueError, match="refused at the first point"):
        sweep(rho1=0.1, rho2=0.25, d=3, x2=[1, 2], quantity=rejecting, out=out, progress=False)
    assert list(tmp_path.iterdir()) == []
    ds = sweep(rho1=0.1, rho2=0.25, d=3, x2=[1, 2], quantity=standin, out=out, progress=False)
    assert ds.sizes == {"x2": 2} and sorted(p.name for p in tmp_path.iterdir()) == ["o.nc"]
