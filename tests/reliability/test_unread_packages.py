"""benchmarks/unread_packages.py: the subtrees whose byte code no run read (tools/compile_skip.txt
is measured with it, issue 36). A fake site-packages with access times set by
hand: a .pyc counts as read when its access time is after its modification time."""

import os
from pathlib import Path

from benchmark_scripts import load_benchmark


def _pyc(site: Path, module: str, nbytes: int, read: bool) -> None:
    *folders, name = module.split("/")
    cache = site.joinpath(*folders, "__pycache__")
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{name}.cpython-312.pyc"
    path.write_bytes(b"x" * nbytes)
    os.utime(path, (1_000_000 + (10 if read else 0), 1_000_000))


def test_unread_subtrees_are_the_largest_unread_and_a_read_anywhere_counts(tmp_path, capsys):
    unread_packages = load_benchmark("unread_packages")
    first, second = tmp_path / "a", tmp_path / "b"
    for site in (first, second):
        _pyc(site, "pkg/__init__", 10, read=True)
        _pyc(site, "pkg/used/mod", 20, read=True)
        _pyc(site, "pkg/unused/mod", 300_000, read=False)
        _pyc(site, "pkg/unused/deep/mod", 5, read=False)
        _pyc(site, "gone/mod", 50, read=False)
        _pyc(site, "single", 7, read=False)
    _pyc(second, "other/mod", 1, read=False)
    _pyc(first, "other/mod", 1, read=False)
    _pyc(second, "only_b_read/mod", 3, read=True)  # read in the second environment only
    _pyc(first, "only_b_read/mod", 3, read=False)

    unread, total = unread_packages.unread_subtrees([first, second])
    assert total == 10 + 20 + 300_000 + 5 + 50 + 7 + 1 + 3
    # pkg/unused/deep lies inside pkg/unused: only the outer subtree is listed
    assert unread == [("pkg/unused", 300_005), ("gone", 50), ("single", 7), ("other", 1)]

    # --list: every unread subtree and module at any depth, none inside another
    _pyc(first, "pkg/used/idle", 4, read=False)
    _pyc(second, "pkg/used/idle", 4, read=False)
    unread_packages.main(["--list", str(first), str(second)])
    assert capsys.readouterr().out.split() == ["gone", "other", "pkg/unused", "pkg/used/idle",
                                               "single"]
