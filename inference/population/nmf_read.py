r"""Read one state's block ``detailed`` query from the released noisy-measurement layout, lazily.

Layout and readers checked (see :mod:`.nmf_write` for the tree): the Census Bureau's Spark
reader (``uscensusbureau/DAS_2020_GLS_Uncertainty_Evaluation`` ``GLS/main_two_pass_alg.py``
reads ``{reader_path}/{geolevel}.parquet/DPQuery``, keys rows by ``geocode`` and
``query_name[:-4]`` (the ``_dpq`` suffix, ``QUERY_NAME_SUFFIX_LEN = 4`` in
``GLS/drivers/us_pl94_2020.py``) and takes each row's ``value`` and ``variance``);
``google-research/census-bluedown`` ``census_bluedown/io.py`` (one file per
``{Level}.parquet/DPQuery/State=FSS/`` folder) and ``constants.py`` (``DETAILED_QUERY_SHAPE =
(8, 2, 2, 63)``, partitions ``State=0SS``/``State=1SS``); ``sbaldasty/dpvalue``
``src/noisyvalue/nmf.py`` (partitions filtered on ``State`` before collecting; schema drift
between partitions: integer widths upcast, a missing ``sign`` column inserted as null; the
block GEOID from the geocode's last 16 characters).

:func:`read_nmf_block_detailed` opens ``{PROD}/Block.parquet/DPQuery`` as a
``pyarrow.dataset`` with an explicit schema (``value`` and ``query_shape`` as int64 lists,
``sign`` optional: each fragment is cast to it, so int32 partitions and partitions without
``sign`` unify) and Hive partitioning on ``State`` as text; the filter ``State in {0SS, 1SS}
and query_name == "detailed_dpq"`` prunes every other partition before any file is opened, and
row batches are streamed, keeping only the wanted blocks; with ``geoids`` a row group's
``value`` lists are decoded only where its geocodes hold a wanted block
(``_detailed_batches``). ``variance`` is each row's own.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from dprisk.inference.population.categories import N_DETAILED_CELLS
from dprisk.inference.population.geography import geocode_to_geoid
from dprisk.inference.population.measurements import BlockMeasurements
from dprisk.inference.population.nmf_write import product_dir

__all__ = ["DETAILED_QUERY", "detailed_dataset", "read_nmf_block_detailed"]

#: The block ``detailed`` query's name in the files.
DETAILED_QUERY = "detailed_dpq"
_DETAILED_SHAPE = [8, 2, 2, 63]


def _read_schema():
    import pyarrow as pa

    return pa.schema([("geocode", pa.string()), ("query_name", pa.string()),
                      ("query_shape", pa.list_(pa.int64())), ("value", pa.list_(pa.int64())),
                      ("variance", pa.float64()), ("sign", pa.string()),
                      ("State", pa.string())])


#: What each read column must hold, as a refusal states it.
_COLUMN_KINDS = {"geocode": "text", "query_name": "text", "query_shape": "a list of integers",
                 "value": "a list of integers", "variance": "a number", "sign": "text"}
#: Columns every DPQuery file holds (``sign`` may be absent: read as null).
_REQUIRED_COLUMNS = ("geocode", "query_name", "query_shape", "value", "variance")


def _check_column_types(fragments, schema) -> None:
    """Each file holds the read columns and they can be cast to the read ``schema``.

    The scanner reads a column a file lacks as null (so ``sign``, absent from some DPQuery
    partitions, unifies) and casts every file's columns to ``schema``. A file without one of
    :data:`_REQUIRED_COLUMNS` was read as null values (refused as 'variance nan', 'value holds
    0 numbers', 'no detailed_dpq row', naming neither file nor column), and a column of a type
    Arrow has no cast for (text where ``value`` holds a list) would fail in the scan without
    naming the file or the column. Raises ValueError naming both (and what the column must
    hold).
    """
    import pyarrow as pa

    for fragment in fragments:
        physical = fragment.physical_schema
        try:
            names = physical.names
        except UnicodeDecodeError as err:
            raise ValueError(f"{fragment.path}: a column name is not UTF-8 text "
                             f"({err.object[:40]!r})") from None
        missing = [name for name in _REQUIRED_COLUMNS if name not in names]
        if missing:
            raise ValueError(f"{fragment.path}: no column {missing[0]!r} (a DPQuery file of "
                             f"the released layout has {', '.join(_REQUIRED_COLUMNS)})")
        for name, kind in _COLUMN_KINDS.items():
            if name not in names:
                continue
            have = physical.field(name).type
            try:
                pa.array([], have).cast(schema.field(name).type)
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
                raise ValueError(f"{fragment.path}: column {name!r} is {have}, not {kind}") \
                    from None


def _name_uncastable_column(fragments, schema) -> None:
    """Raise ValueError naming the first file and column whose values do not cast to ``schema``.

    Called when the scan failed: a type Arrow casts (a list of doubles as ``value``) can still
    hold a value it cannot cast without loss (17.5 as an integer), and the scan's error names
    neither the file nor the column. Each file's read columns are cast alone; returns quietly
    when every one casts (the scan's error was something else).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    unreadable = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OSError,
                  UnicodeDecodeError)
    for fragment in fragments:
        for name, kind in _COLUMN_KINDS.items():
            try:  # a file that cannot be read at all is the scan's error, not a column's
                if name not in fragment.physical_schema.names:
                    continue
                column = pq.read_table(fragment.path, columns=[name]).column(name)
            except unreadable:
                break
            try:
                column.cast(schema.field(name).type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as err:
                first = str(err).splitlines()[0] if str(err) else type(err).__name__
                raise ValueError(f"{fragment.path}: column {name!r} holds a value that is not "
                                 f"{kind} ({first})") from None


def detailed_dataset(nmf_dir, state: str):
    """The lazy dataset of ``Block.parquet/DPQuery`` and the filter of ``state``'s rows.

    Returns
    -------
    (pyarrow.dataset.Dataset, pyarrow.dataset.Expression)
    """
    import pyarrow as pa
    import pyarrow.dataset as ds

    folder = Path(nmf_dir) / product_dir(state) / "Block.parquet" / "DPQuery"
    if not folder.is_dir():
        raise ValueError(f"{nmf_dir}: no {folder.relative_to(Path(nmf_dir))} folder (the "
                         "released layout: DIR/US_Person_PL_PROD/Block.parquet/DPQuery/State=FSS)")
    partitioning = ds.partitioning(pa.schema([("State", pa.string())]), flavor="hive")
    dataset = ds.dataset(folder, format="parquet", partitioning=partitioning,
                         schema=_read_schema(), exclude_invalid_files=False)
    wanted = (ds.field("State").isin([f"0{state}", f"1{state}"])
              & (ds.field("query_name") == DETAILED_QUERY))
    return dataset, wanted


#: The columns read of a block ``detailed_dpq`` row.
_READ_COLUMNS = ["geocode", "query_shape", "value", "variance"]


def _detailed_batches(dataset, fragments, wanted, keep):
    """The ``detailed_dpq`` rows' batches: the state's, or the row groups holding ``keep``.

    With ``keep`` (a partition's blocks) each row group's ``geocode`` column is read first
    (every geocode checked, as a whole read checks it), and the row group's ``value`` lists
    -- 2,016 numbers a block -- only where one of ``keep`` is: a partition of a few blocks
    no longer decodes the whole state's (a 60,000-block state: 3.9 s of CPU and a 1.4 GB
    peak for 3 blocks).
    """
    if keep is None:
        yield from dataset.scanner(columns=_READ_COLUMNS, filter=wanted,
                                   batch_size=4096).to_batches()
        return
    for fragment in fragments:
        for row_group in fragment.split_by_row_group(filter=wanted, schema=dataset.schema):
            codes = row_group.to_table(schema=dataset.schema, columns=["geocode"],
                                       filter=wanted).column("geocode").to_pylist()
            if not any(g in keep for g in geocode_to_geoid(codes)):
                continue
            yield from row_group.to_batches(schema=dataset.schema, columns=_READ_COLUMNS,
                                            filter=wanted, batch_size=4096)


def read_nmf_block_detailed(nmf_dir, state, geoids=None) -> BlockMeasurements:
    r"""The block ``detailed`` noisy counts of ``state`` from the released layout.

    Parameters
    ----------
    nmf_dir : str or Path
        The folder holding ``US_Person_PL_PROD`` (``PR_Person_PL_PROD`` for state 72).
    state : str
        Two-digit state FIPS code (``"26"``); both branches ``State=0SS`` and ``State=1SS``.
    geoids : iterable of str, optional
        15-character block GEOIDs wanted (default: every block of the state).

    Returns
    -------
    BlockMeasurements
        Sorted by GEOID; ``noisy[i, ((h*2 + v)*2 + x)*63 + c]`` is the ``value`` entry of the
        block's ``detailed_dpq`` row, ``variance[i]`` that row's ``variance`` (σ²).

    Raises
    ------
    ValueError
        A state that is not two digits or has no rows in the files (named); a row whose
        ``query_shape`` is not [8, 2, 2, 63] or whose ``value`` does not hold 2016 numbers; a
        block appearing twice; a requested block absent; a variance that is not > 0; a file
        without one of the columns geocode, query_name, query_shape, value, variance or
        whose column has a type that cannot be cast to the read schema or holds a value that
        cannot be cast without loss (the file and column named) or that cannot be read.
    """
    import pyarrow as pa

    state = str(state)
    if not re.fullmatch(r"[0-9]{2}", state):
        raise ValueError(f"state must be a two-digit FIPS code, got {state!r}")
    dataset, wanted = detailed_dataset(nmf_dir, state)
    fragments = list(dataset.get_fragments(filter=wanted))
    if not fragments:
        raise ValueError(f"state {state}: no partition State=0{state} or State=1{state} in "
                         f"{nmf_dir}")
    keep = None if geoids is None else set(map(str, geoids))
    found_geoids, values, variances = [], [], []
    try:
        _check_column_types(fragments, dataset.schema)
        for batch in _detailed_batches(dataset, fragments, wanted, keep):
            if batch.num_rows == 0:
                continue
            geocodes = batch.column("geocode").to_pylist()
            block_geoids = geocode_to_geoid(geocodes)
            rows = (np.arange(len(block_geoids)) if keep is None else
                    np.flatnonzero([g in keep for g in block_geoids]))
            if rows.size == 0:
                continue
            shapes = batch.column("query_shape")
            value = batch.column("value")
            for i in rows:
                if shapes[int(i)].as_py() != _DETAILED_SHAPE:
                    raise ValueError(f"block {geocodes[i]}: detailed_dpq query_shape is "
                                     f"{shapes[int(i)].as_py()}, not {_DETAILED_SHAPE}")
            lengths = np.diff(value.offsets.to_numpy())[rows]
            if np.any(lengths != N_DETAILED_CELLS):
                bad = rows[np.flatnonzero(lengths != N_DETAILED_CELLS)[0]]
                raise ValueError(f"block {geocodes[bad]}: detailed_dpq value holds "
                                 f"{int(np.diff(value.offsets.to_numpy())[bad])} numbers, "
                                 f"not {N_DETAILED_CELLS}")
            taken = value.take(pa.array(rows))
            cells = taken.flatten()
            if cells.null_count:  # an empty entry is not a number (nor 0)
                flat = np.flatnonzero(cells.is_null().to_numpy(zero_copy_only=False))[0]
                bad = rows[flat // N_DETAILED_CELLS]  # every row holds 2016 (checked)
                raise ValueError(f"block {geocodes[bad]}: detailed_dpq value holds an empty "
                                 f"entry (null) at cell {flat % N_DETAILED_CELLS}, not a "
                                 "number")
            values.append(cells.to_numpy().astype(np.int64, copy=False)
                          .reshape(rows.size, N_DETAILED_CELLS))
            variances.append(batch.column("variance").to_numpy(zero_copy_only=False)[rows])
            found_geoids.append(block_geoids[rows])
    except UnicodeDecodeError as err:  # a geocode
        raise ValueError(f"state {state}: the block detailed_dpq rows cannot be read (text "
                         f"that is not UTF-8: {err.object[:40]!r})") from None
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OSError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        _name_uncastable_column(fragments, dataset.schema)
        raise ValueError(f"state {state}: the block detailed_dpq rows cannot be read "
                         f"({first})") from None
    if not found_geoids:
        if keep:
            raise ValueError(f"state {state}: block {min(keep)} has no detailed_dpq row")
        raise ValueError(f"state {state}: no detailed_dpq row at the Block level")
    all_geoids = np.concatenate(found_geoids).astype(str)
    order = np.argsort(all_geoids, kind="stable")
    all_geoids = all_geoids[order]
    twice = np.flatnonzero(all_geoids[1:] == all_geoids[:-1])
    if twice.size:
        raise ValueError(f"state {state}: block {all_geoids[twice[0]]} has two detailed_dpq "
                         "rows")
    if keep is not None:
        absent = sorted(keep.difference(all_geoids))
        if absent:
            raise ValueError(f"state {state}: block {absent[0]} has no detailed_dpq row")
    variance = np.concatenate(variances).astype(np.float64)[order]
    bad = np.flatnonzero(~np.isfinite(variance) | (variance <= 0))
    if bad.size:
        raise ValueError(f"state {state}: block {all_geoids[bad[0]]} has variance "
                         f"{float(variance[bad[0]])!r}, not a number > 0")
    position = np.empty(order.size, np.int64)
    position[order] = np.arange(order.size)
    noisy = np.empty((order.size, N_DETAILED_CELLS), np.int64)
    start = 0
    for i, batch_values in enumerate(values):  # placed in GEOID order, each batch freed
        values[i] = None
        noisy[position[start:start + len(batch_values)]] = batch_values
        start += len(batch_values)
    return BlockMeasurements(all_geoids, noisy, variance)
