"""Partitions of whole tracts, computed in this process or on Dask, kept for a resumed run.

**Splitting** (:func:`split_partitions`). Tracts (the first 11 GEOID characters) in GEOID
order are cut into consecutive runs of about ``partition_persons`` persons; a tract is never
split, so a partition holds everything a tract prior needs. Each
:class:`~dprisk.inference.population.pipeline.Partition` carries its persons (rows ascending),
its blocks' noisy rows and variances, in local indices.

**Running** (:func:`run_partitions`). Each partition is
:func:`~dprisk.inference.population.pipeline.partition_risk`, a pure function of the partition and
the options; in this process one after another, or with ``client.map`` on a Dask cluster
(results as they complete). The population's tally is the exact sum of the partitions'
(:class:`~dprisk.inference.population.metrics.Tally`), so neither the partitioning, the number
of workers nor the order of completion changes a bit of the summary.

**Keeping** (``store``). With a store directory every finished partition is written at once
to ``part-<KEY>.npz`` (a temporary name moved into place: complete or absent), ``KEY`` a
BLAKE2 digest of the partition's inputs and the options (:func:`partition_key`). A run
interrupted and started again finds the partitions already done by their keys and computes
only the others; a file whose key does not match any partition of the run is not read.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import numbers
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dprisk.inference.population.metrics import Tally

__all__ = [
    "PARTITION_PERSONS",
    "STORE_PATTERN",
    "Refusal",
    "cancel_partitions",
    "partition_key",
    "partition_size",
    "progress_bar",
    "run_partitions",
    "run_streamed",
    "split_partitions",
    "split_person_rows",
    "streamed_answer",
    "streamed_task",
    "tract_cuts",
]

#: Default persons per partition (memory: a few hundred bytes per person while computed).
PARTITION_PERSONS = 250_000
#: Names of the files a store holds.
STORE_PATTERN = "part-*.npz"
#: Changes whenever partition_risk's results would (a stored partition of an older version is
#: not reused).
RESULT_VERSION = "1"


def partition_size(partition_persons: int | None) -> int:
    """Persons per partition: ``partition_persons``, :data:`PARTITION_PERSONS` by default."""
    if partition_persons is None:
        return PARTITION_PERSONS
    # int() would truncate 1.5 and read True as 1
    if isinstance(partition_persons, (bool, np.bool_)) \
            or not isinstance(partition_persons, numbers.Integral) or partition_persons < 1:
        raise ValueError(f"partition_persons must be an integer >= 1, got {partition_persons!r}")
    return int(partition_persons)


def tract_cuts(counts: np.ndarray, size: int) -> list[int]:
    """Tract indices where partitions start, then the number of tracts.

    Whole tracts in order (``counts``: persons per tract), a partition closing at the first
    tract that brings it to ``size`` persons; the last partition takes what is left.
    """
    cuts, filled = [0], 0
    for i, count in enumerate(counts):
        filled += int(count)
        if filled >= size and i + 1 < counts.size:
            cuts.append(i + 1)
            filled = 0
    cuts.append(counts.size)
    return cuts


def split_partitions(prepared, partition_persons: int | None = None) -> list:
    """Cut the persons into partitions of whole tracts (module docstring)."""
    from dprisk.inference.population.pipeline import Partition

    size = partition_size(partition_persons)
    person_tract = prepared.block_tract[prepared.block]
    order = np.argsort(person_tract, kind="stable")  # rows ascending within a tract
    tracts, starts, counts = np.unique(person_tract[order], return_index=True,
                                       return_counts=True)
    cuts = tract_cuts(counts, size)
    parts = []
    for first, last in itertools.pairwise(cuts):
        begin = int(starts[first])
        end = int(starts[last]) if last < counts.size else order.size
        rows = np.sort(order[begin:end])
        blocks, local_block = np.unique(prepared.block[rows], return_inverse=True)
        _, local_tract = np.unique(prepared.block_tract[blocks], return_inverse=True)
        parts.append(Partition(
            rows=rows.astype(np.int64),
            block=local_block.astype(np.int64),
            group=prepared.group[rows],
            category=prepared.category[rows],
            block_tract=local_tract.astype(np.int64),
            noisy=np.ascontiguousarray(prepared.noisy[blocks], dtype=np.int64),
            variance=np.ascontiguousarray(prepared.variance[blocks]),
        ))
    del tracts
    return parts


def partition_key(part, *, adversary: str, prior) -> str:
    """A digest of everything a partition's result depends on (inputs, options, version).

    The outsider's key names the kernel path of this process too (numpy or compiled: they
    agree to a few ulps of the terms, not to the bit), so that a rerun under another
    ``DPRISK_KERNELS`` does not mix the two paths' partitions in one result.
    """
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"v{RESULT_VERSION}:{adversary}:".encode())
    if adversary == "outsider":
        from dprisk.inference.population.kernels import kernel_path

        digest.update(f"{kernel_path()}:".encode())
    if isinstance(prior, str):
        digest.update(prior.encode())
    else:
        digest.update(np.ascontiguousarray(prior, dtype=np.float64).tobytes())
    for name in ("rows", "block", "group", "category", "block_tract", "noisy", "variance"):
        array = np.ascontiguousarray(getattr(part, name))
        digest.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _save(path: Path, result: dict) -> None:
    from dprisk.runtime.output_files import atomic_path

    buffer = io.BytesIO()
    arrays = {k: v for k, v in result.items() if k != "tally"}
    np.savez(buffer, **arrays, tally=np.array(json.dumps(result["tally"].to_json())))
    with atomic_path(path) as tmp:
        Path(tmp).write_bytes(buffer.getvalue())


def _load(path: Path) -> dict | None:
    try:
        with np.load(path, allow_pickle=False) as data:
            result = {k: data[k] for k in data.files if k != "tally"}
            result["tally"] = Tally.from_json(json.loads(str(data["tally"])))
        return result
    except (OSError, ValueError, KeyError):
        return None


class _NoProgress:
    def update(self, n: int = 1) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to close."""


def progress_bar(total: int, initial: int, enabled: bool):
    """A tqdm bar over ``total`` partitions starting at ``initial`` (a no-op when not enabled)."""
    if not enabled:
        return _NoProgress()
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc="population", unit="partition")


def run_partitions(parts: list, *, adversary: str, prior, client=None, store=None,
                   progress: bool = False) -> list[dict]:
    """Every partition's result (module docstring), in the order of ``parts``."""
    from dprisk.inference.population.pipeline import partition_risk

    results: list = [None] * len(parts)
    paths: list = [None] * len(parts)
    if store is not None:
        store = Path(store)
        store.mkdir(parents=True, exist_ok=True)
        for i, part in enumerate(parts):
            paths[i] = store / f"part-{partition_key(part, adversary=adversary, prior=prior)}.npz"
            if paths[i].is_file():
                results[i] = _load(paths[i])
    missing = [i for i, result in enumerate(results) if result is None]
    bar = progress_bar(len(parts), len(parts) - len(missing), progress)

    def done(i: int, result: dict) -> None:
        results[i] = result
        if paths[i] is not None:
            _save(paths[i], result)
        bar.update(1)

    try:
        if client is None:
            for i in missing:
                done(i, partition_risk(parts[i], adversary=adversary, prior=prior))
        elif missing:
            from distributed import as_completed

            scattered = client.scatter([parts[i] for i in missing])
            futures = client.map(_indexed, missing, scattered,
                                 adversary=adversary, prior=prior, pure=False)
            try:
                for _, (i, result) in as_completed(futures, loop=client.loop,
                                                   with_results=True):
                    done(i, result)
            finally:
                client.cancel(futures)
    finally:
        bar.close()
    return results


def _indexed(i: int, part, *, adversary: str, prior):
    from dprisk.inference.population.pipeline import partition_risk

    return i, partition_risk(part, adversary=adversary, prior=prior)


# --------------------------------------------------------------------------- streamed
def _tract_codes(geoid) -> tuple[np.ndarray, int]:
    """Each person's tract (first 11 GEOID characters) as an index in GEOID order."""
    import pandas as pd

    geoid = pd.Series(geoid)
    if isinstance(geoid.dtype, pd.CategoricalDtype):  # one string per block
        per_category, tracts = pd.factorize(
            pd.Series(geoid.cat.categories.astype(str)).str.slice(0, 11), sort=True)
        return per_category[geoid.cat.codes.to_numpy()], len(tracts)
    codes, tracts = pd.factorize(geoid.astype(str).str.slice(0, 11), sort=True)
    return codes, len(tracts)


def split_person_rows(geoids, partition_persons: int | None = None) -> list:
    """Rows of each partition of whole tracts, cut from the persons' GEOIDs alone.

    The same cut as :func:`split_partitions` (tracts in GEOID order, about
    ``partition_persons`` persons each), before any measurement is read.
    """
    size = partition_size(partition_persons)
    codes, n_tracts = _tract_codes(geoids)
    counts = np.bincount(codes, minlength=n_tracts)
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(counts)])
    cuts = tract_cuts(counts, size)
    return [np.sort(order[bounds[first]: bounds[last]])
            for first, last in itertools.pairwise(cuts)]


def streamed_task(task: tuple, *, adversary: str, prior, store) -> dict:
    """Load one partition's measurements, compute it (or take it from the store)."""
    from dprisk.inference.population.pipeline import partition_risk, prepare

    rows, persons, loader = task
    geoids = np.sort(np.asarray(persons["geoid"].unique(), dtype=str))
    measurements = loader(geoids)
    part = split_partitions(prepare(persons.reset_index(drop=True), measurements,
                                    name="persons"), len(persons) + 1)[0]
    path = None
    if store is not None:
        path = Path(store) / f"part-{partition_key(part, adversary=adversary, prior=prior)}.npz"
        if path.is_file() and (result := _load(path)) is not None:
            return _globalised(result, rows, part)
    result = partition_risk(part, adversary=adversary, prior=prior)
    if path is not None:
        _save(path, result)
    return _globalised(result, rows, part)


def _globalised(result: dict, rows: np.ndarray, part) -> dict:
    out = dict(result)
    out["rows"] = rows[np.asarray(result["rows"])]
    out["variance_range"] = (float(part.variance.min()), float(part.variance.max()))
    return out


def run_streamed(persons, loader, *, adversary: str, prior, partition_persons=None,
                 client=None, store=None, progress: bool = False) -> list[dict]:
    """Every partition's result, each partition reading its own measurements.

    ``loader(geoids) -> BlockMeasurements`` is called once per partition (in the worker on a
    cluster: it must be picklable, and its files readable there), so no more than one
    partition's measurements are held at once per worker. A refusal of the inputs
    (``ValueError``) removes the partitions this call stored, so bad input leaves nothing:
    neither does any failure leave a directory made for ``store`` that is still empty.
    """
    from dprisk.runtime.output_files import make_parents, remove_made_parents

    rows_list = split_person_rows(persons["geoid"], partition_persons)
    tasks = [(rows, _subset(persons, rows), loader) for rows in rows_list]
    before, made = set(), []
    if store is not None:
        store = Path(store)
        before = set(store.glob(STORE_PATTERN)) if store.is_dir() else set()
        made = make_parents(store)  # the store and its missing parents, removed if left empty
    bar = progress_bar(len(tasks), 0, progress)
    results: list = [None] * len(tasks)
    try:
        if client is None:
            for i, task in enumerate(tasks):
                results[i] = streamed_task(task, adversary=adversary, prior=prior,
                                            store=store)
                bar.update(1)
        else:
            from distributed import as_completed

            scattered = client.scatter(tasks)  # the persons' rows: data, not a task graph
            futures = client.map(_indexed_streamed, range(len(tasks)), scattered,
                                 adversary=adversary, prior=prior, store=store, pure=False)
            refused = False
            try:
                for _, (i, result) in as_completed(futures, loop=client.loop,
                                                   with_results=True):
                    results[i] = Refusal.raised(result)
                    bar.update(1)
            except ValueError:  # removed below what this call stored
                refused = True
                raise
            finally:  # nothing left running (nor storing, after a refusal)
                cancel_partitions(client, futures, wait=refused)
    except BaseException as err:
        if isinstance(err, ValueError) and store is not None:
            for path in set(store.glob(STORE_PATTERN)) - before:
                path.unlink(missing_ok=True)
        remove_made_parents(made)  # each only while empty: a kept partition keeps them
        raise
    finally:
        bar.close()
    return results


def _running_keys(dask_worker) -> list:
    """The keys of the tasks occupying a thread of ``dask_worker``, cancelled ones included.

    A cancelled task that had started runs to its end (Dask cannot stop a thread): it stays
    in the worker's ``all_running_tasks`` until then.
    """
    return [task.key for task in dask_worker.state.all_running_tasks]


def cancel_partitions(client, futures, *, wait: bool, poll: float = 0.05) -> None:
    """Cancel ``futures``; with ``wait``, return only once no worker still runs one of them.

    After a refusal the caller removes the partitions this run stored (bad input writes
    nothing). A partition already running when it was cancelled runs on to its end and would
    store its answer after that clean-up, leaving ``OUT.parts`` behind a refused run: so the
    clean-up waits for it. A worker or cluster that is gone runs nothing.
    """
    import time

    keys = {future.key for future in futures}
    client.cancel(list(futures))
    while wait:
        try:
            running = client.run(_running_keys, on_error="ignore")
        except (OSError, RuntimeError):  # the cluster is gone: nothing runs there
            return
        if not keys.intersection(key for found in running.values() for key in found):
            return
        time.sleep(poll)


def _subset(persons, rows: np.ndarray):
    """The persons of ``rows``; a categorical GEOID keeps only its own blocks' strings."""
    import pandas as pd

    part = persons.iloc[rows]
    if isinstance(part["geoid"].dtype, pd.CategoricalDtype):
        part = part.assign(geoid=part["geoid"].cat.remove_unused_categories())
    return part


def streamed_answer(task: tuple, *, adversary: str, prior, store):
    """:func:`streamed_task`'s result, or a :class:`Refusal` of the partition's inputs.

    An answer, not a failed task: a Dask worker logs a task's exception with a traceback
    before the one-line refusal the caller prints (:meth:`Refusal.raised`).
    """
    try:
        return streamed_task(task, adversary=adversary, prior=prior, store=store)
    except ValueError as err:
        return Refusal(str(err))


def _indexed_streamed(i: int, task: tuple, *, adversary: str, prior, store):
    return i, streamed_answer(task, adversary=adversary, prior=prior, store=store)


@dataclass(frozen=True)
class Refusal:
    """A partition's inputs refused on a worker (the ``ValueError``'s message).

    Sent back as an answer: a failed Dask task is logged by its worker with a traceback,
    before the one-line refusal the caller prints.
    """

    message: str

    @staticmethod
    def raised(result):
        """``result``, or the ``ValueError`` it stands for."""
        if isinstance(result, Refusal):
            raise ValueError(result.message)
        return result
