"""The one writer rule (dprisk/runtime/writers.py): a command deletes only what it wrote.

Tables: (1) every writer x a file of the user's where the writer works (the sweep's chunk
store, an earlier report, a report moved aside or left in progress by a killed run): the
user's file survives, byte for byte; (2) the report's replacement is atomic: interrupted at
each step before the exchange the earlier report is intact, after it the new one is complete
and the interrupt line says so.
"""

from __future__ import annotations

import json
import os
import signal

import pytest
from cli_helpers import run_cli

from dprisk.cli.common import Interrupted, report_interrupted
from dprisk.runtime import writers
from dprisk.runtime.writers import Owned, foreign_entries, remove_owned, replace_directory
from dprisk.validation.report.output import MARKER, ReportTarget

USER = b"the user's notes\n"
SWEEP = ["sweep", "--rho1", "0.5", "--rho2", "0.5", "--d", "3", "--x2", "2", "--json"]


@pytest.fixture(autouse=True)
def no_commits(monkeypatch):
    monkeypatch.setattr(writers, "_COMMITTED", [])


def _report(path, files: dict[str, str], *, legacy: bool = False) -> None:
    """An earlier report at ``path`` with ``files`` and its marker (manifest unless legacy)."""
    path.mkdir()
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    marker = {"written_by": "dprisk reproduce"}
    if legacy:  # its page links its figures, as the page of every report does
        (path / "index.html").write_text("".join(
            f"<figure><img src='{name}' alt=''></figure>" for name in files
            if name.startswith("figures/")))
    else:
        marker["files"] = sorted(files)
    (path / MARKER).write_text(json.dumps(marker))


def _fill(files: dict[str, str]):
    def fill(tmp):
        for name, text in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_text(text)
        return {"n": len(files)}
    return fill


NEW = {"index.html": "new", "results.json": "[]", "figures/fig1.png": "new1"}
OLD = {"index.html": "old", "results.nc": "old", "figures/fig1.png": "old1",
       "figures/fig9.png": "old9"}


@pytest.mark.parametrize("user_file", ["notes.txt", "figures/mine.png", "sub/deep/file.txt"])
@pytest.mark.parametrize("legacy", [False, True], ids=["manifest", "legacy-marker"])
@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_report_replacement_keeps_the_users_file(user_file, legacy, exchange, tmp_path,
                                                 monkeypatch):
    if not exchange:
        monkeypatch.setattr(writers, "_exchange", lambda a, b: False)
    out = tmp_path / "report"
    _report(out, OLD, legacy=legacy)
    (out / user_file).parent.mkdir(parents=True, exist_ok=True)
    (out / user_file).write_bytes(USER)
    with ReportTarget(out) as target:
        assert target.write(_fill(NEW)) == {"n": 3}
    assert (out / user_file).read_bytes() == USER  # moved into the new report
    assert (out / "index.html").read_text() == "new"
    assert not (out / "results.nc").exists() and not (out / "figures/fig9.png").exists()
    manifest = json.loads((out / MARKER).read_text())
    assert sorted(manifest["files"]) == sorted(NEW)  # the user's file is not claimed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no temporaries, no lock
    assert writers.committed() == [out]


@pytest.mark.parametrize("where", ["during-fill", "after-fill"])
def test_interrupted_report_leaves_the_earlier_one_intact(where, tmp_path, monkeypatch):
    out = tmp_path / "report"
    _report(out, OLD)
    (out / "notes.txt").write_bytes(USER)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def fill(tmp):
        (tmp / "index.html").write_text("partial")
        if where == "during-fill":
            raise Interrupted(signal.SIGTERM)
        return {}

    if where == "after-fill":  # the stop arrives as the manifest is written
        def stop(*args, **kwargs):
            raise Interrupted(signal.SIGTERM)
        monkeypatch.setattr("dprisk.runtime.output_directory.write_manifest", stop)
    with pytest.raises(Interrupted), ReportTarget(out) as target:
        target.write(fill)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]
    assert writers.committed() == []


def test_interrupt_line_after_the_exchange_says_the_output_is_in_place(capsys, tmp_path):
    writers.mark_committed(tmp_path / "report")
    status = report_interrupted("reproduce", Interrupted(signal.SIGTERM))
    err = capsys.readouterr().err
    assert status == 143
    assert "already complete and is in place" in err and "intact" not in err, err


def test_leftovers_of_a_killed_run_lose_only_their_own_files(tmp_path):
    out = tmp_path / "report"
    _report(out, {"index.html": "current"})
    aside = tmp_path / ".report-old-abc"  # an earlier report moved aside, then killed
    aside.mkdir()
    _report(aside / "report", OLD)
    (aside / "report" / "notes.txt").write_bytes(USER)
    progress = tmp_path / ".report-tmp-xyz"  # a new report in progress, then killed
    progress.mkdir()
    (progress / MARKER).write_text(json.dumps({"in_progress": True}))
    (progress / "index.html").write_text("partial")
    foreign = tmp_path / ".report-tmp-users"  # the user's own folder with a matching name
    foreign.mkdir()
    (foreign / "keep.txt").write_bytes(USER)
    with ReportTarget(out) as target:
        target.write(_fill(NEW))
    assert (aside / "report" / "notes.txt").read_bytes() == USER
    assert not (aside / "report" / "index.html").exists()
    assert not progress.exists()
    assert (foreign / "keep.txt").read_bytes() == USER


def test_sweep_refuses_a_chunk_store_holding_the_users_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "s.nc.chunks"
    store.mkdir()
    (store / "mine.txt").write_bytes(USER)
    status, _out, err = run_cli([*SWEEP, "--out", "s.nc"], capsys)
    assert status == 2, err
    assert err.count("\n") == 1 and "--out" in err and "mine.txt" in err, err
    assert (store / "mine.txt").read_bytes() == USER
    assert sorted(p.name for p in store.iterdir()) == ["mine.txt"]
    assert not (tmp_path / "s.nc").exists()


def test_sweep_takes_over_its_own_leftover_store_and_removes_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "s.nc.chunks"
    store.mkdir()
    (store / "lock").write_text("12345\n")  # a killed run's lock: the sweep's own
    status, _out, err = run_cli([*SWEEP, "--out", "s.nc"], capsys)
    assert status == 0, err
    assert (tmp_path / "s.nc").is_file() and not store.exists()


@pytest.mark.parametrize(("files", "owned", "left"), [
    (["a.npy", "b.txt"], Owned(patterns=("*.npy",)), ["b.txt"]),
    (["x/y.png", "x/z.png"], Owned(files=frozenset({"x/y.png"})), ["x/z.png"]),
    (["chunk_1.npy"], Owned(patterns=("chunk_*.npy",)), []),
    (["sub/chunk_1.npy"], Owned(patterns=("chunk_*.npy",)), ["sub/chunk_1.npy"]),
])
def test_remove_owned_deletes_only_owned_files(files, owned, left, tmp_path):
    root = tmp_path / "d"
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(USER)
    assert foreign_entries(root, owned) == left
    assert remove_owned(root, owned) == left
    assert root.exists() == bool(left)  # the directory goes only once empty


def test_replace_directory_onto_a_missing_path(tmp_path):
    new = tmp_path / "new"
    new.mkdir()
    (new / "f").write_text("x")
    assert replace_directory(new, tmp_path / "out", None) == []
    assert (tmp_path / "out" / "f").read_text() == "x" and not new.exists()


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_an_old_file_that_cannot_be_deleted_does_not_fail_the_written_report(exchange, tmp_path,
                                                                             monkeypatch):
    """The earlier report's ``figures/`` made read-only (unlink: EPERM/EACCES): the new report
    was in place, yet the command failed (exit 1, "failed: PermissionError") and the earlier
    report stayed in ``.report-tmp-*``, without its marker, which no later run removes. Now
    the file is kept aside (``.report-old-*``, as a user's file) and the run succeeds."""
    import errno
    from pathlib import Path

    if not exchange:
        monkeypatch.setattr(writers, "_exchange", lambda a, b: False)
    out = tmp_path / "report"
    _report(out, OLD)
    unlink = Path.unlink

    def read_only(self, *args, **kwargs):
        if self.name == "fig9.png":
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), str(self))
        return unlink(self, *args, **kwargs)

    monkeypatch.setattr(Path, "unlink", read_only)
    with ReportTarget(out) as target:
        assert target.write(_fill(NEW)) == {"n": 3}
    assert (out / "index.html").read_text() == "new" and not (out / "figures/fig9.png").exists()
    kept = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("fig9.png")]
    assert len(kept) == 1 and kept[0].startswith(".report-old-")
    assert writers.committed() == [out]


@pytest.mark.parametrize("user_file", ["results.json", "results.json/mine.txt"])
@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_a_users_file_where_the_new_report_puts_its_own_is_refused(user_file, exchange,
                                                                   tmp_path, monkeypatch):
    """The user's ``noisy.parquet`` added to a ``population measure --layout nmf`` output was
    moved, on a rerun with ``--layout table``, into a hidden ``.m-old-*`` folder (exit 0, not a
    word); a user's folder where the new output puts a file made the move fail after the
    exchange. Now the run is refused (naming the file) and nothing is replaced."""
    if not exchange:
        monkeypatch.setattr(writers, "_exchange", lambda a, b: False)
    out = tmp_path / "report"
    _report(out, OLD)
    (out / user_file).parent.mkdir(parents=True, exist_ok=True)
    (out / user_file).write_bytes(USER)

    def tree():
        return sorted((p.relative_to(tmp_path).as_posix(), p.is_file() and p.read_bytes())
                      for p in tmp_path.rglob("*"))

    before = tree()
    with ReportTarget(out) as target, pytest.raises(ValueError, match=r"^out .*results\.json"):
        target.write(_fill(NEW))
    assert tree() == before and writers.committed() == []
