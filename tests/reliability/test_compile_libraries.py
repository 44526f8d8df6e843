"""tools/compile_libraries.py: ``make setup``'s byte-compilation of the libraries (issue 36).

It must write the ``.pyc`` files ``compileall`` wrote (same bytes, the same files left out but
for the skip list) and leave out exactly the libraries' test folders and the listed modules and
subtrees, whatever folder the environment lies in.
"""

from __future__ import annotations

import compileall
import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "compile_libraries.py"


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
    rewritten = sorted(Path(path).relative_to(tmp_path).as_posix()
                       for path in tool.pytest_modules(tmp_path))
    assert rewritten == ["conftest.py", "reliability/conftest.py", "reliability/test_x.py"]


def _pytest_pyc(module: Path) -> Path:
    (pyc,) = (module.parent / "__pycache__").glob(f"{module.stem}.*-pytest-*.pyc")
    return pyc


def test_test_modules_get_the_pyc_pytest_reads_and_would_write(tmp_path):
    """pytest imports the test module from the ``.pyc`` the tool wrote (it rewrites and writes
    one itself only when it finds none valid: the file is left untouched by a run that may
    write bytecode), its asserts rewritten (the failure shows the compared values), and
    without it pytest writes the same code (``marshal`` may share objects differently, so the
    code objects are compared, with the header: magic number, flags and source hash)."""
    import marshal
    import os
    import subprocess

    tool = _load()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "conftest.py").write_text("import pytest\n\n@pytest.fixture\ndef two():\n"
                                      "    return 2\n")
    module = tree / "test_mod.py"
    module.write_text("def test_fails(two):\n    one = 1\n    assert one == two\n")
    assert tool.compile_files([], processes=2, tests=tool.pytest_modules(tree)) == 0
    ours = {path: (_pytest_pyc(path).read_bytes(), _pytest_pyc(path).stat().st_mtime_ns)
            for path in (module, tree / "conftest.py")}
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    (tree / "pytest.ini").write_text("[pytest]\n")  # its root, nothing of the repository's
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(module)]

    def run() -> str:
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 1, done.stdout + done.stderr  # the one test fails
        return done.stdout

    assert "assert 1 == 2" in run()  # rewritten: the values are shown
    for path, (payload, mtime) in ours.items():
        assert _pytest_pyc(path).stat().st_mtime_ns == mtime, path  # read, not rewritten
        _pytest_pyc(path).unlink()
    assert "assert 1 == 2" in run()
    for path, (payload, _) in ours.items():
        theirs = _pytest_pyc(path).read_bytes()  # written by pytest itself this time
        assert theirs[:16] == payload[:16]
        assert marshal.loads(theirs[16:]) == marshal.loads(payload[16:])


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
    # pkg/tests/test_pkg gets pytest's .pyc, its helper pkg/testing/helpers a plain one
    assert len(compiled) == 9 + 10 + 1
    assert [name for name in compiled if "-pytest-" in name] == [
        f"build/pkg/tests/test_pkg.{sys.implementation.cache_tag}-pytest-{pytest.__version__}.pyc"]
    assert tool.main([]) == 2
    assert tool.main(["--everything"]) == 2  # a flag, no folder: the usage, not a traceback
