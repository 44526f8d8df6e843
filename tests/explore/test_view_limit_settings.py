"""A served view's caps are settings: an operator raises or lowers them in the environment.

``DPRISK_VIEW_MEMORY_LIMIT`` and ``DPRISK_VIEW_WORK_LIMIT`` replace the explorer's own caps
(512 MiB, 5e9 steps); the command line's limits (``DPRISK_MEMORY_LIMIT``,
``DPRISK_WORK_LIMIT``) still bound them. Before, the caps could be lowered (through the
command line's limits) but never raised.
"""

import pytest
from cli_helpers import run_cli

from dprisk.explore import limits
from dprisk.runtime import settings

GIB = 1024**3


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name, spec in settings.SETTINGS.items():
        for variable in (name, *spec.aliases):
            monkeypatch.delenv(variable, raising=False)


def test_the_default_caps_are_the_explorers_own():
    assert limits.view_limits() == (limits.VIEW_MEMORY_CAP, limits.VIEW_WORK_CAP)


def test_an_operator_raises_the_caps_up_to_the_command_lines_limits(monkeypatch):
    steps = 2 * limits.VIEW_WORK_CAP
    with pytest.raises(ValueError, match="above this server's limit of 5e\\+09 steps"):
        limits.check_view(1.0, steps, parameter="rho", what="this view")
    monkeypatch.setenv("DPRISK_VIEW_WORK_LIMIT", "2e10")
    monkeypatch.setenv("DPRISK_VIEW_MEMORY_LIMIT", "1GiB")
    assert limits.view_limits() == (1.0 * GIB, 2e10)
    limits.check_view(0.9 * GIB, steps, parameter="rho", what="this view")  # now allowed
    # the command line's limits still bound a view
    monkeypatch.setenv("DPRISK_MEMORY_LIMIT", "256M")
    monkeypatch.setenv("DPRISK_WORK_LIMIT", "1e10")
    assert limits.view_limits() == (256.0 * 1024**2, 1e10)


def test_an_operator_lowers_the_caps(monkeypatch):
    monkeypatch.setenv("DPRISK_VIEW_WORK_LIMIT", "1e6")
    monkeypatch.setenv("DPRISK_VIEW_MEMORY_LIMIT", "64M")
    assert limits.view_limits() == (64.0 * 1024**2, 1e6)
    with pytest.raises(ValueError, match="limit of 1e\\+06 steps"):
        limits.check_view(1.0, 2e6, parameter="rho", what="this view")


@pytest.mark.parametrize("variable", ["DPRISK_VIEW_MEMORY_LIMIT", "DPRISK_VIEW_WORK_LIMIT"])
@pytest.mark.parametrize("value", ["0", "abc", "nan", "\u0663"])
def test_a_malformed_cap_is_refused_at_start_naming_the_variable(variable, value, monkeypatch,
                                                                 capsys):
    # every command validates every setting at start (tests/runtime/test_settings.py);
    # one command suffices here. "\u0663" is an Arabic-Indic 3, which float() would read.
    monkeypatch.setenv(variable, value)
    status, out, err = run_cli(["epsilon", "--rho", "0.5"], capsys)
    assert (status, out) == (2, "")
    assert err.startswith(f"dprisk epsilon: error: {variable} must be ")
    assert err.rstrip().endswith(f"got {value!r}") and err.count("\n") == 1
