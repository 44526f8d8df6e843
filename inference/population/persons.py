"""The persons file: one row per person, read and checked once.

A persons file is Parquet (``.parquet``, ``.pq``) or CSV (``.csv``), by its extension, with
the columns (others are ignored)

* ``geoid``: the 15-character block GEOID (state 2, county 3, tract 6, block 4 digits);
* ``hhgq``: 0 household, 1-7 the group-quarters types in the DAS order;
* ``votingage``: 0 under 18, 1 18 and over;
* ``hispanic``: 0 not Hispanic, 1 Hispanic;
* ``cenrace``: 1-63 in the Census order (1 White alone ... 63 all six races).

:func:`read_persons` returns them as a ``pandas.DataFrame`` in the file's row order (the
order every per-person output keeps). A file that is neither, a missing column, a value that
is not an integer or outside its range, one of the columns twice, or a GEOID that is not 15
digits is refused with a ``ValueError`` naming the file, the column and the first bad row
(0-based, in file order).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["COLUMNS", "PERSONS_SUFFIXES", "RANGES", "check_persons", "count_persons",
           "iter_persons", "read_persons"]

#: The columns of a persons file, in order.
COLUMNS = ("geoid", "hhgq", "votingage", "hispanic", "cenrace")
#: Allowed integer ranges (inclusive) of the integer columns.
RANGES = {"hhgq": (0, 7), "votingage": (0, 1), "hispanic": (0, 1), "cenrace": (1, 63)}
#: File extensions read as Parquet and as CSV.
PERSONS_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}
#: Characters of a block GEOID.
GEOID_LENGTH = 15


def _kind(path: Path, name: str) -> str:
    kind = PERSONS_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"{name} {str(path)!r}: not a Parquet or CSV file (the extension must "
                         f"be one of {', '.join(PERSONS_SUFFIXES)})")
    if path.is_dir():  # a Parquet dataset folder (as Spark writes one) is not read
        raise ValueError(f"{name} {str(path)!r}: a directory, not a file (give one Parquet "
                         "or CSV file)")
    if not path.is_file():
        raise ValueError(f"{name} {str(path)!r}: no such file")
    return kind


def _check_distinct_columns(path: Path, kind: str, where: str) -> None:
    """Refuse a file holding one of :data:`COLUMNS` twice (naming it).

    pandas read a CSV header ``...,cenrace,cenrace`` as ``cenrace`` and ``cenrace.1`` and took
    the first without a word; a Parquet file with two fields of one name failed in pandas
    ('DataFrame' object has no attribute 'dtype'). A file whose header cannot be read is left
    to the reader's own refusal.
    """
    import csv

    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            names = pq.read_schema(path).names
        else:
            with open(path, encoding="utf-8-sig", newline="") as text:
                names = next(csv.reader(text), [])
    except Exception:  # unreadable: the reader's own refusal names why
        return
    for column in COLUMNS:
        count = names.count(column)
        if count > 1:
            raise ValueError(f"{where}: column {column} appears {count} times (a persons file "
                             f"has each of {', '.join(COLUMNS)} once)")


def read_persons(path, *, name: str = "persons"):
    """Read and check a persons file (the module's format); rows in the file's order.

    Parameters
    ----------
    path : str or Path
        ``.parquet``/``.pq`` (Parquet) or ``.csv``.
    name : str
        The parameter named in refusals (``--persons`` on the command line).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COLUMNS`: ``geoid`` categorical (one str per block: 4 bytes a person),
        the others as int8; a default index.

    Raises
    ------
    ValueError
        Naming ``name``, the file, and the column and first bad row where one is.
    """
    import pandas as pd

    path = Path(path)
    kind = _kind(path, name)
    _check_distinct_columns(path, kind, f"{name} {str(path)!r}")
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            available = pq.read_schema(path).names
            columns = [c for c in COLUMNS if c in available]
            frame = pd.read_parquet(path, columns=columns, engine="pyarrow")
        else:
            frame = pd.read_csv(path, dtype={"geoid": str}, keep_default_na=False)
    except (OSError, ValueError, pd.errors.ParserError) as err:
        if isinstance(err, FileNotFoundError):
            raise ValueError(f"{name} {str(path)!r}: no such file") from None
        raise ValueError(f"{name} {str(path)!r}: not a readable {kind} file "
                         f"({type(err).__name__}: {str(err)[:200]})") from None
    except Exception as err:  # pyarrow's own errors (ArrowInvalid is a ValueError; others)
        raise ValueError(f"{name} {str(path)!r}: not a readable {kind} file "
                         f"({type(err).__name__}: {str(err)[:200]})") from None
    return check_persons(frame, f"{name} {str(path)!r}")


def count_persons(path, *, name: str = "persons", batch_rows: int = 1_000_000) -> int:
    """The persons (rows) of a persons file, counted without holding them (for sizing).

    Parquet: its footer's row count, nothing else read (a footer that cannot be read is
    counted by :func:`iter_persons`, which refuses it as :func:`read_persons` does); CSV: the
    rows of :func:`iter_persons`' batches (each checked, so a bad row is refused here, named
    as :func:`read_persons` names it), at most ``batch_rows`` held at once.
    """
    path = Path(path)
    if _kind(path, name) == "parquet":
        import pyarrow.parquet as pq

        try:
            return int(pq.ParquetFile(path).metadata.num_rows)
        except Exception:  # unreadable: counted (and refused) by the batches below
            pass
    return sum(len(frame) for _, frame in iter_persons(path, name=name, batch_rows=batch_rows))


def iter_persons(path, *, name: str = "persons", batch_rows: int = 1_000_000):
    """Read and check a persons file in batches of at most ``batch_rows`` rows, in file order.

    Yields ``(first_row, frame)``: the file row of the batch's first row and the batch as
    :func:`read_persons` returns a whole file (its own default index; refusals name the
    file's row). Parquet is read by record batches (``pyarrow.parquet.ParquetFile
    .iter_batches``), CSV by chunks (``pandas.read_csv(chunksize=...)``): no more than one
    batch is held, whatever the file's size.

    Raises
    ------
    ValueError
        As :func:`read_persons`; a file without rows is refused once it is read through.
    """
    import pandas as pd

    path = Path(path)
    kind = _kind(path, name)
    where = f"{name} {str(path)!r}"
    _check_distinct_columns(path, kind, where)
    first_row = 0
    source = None  # closed however the batches end (a refusal, a consumer stopping early)
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            source = pq.ParquetFile(path)
            columns = [c for c in COLUMNS if c in source.schema_arrow.names]
            chunks = (batch.to_pandas() for batch in source.iter_batches(
                batch_size=batch_rows, columns=columns, use_pandas_metadata=False))
        else:
            chunks = source = pd.read_csv(path, dtype={"geoid": str}, keep_default_na=False,
                                          chunksize=batch_rows)
        for frame in chunks:
            if len(frame) == 0:
                continue
            if first_row == 0:
                missing = [c for c in COLUMNS if c not in frame.columns]
                if missing:
                    check_persons(frame, where)  # refuses, naming the missing columns
            yield first_row, check_persons(frame.reset_index(drop=True), where, first_row)
            first_row += len(frame)
    except (OSError, pd.errors.ParserError) as err:
        raise ValueError(f"{where}: not a readable {kind} file "
                         f"({type(err).__name__}: {str(err)[:200]})") from None
    except Exception as err:  # pyarrow's own errors (ArrowInvalid is a ValueError)
        if isinstance(err, ValueError) and str(err).startswith(where):
            raise  # check_persons's refusal
        raise ValueError(f"{where}: not a readable {kind} file "
                         f"({type(err).__name__}: {str(err)[:200]})") from None
    finally:
        if source is not None:
            source.close()
    if first_row == 0:
        raise ValueError(f"{where}: no persons (the file has no rows)")


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def check_persons(frame, where: str = "persons", first_row: int = 0):
    """Check a persons table (the module's columns and ranges); return it normalised.

    ``where`` starts every refusal; ``first_row`` is the file row of the table's first row
    (a batch of a file read in parts names the file's row). Returns a new DataFrame with
    columns :data:`COLUMNS`, ``geoid`` categorical (str categories) and the others int8,
    index 0..n-1.
    """
    import pandas as pd

    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)} (a persons file "
                         f"has columns {', '.join(COLUMNS)})")
    if len(frame) == 0:
        raise ValueError(f"{where}: no persons (the file has no rows)")
    out = {}
    codes, uniques = pd.factorize(frame["geoid"], use_na_sentinel=True)
    if (codes < 0).any():
        raise ValueError(f"{where}: column geoid: row {first_row + _first_bad(codes < 0)} "
                         "is empty")
    texts = [str(u) for u in uniques]
    valid = np.fromiter((len(t) == GEOID_LENGTH and t.isascii() and t.isdigit()
                         for t in texts), dtype=bool, count=len(texts))
    if not valid.all():
        row = _first_bad(~valid[codes])
        raise ValueError(f"{where}: column geoid: row {first_row + row} holds "
                         f"{texts[codes[row]]!r}, not a "
                         f"{GEOID_LENGTH}-digit block GEOID (state 2, county 3, tract 6, "
                         "block 4 digits)")
    # one string per block, not per person: 4 bytes a person instead of a Python str
    out["geoid"] = pd.Categorical.from_codes(codes, categories=pd.Index(texts, dtype=object))
    for column, (low, high) in RANGES.items():
        values = frame[column]
        if pd.api.types.is_integer_dtype(values.dtype) and not values.hasnans:
            numeric = values.to_numpy(dtype=np.int64)
            bad = np.zeros(numeric.size, dtype=bool)
        else:
            numeric = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float,
                                                                      na_value=np.nan)
            bad = ~np.isfinite(numeric) | (numeric != np.round(numeric))
        if bad.any():
            row = _first_bad(bad)
            raise ValueError(f"{where}: column {column}: row {first_row + row} holds "
                             f"{values.iloc[row]!r}, not an integer")
        bad = (numeric < low) | (numeric > high)
        if bad.any():
            row = _first_bad(bad)
            raise ValueError(f"{where}: column {column}: row {first_row + row} holds "
                             f"{int(numeric[row])}, outside {low}-{high}")
        out[column] = numeric.astype(np.int8 if high < 128 else np.int16)
    return pd.DataFrame(out)
