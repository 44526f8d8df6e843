"""The memory budget: requests whose size is known up front are refused before allocation.

Every computation whose memory can be estimated from its parameters (a window of a
discrete Gaussian from a tiny rho, a release grid, draws x chains of a sampler, the points of
a sweep) calls :func:`check_memory` with its estimate *before* allocating. Above the budget it
raises :class:`MemoryBudgetError` (a ``ValueError``: exit status 2 on the command line) naming
the parameter, the estimate and how to raise the budget -- never an allocation of many GiB or
a ``MemoryError`` part-way.

The budget is :data:`DEFAULT_MEMORY_BUDGET` (2 GiB), or the value of the environment variable
:data:`BUDGET_ENV` (``DPRISK_MEMORY_BUDGET``): a number of bytes, optionally with a unit
``K``, ``M``, ``G``, ``T`` (powers of 1024; ``KiB``, ``MB``, ``GiB``… accepted), e.g.
``DPRISK_MEMORY_BUDGET=16GiB``. The estimates count the largest arrays a computation holds
at once; they are upper bounds within a small factor, not exact peaks.
"""

from __future__ import annotations

import math
import os
import re

__all__ = [
    "BUDGET_ENV",
    "DEFAULT_MEMORY_BUDGET",
    "MemoryBudgetError",
    "budget_from_environment",
    "check_memory",
    "format_bytes",
    "memory_budget",
]

#: Memory budget in bytes when :data:`BUDGET_ENV` is not set (2 GiB).
DEFAULT_MEMORY_BUDGET = 2 * 1024**3
#: Environment variable that sets the budget.
BUDGET_ENV = "DPRISK_MEMORY_BUDGET"

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_PATTERN = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?(?:[eE][0-9]+)?)\s*([KMGT]?)(?:I?B)?\s*$",
                      re.IGNORECASE)


class MemoryBudgetError(ValueError):
    """A request whose estimated memory exceeds the budget (names the parameter)."""


def memory_budget() -> int:
    """The budget in bytes: :data:`BUDGET_ENV` if set, else :data:`DEFAULT_MEMORY_BUDGET`.

    Raises
    ------
    ValueError
        Naming :data:`BUDGET_ENV` when its value is not a positive size.
    """
    return int(budget_from_environment(BUDGET_ENV, DEFAULT_MEMORY_BUDGET, _parse_size,
                                       "a size such as 2GiB, 512M or 1000000000 (bytes)"))


def _parse_size(text: str) -> float:
    match = _PATTERN.match(text)
    return float(match.group(1)) * _UNITS[match.group(2).upper()] if match else math.nan


def budget_from_environment(name: str, default: float, parse, expected: str) -> float:
    """The budget set by the environment variable ``name``, or ``default`` when unset.

    ``parse(text)`` turns the variable's text into a number (NaN when malformed).

    Raises
    ------
    ValueError
        Naming ``name`` and the ``expected`` form when the value is not a finite number >= 1.
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    value = parse(text)
    if not (math.isfinite(value) and value >= 1):
        raise ValueError(f"{name} must be {expected}, got {text!r}")
    return value


def format_bytes(nbytes: float) -> str:
    """``nbytes`` in the largest binary unit that keeps it >= 1, e.g. ``"22.6 GiB"``."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def check_memory(nbytes: float, *, parameter: str, what: str) -> None:
    """Refuse a request whose estimated memory ``nbytes`` exceeds :func:`memory_budget`.

    Parameters
    ----------
    nbytes : float
        The estimate (the largest arrays held at once), computed from the parameters.
    parameter : str
        The parameter(s) that set the size, named first in the message (e.g. ``"draws"``).
    what : str
        What would be allocated, e.g. ``"4 chains x 1000000000 draws"``.

    Raises
    ------
    MemoryBudgetError
        One line: the parameter, the estimate, the budget and how to raise it.
    """
    budget = memory_budget()
    if nbytes > budget:
        raise MemoryBudgetError(
            f"{parameter}: {what} needs about {format_bytes(nbytes)} of memory, above the "
            f"memory budget of {format_bytes(budget)}; reduce it, or raise the budget with "
            f"the environment variable {BUDGET_ENV} (e.g. {BUDGET_ENV}=16GiB)"
        )
