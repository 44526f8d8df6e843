r"""Write noisy measurements in the released 2020 PL 94-171 persons layout (Hive-partitioned).

The tree, as the public readers expect it (checked in ``google-research/census-bluedown``
``census_bluedown/constants.py`` and ``census_bluedown/io.py``: ``NMF_PATH_SUFFIX =
'.parquet/DPQuery/'``, ``CONSTRAINT_PATH_SUFFIX = '.parquet/Constraint/'``, subtree folders
``State=0SS``/``State=1SS``, "the unique file in directory", ``US`` unpartitioned; in
``sbaldasty/dpvalue`` ``src/noisyvalue/nmf.py``: ``{US,PR}_Person_PL_PROD/{Level}.parquet``;
in ``uscensusbureau/DAS_2020_GLS_Uncertainty_Evaluation`` ``GLS/drivers/us_pl94_2020.py``:
levels ``US, State, County, Tract, Block_Group, Block``, folders ``DPQuery`` and
``Constraint``, query names ending in ``_dpq``)::

    {US,PR}_Person_PL_PROD/
        US.parquet/{DPQuery,Constraint}/part-0.parquet
        {State,County,Tract,Block_Group,Block}.parquet/{DPQuery,Constraint}/State=FSS/part-0.parquet

One row per (geounit, query): ``geocode`` (spine code, :mod:`.geography`), ``query_name``
(``"<query>_dpq"``; constraints ``hhgq_total_lb_con``, ``hhgq_total_ub_con``,
``nurse_nva_0_con``, and ``total_con`` at the US), the axis spec strings ``hhgq, votingage,
hispanic, cenrace`` (:mod:`.answers`), ``query_shape`` (list of 4 ints), ``value`` (list of
ints, the answer flattened in C order), ``variance`` (σ², the DAS's; 0 on constraint rows),
``plb`` (the query's rho as an exact fraction, text; its type in the release is not shown by
the sources checked), and ``sign`` (``=``, ``<=``, ``>=``) on constraint rows.

**Drift, on purpose.** The release's partitions were written by different jobs: integer
widths differ and DPQuery partitions may lack ``sign`` (dpvalue's reader:
``integer_cast="upcast"``, ``missing_columns="insert"``). With ``drift=True`` (the default)
partitions alternate, in sorted order of their names, between int64 lists with a null
``sign`` column and int32 lists without ``sign`` in DPQuery, so readers are tested on it.

The constraint rows are synthetic placeholders with the release's names and shapes (lower
bound 1 for each hhgq type present, upper bound the unit's total where present, the true
count of nursing-facility residents under 18): readers of the block ``detailed`` query skip
them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dprisk.inference.population.answers import AXES, query_answers, query_shape, query_specs

__all__ = ["PRODUCT_DIRS", "US_GEOCODE", "NmfWriter", "constraint_rows", "product_dir"]

#: The US geounit's geocode: empty (the GLS reader's ``TABULATION_SPINE_GEODICT`` maps code
#: length 0 to ``US``, ``GLS/drivers/us_pl94_2020.py``).
US_GEOCODE = ""

#: The persons product folder of the 50 states and DC, and of Puerto Rico.
PRODUCT_DIRS = {"US": "US_Person_PL_PROD", "PR": "PR_Person_PL_PROD"}
_PR_FIPS = "72"


def product_dir(state_fips: str) -> str:
    """``PR_Person_PL_PROD`` for Puerto Rico (FIPS 72), else ``US_Person_PL_PROD``."""
    return PRODUCT_DIRS["PR" if state_fips == _PR_FIPS else "US"]


def _schema(narrow: bool, with_sign: bool):
    import pyarrow as pa

    integer = pa.int32() if narrow else pa.int64()
    fields = [("geocode", pa.string()), ("query_name", pa.string()),
              *[(axis, pa.string()) for axis in AXES],
              ("query_shape", pa.list_(integer)), ("value", pa.list_(integer)),
              ("variance", pa.float64()), ("plb", pa.string())]
    if with_sign:
        fields.append(("sign", pa.string()))
    return pa.schema(fields)


def _rows(geocodes, query_name, specs, shape, values, variance, plb, sign=None):
    """Columns of one query's rows (``values`` of shape (n_units, n_cells))."""
    n_units, n_cells = values.shape
    return {
        "geocode": np.asarray(geocodes, dtype=object),
        "query_name": np.full(n_units, query_name, dtype=object),
        **{axis: np.full(n_units, spec, dtype=object) for axis, spec in zip(AXES, specs,
                                                                          strict=True)},
        "query_shape": (np.tile(np.asarray(shape, np.int64), n_units), 4),
        "value": (np.asarray(values, np.int64).reshape(-1), n_cells),
        "variance": np.full(n_units, float(variance)),
        "plb": np.full(n_units, str(plb), dtype=object),
        "sign": None if sign is None else np.full(n_units, sign, dtype=object),
    }


def constraint_rows(geocodes, counts: np.ndarray, *, us: bool = False) -> list[dict]:
    """The synthetic constraint rows of geounits with ``counts`` (n_units, 2016) (see above)."""
    hhgq = query_answers(counts, ["hhgq"])["hhgq"]
    total = hhgq.sum(axis=1, keepdims=True)
    nursing_minors = np.asarray(counts).reshape(-1, 8, 2, 126)[:, 3, 0, :].sum(axis=1)
    rows = [
        _rows(geocodes, "hhgq_total_lb_con", ("hhgq", "*", "*", "*"), (8, 1, 1, 1),
              (hhgq > 0).astype(np.int64), 0.0, 0, ">="),
        _rows(geocodes, "hhgq_total_ub_con", ("hhgq", "*", "*", "*"), (8, 1, 1, 1),
              np.where(hhgq > 0, total, 0), 0.0, 0, "<="),
        _rows(geocodes, "nurse_nva_0_con", ("gqNursingTotal", "nonvoting", "*", "*"),
              (1, 1, 1, 1), nursing_minors[:, None], 0.0, 0, "="),
    ]
    if us:
        rows.append(_rows(geocodes, "total_con", ("*",) * 4, (1, 1, 1, 1), total, 0.0, 0, "="))
    return rows


class NmfWriter:
    """Open Parquet writers of one released tree; ``close()`` (or ``with``) finishes them.

    Parameters
    ----------
    root : str or Path
        The directory that will hold ``US_Person_PL_PROD`` (and ``PR_Person_PL_PROD``).
    drift : bool
        Alternate integer widths and the presence of ``sign`` between partitions (above).
    """

    def __init__(self, root, *, drift: bool = True):
        self.root = Path(root)
        self.drift = drift
        self._writers: dict[tuple[str, str, str, str | None], object] = {}
        self.rows_written = 0

    def __enter__(self) -> NmfWriter:
        return self

    def _narrow(self, partition: str | None) -> bool:
        """Whether ``partition`` gets int32 and no ``sign`` in DPQuery (drift)."""
        if not self.drift or partition is None:
            return False
        fips_rank = int(partition[1:]) + int(partition[0])  # 0SS/1SS of a state alternate
        return fips_rank % 2 == 1

    def _writer(self, product: str, level: str, kind: str, partition: str | None):
        import pyarrow.parquet as pq

        key = (product, level, kind, partition)
        if key not in self._writers:
            folder = self.root / product / f"{level}.parquet" / kind
            if partition is not None:
                folder = folder / f"State={partition}"
            folder.mkdir(parents=True, exist_ok=True)
            narrow = self._narrow(partition)
            schema = _schema(narrow, with_sign=(kind == "Constraint" or not narrow))
            self._writers[key] = pq.ParquetWriter(folder / "part-0.parquet", schema)
        return self._writers[key]

    def write(self, product: str, level: str, kind: str, partition: str | None,
              rows: list[dict]) -> None:
        """Append ``rows`` (column dicts of :func:`_rows`) to one partition's file."""
        import pyarrow as pa

        writer = self._writer(product, level, kind, partition)
        schema = writer.schema
        for row in rows:
            columns = {}
            for field in schema:
                data = row.get(field.name)
                if field.name in ("query_shape", "value"):
                    flat, width = data
                    offsets = np.arange(0, flat.size + 1, width, dtype=np.int32)
                    columns[field.name] = pa.ListArray.from_arrays(
                        pa.array(offsets), pa.array(flat, field.type.value_type))
                elif data is None:
                    columns[field.name] = pa.nulls(len(row["geocode"]), field.type)
                else:
                    columns[field.name] = pa.array(data, field.type)
            writer.write_table(pa.table(columns, schema=schema))
            self.rows_written += len(row["geocode"])

    def write_level(self, level: str, geocodes, counts: np.ndarray, noise: dict,
                    level_noise) -> None:
        """DPQuery and Constraint rows of geounits ``geocodes`` (each into its partition).

        ``noise[q]`` (n_units, n_q) is added to the true answers of ``counts``; σ² and plb come
        from ``level_noise`` (:class:`dprisk.inference.population.noise.LevelNoise`). The
        partition (and the product, ``PR`` for state 72) is read off each geocode; the US
        level (geocode ``""``) goes to ``US_Person_PL_PROD/US.parquet`` unpartitioned.
        """
        geocodes = np.asarray(geocodes, dtype=object)
        counts = np.asarray(counts, np.int64)
        partitions = np.array([None if level == "US" else g[:3] for g in geocodes],
                              dtype=object)
        answers = query_answers(counts, list(noise))
        for partition in sorted(set(partitions), key=str):
            rows = partitions == partition
            product = PRODUCT_DIRS["US"] if partition is None else product_dir(partition[1:])
            dpq = [_rows(geocodes[rows], f"{q}_dpq", query_specs(q), query_shape(q),
                         answers[q][rows] + noise[q][rows], level_noise.variance(q),
                         level_noise.plb(q)) for q in noise]
            self.write(product, level, "DPQuery", partition, dpq)
            self.write(product, level, "Constraint", partition,
                       constraint_rows(geocodes[rows], counts[rows], us=(level == "US")))

    def close(self) -> None:
        """Finish every file."""
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()

    def __exit__(self, *exc) -> None:
        self.close()
