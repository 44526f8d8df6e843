"""``dprisk budget`` findings of issue 32: the two-level search sized up front, the worst-case
crossing below any scan start, refusals naming the option as typed.

Each test failed on the code before the fix (stated per test).
"""

from __future__ import annotations

import time

import pytest
from cli_helpers import assert_refused, run_cli  # noqa: F401 (used below)

from dprisk.inference.privacy.budget_levels import census_rho_for_target, rho2_for_target
from dprisk.runtime.memory_limit import MemoryLimitError
from dprisk.runtime.work_limit import LIMIT_ENV, WorkLimitError

TWO_LEVEL = ["budget", "--measure", "marginal-posterior", "--target", "0.9", "--d", "3",
             "--x2", "5"]


@pytest.fixture
def default_limits(monkeypatch):
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    monkeypatch.delenv("DPRISK_MEMORY_LIMIT", raising=False)


def test_two_level_search_sized_before_it_runs(default_limits):
    """rho1 = 1e-6: the scan sums 2.3e8 releases per prior (hours at the default limit).

    Before: no check on the marginal measures' path (minutes of work before any answer).
    The refusal comes from the estimate alone (well under a second; bound 5 s of wall time,
    generous for a shared machine).
    """
    start = time.perf_counter()
    with pytest.raises(WorkLimitError, match=r"^rho1, d: the two-level search's scan of 151 rho"):
        rho2_for_target(0.9, rho1=1e-6, x2=5, d=3, measure="marginal-posterior")
    assert time.perf_counter() - start < 5.0


def test_census_search_sized_by_d(default_limits):
    """--census with d = 1e5: the first grid needs 57 GiB; before, named 'rho1, rho2'."""
    with pytest.raises(MemoryLimitError, match=r"^d: the release grid"):
        census_rho_for_target("p-correct", 0.9, x2=5, d=100_000)


@pytest.mark.parametrize(("argv", "option"), [
    ([*TWO_LEVEL, "--rho1", "1e-6"], "--rho1, --d: the two-level search's scan"),
    ([*TWO_LEVEL, "--rho1", "1e-9"], "--rho1, --d: the release grid"),
    (["budget", "--census", "--measure", "p-correct", "--target", "0.9", "--d", "100000",
      "--x2", "5"], "--d: the release grid"),
])
def test_cli_sizing_refusals_name_the_options(argv, option, default_limits, capsys):
    """One stderr line naming the options as typed (before: 'rho1, rho2:', the API's names)."""
    assert_refused(argv, f"error: {option}", capsys)
