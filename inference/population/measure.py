r"""Draw the 2020 noisy measurements of a population, as the DAS drew them, in either layout.

For a persons table (columns ``geoid, hhgq, votingage, hispanic, cenrace``) the true block
counts :math:`n_u(c)` of the 2,016 ``detailed`` cells are tallied; each query ``q`` of the
production strategy (:func:`dprisk.models.census.strategy.strategy_queries` at
:data:`~dprisk.models.census.strategy.PRODUCTION_RHO`) at each geounit ``u`` is released as

.. math:: y_q(u) = a_q(n_u) + \eta, \qquad \eta_j \overset{iid}{\sim}
          \mathrm{DG}_{\mathrm{DAS}}(\sigma_q^2), \quad \sigma_q^2 = 1/\rho_q,

with the noise of :mod:`.noise` (a pure function of seed, level, query and geounit).

* ``layout="table"``: ``noisy.parquet``, the block ``detailed`` query (:mod:`.measurements`).
* ``layout="nmf"``: every level (US, State, County, Tract, Block_Group, Block) and query in
  the released layout (:mod:`.nmf_write`), under ``US_Person_PL_PROD`` (Puerto Rico:
  ``PR_Person_PL_PROD``, no US level).

Blocks are processed in groups of whole tracts (:func:`tract_groups`), so the noisy cells
take about 100 MB a group of 2,000 blocks at any population size; counties, states and the
US are accumulated over the groups and measured last. The persons themselves are held
whole, with each one's block and cell (:func:`block_counts`): memory grows by about 130-230
bytes a person (peaks of 368, 525 and 631 MB at 100,000, 800,000 and 1,600,000 persons),
checked against the memory limit (:data:`BYTES_PER_PERSON`) before anything is drawn. Only
blocks with at least one person are measured (the released files hold every block).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from dprisk.inference.population.categories import N_DETAILED_CELLS, detailed_cell
from dprisk.inference.population.geography import GEOID_PATTERN, spine_codes
from dprisk.inference.population.measurements import (
    CELL_COLUMNS,
    BlockMeasurements,
    NoisyTableWriter,
)
from dprisk.inference.population.nmf_write import PRODUCT_DIRS, US_GEOCODE, NmfWriter
from dprisk.inference.population.noise import LevelNoise
from dprisk.models.census.strategy import PRODUCTION_RHO
from dprisk.runtime.memory_limit import check_memory

__all__ = ["BYTES_PER_PERSON", "GROUP_BLOCKS", "LAYOUTS", "MeasureResult", "block_counts",
           "measure", "tract_groups"]

#: Output layouts.
LAYOUTS = ("table", "nmf")
#: Blocks per group of whole tracts (a group closes at the first tract end past this many).
GROUP_BLOCKS = 2000
#: The table layout's file name.
TABLE_FILE = "noisy.parquet"
#: Bytes per person held while measuring (the persons, their GEOIDs, blocks and cells, the
#: sort): an upper bound of the measured 130-230 (module docstring).
BYTES_PER_PERSON = 250


@dataclass(frozen=True)
class MeasureResult:
    """What :func:`measure` wrote.

    Attributes
    ----------
    files : list of str
        Paths written, relative to the output directory.
    blocks : int
        Blocks measured.
    persons : int
    block_detailed_variance : float
        σ² of the block ``detailed`` query (the DAS's).
    rows : int
        Rows written (cells in ``table``, geounit-query rows in ``nmf``).
    """

    files: list
    blocks: int
    persons: int
    block_detailed_variance: float
    rows: int


def _person_columns(persons) -> dict[str, np.ndarray]:
    """The persons' columns as arrays, checked (ValueError naming column and first row)."""
    missing = [c for c in ("geoid", *CELL_COLUMNS) if c not in persons]
    if missing:
        raise ValueError(f"persons: no column {missing[0]!r}")
    geoid = np.asarray(persons["geoid"]).astype(str)
    columns = {"geoid": geoid}
    for name, (low, high) in CELL_COLUMNS.items():
        values = np.asarray(persons[name])
        if not np.issubdtype(values.dtype, np.integer):
            raise ValueError(f"persons: column {name!r} is {values.dtype}, not integers")
        bad = np.flatnonzero((values < low) | (values > high))
        if bad.size:
            raise ValueError(f"persons: column {name!r} is {values[bad[0]]} at row "
                             f"{bad[0] + 1}, outside {low}-{high}")
        columns[name] = values.astype(np.int64)
    return columns


def block_counts(persons) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Sorted block GEOIDs, each person's block index and detailed cell.

    Returns
    -------
    (geoids, block_index, cell) : (ndarray of str, ndarray of int64, ndarray of int64)
        ``n_u(c) = #{persons i : block_index_i = u, cell_i = c}``.
    """
    columns = _person_columns(persons)
    geoids, block_index = np.unique(columns["geoid"], return_inverse=True)
    bad = [g for g in geoids if not GEOID_PATTERN.match(g)]
    if bad:
        row = int(np.flatnonzero(columns["geoid"] == bad[0])[0])
        raise ValueError(f"persons: geoid {bad[0]!r} at row {row + 1} is not a 15-digit block "
                         "GEOID")
    cell = detailed_cell(columns["hhgq"], columns["votingage"], columns["hispanic"],
                         columns["cenrace"])
    return geoids, block_index.astype(np.int64), cell


def tract_groups(geoids, group_blocks: int = GROUP_BLOCKS) -> list[slice]:
    """Contiguous ranges of the sorted ``geoids`` made of whole tracts (first 11 characters).

    A range closes at the first tract boundary once it holds ``group_blocks`` blocks or more.
    """
    if group_blocks < 1:
        raise ValueError(f"group_blocks must be >= 1, got {group_blocks!r}")
    tracts = np.array([g[:11] for g in geoids], dtype=object)
    ends = np.flatnonzero(tracts[1:] != tracts[:-1]) + 1  # first block of each next tract
    groups, start = [], 0
    for end in [*ends.tolist(), len(geoids)]:
        if end - start >= group_blocks or end == len(geoids):
            if end > start:
                groups.append(slice(start, end))
            start = end
    return groups


def _aggregate(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum the rows of ``counts`` by ``keys``: (sorted distinct keys, summed rows)."""
    distinct, inverse = np.unique(keys, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    if distinct.size == inverse.size:  # one row per key (blocks): a reordering
        return distinct, counts[order]
    starts = np.searchsorted(inverse[order], np.arange(distinct.size))
    return distinct, np.add.reduceat(counts[order], starts, axis=0)


def _check_out_dir(out_dir: Path, names: list[str]) -> None:
    """Refuse an ``out_dir`` that is not a directory or already holds one of ``names``.

    pyarrow opens its files through symbolic links and truncates what is there: a user's
    ``noisy.parquet``, or the file a link of that name points to, was overwritten.
    """
    if not out_dir.is_dir():
        raise ValueError(f"out_dir must be an existing directory, got {str(out_dir)!r}")
    taken = [name for name in names if os.path.lexists(out_dir / name)]
    if taken:
        raise ValueError(f"out_dir {str(out_dir)!r} already holds {', '.join(taken)}; measure "
                         "never replaces or writes through an existing entry: choose an empty "
                         "directory")


def measure(persons, out_dir, *, seed: int, layout: str = "table",
            rho_total: Fraction = PRODUCTION_RHO, aian_tracts=(), drift: bool = True,
            group_blocks: int = GROUP_BLOCKS,
            progress: Callable[[int], None] | None = None) -> MeasureResult:
    r"""Write the noisy measurements of ``persons`` into the existing directory ``out_dir``.

    Parameters
    ----------
    persons : pandas.DataFrame or mapping of arrays
        Columns ``geoid`` (15 characters), ``hhgq``, ``votingage``, ``hispanic``, ``cenrace``.
    out_dir : str or Path
        An existing directory holding nothing at the names the layout writes (``noisy.parquet``;
        ``US_Person_PL_PROD``, ``PR_Person_PL_PROD``): the caller puts it in place once
        complete. An existing entry there (a file, a folder, a symbolic link) is never written
        through or replaced: ``ValueError`` naming ``out_dir``, nothing written.
    seed : int (>= 0)
        The noise's seed (:mod:`.noise`).
    layout : {"table", "nmf"}, default "table"
        ``table``: ``noisy.parquet``, the block ``detailed`` query; ``nmf``: every level and
        query in the released layout.
    rho_total : Fraction
        Global rho of the strategy (default the production 2.556...).
    aian_tracts : collection of str
        Tract GEOIDs placed in the AIAN branch (``nmf`` only).
    drift : bool
        Vary integer widths and ``sign`` between partitions (``nmf``, :mod:`.nmf_write`).
    group_blocks : int (>= 1)
        Blocks per group of whole tracts (memory; the output does not depend on it).
    progress : callable, optional
        Called with the number of blocks of each group once it is written.

    Returns
    -------
    MeasureResult
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    # 0 made no group: nothing written, then a FileNotFoundError reading the table back
    if isinstance(group_blocks, bool) or not isinstance(group_blocks, (int, np.integer)) \
            or group_blocks < 1:
        raise ValueError(f"group_blocks must be an integer >= 1, got {group_blocks!r}")
    out_dir = Path(out_dir)
    _check_out_dir(out_dir, [TABLE_FILE] if layout == "table" else list(PRODUCT_DIRS.values()))
    check_memory(BYTES_PER_PERSON * len(persons["geoid"]), parameter="persons",
                 what=f"the cells of {len(persons['geoid'])} persons")
    geoids, block_index, cell = block_counts(persons)
    order = np.argsort(block_index, kind="stable")
    starts = np.searchsorted(block_index[order], np.arange(geoids.size + 1))
    spine = spine_codes(geoids, aian_tracts)
    noise = {level: LevelNoise(level, int(seed), rho_total)
             for level in ("US", "State", "County", "Tract", "Block_Group", "Block")}
    variance = noise["Block"].variance("detailed")
    rows = 0
    if layout == "table":
        writer = NoisyTableWriter(out_dir / TABLE_FILE)
        files = [TABLE_FILE]
    else:
        writer = NmfWriter(out_dir, drift=drift)
        upper: dict[str, dict[str, np.ndarray]] = {"County": {}, "State": {}}
        files = []
    with writer:
        for group in tract_groups(geoids, group_blocks):
            first, last = group.start, group.stop
            person_rows = order[starts[first]:starts[last]]
            counts = np.bincount((block_index[person_rows] - first) * N_DETAILED_CELLS
                                 + cell[person_rows],
                                 minlength=(last - first) * N_DETAILED_CELLS)
            counts = counts.reshape(last - first, N_DETAILED_CELLS).astype(np.int64)
            if layout == "table":
                drawn = noise["Block"].draw(spine.block[group], ["detailed"])["detailed"]
                writer.write(BlockMeasurements(geoids[group], counts + drawn,
                                               np.full(last - first, variance)))
                rows += counts.size
            else:
                for level in ("Block", "Block_Group", "Tract"):
                    keys, summed = _aggregate(spine.at(level)[group], counts)
                    writer.write_level(level, keys, summed, noise[level].draw(keys),
                                       noise[level])
                for level in ("County", "State"):
                    keys, summed = _aggregate(spine.at(level)[group], counts)
                    for key, row in zip(keys, summed, strict=True):
                        upper[level][key] = upper[level].get(key, 0) + row
            if progress is not None:
                progress(last - first)
        if layout == "nmf":
            for level in ("County", "State"):
                keys = np.array(sorted(upper[level]), dtype=object)
                summed = np.array([upper[level][k] for k in keys], np.int64)
                writer.write_level(level, keys, summed, noise[level].draw(keys), noise[level])
            us_states = [k for k in upper["State"] if k[1:3] != "72"]  # PR has no US level
            if us_states:
                total = np.sum([upper["State"][k] for k in us_states], axis=0)[None, :]
                writer.write_level("US", np.array([US_GEOCODE], dtype=object), total,
                                   noise["US"].draw([US_GEOCODE]), noise["US"])
            rows = writer.rows_written
    if layout == "nmf":
        files = sorted(p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*.parquet")
                       if p.is_file())
    return MeasureResult(files, int(geoids.size), int(block_index.size), variance, rows)
