"""dprisk.runtime.collector: the collector paused for a block and restored; resumed in a fork."""

import gc
import subprocess
import sys

import pytest

from dprisk.runtime.collector import collector_paused


@pytest.fixture
def collector_state():
    """The collector's state before the test, put back afterwards."""
    enabled = gc.isenabled()
    yield
    (gc.enable if enabled else gc.disable)()


def test_paused_within_the_block_and_running_again_after(collector_state):
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_running_again_after_an_error_in_the_block(collector_state):
    gc.enable()
    with pytest.raises(ImportError), collector_paused():
        raise ImportError("no such module")
    assert gc.isenabled()


def test_a_collector_paused_before_stays_paused(collector_state):
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


#: Run in a new interpreter: a fork server's first import, then a worker's start.
SERVER_THEN_WORKER = """
import gc, lazy_loader
import dprisk.runtime.fork_server_start
print(gc.isenabled(), lazy_loader.load.reads_one_frame)
from dprisk.runtime.collector import resume_collector_in_fork
resume_collector_in_fork((12_345, 6, 7))
print(gc.isenabled(), gc.get_threshold(), gc.get_freeze_count() > 0)
"""


def test_a_server_imports_with_its_collector_paused_and_a_worker_runs_it_again():
    """The server's collector is off for its imports (and ArviZ's placeholders read one frame);
    a worker it forks freezes what it inherited and collects again, at the given thresholds."""
    done = subprocess.run([sys.executable, "-c", SERVER_THEN_WORKER], capture_output=True,
                          text=True, check=True)
    assert done.stdout.splitlines() == ["False True", "True (12345, 6, 7) True"]
