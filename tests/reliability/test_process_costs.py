"""A test process's costs besides its tests (tests/process_costs.py, issue 36).

Run in a pytest of its own on two small modules in a temporary folder: the xdist controller
writes pytest's assertion-rewritten pyc of each test module and conftest.py (also where
``PYTHONDONTWRITEBYTECODE`` stops the workers writing them), a worker reads them (its assert
messages are still the rewritten ones), and every process ends with its objects frozen. A
missing module's ``lazy_loader`` placeholder made from one frame raises what it raised before.
"""

import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from process_costs import modules_in_collection_order, rewrite_once

from dprisk.runtime.import_costs import lazy_loader_reads_one_frame

#: A conftest.py, a module whose failing assert shows a rewritten message (the compared values)
#: and a module in a subfolder.
MODULES = {
    "conftest.py": "",
    "test_b.py": "def test_rewritten():\n    left = 1\n    assert left == 2\n",
    "sub/test_a.py": "def test_plain():\n    assert True\n",
}


#: The environment of the pytest subprocesses: the plugin importable, no bytecode written by
#: Python itself, no installed plugin loaded but those named (0.6 s of CPU less each).
ENV = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
       "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


#: A pytest without xdist, run as ``pytest.main`` in ``python -c`` (so that the process's
#: freeze count is read after it) on ``test_b.py`` and ``test_cycle.py`` (:data:`CYCLE_LEFT`).
PLAIN_SESSION = ("import gc, pytest\n"
                 "pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'process_costs',"
                 " 'test_b.py', 'test_cycle.py'])\n"
                 "print('frozen', gc.get_freeze_count())\n")


@pytest.fixture(scope="module")
def plain_session(tmp_path_factory):
    """One pytest without xdist (:data:`PLAIN_SESSION`) read by three tests: no pyc written,
    the process ends frozen, a cycle left to the end reported (each was a pytest process of
    its own: about 0.5 s of CPU each)."""
    folder = tmp_path_factory.mktemp("plain")
    (folder / "test_b.py").write_text(MODULES["test_b.py"])
    (folder / "test_cycle.py").write_text(CYCLE_LEFT)
    done = subprocess.run([sys.executable, "-c", PLAIN_SESSION], cwd=folder,
                          capture_output=True, text=True, timeout=120, check=False, env=ENV)
    return SimpleNamespace(stdout=done.stdout, stderr=done.stderr, folder=folder)


def _pytest(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p",
                           "process_costs", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False, env=ENV)


def test_the_controller_writes_the_rewritten_pycs_the_workers_read(tmp_path):
    for name, text in MODULES.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    done = _pytest(tmp_path, "-p", "xdist.plugin", "-n", "1", "-q")
    assert done.returncode == 1, done.stdout + done.stderr  # test_rewritten fails
    assert "assert 1 == 2" in done.stdout, done.stdout  # the rewritten assert's message
    tag = f"{sys.implementation.cache_tag}-pytest-{pytest.__version__}"
    for name in MODULES:
        path = tmp_path / name
        assert (path.parent / "__pycache__" / f"{path.stem}.{tag}.pyc").is_file(), name


def test_without_xdist_no_pyc_is_written(plain_session):
    """Without xdist (no controller) nothing is written, as before: PYTHONDONTWRITEBYTECODE;
    the assert's message is still the rewritten one."""
    assert "assert 1 == 2" in plain_session.stdout, plain_session.stdout
    assert not list(plain_session.folder.rglob("*.pyc"))


def test_collection_order_is_pytests(tmp_path):
    """Each folder's conftest.py first, then its entries by name, depth-first (what pytest's
    ``--collect-only`` lists, conftest files aside)."""
    names = ["conftest.py", "test_c.py", "a/conftest.py", "a/test_z.py", "a/b/test_y.py",
             "test_a.py", "helper.py", "z/test_b.py"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("def test_one():\n    pass\n")
    config = pytest.Config.__new__(pytest.Config)  # only what the function reads
    config.__dict__.update(args=["."], rootpath=tmp_path,
                           invocation_params=pytest.Config.InvocationParams(
                               args=(), plugins=None, dir=tmp_path),
                           getini=lambda name: ["test_*.py"])
    order = [str(path.relative_to(tmp_path)) for path in modules_in_collection_order(config)]
    assert order == ["conftest.py", "a/conftest.py", "a/b/test_y.py", "a/test_z.py",
                     "test_a.py", "test_c.py", "z/test_b.py"]
    listed = _pytest(tmp_path, "--collect-only", "-q").stdout.split()
    assert [line.split("::")[0] for line in listed if "::" in line] == \
        [name for name in order if "conftest" not in name]


def test_the_process_ends_with_its_objects_frozen(plain_session):
    frozen = int(plain_session.stdout.split("frozen ")[-1])
    # pytest alone: some 50,000 objects
    assert frozen > 10_000, plain_session.stdout + plain_session.stderr


#: A test that leaves a garbage cycle whose finalizer raises to the session's end (the cyclic
#: collector off).
CYCLE_LEFT = """
import gc

class Cycle:
    def __init__(self):
        self.me = self

    def __del__(self):
        raise RuntimeError("finalizer of a garbage cycle")

def test_leaves_a_cycle():
    gc.disable()
    Cycle()
"""


def test_a_cycle_left_to_the_end_is_still_reported(plain_session):
    """The heap is frozen after pytest's collection at the session's end, not before it: what
    a garbage cycle's finalizer raises is reported as before."""
    done = plain_session
    assert "1 failed, 1 passed" in done.stdout, done.stdout + done.stderr  # test_b fails
    assert "PytestUnraisableExceptionWarning" in done.stderr, done.stderr
    assert "RuntimeError: finalizer of a garbage cycle" in done.stderr, done.stderr


def test_a_stopped_rewriting_writes_nothing_more(tmp_path, pytestconfig, monkeypatch):
    """The controller's thread stops at the session's end (an interrupted session waits for
    one module at most); not stopped, it writes each module's pyc once."""
    if pytestconfig.getoption("assertmode") != "rewrite":
        pytest.skip("run with --assert=plain: pytest keeps no rewriting state")
    monkeypatch.setenv("DPRISK_CACHE_DIR", str(tmp_path / "cache"))
    paths = []
    for name in ("test_p.py", "test_q.py"):
        paths.append(tmp_path / name)
        paths[-1].write_text("def test_one():\n    assert 1 + 1 == 2\n")
    stop = threading.Event()
    stop.set()
    assert rewrite_once(pytestconfig, paths, stop) == 0
    assert not (tmp_path / "__pycache__").exists()
    assert rewrite_once(pytestconfig, paths, threading.Event()) == 2
    assert rewrite_once(pytestconfig, paths) == 0  # current pycs are read, not written again
    assert len(list((tmp_path / "__pycache__").glob("*.pyc"))) == 2


def test_a_missing_module_placeholder_raises_what_the_whole_stack_one_did():
    import lazy_loader

    lazy_loader_reads_one_frame()  # done by pytest_configure already: not wrapped twice
    one_frame = lazy_loader.load
    assert one_frame.reads_one_frame and not getattr(one_frame.__wrapped__, "reads_one_frame",
                                                     False)
    # both from this one line (a comprehension has no frame of its own since Python 3.12)
    placeholders = [load("dprisk_no_such_module") for load in (one_frame.__wrapped__, one_frame)]
    messages = []
    for placeholder in placeholders:
        assert isinstance(placeholder, lazy_loader.DelayedImportErrorModule)
        with pytest.raises(ModuleNotFoundError) as raised:
            placeholder.anything  # the placeholder raises on first use
        messages.append(str(raised.value))
    assert messages[0] == messages[1]
    assert "No module named 'dprisk_no_such_module'" in messages[0]
    assert f"File {__file__}, line" in messages[0] and "placeholders = [load(" in messages[0]
    assert one_frame("numpy") is sys.modules["numpy"]  # a module that is there: as before


def test_a_module_rewritten_before_is_linked_from_the_kept_copy(tmp_path, pytestconfig,
                                                                monkeypatch):
    """A second checkout of the same test module (another path) gets the first one's pyc, a
    link to the kept copy, which pytest reads (its file name set to the module's own); a kept
    copy that pytest does not read (here: cut short) is rewritten and replaced."""
    from _pytest.assertion import rewrite

    if pytestconfig.getoption("assertmode") != "rewrite":
        pytest.skip("run with --assert=plain: pytest keeps no rewriting state")
    monkeypatch.setenv("DPRISK_CACHE_DIR", str(tmp_path / "cache"))
    source = "def test_one():\n    assert 1 + 1 == 2\n"
    first, second, third = (tmp_path / name / "test_p.py" for name in ("a", "b", "c"))
    for path in (first, second, third):
        path.parent.mkdir()
        path.write_text(source)
    assert rewrite_once(pytestconfig, [first]) == 1
    (kept,) = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert rewrite_once(pytestconfig, [second]) == 1

    def pyc(path):
        return rewrite.get_cache_dir(path) / (path.name[:-3] + rewrite.PYC_TAIL)

    assert pyc(second).stat().st_ino == kept.stat().st_ino == pyc(first).stat().st_ino
    assert rewrite._read_pyc(second, pyc(second)).co_filename == str(second)
    kept.unlink()
    kept.write_bytes(pyc(first).read_bytes()[:20])  # cut short
    assert rewrite_once(pytestconfig, [third]) == 1
    assert rewrite._read_pyc(third, pyc(third)).co_filename == str(third)
    assert kept.stat().st_ino == pyc(third).stat().st_ino  # replaced by the new rewriting
    assert rewrite_once(pytestconfig, [first, second, third]) == 0
    assert sorted(tmp_path.rglob("*.partial")) == []  # no temporary name left behind
