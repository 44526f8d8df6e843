"""The one directory writer (dprisk/runtime/output_directory.py): nothing that appeared replaced.

Both its users, the report (``ReportTarget``, refusals name ``out``) and the population
commands (refusals name ``--out``), are run through the same table: during the run (inside
``fill``) something appears at, or takes the place of, ``out``; the run must be refused with
``OutputAppeared`` naming the option, the thing that appeared left byte for byte, and no
temporary or lock left behind. Without interference the directory is written, and an earlier
output is replaced keeping the user's file.
"""

from __future__ import annotations

import os

import pytest
from full_disk import fail_lock_pid_write

from dprisk.runtime import output_directory as writer
from dprisk.runtime import writers
from dprisk.runtime.output_directory import OutputDirectory
from dprisk.runtime.output_files import OutputAppeared, OutputError
from dprisk.validation.report.output import MARKER, ReportTarget

USER = b"the user's file\n"
POPULATION_MARKER = ".dprisk-population-synth"


@pytest.fixture(autouse=True)
def no_commits(monkeypatch):
    monkeypatch.setattr(writers, "_COMMITTED", [])


def _report(out):
    return ReportTarget(out), "out", MARKER


def _population(out):
    target = OutputDirectory(out, marker=POPULATION_MARKER, command="dprisk population synth")
    return target, "--out", POPULATION_MARKER


WRITERS = {"report": _report, "population": _population}


def _file(out):
    out.write_bytes(USER)


def _empty_dir(out):
    out.mkdir()


def _dir_with_file(out):
    out.mkdir()
    (out / "notes.txt").write_bytes(USER)


def _earlier_output(marker):
    def make(out):
        out.mkdir()
        (out / marker).write_text('{"written_by": "someone", "files": []}\n')
        (out / "notes.txt").write_bytes(USER)
    return make


def _link(out):
    (out.parent / "elsewhere").mkdir()
    out.symlink_to("elsewhere")


#: What appears at a missing ``out`` during the run.
APPEARING = {"file": _file, "empty directory": _empty_dir, "directory": _dir_with_file,
             "an output of the command's": None, "symbolic link": _link}


def _snapshot(root):
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() and not p.is_symlink()
                                       else os.readlink(p) if p.is_symlink() else None)
            for p in root.rglob("*") if not p.name.startswith(".")}


def _fill_then(action):
    def fill(tmp):
        (tmp / "result.txt").write_text("new")
        action()
        return {"filled": True}
    return fill


@pytest.mark.parametrize("kind", list(APPEARING))
@pytest.mark.parametrize("which", list(WRITERS))
def test_a_path_that_appeared_at_a_missing_out_is_never_replaced(which, kind, tmp_path):
    work, fresh = tmp_path / "work", tmp_path / "fresh"
    work.mkdir(), fresh.mkdir()
    out = work / "out"
    target, option, marker = WRITERS[which](out)
    make = APPEARING[kind] or _earlier_output(marker)
    with target, pytest.raises(OutputAppeared, match=rf"^{option} .* appeared while"):
        target.write(_fill_then(lambda: make(out)))
    make(fresh / "out")
    assert _snapshot(work) == _snapshot(fresh)  # exactly what appeared, untouched
    assert not [p.name for p in work.iterdir() if p.name.startswith(".")]  # no tmp, no lock


@pytest.mark.parametrize("which", list(WRITERS))
def test_a_directory_put_in_the_place_of_out_is_never_replaced(which, tmp_path):
    out = tmp_path / "out"
    target, option, marker = WRITERS[which](out)
    _earlier_output(marker)(out)

    def swap():
        out.rename(tmp_path / "moved")
        _earlier_output(marker)(out)  # another directory, even one that looks like ours
        (out / "theirs.txt").write_bytes(USER)

    with target, pytest.raises(OutputAppeared, match=rf"^{option} "):
        target.write(_fill_then(swap))
    assert (out / "theirs.txt").read_bytes() == USER and not (out / "result.txt").exists()
    assert (tmp_path / "moved" / "notes.txt").read_bytes() == USER


@pytest.mark.parametrize("which", list(WRITERS))
def test_a_lost_marker_is_refused_and_nothing_replaced(which, tmp_path):
    out = tmp_path / "out"
    target, option, marker = WRITERS[which](out)
    _earlier_output(marker)(out)
    with target, pytest.raises(OutputError, match=rf"^{option} .* changed while"):
        target.write(_fill_then(lambda: (out / marker).unlink()))
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("which", list(WRITERS))
def test_written_and_replaced_keeping_the_users_file(which, tmp_path):
    out = tmp_path / "out"
    target, _, marker = WRITERS[which](out)
    with target:
        assert target.write(_fill_then(lambda: None)) == {"filled": True}
    assert (out / "result.txt").read_text() == "new" and (out / marker).is_file()
    (out / "notes.txt").write_bytes(USER)
    target, _, _ = WRITERS[which](out)
    with target:
        target.write(lambda tmp: (tmp / "result.txt").write_text("newer"))
    assert (out / "result.txt").read_text() == "newer"
    assert (out / "notes.txt").read_bytes() == USER
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_race_refusal_of_the_exchange_names_the_option(tmp_path, monkeypatch):
    """replace_directory's own exclusive create (the last instant) is renamed to the option."""
    def racing(new, out, owned):
        raise OutputAppeared(f"out {str(out)!r} appeared while the command ran")

    monkeypatch.setattr(writer, "replace_directory", racing)
    target, option, _ = _population(tmp_path / "out")
    with target, pytest.raises(OutputAppeared, match=rf"^{option} "):
        target.write(_fill_then(lambda: None))
    assert list(tmp_path.iterdir()) == []


def test_both_users_share_the_one_writer():
    assert issubclass(ReportTarget, OutputDirectory)


def _no_space(tmp):
    """A fill that fails as a full disk does (ENOSPC) after writing part of a file."""
    (tmp / "result.txt").write_text("half")
    raise OSError(28, os.strerror(28), str(tmp / "result.txt"))


@pytest.mark.parametrize("failure", ["disk full", "interrupted"])
@pytest.mark.parametrize("which", list(WRITERS))
def test_a_failed_run_leaves_no_parent_directory_it_made(which, failure, tmp_path):
    """``out``'s missing parents are made on entering; a run that writes nothing removes them.

    (Before, ``a/b`` stayed behind, empty, after a full disk or a stop.)
    """
    out = tmp_path / "a" / "b" / "out"
    target, _, _ = WRITERS[which](out)

    def interrupted(tmp):
        raise KeyboardInterrupt

    fill = _no_space if failure == "disk full" else interrupted
    with pytest.raises(OSError if failure == "disk full" else KeyboardInterrupt):
        with target:
            target.write(fill)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("which", list(WRITERS))
def test_parents_made_stay_under_a_written_output_and_a_users_file(which, tmp_path):
    out = tmp_path / "a" / "b" / "out"
    target, _, marker = WRITERS[which](out)
    with target:
        target.write(_fill_then(lambda: None))
    assert (out / marker).is_file()
    out2 = tmp_path / "c" / "d" / "out"
    target, _, _ = WRITERS[which](out2)

    def users_file_meanwhile(tmp):
        (tmp_path / "c" / "notes.txt").write_bytes(USER)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), target:
        target.write(users_file_meanwhile)
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("which", list(WRITERS))
def test_a_second_writer_is_refused_naming_the_option(which, tmp_path):
    """The lock's refusal names the option as every other refusal does (``--out`` of the
    population commands; it said ``out``, the API's name, which they do not rename)."""
    from dprisk.runtime.output_files import OutputInUse

    out = tmp_path / "out"
    first, option, _ = WRITERS[which](out)
    second, _, _ = WRITERS[which](out)
    with first, pytest.raises(OutputInUse, match=rf"^{option} .* another running process"):
        second.__enter__()


@pytest.mark.parametrize("failing", ["moving the earlier output aside", "moving the new one in"])
@pytest.mark.parametrize("which", list(WRITERS))
def test_a_failed_move_restores_the_earlier_output_and_leaves_no_temporary(
        which, failing, tmp_path, monkeypatch):
    """Where the atomic exchange is unavailable the two renames may fail (EBUSY: ``out`` is a
    mount point). The run failed with ``.out-tmp-*`` (the whole new output) and ``.out-old-*``
    left beside ``out``; now both go and the earlier output stays at ``out``."""
    import errno
    from pathlib import Path

    out = tmp_path / "out"
    target, _, marker = WRITERS[which](out)
    _earlier_output(marker)(out)
    before = _snapshot(tmp_path)
    monkeypatch.setattr(writers, "_exchange", lambda a, b: False)
    rename, refused = Path.rename, []

    def busy(self, dst):  # the first such move only: putting the earlier one back works
        moving = (self == out) if failing.startswith("moving the earlier") else (Path(dst) == out)
        if moving and not refused:
            refused.append(dst)
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(self))
        return rename(self, dst)

    monkeypatch.setattr(Path, "rename", busy)
    with pytest.raises(OSError, match="busy"), target:
        target.write(_fill_then(lambda: None))
    assert _snapshot(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("which", list(WRITERS))
def test_a_mount_point_is_refused_before_any_work(which, tmp_path, monkeypatch):
    """An empty directory that is a mount point cannot be moved (EBUSY): refused up front."""
    out = tmp_path / "out"
    out.mkdir()
    real = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: os.fspath(p) == str(out) or real(p))
    with pytest.raises(OutputError, match="is a mount point"):
        WRITERS[which](out)


@pytest.mark.parametrize("which", list(WRITERS))
def test_a_full_disk_leaves_no_lock_file(which, tmp_path, monkeypatch):
    """On a full 200 KB tmpfs ``prior --plot``, ``population synth --out`` and ``sweep --out``
    failed leaving ``.p.png.lock``, ``.syn.lock`` and ``s.nc.chunks/`` (empty files and a
    directory made for the lock). The lock file is removed when its pid cannot be written."""
    out = tmp_path / "a" / "out"
    target, _, _ = WRITERS[which](out)
    fail_lock_pid_write(monkeypatch)
    with pytest.raises(OSError, match="No space"), target:
        pass
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_leaves_no_lock_file_of_a_new_output(tmp_path, monkeypatch):
    from dprisk.runtime.new_outputs import NewOutput

    fail_lock_pid_write(monkeypatch)
    with pytest.raises(OSError, match="No space"), NewOutput(tmp_path / "a" / "p.png", "--plot"):
        pass
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["symbolic link", "FIFO"])
@pytest.mark.parametrize("which", [*WRITERS, "new output"])
def test_a_lock_name_that_is_not_a_regular_file_is_refused_untouched(which, kind, tmp_path):
    """``.p.png.lock`` a symbolic link to the user's file: ``prior --plot p.png`` truncated
    that file and wrote its pid into it ("important data" became "18962"), then removed the
    link; ``s.nc.chunks/lock`` likewise for ``sweep --out s.nc``."""
    from dprisk.runtime.new_outputs import NewOutput

    mine = tmp_path / "mine.txt"
    mine.write_bytes(USER)
    out = tmp_path / "out"
    lock = tmp_path / ".out.lock"
    if kind == "symbolic link":
        lock.symlink_to(mine.name)
    else:
        os.mkfifo(lock)
    target = (NewOutput(out, "--plot") if which == "new output" else WRITERS[which](out)[0])
    with pytest.raises(OutputError, match=r"lock file .* is not a regular file"), target:
        pass
    assert mine.read_bytes() == USER
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.lock", "mine.txt"]


def test_a_fifo_at_a_legacy_reports_page_is_refused_not_read(tmp_path):
    """A report written before manifests (its marker lists no files) with a FIFO at
    ``index.html``: replacing it blocked for ever reading that page for the figures it links
    (killed by a 20 s timeout). Now ``check_report_out`` refuses it before any study runs, and
    the writer never opens it: the FIFO is the user's file, where the report puts its page."""
    import threading

    from dprisk.validation.report.output import check_report_out, legacy_files

    out = tmp_path / "out"
    out.mkdir()
    (out / MARKER).write_text('{"written_by": "dprisk reproduce"}\n')  # legacy: no "files"
    os.mkfifo(out / "index.html")
    with pytest.raises(OutputError, match=r"^out .*index\.html.* is not a regular file"):
        check_report_out(out)
    answers = []

    def replace():
        answers.append(legacy_files(out))
        try:
            with ReportTarget(out) as target:
                target.write(lambda tmp: (tmp / "index.html").write_text("page"))
        except OutputError as err:
            answers.append(str(err))

    reader = threading.Thread(target=replace, daemon=True)
    reader.start()
    reader.join(10)  # well above the milliseconds a refusal takes; a blocked open never returns
    assert answers[:1] == [["results.json", "results.nc"]] and len(answers) == 2
    assert "did not write where the new output puts its own (index.html)" in answers[1]
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "index.html"]
