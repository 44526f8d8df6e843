"""An on-disk cache of privacy-accounting results (the slow, deterministic conversions).

The tight composition of the 65 discrete Gaussian queries of the Census strategy
(:func:`dprisk.inference.privacy.accounting.epsilon_pld`) takes about 1.5 s, and importing
``dp-accounting`` about 0.3 s; ``dprisk census`` prints the same numbers every time. Each
result is stored once, as one small JSON file per key under the user's cache directory:

* directory: ``$DPRISK_CACHE_DIR``, else ``$XDG_CACHE_HOME/dprisk``, else
  ``~/.cache/dprisk``; then ``accounting/``;
* key: the function's name, its arguments (floats written with ``repr``, which round-trips
  exactly), the installed ``dp-accounting`` version and :data:`RESULTS_VERSION`; the file name
  is the SHA-256 of the key and the file holds the key as well, which is compared on every
  read;
* value: a float, stored as ``float.hex`` (exact).

The slowest entries — the 2020 strategy's 65 queries composed at the fine discretisation of the
epsilon bracket and of the worst case, about a minute of CPU — ship with the package as a seed
(``data/accounting_seed.json``, written by ``benchmarks/seed_accounting.py``): a miss in the
user's cache reads the seed before computing, under the same full key (a different
``dp-accounting`` version misses it and computes). ``make bench`` recomputes every seeded entry
from scratch and checks it within the tolerance stated for its function (the PLD
compositions are resolved to about 1e-8 relative, and CPUs differ in the last bits;
``tests/inference/privacy/test_accounting_seed.py``).

Writes are atomic (:func:`dprisk.runtime.output_files.atomic_path`: a temporary file
moved into place), so concurrent writers of one key each leave a complete file holding the
same value, and a reader sees either no file or a complete one. A cache that cannot be read
or written (unwritable directory, corrupt file, another key) is ignored: the value is then
computed, never guessed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from dprisk.runtime.cache import cache_root

__all__ = ["cache_dir", "cached_float", "library_version"]


def cache_dir() -> Path:
    """The ``accounting/`` folder of :func:`~dprisk.runtime.cache.cache_root`."""
    return cache_root() / "accounting"


def library_version(distribution: str = "dp-accounting") -> str:
    """The installed version of ``distribution`` (part of every key), ``"unknown"`` if absent."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


#: The version of the cached functions' results, part of every key: raised whenever a change
#: of this package changes (or newly computes) a cached value, so that an entry written by
#: another version of ``dprisk`` sharing the cache directory is a miss, never an answer (a
#: development checkout's ``epsilon_cks`` once filled this machine's cache with values the
#: installed version refuses, and its tests read them). The shipped seed is keyed with it
#: (``benchmarks/seed_accounting.py`` writes it again after a raise).
RESULTS_VERSION = 2


def _key_text(name: str, arguments: dict) -> str:
    return json.dumps({"function": name, "arguments": arguments,
                       "dp_accounting": library_version(), "dprisk_results": RESULTS_VERSION},
                      sort_keys=True)


def _read(path: Path, key: str) -> float | None:
    """The value stored at ``path`` under ``key``; None unless it is a regular file holding it.

    Read by :func:`~dprisk.runtime.output_files.read_regular_text` (opened without blocking,
    checked to be a regular file first): a FIFO or a device put at an entry's name would
    otherwise block the read for ever.
    """
    from dprisk.runtime.output_files import read_regular_text

    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        stored = json.loads(read_regular_text(path))
        if stored["key"] == key:
            return float.fromhex(stored["value"])
    return None


def _write(path: Path, key: str, value: float) -> None:
    from dprisk.runtime.output_files import atomic_path

    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            Path(tmp).write_text(json.dumps({"key": key, "value": float(value).hex()}) + "\n")


#: Whether :func:`cached_float` may answer from the shipped seed (the tests that recompute every
#: seeded entry switch it off).
USE_SEED = True
#: Package data: the entries of the 2020 strategy's accounting, computed by
#: ``benchmarks/seed_accounting.py`` (minutes of PLD composition at a fine discretisation).
SEED_FILE = "data/accounting_seed.json"


def _seeded(sha: str, key: str) -> float | None:
    """The shipped entry ``sha`` when its key is ``key`` (same arguments, same dp-accounting)."""
    if not USE_SEED:
        return None
    import importlib.resources

    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        text = importlib.resources.files("dprisk.inference.privacy").joinpath(SEED_FILE)
        stored = json.loads(text.read_text("utf-8"))[sha]
        if stored["key"] == key:
            return float.fromhex(stored["value"])
    return None


def cached_float(name: str, arguments: dict, compute) -> float:
    """``compute()``, read from the cache when an entry for ``(name, arguments)`` exists.

    Parameters
    ----------
    name : str
        The function whose value is cached.
    arguments : dict
        Every input of the value, JSON-serialisable (floats as ``repr`` strings).
    compute : callable
        ``compute() -> float``, called (and its value stored) on a miss.
    """
    key = _key_text(name, arguments)
    sha = hashlib.sha256(key.encode()).hexdigest()
    path = cache_dir() / f"{sha}.json"
    value = _read(path, key)
    if value is None:
        value = _seeded(sha, key)
        if value is None:
            value = float(compute())
        _write(path, key, value)
    return value
