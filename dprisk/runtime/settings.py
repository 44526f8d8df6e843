"""Every ``DPRISK_*`` environment variable, read and validated in one place.

The variables (empty counts as unset):

===========================  =========================================  ==================
variable (old name)          value                                      default
===========================  =========================================  ==================
``DPRISK_MEMORY_LIMIT``      a size in bytes, optionally with a unit    ``2GiB``
(``DPRISK_MEMORY_BUDGET``)   ``K``, ``M``, ``G``, ``T`` (powers of
                             1024; ``KiB``, ``MB``, ``GiB`` accepted),
                             at least 1 byte
``DPRISK_WORK_LIMIT``        a number of steps >= 1, e.g. ``1e13``      ``1e12``
(``DPRISK_WORK_BUDGET``)
``DPRISK_KERNELS``           ``auto``, ``numpy`` or ``compiled``        ``auto``
``DPRISK_CACHE_DIR``         an absolute directory path                 ``$XDG_CACHE_HOME
                                                                        /dprisk``
``DPRISK_SCHEDULER_TIMEOUT`` seconds > 0                                ``10``
``DPRISK_VIEW_MEMORY_LIMIT`` a size as for ``DPRISK_MEMORY_LIMIT``: one  ``512MiB``
                             served explorer view's memory (capped by
                             ``DPRISK_MEMORY_LIMIT``)
``DPRISK_VIEW_WORK_LIMIT``   a number of steps >= 1: one served         ``5e9``
                             explorer view's work (capped by
                             ``DPRISK_WORK_LIMIT``)
``DPRISK_LIVE``              ``live`` or ``static``: how a notebook's   ``live``
                             ``dprisk.live`` cell shows (``static``:
                             its output without controls, for pages
                             with no kernel, as ``make docs`` sets)
===========================  =========================================  ==================

The old names ``DPRISK_MEMORY_BUDGET`` and ``DPRISK_WORK_BUDGET`` (from before "budget" came
to mean only the privacy budget) are accepted as aliases; when a variable and its old name
are both set they must agree. :func:`setting` returns the parsed value of one variable (the
memory and work limits, the kernels and the Dask timeout read it, in the API too);
:func:`check_environment` validates them all and is called by the command line at start-up
for every subcommand, so a malformed value is refused the same way by every command: exit
status 2 and one line ``VARIABLE must be FORM, got 'TEXT'`` (the form of an option's refusal),
naming the variable as the user spelled it. A set ``DPRISK_*`` variable of no known name
(a misspelling of one of these) is refused the same way, with the nearest name;
the names the project's own tests, docs and benchmarks read (:data:`TOOLING_VARIABLES`) are
known too. A value is parsed again only when the environment changes (:func:`setting` caches
on the variable's text).
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dprisk.runtime.ascii_numbers import parse_number

__all__ = [
    "SETTINGS",
    "TOOLING_VARIABLES",
    "Setting",
    "SettingError",
    "check_environment",
    "known_variables",
    "parse_size",
    "setting",
    "variable_set",
]


class SettingError(ValueError):
    """A ``DPRISK_*`` environment variable with a malformed value (names the variable)."""


_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_SIZE = re.compile(r"^([0-9]+(?:\.[0-9]*)?(?:[eE][0-9]+)?)\s*([KMGT]?)(?:I?B)?$", re.IGNORECASE)


def parse_size(text: str) -> float:
    """Bytes of a size such as ``2GiB``, ``512M``, ``1e9`` (NaN when malformed)."""
    match = _SIZE.match(text.strip())
    return float(match.group(1)) * _UNITS[match.group(2).upper()] if match else math.nan


def _number(text: str) -> float:
    try:
        return parse_number(text)  # ASCII digits only: float() also reads "\u0663" as 3
    except ValueError:
        return math.nan


def _at_least_one(parse: Callable[[str], float]) -> Callable[[str], float | None]:
    def check(text: str) -> float | None:
        value = parse(text)
        return value if math.isfinite(value) and value >= 1 else None
    return check


def _positive_seconds(text: str) -> float | None:
    value = _number(text)
    return value if math.isfinite(value) and value > 0 else None


def _kernels(text: str) -> str | None:
    return text if text in ("auto", "numpy", "compiled") else None


def _live_mode(text: str) -> str | None:
    return text if text in ("live", "static") else None


def _directory(text: str) -> Path | None:
    path = Path(text).expanduser()
    return path if path.is_absolute() else None


@dataclass(frozen=True)
class Setting:
    """One environment variable: its name, old names, the form it takes and its default.

    ``parse(text)`` returns the value, or ``None`` when ``text`` is malformed.
    """

    name: str
    expected: str
    parse: Callable[[str], object]
    default: object
    aliases: tuple[str, ...] = ()


#: The variables, by name.
SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("DPRISK_MEMORY_LIMIT", "a size of at least 1 byte such as 2GiB, 512M or 1000000000",
            _at_least_one(parse_size), float(2 * 1024**3), ("DPRISK_MEMORY_BUDGET",)),
    Setting("DPRISK_WORK_LIMIT", "a number of steps >= 1 such as 1e13",
            _at_least_one(_number), 1e12, ("DPRISK_WORK_BUDGET",)),
    Setting("DPRISK_KERNELS", "one of auto, numpy, compiled", _kernels, "auto"),
    Setting("DPRISK_CACHE_DIR", "an absolute directory path", _directory, None),
    Setting("DPRISK_SCHEDULER_TIMEOUT", "a number of seconds > 0 such as 30",
            _positive_seconds, 10.0),
    # None: the explorer's own caps (dprisk.explore.limits.VIEW_MEMORY_CAP, VIEW_WORK_CAP)
    Setting("DPRISK_VIEW_MEMORY_LIMIT", "a size of at least 1 byte such as 1GiB or 256M",
            _at_least_one(parse_size), None),
    Setting("DPRISK_VIEW_WORK_LIMIT", "a number of steps >= 1 such as 2e10",
            _at_least_one(_number), None),
    # read by dprisk.explore.notebook.live (static: dprisk.explore.notebook.StaticView)
    Setting("DPRISK_LIVE", "one of live, static", _live_mode, "live"),
)}


#: ``DPRISK_*`` variables the project's own tooling reads, not dprisk (no value checked
#: here): known, so that setting them is not refused as a misspelling.
TOOLING_VARIABLES = {
    "DPRISK_TEST_CPU_DIR": "tests/cpu_records.py, benchmarks/bench_test_cpu.py",
    "DPRISK_DOCS_EXECUTE": "docs/conf.py, make docs",
    "DPRISK_GALLERY": "tests/explore/test_browser.py",
    "DPRISK_BENCH_REPRODUCE_ROUNDS": "benchmarks/bench_reproduce.py",
    "DPRISK_BENCH_PAPER_POINT": "benchmarks/bench_studies.py",
}


def known_variables() -> list[str]:
    """Every ``DPRISK_*`` name in use: the settings, their old names and the tooling's."""
    names = [name for spec in SETTINGS.values() for name in (spec.name, *spec.aliases)]
    return names + list(TOOLING_VARIABLES)


def _check_names() -> None:
    """Refuse a set ``DPRISK_*`` variable of no known name (a misspelling, silently ignored)."""
    import difflib

    known = known_variables()
    tails = {name.removeprefix("DPRISK_"): name for name in known}
    for variable in sorted(os.environ):
        if variable.startswith("DPRISK_") and variable not in known:
            # compared without the prefix every name shares (which made any name "close")
            near = difflib.get_close_matches(variable.removeprefix("DPRISK_"), tails, n=1,
                                             cutoff=0.6)
            hint = f"; did you mean {tails[near[0]]}?" if near else ""
            raise SettingError(f"{variable} is not a dprisk setting{hint} (allowed: "
                               f"{', '.join(SETTINGS)}, their old names "
                               f"{', '.join(a for spec in SETTINGS.values() for a in spec.aliases)}"
                               ", and the names the project's tests, docs and benchmarks read)")


@functools.lru_cache(maxsize=64)
def _parse(name: str, texts: tuple[tuple[str, str], ...]) -> object:
    spec = SETTINGS[name]
    values = {}
    for variable, text in texts:
        value = spec.parse(text)
        if value is None:
            raise SettingError(f"{variable} must be {spec.expected}, got {text!r}")
        values[variable] = value
    if not values:
        return spec.default
    if len(set(values.values())) > 1:
        shown = " and ".join(f"{v}={t!r}" for v, t in texts)
        raise SettingError(f"{spec.name} must be set once: {shown} disagree (its old name is "
                           f"an alias); set only {spec.name}")
    return next(iter(values.values()))


def _texts(spec: Setting) -> tuple[tuple[str, str], ...]:
    found = []
    for variable in (spec.name, *spec.aliases):
        text = os.environ.get(variable, "").strip()
        if text:
            found.append((variable, text))
    return tuple(found)


def setting(name: str):
    """The value of the variable ``name`` (a key of :data:`SETTINGS`), or its default.

    Raises
    ------
    SettingError
        A ``ValueError`` naming the variable as set (or its old name) and the form expected.
    """
    return _parse(name, _texts(SETTINGS[name]))


def variable_set(name: str) -> str:
    """The spelling of ``name`` the user set (``name`` itself when neither is set)."""
    texts = _texts(SETTINGS[name])
    return texts[0][0] if texts else name


def check_environment() -> None:
    """Validate every variable of :data:`SETTINGS` (the command line's start-up check).

    A set ``DPRISK_*`` variable must have a known name (:func:`known_variables`: refused
    with the nearest name otherwise). Besides :func:`setting` of each, ``DPRISK_CACHE_DIR``
    must not name an existing non-directory.

    Raises
    ------
    SettingError
        For the first unknown or malformed variable.
    """
    _check_names()
    for name in SETTINGS:
        setting(name)
    cache = setting("DPRISK_CACHE_DIR")
    if cache is not None and cache.exists() and not cache.is_dir():
        raise SettingError(f"DPRISK_CACHE_DIR must be {SETTINGS['DPRISK_CACHE_DIR'].expected}, "
                           f"got {str(cache)!r} (not a directory)")
