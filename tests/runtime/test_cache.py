"""Nothing is written into the source tree at run time: compiled kernels go to the user's cache."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import dprisk.inference.kernels as kernels_package

KERNEL_DIR = Path(kernels_package.__file__).resolve().parent


def _numba_files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.suffix in {".nbi", ".nbc"}}


#: What the new process runs: a command line whose answer is computed by a compiled kernel
#: (about 6 s of CPU: numba compiles the two-level mass kernel; marked slow in
#: ``tests/conftest.py``). The kernels' loader that every compiled path goes through
#: (``fused_kernels.compiled_kernels``, which points numba's cache) with the smallest kernel
#: called (about 2.5 s: importing numba and compiling ``expit``) is the default run's case:
#: :func:`test_a_kernel_is_cached_by_its_source_and_read_again_from_another_path` runs it
#: (:data:`LOADER_RUN`) and checks the same.
KERNEL_RUNS = {
    "cli marginal": ["-m", "dprisk.cli", "marginal", "--rho1", "0.1", "--rho2", "0.2", "--d",
                     "3", "--x2", "5", "--json"],
}
LOADER_RUN = ("from dprisk.inference.kernels.fused_kernels import compiled_kernels\n"
              "assert compiled_kernels().expit(0.0) == 0.5\n")


@pytest.mark.parametrize("run", list(KERNEL_RUNS.values()), ids=list(KERNEL_RUNS))
def test_compiled_kernels_are_cached_under_the_cache_dir_not_the_source_tree(run, tmp_path):
    before = _numba_files(KERNEL_DIR)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(DPRISK_CACHE_DIR=str(tmp_path), DPRISK_KERNELS="compiled")
    subprocess.run([sys.executable, *run], env=env, check=True, capture_output=True,
                   timeout=300)
    assert _numba_files(tmp_path / "numba"), "no compiled kernel cached under DPRISK_CACHE_DIR"
    assert _numba_files(KERNEL_DIR) == before, "kernel cache files written into the source tree"


def test_a_kernel_is_cached_by_its_source_and_read_again_from_another_path(tmp_path):
    """The loader run from the source tree (``./dprisk``), then from elsewhere (the editable
    install's link tree, another path to the same source): the first caches its kernel under
    ``DPRISK_CACHE_DIR``, nothing in the source tree, in the folder named after the source's
    SHA-256 (``dprisk.runtime.numba_locator``), not after its path; the second process loads
    that machine code (no cache file written or rewritten)."""
    import hashlib

    from dprisk.inference.kernels import fused_kernels_jit

    before = _numba_files(KERNEL_DIR)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(DPRISK_CACHE_DIR=str(tmp_path), DPRISK_KERNELS="compiled")
    code = LOADER_RUN + "print(compiled_kernels().__file__)\n"
    root = Path(__file__).resolve().parents[2]
    paths, written = [], []
    for where in (root, tmp_path):
        done = subprocess.run([sys.executable, "-c", code], cwd=where, env=env, check=True,
                              capture_output=True, text=True, timeout=300)
        paths.append(done.stdout.strip())
        written.append({p: p.stat().st_mtime_ns for p in _numba_files(tmp_path / "numba")})
    assert paths[0] != paths[1] and Path(paths[0]).resolve() == Path(paths[1]).resolve()
    digest = hashlib.sha256(Path(fused_kernels_jit.__file__).read_bytes()).hexdigest()
    assert {p.parent.name for p in written[0]} == {f"fused_kernels_jit-{digest}"}
    assert written[1] == written[0]  # read, not compiled again
    assert _numba_files(KERNEL_DIR) == before, "kernel cache files written into the source tree"


def test_only_dprisks_own_sources_are_cached_by_their_contents(tmp_path, monkeypatch):
    from numba.core import caching, config

    from dprisk.inference.kernels import fused_kernels_jit
    from dprisk.runtime.numba_locator import ContentKeyedCacheLocator, use_content_keyed_locator

    locators = caching.CacheImpl._locator_classes
    assert use_content_keyed_locator() and locators.count(ContentKeyedCacheLocator) == 1
    assert locators.index(ContentKeyedCacheLocator) < locators.index(
        caching.UserProvidedCacheLocator)  # asked before numba's own
    kernel = fused_kernels_jit.expit.py_func
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path))
    here = ContentKeyedCacheLocator.from_function(kernel, fused_kernels_jit.__file__)
    assert Path(here.get_cache_path()).parent == tmp_path
    elsewhere = tmp_path / "copy" / "fused_kernels_jit.py"  # the same bytes, not dprisk's file
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(Path(fused_kernels_jit.__file__).read_bytes())
    assert ContentKeyedCacheLocator.from_function(kernel, str(elsewhere)) is None
    monkeypatch.setattr(config, "CACHE_DIR", "")
    assert ContentKeyedCacheLocator.from_function(kernel, fused_kernels_jit.__file__) is None


def test_a_numba_cache_dir_the_user_set_is_kept(tmp_path):
    code = ("import os\nfrom dprisk.runtime.cache import use_numba_cache\n"
            "print(use_numba_cache())\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["DPRISK_CACHE_DIR"] = str(tmp_path)
    for extra, expected in (({}, tmp_path / "numba"),
                            ({"NUMBA_CACHE_DIR": str(tmp_path / "mine")}, tmp_path / "mine")):
        done = subprocess.run([sys.executable, "-c", code], env={**env, **extra}, check=True,
                              capture_output=True, text=True)
        assert Path(done.stdout.strip()) == expected
