r"""The adversary's prior :math:`\pi` on a person's category (126 probabilities).

Three kinds (``prior`` of :func:`dprisk.inference.population.risk.population_risk`):

* ``"tract"`` (the default): the true composition of the person's tract within their
  voting-age group, all ``hhgq`` together, the person included,

  .. math:: \pi_c = \frac{\#\{\text{persons of the tract with votingage } v
            \text{ and category } c\}}{\#\{\text{persons of the tract with votingage } v\}};

* ``"uniform"``: :math:`\pi_c = 1/126`;
* a file (:func:`read_prior_file`): the same 126 probabilities for everyone.

**Prior files.** JSON: ``{"probabilities": [p_0, ..., p_125]}`` (or the bare list), or CSV:
a header ``category,probability`` and 126 rows, each category 0-125 once (category
``c = 63 * hispanic + cenrace - 1``). Every probability finite and >= 0, their sum within
1e-9 of 1 (then divided by it). The file is UTF-8 text (a leading byte order mark is
skipped). Anything else is refused with a ``ValueError`` naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dprisk.inference.population.categories import N_CATEGORIES

__all__ = ["PRIOR_KINDS", "SUM_TOLERANCE", "read_prior_file", "tract_priors"]

#: The named priors; anything else is a file.
PRIOR_KINDS = ("tract", "uniform")
#: Largest distance of a prior file's sum from 1.
SUM_TOLERANCE = 1e-9


def read_prior_file(path, *, name: str = "prior") -> np.ndarray:
    """The 126 probabilities of a prior file (the module's formats), as float64."""
    path = Path(path)
    where = f"{name} {str(path)!r}"
    suffix = path.suffix.lower()
    if suffix not in (".json", ".csv"):
        raise ValueError(f"{where}: not tract, uniform or a prior file (.json or .csv)")
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM, as Excel writes, is no text
    except OSError as err:
        raise ValueError(f"{where}: cannot be read ({err.strerror or err})") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{where}: not UTF-8 text (byte 0x{err.object[err.start]:02x} at "
                         f"offset {err.start})") from None
    if suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError as err:
            raise ValueError(f"{where}: not JSON ({err})") from None
        if isinstance(data, dict):
            data = data.get("probabilities")
        if not isinstance(data, list) or len(data) != N_CATEGORIES or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in data):
            raise ValueError(f"{where}: expected {{\"probabilities\": [{N_CATEGORIES} numbers]}}")
        values = np.asarray(data, dtype=np.float64)
    else:
        values = _read_csv(text, where)
    if not (np.isfinite(values).all() and (values >= 0).all()):
        row = int(np.flatnonzero(~(np.isfinite(values) & (values >= 0)))[0])
        raise ValueError(f"{where}: category {row}: probability {float(values[row])!r} is "
                         "not a finite number >= 0")
    total = float(np.sum(values))
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"{where}: probabilities sum to {total!r}, not 1 (tolerance "
                         f"{SUM_TOLERANCE:g})")
    return values / total


def _read_csv(text: str, where: str) -> np.ndarray:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or [h.strip() for h in lines[0].split(",")] != ["category", "probability"]:
        raise ValueError(f"{where}: the first line must be the header category,probability")
    values = np.full(N_CATEGORIES, np.nan)
    given = np.zeros(N_CATEGORIES, dtype=bool)  # not NaN: a row may give the value nan
    for number, line in enumerate(lines[1:], start=2):
        parts = line.split(",")
        try:
            category, probability = int(parts[0]), float(parts[1])
            if len(parts) != 2:
                raise ValueError
        except (ValueError, IndexError):
            raise ValueError(f"{where}: line {number}: expected CATEGORY,PROBABILITY, got "
                             f"{line[:60]!r}") from None
        if not 0 <= category < N_CATEGORIES or given[category]:
            raise ValueError(f"{where}: line {number}: category {category} is outside "
                             f"0-{N_CATEGORIES - 1} or given twice")
        values[category], given[category] = probability, True
    if not given.all():
        missing = int(np.flatnonzero(~given)[0])
        raise ValueError(f"{where}: category {missing} has no row ({N_CATEGORIES} needed)")
    return values


def tract_priors(tract: np.ndarray, votingage: np.ndarray, category: np.ndarray):
    """The tract prior of every (tract, votingage) pair present.

    Parameters
    ----------
    tract : (P,) int array
        Each person's tract index (0..T-1).
    votingage, category : (P,) int arrays

    Returns
    -------
    (T * 2, 126) float64 array
        Row ``2 * tract + votingage``: that pair's composition (rows of absent pairs are 0).
    """
    rows = 2 * np.asarray(tract, dtype=np.int64) + np.asarray(votingage, dtype=np.int64)
    n_rows = 2 * (int(np.max(tract)) + 1) if np.size(tract) else 0
    counts = np.bincount(rows * N_CATEGORIES + np.asarray(category, dtype=np.int64),
                         minlength=n_rows * N_CATEGORIES).reshape(n_rows, N_CATEGORIES)
    totals = counts.sum(axis=1, keepdims=True)
    return counts / np.maximum(totals, 1)
