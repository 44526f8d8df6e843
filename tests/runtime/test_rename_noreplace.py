"""Exclusive publication (dprisk/runtime/output_files.py ``rename_noreplace``, new_outputs.py
``NewOutput``/``publish``): never onto something that is there, with ``renameat2`` and without.

Table: {renameat2, the fallback (``os.link`` for a file; exclusive ``os.mkdir`` then a rename
onto that empty directory for a directory)} x {a file, a directory moved} x {nothing there,
a file, an empty directory, a non-empty directory, a dangling symbolic link}. Moved when
nothing is there; otherwise ``FileExistsError`` with both sides exactly as they were.
Then ``publish`` of two outputs, the second refused: the first is removed again.
"""

from __future__ import annotations

import os

import pytest

from dprisk.runtime import output_files
from dprisk.runtime.new_outputs import NewOutput, publish
from dprisk.runtime.output_files import OutputAppeared, rename_noreplace

USER = b"the user's\n"


def _state(path):
    """What is at ``path``: kind and contents (files below a directory, by name)."""
    if os.path.islink(path):
        return ("link", os.readlink(path))
    if path.is_dir():
        return ("dir", sorted((p.name, p.read_bytes()) for p in path.iterdir()))
    if path.exists():
        return ("file", path.read_bytes())
    return None


def _occupy(target, what):
    if what == "file":
        target.write_bytes(USER)
    elif what == "empty dir":
        target.mkdir()
    elif what == "full dir":
        target.mkdir()
        (target / "notes.txt").write_bytes(USER)
    elif what == "dangling link":
        target.symlink_to(target.with_name("nowhere"))


@pytest.mark.parametrize("fallback", [False, True], ids=["renameat2", "fallback"])
@pytest.mark.parametrize("moved", ["file", "dir"])
@pytest.mark.parametrize("there", [None, "file", "empty dir", "full dir", "dangling link"])
def test_rename_noreplace_never_replaces(fallback, moved, there, tmp_path, monkeypatch):
    if fallback:
        monkeypatch.setattr(output_files, "_renameat2", lambda *args: None)
    src, dst = tmp_path / "src", tmp_path / "dst"
    if moved == "file":
        src.write_bytes(b"new")
    else:
        src.mkdir()
        (src / "a.png").write_bytes(b"new")
    _occupy(dst, there)
    before_src, before_dst = _state(src), _state(dst)
    if there is None:
        rename_noreplace(src, dst)
        assert _state(dst) == before_src and not os.path.lexists(src)
    else:
        with pytest.raises(FileExistsError):
            rename_noreplace(src, dst)
        assert _state(src) == before_src and _state(dst) == before_dst
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dst"] + (["src"] if there else [])


def test_publish_is_all_or_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr("dprisk.runtime.writers._COMMITTED", [])
    draws, plots = NewOutput(tmp_path / "d.nc", "--save-draws"), NewOutput(
        tmp_path / "p", "--plots", directory=True)
    with draws, plots:
        draws_tmp, plots_tmp = draws.temporary(), plots.temporary()
        draws_tmp.write_bytes(b"draws")
        (plots_tmp / "trace.png").write_bytes(b"trace")
        (tmp_path / "p").mkdir()  # the user's directory appears, with a file of theirs
        (tmp_path / "p" / "notes.txt").write_bytes(USER)
        with pytest.raises(OutputAppeared, match=r"^--plots .* appeared"):
            publish((draws, draws_tmp), (plots, plots_tmp))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p"]  # d.nc removed again
    assert [p.name for p in (tmp_path / "p").iterdir()] == ["notes.txt"]
