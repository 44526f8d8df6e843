"""The per-test CPU records (tests/cpu_records.py) that ``make bench`` sums per directory.

A module's helper process reaped when the module's fixtures end is its module's
``<module teardown>`` record, not its last test's: run in a pytest of its own on two small
modules, one whose module fixture's child burns CPU only at its teardown. A session-scoped
fixture's helper (a fork server shared by several modules) is ``<session fixture NAME>``.
"""

import json
import subprocess
import sys
from pathlib import Path

#: CPU the helper burns at its teardown; the test that ran before it does next to nothing
#: (measured 1 Dec: the tests and the other teardowns 0.00005-0.004 s of CPU each, the helper's
#: records 0.02 s above its burn: far from the BURN_S / 2 they are held to; 0.4 s before).
BURN_S = 0.1

#: The helper: waits for its stdin to close, then burns BURN_S seconds of CPU.
CHILD = f"""import sys, time
sys.stdin.read()
end = time.process_time() + {BURN_S}
while time.process_time() < end:
    pass
"""

FIXTURE_MODULE = """
import subprocess, sys
import pytest

@pytest.fixture(scope="module")
def helper():
    child = subprocess.Popen([sys.executable, "child.py"], stdin=subprocess.PIPE)
    yield child
    child.stdin.close()
    child.wait()

def test_first(helper):
    assert helper.poll() is None

def test_last(helper):
    assert helper.poll() is None
"""


def _run(tmp_path, records: Path) -> subprocess.CompletedProcess:
    """Run ``test_a.py`` and ``test_b.py`` of ``tmp_path`` with the records on, in ``records``."""
    plugin_dir = Path(__file__).resolve().parents[1]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "cpu_records",
         "-p", "no:xdist", "-p", "no:randomly", "test_a.py", "test_b.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(plugin_dir),
             "DPRISK_TEST_CPU_DIR": str(records),
             # the installed plugins' entry points not loaded: 0.6 s of CPU less
             "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})


def _records(tmp_path) -> dict[str, float]:
    """Run ``test_a.py`` and ``test_b.py`` of ``tmp_path`` with the records on; their CPU."""
    records = tmp_path / "records"
    records.mkdir()
    done = _run(tmp_path, records)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in (records / "cpu-main.jsonl").read_text().splitlines()]
    return {row["nodeid"]: row["cpu_s"] for row in rows}


def test_a_module_fixtures_child_is_its_module_teardown_not_its_last_test(tmp_path):
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "test_a.py").write_text(FIXTURE_MODULE)
    (tmp_path / "test_b.py").write_text("def test_only():\n    assert True\n")
    cpu = _records(tmp_path)
    assert list(cpu) == ["test_a.py::test_first", "test_a.py::test_last",
                         "test_a.py::<module teardown>", "test_b.py::test_only",
                         "<module teardown and session teardown>"]
    # the child's burn (BURN_S of CPU, plus its interpreter's start) is the teardown's; the
    # last test's own share is far below it (it only polls)
    assert cpu["test_a.py::<module teardown>"] >= BURN_S
    assert cpu["test_a.py::test_last"] < BURN_S / 2


def test_a_session_fixtures_child_is_its_own_record_at_the_end(tmp_path):
    """The fixture's child, reaped at the session's end, is ``<session fixture helper>``; the
    last module's own teardown and the last test stay below it."""
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "conftest.py").write_text(
        FIXTURE_MODULE.split("def test_first")[0].replace('scope="module"', 'scope="session"'))
    (tmp_path / "test_a.py").write_text("def test_first(helper):\n    assert True\n")
    (tmp_path / "test_b.py").write_text("def test_only(helper):\n    assert True\n")
    cpu = _records(tmp_path)
    assert list(cpu) == ["test_a.py::test_first", "test_a.py::<module teardown>",
                         "test_b.py::test_only", "<session fixture helper>",
                         "<module teardown and session teardown>"]
    assert cpu["<session fixture helper>"] >= BURN_S
    assert cpu["<module teardown and session teardown>"] < BURN_S / 2
    assert cpu["test_b.py::test_only"] < BURN_S / 2


def test_a_records_folder_that_does_not_exist_is_a_usage_error(tmp_path):
    """Not an internal error after the first test, whose summary read like a passing run."""
    (tmp_path / "test_a.py").write_text("def test_one():\n    assert True\n")
    (tmp_path / "test_b.py").write_text("def test_two():\n    assert True\n")
    done = _run(tmp_path, tmp_path / "missing")
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert "DPRISK_TEST_CPU_DIR must name an existing folder" in done.stderr
    assert "passed" not in done.stdout
