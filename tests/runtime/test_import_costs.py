"""dprisk.runtime.import_costs: the collector paused for a block of imports, and restored."""

import gc

import pytest

from dprisk.runtime.import_costs import collector_paused


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
