r"""The block ``detailed`` noisy measurements in memory, and the ``table`` layout on disk.

:class:`BlockMeasurements` holds, for each block, the 2,016 noisy counts of its ``detailed``
query (hhgq x votingage x hispanic x cenrace, cell ``((h * 2 + v) * 2 + x) * 63 + cenrace - 1``,
:mod:`.categories`) and the noise variance σ² they were drawn with.

The ``table`` layout is one row per cell: ``geoid, hhgq, votingage, hispanic, cenrace, noisy``
(plus ``variance``, σ² of the block's query), Parquet or CSV by the file's extension.
:func:`read_noisy_table` refuses, by a ``ValueError`` naming the file and the first offender:
a missing or duplicated cell (named by geoid and cell: never read as 0), a missing column or
one of another type, a null value, a value out of range or a GEOID that is not 15 ASCII
digits (named by the file's row: every row read is checked, of any block), a requested block
absent from the file, a σ² that is not a positive number (or that differs within a block).
Every row of a CSV file is read; of a Parquet file, with ``geoids``, not the row groups whose
GEOID statistics exclude every block asked for (:func:`_pruned`): their rows are not checked.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dprisk.inference.population.categories import N_CENRACE, N_DETAILED_CELLS

__all__ = [
    "CELL_COLUMNS",
    "TABLE_COLUMNS",
    "BlockMeasurements",
    "NoisyTableWriter",
    "cell_columns",
    "read_noisy_table",
    "table_format",
    "write_noisy_table",
]

#: The columns naming a cell, with their inclusive ranges.
CELL_COLUMNS = {"hhgq": (0, 7), "votingage": (0, 1), "hispanic": (0, 1), "cenrace": (1, 63)}
#: The table layout's required columns.
TABLE_COLUMNS = ("geoid", *CELL_COLUMNS, "noisy")


@dataclass(frozen=True)
class BlockMeasurements:
    """The block ``detailed`` query's noisy counts of a set of blocks.

    Attributes
    ----------
    geoids : ndarray of str (n_blocks,)
        15-character block GEOIDs, sorted ascending.
    noisy : ndarray of int64 (n_blocks, 2016)
        Noisy counts, C order over hhgq x votingage x hispanic x cenrace.
    variance : ndarray of float64 (n_blocks,)
        σ² of each block's ``detailed`` query (the DAS's: pmf ∝ exp(-x²/(2σ²))).
    """

    geoids: np.ndarray
    noisy: np.ndarray
    variance: np.ndarray


def table_format(path) -> str:
    """``"parquet"`` or ``"csv"`` from the file's extension; ValueError naming it otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix == ".csv":
        return "csv"
    raise ValueError(f"{path}: not a Parquet (.parquet) or CSV (.csv) file")


def cell_columns() -> dict[str, np.ndarray]:
    """hhgq, votingage, hispanic, cenrace of the 2,016 cells, in cell order."""
    h, v, x, c = np.indices((8, 2, 2, N_CENRACE)).reshape(4, -1)
    return {"hhgq": h, "votingage": v, "hispanic": x, "cenrace": c + 1}


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def _dataset(path: Path, kind: str):
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.dataset as ds

    if kind == "parquet":
        return ds.dataset(path, format="parquet")
    types = {"geoid": pa.string(), **{c: pa.int64() for c in CELL_COLUMNS},
             "noisy": pa.int64(), "variance": pa.float64()}
    options = ds.CsvFileFormat(convert_options=pcsv.ConvertOptions(
        column_types=types, strings_can_be_null=False))
    return ds.dataset(path, format=options)


def _load(path: Path, geoids):
    """The file's rows (of ``geoids`` only, when given) as an Arrow table.

    Every row read is checked first (:func:`_first_problem`), whatever its block: all the rows
    of a CSV file, and of a Parquet file but the row groups :func:`_pruned` skips unread.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = table_format(path)
    if path.is_dir():  # a Parquet dataset folder (as Spark writes one) is not read
        raise ValueError(f"{path}: a directory, not a file (give one Parquet or CSV file)")
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        dataset = _dataset(path, kind)
        names = dataset.schema.names
        missing = [c for c in TABLE_COLUMNS if c not in names]
        if missing:
            raise ValueError(f"{path}: no column {missing[0]!r} (the table layout has "
                             f"{', '.join(TABLE_COLUMNS)} and optionally variance)")
        columns = [*TABLE_COLUMNS, *(["variance"] if "variance" in names else [])]
        for name in columns[1:]:
            # a variance of whole numbers (pandas writes 10 as int64) is a number, as its
            # CSV text "10" is
            kind_ok = (_is_number if name == "variance" else pa.types.is_integer)
            if not kind_ok(dataset.schema.field(name).type):
                raise ValueError(f"{path}: column {name!r} is {dataset.schema.field(name).type}, "
                                 f"not {'a number' if name == 'variance' else 'an integer'}")
        geoid_type = dataset.schema.field("geoid").type
        if pa.types.is_dictionary(geoid_type):
            geoid_type = geoid_type.value_type
        if not (pa.types.is_string(geoid_type) or pa.types.is_large_string(geoid_type)):
            raise ValueError(f"{path}: column 'geoid' is {dataset.schema.field('geoid').type}, "
                             "not text (15-character GEOIDs, leading zeros kept)")
        wanted = None if geoids is None else pa.array(list(geoids), pa.string())
        if kind == "parquet" and geoids is not None and len(geoids):
            dataset = _pruned(dataset, min(map(str, geoids)), max(map(str, geoids)))
        # Every row read is checked, then the rows of other blocks are dropped: a malformed
        # GEOID or value is refused even in a block not asked for (in the row groups read).
        # GEOIDs as a dictionary (the writer's, or encoded here): each distinct GEOID of a
        # batch is checked and filtered once, not once per row.
        scanner = dataset.scanner(columns=columns)
        schema = scanner.projected_schema
        text = schema.field("geoid").type
        if not pa.types.is_dictionary(text):
            schema = schema.set(0, pa.field("geoid", pa.dictionary(pa.int32(), text)))
        batches, scanned = [], 0
        for batch in scanner.to_batches():  # in the file's order
            if not pa.types.is_dictionary(batch.column(0).type):
                batch = batch.set_column(0, "geoid", pc.dictionary_encode(batch.column(0)))
            problem = _first_problem(batch)
            if problem is not None:
                row, message = problem
                raise ValueError(f"{path}: {message(_file_row(dataset, scanned + row) + 1)}")
            scanned += batch.num_rows
            if wanted is not None:
                batch = batch.filter(pc.is_in(batch.column("geoid"), value_set=wanted))
            if batch.num_rows:
                batches.append(batch)
        return pa.Table.from_batches(batches, schema=schema)
    except UnicodeDecodeError as err:  # a CSV header, a Parquet column name or statistic
        raise ValueError(f"{path}: cannot be read as the table layout (text that is not "
                         f"UTF-8: {err.object[:40]!r})") from None
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OSError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        found = re.search(r"In CSV column #(\d+): Row #(\d+): CSV conversion error to \w+: "
                          r"invalid value '(.*)'", first) if kind == "csv" else None
        if found:  # Arrow counts columns from 0 and rows as lines, the header line 1
            with open(path, encoding="utf-8-sig") as text:  # the header line only
                header = text.readline().strip()
            name = header.split(",")[int(found[1])].strip().strip('"')
            raise ValueError(f"{path}: column {name!r} is {found[3]!r} at row "
                             f"{int(found[2]) - 1}, not "
                             f"{'a number' if name == 'variance' else 'an integer'}") from None
        raise ValueError(f"{path}: cannot be read as the table layout ({first})") from None


def _is_number(arrow_type) -> bool:
    """An Arrow type of numbers: floating point or integer."""
    import pyarrow as pa

    return pa.types.is_floating(arrow_type) or pa.types.is_integer(arrow_type)


def _pruned(dataset, low: str, high: str):
    """``dataset`` without the row groups whose ``geoid`` statistics lie outside [low, high].

    The ``isin`` filter alone does not skip row groups by their statistics, so every
    partition's read would scan the whole file. A row group is dropped only when its
    statistics hold a full-length (untruncated) minimum and maximum that exclude the range;
    the filter still selects the rows.
    """
    import pyarrow.dataset as ds

    fragments = []
    for fragment in dataset.get_fragments():
        metadata = fragment.metadata
        # A row group's statistics are by Parquet leaf column: a nested column (a list, a
        # struct) before geoid holds one leaf per field, so geoid's Arrow field index is not
        # its leaf index. The top-level text column geoid is the leaf whose path is "geoid".
        leaves = [j for j in range(metadata.num_columns)
                  if metadata.schema.column(j).path == "geoid"]
        if len(leaves) != 1:
            fragments.append(fragment)
            continue
        column = leaves[0]
        keep = []
        for i in range(metadata.num_row_groups):
            stats = metadata.row_group(i).column(column).statistics
            if stats is not None and stats.has_min_max:
                try:
                    least, most = stats.min, stats.max
                    if isinstance(least, bytes):
                        least, most = least.decode(), most.decode()
                except UnicodeDecodeError:  # read: its rows are refused by row
                    least = most = ""
                full = len(least) == len(most) == len(low) == len(high)
                if full and (most < low or least > high):
                    continue
            keep.append(i)
        fragments.append(fragment.subset(row_group_ids=keep))
    return ds.FileSystemDataset(fragments, dataset.schema, dataset.format,
                                filesystem=dataset.filesystem)


def _geoid_text(geoid, row: int) -> str:
    """The GEOID of ``row`` as text (bytes that are not UTF-8 shown as U+FFFD)."""
    import pyarrow as pa

    if pa.types.is_dictionary(geoid.type):
        geoid, row = geoid.dictionary, geoid.indices[row].as_py()
    raw = geoid.slice(row, 1).cast(pa.large_binary())[0].as_py()
    return "" if raw is None else raw.decode("utf-8", "replace")


def _first_problem(batch):
    """The first row of ``batch`` that the table layout refuses, or None.

    Returns ``(row, message)``: the row in the batch and a function of the row's number in
    the file giving the refusal. A row is refused for an empty value, a GEOID that is not 15
    ASCII digits (checked on the bytes: ``０``, ``٣`` and text that is not UTF-8 are not
    digits), or a cell column outside its range; of several problems in one row, the first
    column's.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    found = []
    geoid = batch.column("geoid")
    values = geoid.dictionary if pa.types.is_dictionary(geoid.type) else geoid
    ok = pc.and_(pc.equal(pc.binary_length(values), 15), pc.ascii_is_decimal(values))
    if values is not geoid:
        ok = ok.take(geoid.indices)
    row = pc.index(pc.fill_null(ok, False), False).as_py()
    if row >= 0 and geoid[row].is_valid:
        text = _geoid_text(geoid, row)
        found.append((row, 0, lambda n: f"geoid {text!r} at row {n} is not a 15-digit block "
                      "GEOID"))
    for order, name in enumerate(batch.column_names):
        column = batch.column(name)
        if column.null_count:
            row = pc.index(column.is_null(), True).as_py()
            found.append((row, order, lambda n, name=name: f"column {name!r} is empty at row {n}"))
    for order, (name, (low, high)) in enumerate(CELL_COLUMNS.items(), start=1):
        column = batch.column(name)
        extremes = pc.min_max(column)
        if extremes["min"].is_valid and (extremes["min"].as_py() < low
                                         or extremes["max"].as_py() > high):
            outside = pc.or_(pc.less(column, low), pc.greater(column, high))
            row = pc.index(pc.fill_null(outside, False), True).as_py()
            value = column[row].as_py()
            found.append((row, order, lambda n, name=name, value=value, low=low, high=high:
                          f"column {name!r} is {value} at row {n}, outside {low}-{high}"))
    if not found:
        return None
    row, _, message = min(found, key=lambda problem: problem[:2])
    return row, message


def _file_row(dataset, scanned: int) -> int:
    """The file's row (0-based) of the ``scanned``-th row read (from 0).

    Row groups that :func:`_pruned` skipped are not read: the rows read are counted across
    the row groups kept, each placed at its first row in the file.
    """
    import pyarrow.dataset as ds

    if not isinstance(dataset.format, ds.ParquetFileFormat):
        return scanned
    for fragment in dataset.get_fragments():  # one: the file
        metadata = fragment.metadata
        starts = np.cumsum([0, *(metadata.row_group(i).num_rows
                                 for i in range(metadata.num_row_groups))])
        for group in fragment.row_groups:
            if scanned < group.num_rows:
                return int(starts[group.id]) + scanned
            scanned -= group.num_rows
    return scanned


#: Weight of each cell column in the cell index ((h * 2 + v) * 2 + x) * 63 + cenrace - 1.
_CELL_WEIGHTS = {"hhgq": 4 * N_CENRACE, "votingage": 2 * N_CENRACE, "hispanic": N_CENRACE,
                 "cenrace": 1}


def _cell_name(geoid: str, cell: int) -> str:
    h, v, x, c = np.unravel_index(cell, (8, 2, 2, N_CENRACE))
    return (f"geoid {geoid} cell {cell} (hhgq={h}, votingage={v}, hispanic={x}, "
            f"cenrace={c + 1})")


def read_noisy_table(path, geoids=None, noise_variance=None) -> BlockMeasurements:
    r"""Read the block ``detailed`` noisy counts of the table layout.

    Parameters
    ----------
    path : str or Path
        ``.parquet`` or ``.csv``; columns ``geoid, hhgq, votingage, hispanic, cenrace, noisy``
        and optionally ``variance``.
    geoids : iterable of str, optional
        The blocks wanted (default: every block in the file); rows of other blocks are not
        loaded (Parquet row groups whose statistics exclude them are skipped).
    noise_variance : float (> 0), optional
        σ² of every block; when None the file's ``variance`` column gives each block's.

    Returns
    -------
    BlockMeasurements
        Blocks sorted by GEOID.

    Raises
    ------
    ValueError
        Naming the file and the first problem (see the module docstring): every cell of every
        block must appear exactly once; every row read (of any block) is checked, named by its
        row in the file.
    """
    path = Path(path)
    if noise_variance is not None:
        if isinstance(noise_variance, bool) or not isinstance(noise_variance, (int, float)) \
                or not math.isfinite(noise_variance) or noise_variance <= 0:
            raise ValueError(f"noise_variance must be a number > 0, got {noise_variance!r}")
    wanted = None
    if geoids is not None:
        wanted = np.unique(np.asarray([str(g) for g in geoids], dtype=object))
    table = _load(path, wanted)
    import pyarrow as pa

    # Memory: each column is turned into numpy and dropped from the Arrow table in turn,
    # and the cell keys are int32 while they fit (a 20,000-block file: 40 M rows).
    geoid = table.column("geoid")  # dictionary-encoded by _load
    table = table.drop_columns(["geoid"])
    geoid = geoid.unify_dictionaries()  # one dictionary for every batch, no strings copied
    dictionary = (geoid.chunk(0).dictionary if geoid.num_chunks else pa.array([], pa.string()))
    distinct = np.asarray(dictionary.to_pylist(), dtype=object)
    by_geoid = np.argsort(distinct, kind="stable")
    key_type = np.int32 if distinct.size * N_DETAILED_CELLS < 2**31 else np.int64
    rank = np.empty(distinct.size, key_type)
    rank[by_geoid] = np.arange(distinct.size)
    blocks = distinct[by_geoid]
    present = np.zeros(distinct.size, bool)
    key = np.empty(len(geoid), key_type)
    start = 0
    for chunk in geoid.chunks:
        indices = chunk.indices.to_numpy(zero_copy_only=False)
        key[start:start + indices.size] = rank[indices]
        present[indices] = True
        start += indices.size
    del geoid
    if not present.all():  # a dictionary entry no row uses (a filtered row group's)
        used = np.flatnonzero(present[by_geoid])
        renumber = np.full(distinct.size, -1, key_type)
        renumber[used] = np.arange(used.size)
        key = renumber[key]
        blocks = blocks[used]
    if wanted is not None:
        absent = np.setdiff1d(wanted, blocks)
        if absent.size:
            raise ValueError(f"{path}: block {absent[0]} has no rows (its 2016 cells are "
                             "required)")
    key *= N_DETAILED_CELLS
    for name in CELL_COLUMNS:
        values = table.column(name).to_numpy()
        table = table.drop_columns([name])  # in range: every row was checked on reading
        key += np.multiply(values, _CELL_WEIGHTS[name], dtype=key_type)
        del values
    key -= 1  # cenrace counts from 1
    if key.size and np.all(key[1:] > key[:-1]):
        order = None  # already in block and cell order (as the writer writes it)
        sorted_key = key
    else:
        order = np.argsort(key, kind="stable")
        sorted_key = key[order]
    del key
    repeated = np.flatnonzero(sorted_key[1:] == sorted_key[:-1])
    if repeated.size:
        block, cell = divmod(int(sorted_key[repeated[0]]), N_DETAILED_CELLS)
        raise ValueError(f"{path}: {_cell_name(blocks[block], cell)} appears more than once")
    if sorted_key.size != blocks.size * N_DETAILED_CELLS:
        expected = np.arange(blocks.size * N_DETAILED_CELLS)
        first = int(np.setdiff1d(expected, sorted_key, assume_unique=True)[0])
        block, cell = divmod(first, N_DETAILED_CELLS)
        raise ValueError(f"{path}: {_cell_name(blocks[block], cell)} is missing (a missing "
                         "cell is never read as 0)")
    del sorted_key

    def column(name, dtype):
        values = table.column(name).to_numpy()
        return (values.astype(dtype, copy=False) if order is None
                else values[order].astype(dtype, copy=False))

    noisy = column("noisy", np.int64).reshape(blocks.size, N_DETAILED_CELLS)
    table = table.drop_columns(["noisy"])
    if noise_variance is not None:
        variance = np.full(blocks.size, float(noise_variance))
    elif "variance" in table.column_names:
        per_row = column("variance", np.float64).reshape(blocks.size, N_DETAILED_CELLS)
        variance = per_row[:, 0].copy()
        bad = np.flatnonzero(~np.isfinite(variance) | (variance <= 0))
        if bad.size:
            raise ValueError(f"{path}: variance of block {blocks[bad[0]]} is "
                             f"{float(variance[bad[0]])!r}, not a number > 0")
        uneven = np.flatnonzero((per_row.max(axis=1) != variance)
                                | (per_row.min(axis=1) != variance))
        if uneven.size:
            raise ValueError(f"{path}: variance differs between the cells of block "
                             f"{blocks[uneven[0]]} (one query, one σ²)")
        del per_row
        table = table.drop_columns(["variance"])
    else:
        raise ValueError(f"{path}: no variance column; give the noise variance "
                         "(noise_variance, --noise-variance)")
    return BlockMeasurements(blocks.astype(str), noisy, variance)


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _arrow_table(measurements: BlockMeasurements):
    """The rows of ``measurements``: geoid dictionary-encoded, cells int8, noisy int32."""
    import pyarrow as pa

    n_blocks = len(measurements.geoids)
    noisy = np.asarray(measurements.noisy, np.int64).reshape(-1)
    if noisy.size and (noisy.min() < -2**31 or noisy.max() >= 2**31):
        raise ValueError("noisy counts beyond 32-bit integers")
    cells = _CELLS
    block_of_row = np.repeat(np.arange(n_blocks, dtype=np.int32), N_DETAILED_CELLS)
    return pa.table({
        "geoid": pa.DictionaryArray.from_arrays(
            pa.array(block_of_row), pa.array(np.asarray(measurements.geoids, dtype=object),
                                             pa.string())),
        **{name: pa.array(np.tile(cells[name], n_blocks)) for name in CELL_COLUMNS},
        "noisy": pa.array(noisy.astype(np.int32)),
        "variance": pa.array(np.repeat(np.asarray(measurements.variance, np.float64),
                                       N_DETAILED_CELLS)),
    })


_CELLS = {name: values.astype(np.int8) for name, values in cell_columns().items()}
#: Parquet options of the table layout: statistics on geoid only (what readers filter on),
#: dictionaries for the repetitive columns, LZ4 (measured: 40% less CPU to write and to read
#: than the defaults, files about twice the size).
_PARQUET_OPTIONS = {"use_dictionary": ["geoid", "variance", *CELL_COLUMNS],
                    "write_statistics": ["geoid"], "compression": "lz4"}


class NoisyTableWriter:
    """Write the table layout block group by block group (a context manager).

    ``write(measurements)`` appends a set of blocks (one Parquet row group, or CSV rows);
    blocks must come in ascending GEOID order across calls, so the file is sorted and a
    reader filtering by GEOID skips whole row groups.
    """

    def __init__(self, path):
        self.path = Path(path)
        self.kind = table_format(self.path)
        self._writer = None
        self._last = ""

    def __enter__(self) -> NoisyTableWriter:
        return self

    def write(self, measurements: BlockMeasurements) -> None:
        """Append the rows of ``measurements`` (blocks after those already written)."""
        if len(measurements.geoids) == 0:
            return
        if str(measurements.geoids[0]) <= self._last:
            raise ValueError("blocks must be written in ascending GEOID order")
        self._last = str(measurements.geoids[-1])
        table = _arrow_table(measurements)
        if self.kind == "parquet":
            import pyarrow.parquet as pq

            if self._writer is None:
                self._writer = pq.ParquetWriter(self.path, table.schema, **_PARQUET_OPTIONS)
            self._writer.write_table(table, row_group_size=table.num_rows)
        else:
            import pyarrow.csv as pcsv

            if self._writer is None:
                self._writer = pcsv.CSVWriter(self.path, table.schema)
            self._writer.write_table(table)

    def close(self) -> None:
        """Finish the file (an empty table is written when no block was)."""
        if self._writer is None:
            empty = BlockMeasurements(np.array([], dtype=str),
                                      np.zeros((0, N_DETAILED_CELLS), np.int64),
                                      np.zeros(0))
            table = _arrow_table(empty)
            if self.kind == "parquet":
                import pyarrow.parquet as pq

                pq.write_table(table, self.path, **_PARQUET_OPTIONS)
            else:
                import pyarrow.csv as pcsv

                pcsv.write_csv(table, self.path)
            return
        self._writer.close()
        self._writer = None

    def __exit__(self, *exc) -> None:
        self.close()


def write_noisy_table(path, measurements: BlockMeasurements) -> None:
    """Write ``measurements`` to ``path`` in the table layout (Parquet or CSV by extension)."""
    with NoisyTableWriter(path) as writer:
        writer.write(measurements)
