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
