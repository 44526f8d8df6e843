"""tools/compile_libraries.py: ``make setup``'s byte-compilation of the libraries (issue 36).

It must write the ``.pyc`` files ``compileall`` wrote (same bytes, the same files left out but
for the skip list) and leave out exactly the libraries' test folders and the listed modules and
subtrees, whatever folder the environment lies in.
"""

from __future__ import annotations

import compileall
import importlib.util
import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "compile_libraries.py"


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """dprisk's cache directory of the test's own: nothing kept in or read from the user's."""
    monkeypatch.setenv("DPRISK_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _load():
    spec = importlib.util.spec_from_file_location("compile_libraries_under_test", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the forked shares find their function by this name
    spec.loader.exec_module(module)
    return module


def _tree(root: Path) -> None:
    for module in ("pkg/__init__", "pkg/used", "pkg/skipped", "pkg/sub/__init__",
                   "pkg/sub/deep", "pkg/tests/test_pkg", "pkg/testing/helpers",
                   "gone/__init__", "gone/inner", "single", "attest/kept"):
        path = root / f"{module}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"NAME = {module!r}\ndef f(x):\n    return [x * i for i in range(3)]\n")
    (root / "pkg" / "data.txt").write_text("not python")


def test_leaves_out_test_folders_and_the_listed_modules_and_subtrees_only(tmp_path):
    tool = _load()
    root = tmp_path / "test" / "site-packages"  # a /test/ above the root excludes nothing
    _tree(root)
    skip = frozenset({"pkg/skipped", "gone", "pkg/sub/deep"})
    found = sorted(Path(path).relative_to(root).as_posix()
                   for path in tool.files_to_compile(root, skip))
    assert found == ["attest/kept.py", "pkg/__init__.py", "pkg/sub/__init__.py", "pkg/used.py",
                     "single.py"]
    assert tool.is_skipped("gone/inner", skip) and not tool.is_skipped("gonez/inner", skip)


def test_numpy_and_xarray_testing_packages_are_compiled_others_left_out(tmp_path):
    tool = _load()
    for module in ("numpy/testing/__init__", "numpy/testing/_private/utils",
                   "numpy/_core/tests/test_a", "xarray/testing/assertions",
                   "pandas/testing", "scipy/_lib/testing/helpers", "numpy/testing/tests/t"):
        path = tmp_path / f"{module}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("X = 1\n")
    found = sorted(Path(path).relative_to(tmp_path).as_posix()
                   for path in tool.files_to_compile(tmp_path))
    assert found == ["numpy/testing/__init__.py", "numpy/testing/_private/utils.py",
                     "pandas/testing.py", "xarray/testing/assertions.py"]


def test_source_trees_are_compiled_whole_but_for_pytests_own_modules(tmp_path):
    tool = _load()
    for module in ("reliability/fork_runner", "reliability/test_x", "conftest",
                   "reliability/conftest", "testing/helpers", "tests/helpers"):
        path = tmp_path / f"{module}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("X = 1\n")
    found = sorted(Path(path).relative_to(tmp_path).as_posix()
                   for path in tool.files_to_compile(tmp_path, library=False))
    assert found == ["reliability/fork_runner.py", "testing/helpers.py", "tests/helpers.py"]


def test_skip_list_lines_without_comments_or_blanks(tmp_path):
    tool = _load()
    listed = tmp_path / "skip.txt"
    listed.write_text("# measured 2026-11-29\nbleach\n\npygments/lexers/matlab  # big\n")
    assert tool.skipped_prefixes(listed) == {"bleach", "pygments/lexers/matlab"}
    assert tool.skipped_prefixes(tmp_path / "absent.txt") == frozenset()
    assert tool.skipped_prefixes() == tool.skipped_prefixes(tool.SKIP_LIST)  # the real list reads


def test_writes_the_pyc_files_compileall_writes(tmp_path):
    tool = _load()
    root = tmp_path / "site"
    _tree(root)
    (root / "broken.py").write_text("def (:\n")  # a library's own syntax error

    def pycs():
        found = {path.relative_to(root).as_posix(): path.read_bytes()
                 for path in sorted(root.rglob("*.pyc"))}
        for path in root.rglob("__pycache__"):
            shutil.rmtree(path)
        return found

    files = tool.files_to_compile(root)
    assert tool.compile_files(files, processes=2) == 1  # the broken file, counted, not raised
    ours = pycs()
    assert compileall.compile_dir(root, quiet=2, rx=tool.TEST_FOLDERS, workers=1) is False
    theirs = pycs()
    assert len(ours) == len(files) - 1  # every file but the broken one
    assert ours == theirs  # same files, same bytes (the source's mtime and size, its path)


def test_main_compiles_the_link_tree_whole_and_says_nothing_when_all_compile(tmp_path, capsys):
    tool = _load()
    site, link_tree = tmp_path / "site", tmp_path / "build"
    _tree(site)
    _tree(link_tree)
    assert tool.main(["--everything", str(site), str(link_tree)]) == 0
    assert capsys.readouterr().err == ""
    compiled = sorted(path.parent.parent.relative_to(tmp_path).as_posix() + "/" + path.name
                      for path in tmp_path.rglob("*.pyc"))
    # 11 modules each, less the two in test folders of the library; the tree's test module
    # pkg/tests/test_pkg is pytest's, its helper pkg/testing/helpers compiled
    assert len(compiled) == 9 + 10
    assert tool.main([]) == 2
    assert tool.main(["--everything"]) == 2  # a flag, no folder: the usage, not a traceback


def _finished_pid() -> int:
    """The process id of a process that has run and ended."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def _pycs(root: Path) -> dict[str, Path]:
    return {path.relative_to(root).as_posix(): path for path in sorted(root.rglob("*.pyc"))}


def _runs(root: Path, module: str) -> str:
    """What ``module``, imported from ``root`` with its ``.pyc`` only read (a ``.pyc`` not
    matching its source would be compiled again, and not written), prints: its functions'
    file name and whether its code came from the ``.pyc``."""
    script = (f"import importlib, sys; m = importlib.import_module({module!r}); "
              "print(m.f.__code__.co_filename, m.f(2), m.__spec__.cached is not None)")
    done = subprocess.run([sys.executable, "-B", "-v", "-c", script], cwd=root,
                          capture_output=True, text=True, check=True)
    assert "bytecode is stale" not in done.stderr and "bad magic" not in done.stderr
    assert f"code object from '{root}" in done.stderr
    return done.stdout.split("\n")[0]


def test_a_kept_compilation_is_linked_into_a_copy_with_the_same_times(tmp_path, own_cache):
    """A second environment whose sources have the same bytes and times (uv links a library's
    files from its cache into every venv) gets hard links to the kept ``.pyc`` files: the
    same bytes as a compilation of its own but for the file name the code was compiled
    under, which the import system sets to the module's own."""
    tool = _load()
    first, second = tmp_path / "first" / "site", tmp_path / "second" / "site"
    _tree(first)
    shutil.copytree(first, second)  # copy2: the same modification times
    assert tool.compile_files(tool.files_to_compile(first), processes=2, keep=True) == 0
    kept = [path for path in own_cache.rglob("*") if path.is_file()]
    assert len(kept) == 9 and all(path.stat().st_nlink == 2 for path in kept)
    assert tool.compile_files(tool.files_to_compile(second), processes=2, keep=True) == 0
    linked = _pycs(second)
    assert all(path.stat().st_nlink == 3 for path in kept)
    assert {path.stat().st_ino for path in linked.values()} == {p.stat().st_ino for p in kept}
    for path in linked.values():
        shutil.rmtree(path.parent, ignore_errors=True)
    compileall.compile_dir(second, quiet=2, rx=tool.TEST_FOLDERS, workers=1)
    own = _pycs(second)
    assert own.keys() == linked.keys()
    for name, path in own.items():
        mine, kept_bytes = path.read_bytes(), (first / name).read_bytes()
        assert mine[:16] == kept_bytes[:16]  # the same header: this source's time and size
        assert marshal.loads(mine[16:]) == marshal.loads(kept_bytes[16:])  # file names aside
    tool.compile_files(tool.files_to_compile(second), processes=1, keep=True)  # links again
    assert _runs(second, "pkg.used") == f"{second / 'pkg' / 'used.py'} [0, 2, 4] True"


def test_a_kept_compilation_is_copied_under_the_new_sources_header(tmp_path, own_cache):
    """A source with the same bytes but another time (the package's own trees, checked out
    anew) gets a copy of the kept code under its own header, valid for the import system."""
    tool = _load()
    first, second = tmp_path / "first", tmp_path / "second"
    _tree(first)
    tool.compile_files(tool.files_to_compile(first), processes=1, keep=True)
    _tree(second)
    for path in second.rglob("*.py"):
        os.utime(path, (1_700_000_000, 1_700_000_000))
    assert tool.compile_files(tool.files_to_compile(second), processes=1, keep=True) == 0
    for name, path in _pycs(second).items():
        assert path.stat().st_nlink == 1
        source = second / name.replace("__pycache__/", "").replace(".cpython-312.pyc", ".py")
        assert path.read_bytes()[:16] == tool.timestamp_header(str(source))
        assert path.read_bytes()[16:] == (first / name).read_bytes()[16:]
    assert _runs(second, "pkg.used") == f"{second / 'pkg' / 'used.py'} [0, 2, 4] True"


def test_a_kept_file_of_another_interpreter_is_compiled_again(tmp_path, own_cache):
    """A kept file that is not this interpreter's timestamp-checked ``.pyc`` is not used; the
    new compilation replaces it."""
    tool = _load()
    root = tmp_path / "site"
    _tree(root)
    source = root / "single.py"
    kept = tool._kept_path(source.read_bytes())
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"\0\0\0\0" + tool.timestamp_header(str(source))[4:] + b"not code")
    assert tool.compile_files([str(source)], processes=1, keep=True) == 0
    assert _runs(root, "single") == f"{source} [0, 2, 4] True"
    (pyc,) = _pycs(root).values()
    assert kept.read_bytes() == pyc.read_bytes() and kept.stat().st_ino == pyc.stat().st_ino


def test_without_keep_nothing_is_kept_and_an_unwritable_cache_still_compiles(tmp_path,
                                                                             own_cache):
    tool = _load()
    root = tmp_path / "site"
    _tree(root)
    assert tool.main(["--no-keep", str(root)]) == 0
    assert not own_cache.exists() and len(_pycs(root)) == 9
    own_cache.write_text("a file where the cache directory would be")
    for path in _pycs(root).values():
        path.unlink()
    assert tool.main([str(root)]) == 0
    assert len(_pycs(root)) == 9


def test_kept_compilations_unused_for_their_days_are_removed(tmp_path, own_cache):
    tool = _load()
    root = tmp_path / "site"
    _tree(root)
    assert tool.main([str(root)]) == 0
    kept = sorted(path for path in own_cache.rglob("*") if path.is_file())
    old = kept[0]
    days_ago = os.stat(old).st_mtime - (tool.KEPT_DAYS + 1) * 86400
    os.utime(old, (days_ago, days_ago))
    mine, ended = old.parent / f"y.{os.getpid()}.partial", old.parent / "z.notapid.partial"
    (old.parent / f"x.{os.getpid()}.partial").write_bytes(b"")
    mine.write_bytes(b"")  # a running set-up's
    (old.parent / f"w.{_finished_pid()}.partial").write_bytes(b"")  # an ended one's
    ended.write_bytes(b"")  # no process's
    hour_ago = os.stat(mine).st_mtime - tool.PARTIAL_SECONDS - 1
    os.utime(old.parent / f"x.{os.getpid()}.partial", (hour_ago, hour_ago))
    assert tool.prune_kept() == 4
    mine.unlink()
    assert sorted(path for path in own_cache.rglob("*") if path.is_file()) == kept[1:]


def test_a_set_up_run_again_leaves_no_partial_files(tmp_path, own_cache):
    """Set up twice in one tree (``make setup`` runs again after every install): the second run
    finds each ``.pyc`` already a link to its kept compilation and leaves it as it is. It used
    to leave a ``.partial`` link per ``.pyc`` behind, every run (a rename between two links to
    one file does nothing, POSIX ``rename``): 14,946 of them in one venv here."""
    tool = _load()
    root = tmp_path / "site"
    _tree(root)
    shutil.copytree(root, tmp_path / "again")  # copy2: the same times, so the pycs are linked
    for _ in range(2):  # the second round's runs find every .pyc linked (a third: the same)
        assert tool.main([str(root)]) == 0 and tool.main([str(tmp_path / "again")]) == 0
    assert sorted(path.name for path in tmp_path.rglob("*.partial")) == []
    kept = [path for path in own_cache.rglob("*") if path.is_file()]
    assert len(kept) == 9 and all(path.stat().st_nlink == 3 for path in kept)


def test_stale_partial_files_are_removed_from_the_trees(tmp_path, own_cache):
    """What earlier set-ups left in the trees' ``__pycache__`` folders goes: a ``.partial``
    whose writer has ended, or an hour old. A younger one of a running process (another
    set-up's, between its link and its rename) and anything outside them stays. The age alone
    cannot tell: a leftover link to a kept compilation has the time its inode was last used."""
    tool = _load()
    root = tmp_path / "site"
    _tree(root)
    assert tool.main([str(root)]) == 0
    cache = root / "pkg" / "__pycache__"
    ended = cache / f"used.cpython-312.pyc.{_finished_pid()}.partial"
    running = cache / f"x.cpython-312.pyc.{os.getpid()}.partial"
    outside = root / "pkg" / f"data.{_finished_pid()}.partial"
    for path in (ended, running, outside):
        path.write_bytes(b"")
    assert tool.remove_stale_partials(root) == 1
    assert not ended.exists() and running.exists() and outside.exists()
    hour_ago = os.stat(running).st_mtime - tool.PARTIAL_SECONDS - 1
    os.utime(running, (hour_ago, hour_ago))
    assert tool.main([str(root)]) == 0
    assert not running.exists() and outside.exists()


def test_a_cache_on_another_file_system_is_copied_from(tmp_path, own_cache, monkeypatch):
    """Where no hard link can be made (the cache on another file system), the kept
    compilations are copied, both ways: kept after the first compilation, taken by the next."""
    tool = _load()
    first, second = tmp_path / "first", tmp_path / "second"
    _tree(first)
    shutil.copytree(first, second)

    def cross_device(source, target):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross_device)
    assert tool.compile_files(tool.files_to_compile(first), processes=1, keep=True) == 0
    kept = [path for path in own_cache.rglob("*") if path.is_file()]
    assert len(kept) == 9 and all(path.stat().st_nlink == 1 for path in kept)
    monkeypatch.setattr(compileall, "compile_file", lambda *a, **k: pytest.fail("compiled"))
    assert tool.compile_files(tool.files_to_compile(second), processes=1, keep=True) == 0
    assert {name: path.read_bytes() for name, path in _pycs(second).items()} == {
        name: path.read_bytes() for name, path in _pycs(first).items()}


def test_a_failed_whole_write_leaves_no_partial_file(tmp_path, monkeypatch):
    """``write_whole`` failing mid-write (ENOSPC: the cache's disk full) left
    ``NAME.PID.partial`` beside ``NAME``; its callers ignore the error, so it stayed."""
    import contextlib
    import errno

    sys.path.insert(0, str(TOOL.parent))
    try:
        import cache_root
    finally:
        sys.path.remove(str(TOOL.parent))

    @contextlib.contextmanager
    def full_disk(path, mode):  # the file is created, then its write fails
        with open(path, mode) as handle:
            handle.write(b"half")

            class Full:
                def write(self, data):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

            yield Full()

    target = tmp_path / "kept.pyc"
    target.write_bytes(b"earlier")
    monkeypatch.setattr(cache_root, "open", full_disk, raising=False)
    with pytest.raises(OSError, match="No space"):
        cache_root.write_whole(target, b"new")
    assert target.read_bytes() == b"earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.pyc"]
