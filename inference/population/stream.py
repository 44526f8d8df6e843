r"""Every person of a persons file of any size, in bounded memory.

:func:`file_risk` is :func:`dprisk.inference.population.risk.population_risk` for a persons
*file* that is never held whole. Memory is bounded by ``batch_rows`` (rows read or written at
once) and ``partition_persons`` times the partitions in flight, not by the population:

1. **Scan** (:func:`scan_tracts`): the file is read and checked batch by batch
   (:func:`dprisk.inference.population.persons.iter_persons`), keeping only the persons per
   tract (first 11 GEOID characters). Tracts in GEOID order are cut into partitions of whole
   tracts exactly as :func:`dprisk.inference.population.partitions.split_person_rows` cuts
   them (:func:`~dprisk.inference.population.partitions.tract_cuts`).
2. **Spill**: a second pass writes each batch's persons, with their file rows, to one Parquet
   piece per partition it touches (``work/in/NNNNNN/BBBBBB.parquet``).
3. **Compute**: each partition's pieces are read back in file-row order -- the same persons,
   in the same order, as the in-memory path gives it -- and computed by
   :func:`dprisk.inference.population.partitions.streamed_task` (its own measurements read
   by the loader, kept in the store when there is one: a rerun skips finished partitions) in
   this process or on Dask, at most ``in_flight`` partitions at a time. Only the partition's
   tally comes back into the summary (exact sums: any partitioning, worker count or order of
   completion gives the same bits); the per-person answers, when kept, are split by output
   chunk of ``batch_rows`` file rows (``work/out/CCCCCC/NNNNNN.npz``).
4. **Write** (:meth:`FileRisk.write_persons`): the file is read a third time, batch by
   batch, each batch joined to its chunk's answers and appended to one Parquet file
   (``pyarrow.parquet.ParquetWriter``): the input's rows in the input's order.

The answers equal the in-memory path's to the last bit (the same partitions, the same
persons in the same order, the same pure function of each).
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dprisk.inference.population.metrics import Tally, summary_payload

__all__ = ["BATCH_ROWS", "OUTPUT_SCHEMA_COLUMNS", "FileRisk", "file_risk", "scan_tracts"]

#: Default rows read, spilled or written at once (about 100 bytes each while held).
BATCH_ROWS = 1_000_000
#: The columns of the written persons file, in order, after the persons' own columns.
OUTPUT_SCHEMA_COLUMNS = ("posterior_true", "map", "map_posterior", "fdp_bound")


def _tracts_of_blocks(frame) -> tuple[np.ndarray, np.ndarray]:
    """The batch's tracts (sorted str) and each of its GEOID categories' index among them."""
    import pandas as pd

    per_category = pd.Series(np.asarray(frame["geoid"].cat.categories, dtype=str))
    codes, tracts = pd.factorize(per_category.str.slice(0, 11), sort=True)
    return np.asarray(tracts, dtype=str), codes


def _tract_of_batch(frame) -> tuple[np.ndarray, np.ndarray]:
    """The batch's tracts (sorted str) and each row's index among them."""
    tracts, block_tract = _tracts_of_blocks(frame)
    return tracts, block_tract[frame["geoid"].cat.codes.to_numpy()]


def scan_tracts(path, *, name: str = "persons", batch_rows: int = BATCH_ROWS,
                blocks: bool = False):
    """``(tracts, counts, rows)``: the file's tracts (sorted), their persons, its rows.

    Reads and checks the whole file batch by batch (a refusal names its row). With
    ``blocks``, a fourth array: each tract's blocks, at most (the distinct blocks of each
    batch, added over the batches: exact when no block's persons span two batches, as in a
    file sorted by GEOID, and never below the truth), for sizing a partition's measurements.
    """
    from dprisk.inference.population.persons import iter_persons

    totals: dict[str, int] = {}
    block_totals: dict[str, int] = {}
    rows = 0
    for _, frame in iter_persons(path, name=name, batch_rows=batch_rows):
        tracts, block_tract = _tracts_of_blocks(frame)
        block = frame["geoid"].cat.codes.to_numpy()
        for tract, count in zip(tracts, np.bincount(block_tract[block],
                                                    minlength=tracts.size)):
            totals[tract] = totals.get(tract, 0) + int(count)
        if blocks:
            used = block_tract[np.unique(block)]  # the tract of each of this batch's blocks
            for tract, count in zip(tracts, np.bincount(used, minlength=tracts.size)):
                block_totals[tract] = block_totals.get(tract, 0) + int(count)
        rows += len(frame)
    tracts = np.asarray(sorted(totals), dtype=str)
    counts = np.asarray([totals[t] for t in tracts], dtype=np.int64)
    if blocks:
        return tracts, counts, rows, np.asarray([block_totals.get(t, 0) for t in tracts],
                                                dtype=np.int64)
    return tracts, counts, rows


@dataclass
class FileRisk:
    """The population's tally and, when kept, where its per-person answers wait to be joined."""

    tally: Tally
    partitions: int
    variance_range: tuple
    persons: int
    source: Path
    name: str
    batch_rows: int
    work: Path | None = None
    _owns_work: bool = field(default=False, repr=False)

    def summary(self) -> dict:
        """The JSON summary (:func:`dprisk.inference.population.metrics.summary_payload`)."""
        return summary_payload(self.tally)

    def write_persons(self, path) -> None:
        """Write the persons file's rows, in its order, with their answers (module step 4).

        Written atomically (:func:`~dprisk.runtime.output_files.atomic_path`: a temporary
        beside ``path`` moved onto it once complete), so a failure or a stop leaves ``path``
        as it was. ``path`` naming the persons file itself (which is read while writing) is
        refused with a ``ValueError``.
        """
        import os

        import pyarrow as pa
        import pyarrow.parquet as pq

        from dprisk.inference.population.persons import COLUMNS, iter_persons
        from dprisk.runtime.output_files import atomic_path

        if self.work is None:
            raise ValueError("the per-person answers were not kept (keep_answers=False)")
        if os.path.exists(path) and os.path.samefile(path, self.source):
            raise ValueError(f"path {str(path)!r} is the {self.name} file being read; write "
                             "the answers to another file")
        schema = pa.schema([("geoid", pa.string()),
                            *[(c, pa.int8()) for c in COLUMNS[1:]],
                            ("posterior_true", pa.float64()), ("map", pa.int16()),
                            ("map_posterior", pa.float64()), ("fdp_bound", pa.float64())])
        chunks: dict[int, dict] = {}
        with atomic_path(Path(path)) as tmp, pq.ParquetWriter(tmp, schema) as writer:
            for first, frame in iter_persons(self.source, name=self.name,
                                             batch_rows=self.batch_rows):
                stop = first + len(frame)
                wanted = range(first // self.batch_rows, (stop - 1) // self.batch_rows + 1)
                for old in [c for c in chunks if c not in wanted]:
                    del chunks[old]
                for chunk in wanted:
                    if chunk not in chunks:
                        chunks[chunk] = self._chunk(chunk)
                answers = {k: np.concatenate([
                    chunks[c][k][max(first - c * self.batch_rows, 0):
                                 max(min(stop - c * self.batch_rows, self.batch_rows), 0)]
                    for c in wanted]) for k in OUTPUT_SCHEMA_COLUMNS}
                columns = [pa.array(np.asarray(frame["geoid"].astype(str), dtype=object),
                                    pa.string()),
                           *[pa.array(frame[c].to_numpy(np.int8)) for c in COLUMNS[1:]],
                           pa.array(answers["posterior_true"]),
                           pa.array(answers["map"].astype(np.int16)),
                           pa.array(answers["map_posterior"]), pa.array(answers["fdp_bound"])]
                writer.write_table(pa.Table.from_arrays(columns, schema=schema))

    def _chunk(self, chunk: int) -> dict:
        """The answers of file rows ``[chunk * batch_rows, ...)``, from their pieces."""
        start = chunk * self.batch_rows
        size = min(self.batch_rows, self.persons - start)
        out = {"posterior_true": np.full(size, np.nan), "map": np.full(size, -1, np.int64),
               "map_posterior": np.full(size, np.nan), "fdp_bound": np.full(size, np.nan)}
        filled = 0
        for piece in sorted((self.work / "out" / f"{chunk:06d}").glob("*.npz")):
            with np.load(piece, allow_pickle=False) as data:
                local = data["rows"] - start
                for key in out:
                    out[key][local] = data[key]
                filled += local.size
        if filled != size:
            raise RuntimeError(f"rows {start}-{start + size - 1}: {filled} answers of {size}")
        return out

    def close(self) -> None:
        """Remove the working directory this object made."""
        if self._owns_work and self.work is not None:
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = None

    def __enter__(self) -> FileRisk:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _spill(path, name: str, batch_rows: int, tracts: np.ndarray, part_of_tract: np.ndarray,
           folder: Path) -> None:
    """Write each batch's persons (with file rows) into one piece per partition it touches."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dprisk.inference.population.persons import COLUMNS, iter_persons

    for batch, (first, frame) in enumerate(iter_persons(path, name=name,
                                                        batch_rows=batch_rows)):
        batch_tracts, codes = _tract_of_batch(frame)
        part = part_of_tract[np.searchsorted(tracts, batch_tracts)][codes]
        order = np.argsort(part, kind="stable")  # file order within a partition
        bounds = np.flatnonzero(np.diff(part[order])) + 1
        geoid = np.asarray(frame["geoid"].astype(str), dtype=object)
        for rows in np.split(order, bounds):
            target = folder / f"{int(part[rows[0]]):06d}"
            target.mkdir(exist_ok=True)
            table = pa.table({"row": pa.array(first + rows.astype(np.int64)),
                              "geoid": pa.array(geoid[rows], pa.string()),
                              **{c: pa.array(frame[c].to_numpy()[rows]) for c in COLUMNS[1:]}})
            pq.write_table(table, target / f"{batch:06d}.parquet")


def _read_partition(folder: Path):
    """``(rows, persons)`` of one partition's pieces, in file-row order."""
    import pandas as pd
    import pyarrow.parquet as pq

    frame = pd.concat([pq.read_table(p).to_pandas() for p in sorted(folder.glob("*.parquet"))],
                      ignore_index=True)
    frame = frame.sort_values("row", kind="stable").reset_index(drop=True)
    rows = frame.pop("row").to_numpy(np.int64)
    frame["geoid"] = pd.Categorical(frame["geoid"])
    return rows, frame


def _split_answers(result: dict, batch_rows: int, folder: Path, index: int) -> None:
    """Write one partition's answers as one piece per output chunk of ``batch_rows`` rows."""
    rows = np.asarray(result["rows"])
    order = np.argsort(rows, kind="stable")
    chunk = rows[order] // batch_rows
    bounds = np.flatnonzero(np.diff(chunk)) + 1
    for take in np.split(order, bounds):
        target = folder / f"{int(rows[take[0]] // batch_rows):06d}"
        target.mkdir(exist_ok=True)
        np.savez(target / f"{index:06d}.npz", rows=rows[take],
                 **{k: np.asarray(result[k])[take] for k in OUTPUT_SCHEMA_COLUMNS})


def _compute(task, *, adversary, prior, store):
    """One partition on a worker or here: its result with file rows (partitions' task).

    A refusal of the partition's inputs (``ValueError``) comes back as a
    :class:`~dprisk.inference.population.partitions.Refusal`, an answer rather than a failed
    task, so that a Dask worker does not log it with a traceback; :func:`_run` raises it here.
    """
    from dprisk.inference.population.partitions import streamed_answer

    return streamed_answer(task, adversary=adversary, prior=prior, store=store)


def file_risk(path, loader, *, name: str = "persons", adversary: str = "informed",
              prior="tract", partition_persons: int | None = None,
              batch_rows: int = BATCH_ROWS, client=None, store=None, work=None,
              keep_answers: bool = True, in_flight: int | None = None,
              progress: bool = False, scanned=None) -> FileRisk:
    """Every person's posterior of a persons file, in bounded memory (module docstring).

    Parameters
    ----------
    path : str or Path
        The persons file (Parquet or CSV).
    loader : callable
        ``geoids -> BlockMeasurements`` (sorted GEOIDs of one partition's blocks).
    partition_persons : int, optional
        Persons per partition of whole tracts (the answers do not depend on it).
    batch_rows : int
        Rows read, spilled or written at once.
    client : dask.distributed.Client, optional
        Compute the partitions there (the loader and ``store`` must be usable there).
    store : Path, optional
        Keeps each finished partition (resumable). It and its missing parents are made
        here; a run that fails leaving it empty removes them again.
    work : Path, optional
        Directory for the spilled persons and answers (a new temporary directory by
        default; removed by :meth:`FileRisk.close`).
    keep_answers : bool
        Keep the per-person answers for :meth:`FileRisk.write_persons`.
    in_flight : int, optional
        Partitions held at once (default: 2 per worker thread, 1 in this process).
    scanned : tuple, optional
        :func:`scan_tracts`'s answer when the caller already has it.

    Raises
    ------
    ValueError
        Bad persons (naming the file's row) or measurements; the partitions this call
        stored are removed, and the directories it made for ``store``.
    """
    from dprisk.inference.population.partitions import (
        STORE_PATTERN,
        partition_size,
        progress_bar,
        tract_cuts,
    )
    from dprisk.runtime.output_files import make_parents, remove_made_parents
    from dprisk.runtime.writers import mark_kept

    size = partition_size(partition_persons)
    if int(batch_rows) < 1:
        raise ValueError(f"batch_rows must be an integer >= 1, got {batch_rows!r}")
    batch_rows = int(batch_rows)
    tracts, counts, rows = scanned or scan_tracts(path, name=name, batch_rows=batch_rows)
    cuts = tract_cuts(counts, size)
    part_of_tract = np.zeros(tracts.size, dtype=np.int64)
    for index, (first, last) in enumerate(itertools.pairwise(cuts)):
        part_of_tract[first:last] = index
    n_parts = len(cuts) - 1
    owns = work is None
    work = Path(tempfile.mkdtemp(prefix="dprisk-population-")) if owns else Path(work)
    before, made = set(), []
    if store is not None:
        store = Path(store)
        before = set(store.glob(STORE_PATTERN)) if store.is_dir() else set()
        made = make_parents(store)  # the store and its missing parents, removed if left empty
    try:
        for sub in ("in", "out"):  # a given directory's leftovers of another run go
            shutil.rmtree(work / sub, ignore_errors=True)
            (work / sub).mkdir(parents=True)
        _spill(path, name, batch_rows, tracts, part_of_tract, work / "in")
        tally, low, high = Tally(), np.inf, -np.inf
        bar = progress_bar(n_parts, 0, progress)

        def done(index: int, result: dict) -> None:
            nonlocal tally, low, high
            if store is not None:  # stored: a stop now leaves it for the rerun
                mark_kept(store)
            tally = tally + result["tally"]
            low = min(low, result["variance_range"][0])
            high = max(high, result["variance_range"][1])
            if keep_answers:
                _split_answers(result, batch_rows, work / "out", index)
            bar.update(1)

        try:
            _run(n_parts, work / "in", loader, done, adversary=adversary, prior=prior,
                 store=store, client=client, in_flight=in_flight)
        finally:
            bar.close()
        shutil.rmtree(work / "in", ignore_errors=True)
    except BaseException as err:
        if isinstance(err, ValueError) and store is not None:
            for stored in set(store.glob(STORE_PATTERN)) - before:
                stored.unlink(missing_ok=True)
        remove_made_parents(made)  # each only while empty: a kept partition keeps them
        if owns:
            shutil.rmtree(work, ignore_errors=True)
        raise
    if not keep_answers:  # nothing is left to join: the working files go now
        shutil.rmtree(work if owns else work / "out", ignore_errors=True)
    return FileRisk(tally=tally, partitions=n_parts, variance_range=(float(low), float(high)),
                    persons=rows, source=Path(path), name=name, batch_rows=batch_rows,
                    work=work if keep_answers else None, _owns_work=owns)


def _run(n_parts: int, spilled: Path, loader, done, *, adversary, prior, store, client,
         in_flight) -> None:
    """Compute every partition, at most ``in_flight`` held at once; ``done(i, result)``."""
    from dprisk.inference.population.partitions import Refusal, cancel_partitions

    if client is None:
        for index in range(n_parts):
            rows, persons = _read_partition(spilled / f"{index:06d}")
            done(index, Refusal.raised(_compute((rows, persons, loader), adversary=adversary,
                                                prior=prior, store=store)))
        return
    from distributed import as_completed

    limit = in_flight or max(2, 2 * sum(client.nthreads().values()))
    pending = iter(range(n_parts))
    index_of: dict = {}

    def submit(index: int):
        rows, persons = _read_partition(spilled / f"{index:06d}")
        future = client.submit(_compute, (rows, persons, loader), adversary=adversary,
                               prior=prior, store=store, pure=False)
        index_of[future.key] = (index, future)
        return future

    running = as_completed([submit(i) for i in itertools.islice(pending, limit)],
                           loop=client.loop)
    refused = False
    try:
        for future in running:
            result = Refusal.raised(future.result())
            index, _ = index_of.pop(future.key)
            del future  # the client lets the worker forget it
            done(index, result)
            following = next(pending, None)
            if following is not None:
                running.add(submit(following))
    except ValueError:  # the caller then removes what this run stored
        refused = True
        raise
    finally:
        running.clear()
        if index_of:  # an error: nothing left running (nor storing, after a refusal)
            cancel_partitions(client, [future for _, future in index_of.values()],
                              wait=refused)
