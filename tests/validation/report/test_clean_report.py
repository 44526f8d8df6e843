"""``make clean`` removes the report directory only when it is one, and only its own files.

It ran ``rm -rf $(REPORT_DIR)``: a directory of the user's named so (``make clean
REPORT_DIR=~/notes``), and files the user added to a report (which a rerun of ``dprisk
reproduce`` keeps), were deleted.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dprisk.runtime.output_files import OutputError
from dprisk.validation.report.output import MARKER, remove_report

ROOT = Path(__file__).resolve().parents[3]
USER = b"the user's notes\n"


def _report(path: Path, *, legacy: bool = False) -> Path:
    """A report as ``dprisk reproduce`` writes it (a marker listing its files, or none)."""
    (path / "figures").mkdir(parents=True)
    (path / "figures" / "fig1.png").write_bytes(b"png")
    for name in ("index.html", "results.json", "results.nc"):
        (path / name).write_text("<img src='figures/fig1.png'>" if name == "index.html" else "x")
    files = [] if legacy else ["figures/fig1.png", "index.html", "results.json", "results.nc"]
    (path / MARKER).write_text('{"written_by": "dprisk reproduce"'
                               + ("" if legacy else f', "files": {files}'.replace("'", '"'))
                               + "}\n")
    return path


@pytest.mark.parametrize("legacy", [False, True])
def test_a_reports_own_files_and_screenshots_go_the_users_stay(tmp_path, legacy):
    report = _report(tmp_path / "report", legacy=legacy)
    (report / "screenshots").mkdir()
    (report / "screenshots" / "fig1.png").write_bytes(b"png")
    (report / "screenshot.png").write_bytes(b"png")
    (report / "notes.txt").write_bytes(USER)
    (report / "figures" / "mine.png").write_bytes(USER)
    assert remove_report(report) == ["figures/mine.png", "notes.txt"]
    assert sorted(p.relative_to(report).as_posix() for p in report.rglob("*")) == [
        "figures", "figures/mine.png", "notes.txt"]
    (report / "notes.txt").unlink()
    (report / "figures" / "mine.png").unlink()
    assert remove_report(_report(tmp_path / "again")) == [] and not (tmp_path / "again").exists()


def test_a_directory_without_the_marker_or_a_link_is_refused_untouched(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "notes.txt").write_bytes(USER)
    (tmp_path / "link").symlink_to(_report(tmp_path / "report"))
    with pytest.raises(OutputError, match=r"no \.dprisk-report marker"):
        remove_report(user)
    with pytest.raises(OutputError, match="symbolic link"):
        remove_report(tmp_path / "link")
    assert (user / "notes.txt").read_bytes() == USER and (tmp_path / "report" / MARKER).is_file()


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_clean_report_keeps_a_users_directory(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "notes.txt").write_bytes(USER)
    done = subprocess.run(["make", "-s", "-C", str(ROOT), "clean-report", f"REPORT_DIR={user}"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "kept" in done.stderr and (user / "notes.txt").read_bytes() == USER
    report = _report(tmp_path / "report")
    done = subprocess.run(["make", "-s", "-C", str(ROOT), "clean-report",
                           f"REPORT_DIR={report}"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0 and not report.exists(), done.stderr
