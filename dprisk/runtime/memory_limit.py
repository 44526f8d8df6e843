"""The memory limit: requests whose size is known up front are refused before allocation.

Every computation whose memory can be estimated from its parameters (a window of a
discrete Gaussian from a tiny rho, a release grid, draws x chains of a sampler, the points of
a sweep) calls :func:`check_memory` with its estimate *before* allocating. Above the limit it
raises :class:`MemoryLimitError` (a ``ValueError``: exit status 2 on the command line) naming
the parameter, the estimate and how to raise the limit -- never an allocation of many GiB or
a ``MemoryError`` part-way.

The limit is :data:`DEFAULT_MEMORY_LIMIT` (2 GiB), or the value of the environment variable
:data:`LIMIT_ENV` (``DPRISK_MEMORY_LIMIT``; its old name ``DPRISK_MEMORY_BUDGET`` is an
alias): a number of bytes, optionally with a unit ``K``, ``M``, ``G``, ``T`` (powers of 1024;
``KiB``, ``MB``, ``GiB``… accepted), e.g. ``DPRISK_MEMORY_LIMIT=16GiB``. The variable is
parsed by :mod:`dprisk.runtime.settings`. The estimates count the largest arrays a
computation holds at once; they are upper bounds within a small factor, not exact peaks.
"""

from __future__ import annotations

from decimal import Decimal

from dprisk.runtime.settings import setting, variable_set

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "LIMIT_ENV",
    "OLD_LIMIT_ENV",
    "MemoryLimitError",
    "check_memory",
    "format_bytes",
    "memory_limit",
]

#: Memory limit in bytes when :data:`LIMIT_ENV` is not set (2 GiB).
DEFAULT_MEMORY_LIMIT = 2 * 1024**3
#: Environment variable that sets the limit.
LIMIT_ENV = "DPRISK_MEMORY_LIMIT"
#: Its old name, still accepted.
OLD_LIMIT_ENV = "DPRISK_MEMORY_BUDGET"


class MemoryLimitError(ValueError):
    """A request whose estimated memory exceeds the limit (names the parameter)."""


def memory_limit() -> int:
    """The limit in bytes: :data:`LIMIT_ENV` if set, else :data:`DEFAULT_MEMORY_LIMIT`.

    Raises
    ------
    ValueError
        Naming the variable when its value is not a size of at least one byte.
    """
    return int(setting(LIMIT_ENV))


def format_bytes(nbytes: float) -> str:
    """``nbytes`` in the largest binary unit that keeps it >= 1, e.g. ``"22.6 GiB"``.

    An integer beyond the largest double (``--cells 1e308``: 64e308 bytes) is divided
    exactly as a :class:`~decimal.Decimal` (``"5.68e+294 PiB"``), never converted to float.
    """
    try:
        value = float(nbytes)
    except OverflowError:
        value = Decimal(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def check_memory(nbytes: float, *, parameter: str, what: str) -> None:
    """Refuse a request whose estimated memory ``nbytes`` exceeds :func:`memory_limit`.

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
    MemoryLimitError
        One line: the parameter, the estimate, the limit and how to raise it.
    """
    limit = memory_limit()
    if not nbytes <= limit:  # NaN too
        env = variable_set(LIMIT_ENV)
        raise MemoryLimitError(
            f"{parameter}: {what} needs about {format_bytes(nbytes)} of memory, above the "
            f"memory limit of {format_bytes(limit)}; reduce it, or raise the limit with "
            f"the environment variable {env} (e.g. {env}=16GiB)"
        )
