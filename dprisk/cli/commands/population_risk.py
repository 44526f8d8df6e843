"""``dprisk population risk``: every person's risk of having their category inferred.

Two forms, by where the noisy measurements come from:

* ``--noisy FILE [--noise-variance V]``: the block ``detailed`` cells as a table (Parquet or
  CSV); sigma^2 is V, or the file's ``variance`` column when V is not given;
* ``--nmf DIR --state SS``: the released noisy-measurement layout (``DIR/US_Person_PL_PROD``),
  sigma^2 from its ``variance`` column.

sigma^2 is the DAS's: the noise pmf is proportional to exp(-x^2 / (2 sigma^2)) (about 10.09 at
the block ``detailed`` query in production: 1/rho, not this suite's 1/(2 rho);
docs/noise-conventions.md).
The summary (``--json``: ``{"persons", "all", "by_block_size", ...}``) and, with ``--out DIR``,
``persons.parquet``, ``summary.json``, ``summary.nc`` and figures
(:mod:`dprisk.inference.population.risk_files`). The options and the persons file are read
and checked before anything is computed, each partition's measurements as it reads them;
bad input exits with status 2 and one line naming it, and nothing is written (the partitions
this run kept are removed).
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from dprisk.cli.common import EXIT_OK, add_json, emit, integer, number, show_progress

__all__ = ["HELP", "MARKER", "add_arguments", "run"]

HELP = ("every person's risk: informed or outsider posterior of their race and ethnicity from "
        "the noisy block cells, by block size, beside block-modal and proportional guesses")
#: Marker file of a directory this command wrote.
MARKER = ".dprisk-population-risk"
#: Bytes per person held while the run lasts (persons table, answers, a partition's temporaries).
BYTES_PER_PERSON = 400
#: Bytes per block of a partition while its measurements are read and computed (its 2,016
#: cells as read, one row each, and their arrays): 98 KB measured, peak memory against the
#: number of one-person blocks (2,000 and 8,000, informed and outsider).
BYTES_PER_BLOCK = 120_000
#: Partitions computed at once (a local cluster's two workers).
PARTITIONS_AT_ONCE = 2


def _partitions_held(tract_persons, tract_blocks, size: int) -> tuple[int, int]:
    """The persons and the blocks of the :data:`PARTITIONS_AT_ONCE` largest partitions.

    The partitions are cut as the run cuts them (:func:`~dprisk.inference.population.
    partitions.tract_cuts`): whole tracts, so a partition holds up to ``size - 1`` persons
    plus its last tract, however large; ``tract_blocks`` each tract's blocks (an upper bound).
    Each count is the sum of its own largest partitions (an upper bound of one pair's).
    """
    import itertools

    import numpy as np

    from dprisk.inference.population.partitions import tract_cuts

    tract_persons = np.asarray(tract_persons)
    cuts = tract_cuts(tract_persons, size)
    pairs = list(itertools.pairwise(cuts))
    persons = sorted((int(np.sum(tract_persons[first:last])) for first, last in pairs),
                     reverse=True)
    blocks = sorted((int(np.sum(tract_blocks[first:last])) for first, last in pairs),
                    reverse=True)
    return sum(persons[:PARTITIONS_AT_ONCE]), sum(blocks[:PARTITIONS_AT_ONCE])


def add_arguments(parser) -> None:
    """The options of ``dprisk population risk``."""
    parser.add_argument("--persons", required=True, metavar="FILE",
                        help="persons file (.parquet or .csv): geoid, hhgq, votingage, "
                        "hispanic, cenrace")
    parser.add_argument("--noisy", default=None, metavar="FILE",
                        help="noisy block detailed cells (.parquet or .csv: geoid, hhgq, "
                        "votingage, hispanic, cenrace, noisy[, variance])")
    parser.add_argument("--noise-variance", type=number, default=None, metavar="V",
                        help="sigma^2 of the --noisy cells, the DAS's convention: noise pmf "
                        "proportional to exp(-x^2/(2 sigma^2)) (production block detailed: "
                        "about 10.09); default: the file's variance column")
    parser.add_argument("--nmf", default=None, metavar="DIR",
                        help="directory holding US_Person_PL_PROD (the released "
                        "noisy-measurement layout); sigma^2 from its variance column")
    parser.add_argument("--state", default=None, metavar="SS",
                        help="two-digit state FIPS code to read from --nmf")
    parser.add_argument("--adversary", required=True, choices=("informed", "outsider"),
                        help="informed: knows every other person's record; outsider: knows "
                        "the group's count only")
    parser.add_argument("--prior", default="tract", metavar="tract|uniform|FILE",
                        help="tract (the person's tract composition in their voting-age "
                        "group), uniform (1/126), or a prior file (.json or .csv, 126 "
                        "probabilities; docs/population.md) (default: tract)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="output directory: persons.parquet, summary.json, summary.nc, "
                        "figures/ (a rerun after an interrupt reuses finished partitions)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="Dask scheduler address (default: this process for one "
                        "partition, a local cluster of 2 workers for more)")
    parser.add_argument("--partition-persons", type=integer, default=None, metavar="N",
                        help="persons per partition of whole tracts (default: 250000); the "
                        "answers do not depend on it")
    parser.add_argument("--batch-rows", type=integer, default=None, metavar="N",
                        help="persons file rows read and written at once (default: "
                        "1000000); with --partition-persons and the largest tract (a tract "
                        "is never split) it bounds the memory, whatever the population's "
                        "size; the answers do not depend on it")
    add_json(parser)


def _check_options(args) -> None:
    if (args.noisy is None) == (args.nmf is None):
        raise ValueError("exactly one of --noisy FILE or --nmf DIR is required")
    if args.nmf is not None:
        if args.noise_variance is not None:
            raise ValueError("--noise-variance does not apply to --nmf: sigma^2 is read from "
                             "the files' variance column")
        from dprisk.runtime.ascii_numbers import ascii_digits

        if not ascii_digits(args.state, 2):
            raise ValueError(f"--state must be a two-digit FIPS code with --nmf, got "
                             f"{args.state!r}")
    elif args.state is not None:
        raise ValueError("--state applies to --nmf only")
    if args.noise_variance is not None:
        from dprisk.inference.population.pipeline import VARIANCE_RANGE, variance_range_text

        low, high = VARIANCE_RANGE
        if not low <= args.noise_variance <= high:  # NaN too
            raise ValueError(f"--noise-variance must be a number in the "
                             f"{variance_range_text()}, got {args.noise_variance!r}")
    for option, value in (("--partition-persons", args.partition_persons),
                          ("--batch-rows", args.batch_rows)):
        if value is not None and not 1 <= value <= 2**53:  # 1e308 rows: pyarrow's C long
            raise ValueError(f"{option} must be an integer >= 1 and <= 2**53 (allowed range: "
                             f"1 <= {option} <= 2**53), got {value}")


def _prior(text: str):
    from dprisk.inference.population.priors import PRIOR_KINDS, read_prior_file

    if text in PRIOR_KINDS:
        return text, text
    return read_prior_file(text, name="--prior"), text


class MeasurementLoader:
    """``loader(geoids) -> BlockMeasurements``: pop-io's reader of ``--noisy`` or ``--nmf``.

    Called once per partition with its blocks (in a Dask worker when there is one: picklable,
    and the files must be readable there); a refusal not naming an option is prefixed with
    the option of the file it came from.
    """

    def __init__(self, args):
        # absolute: a worker of --scheduler may run in another directory (a relative
        # --noisy was 'no such file' there, or another directory's file of that name)
        self.noisy, self.nmf = (None if path is None else str(Path(path).absolute())
                                for path in (args.noisy, args.nmf))
        self.state = args.state
        self.noise_variance = args.noise_variance

    @property
    def source(self) -> str:
        """Where sigma^2 comes from, as the summary states it."""
        if self.nmf is not None:
            return "the --nmf files' variance column"
        if self.noise_variance is not None:
            return "--noise-variance"
        return "the --noisy file's variance column"

    def __call__(self, geoids):
        from dprisk.inference.population.pipeline import check_variances

        if self.noisy is not None:
            from dprisk.inference.population.measurements import read_noisy_table

            option, where = "--noisy", self.noisy
            measurements = _naming(option, read_noisy_table, self.noisy, geoids=geoids,
                                   noise_variance=self.noise_variance)
        else:
            from dprisk.inference.population.nmf_read import read_nmf_block_detailed

            option, where = "--nmf", self.nmf
            measurements = _naming(option, read_nmf_block_detailed, self.nmf, self.state,
                                   geoids=geoids)
        _naming(option, check_variances, measurements.geoids, measurements.variance,
                source=f"{where}: the variance column")
        return measurements


def _naming(option: str, reader, *args, **kwargs):
    """Call ``reader``; a refusal that does not name an option is prefixed with ``option``."""
    try:
        return reader(*args, **kwargs)
    except ValueError as err:
        message = str(err)
        if message.startswith("--"):
            raise
        raise ValueError(f"{option}: {message}") from None


def load_measurements(args):
    """The loader of the measurements ``args`` name (tests replace it)."""
    return MeasurementLoader(args)


def _variance_description(variance_range, source: str) -> dict:
    low, high = variance_range
    return {"min": float(low), "max": float(high), "source": source,
            "convention": "noise pmf proportional to exp(-x^2/(2 sigma^2)) (DAS)"}


def run(args) -> int:
    """Read and check the inputs, compute every person's posterior, print and write.

    The persons file is read in batches of ``--batch-rows`` rows and computed in partitions
    of whole tracts (:func:`dprisk.inference.population.stream.file_risk`): the memory held
    does not grow with the population, only with the partitions' size and the largest tract.
    """
    from dprisk.inference.population.partitions import PARTITION_PERSONS
    from dprisk.inference.population.stream import BATCH_ROWS, file_risk, scan_tracts
    from dprisk.runtime.memory_limit import check_memory
    from dprisk.runtime.output_directory import OutputDirectory

    _check_options(args)
    prior, prior_name = _prior(args.prior)
    size = args.partition_persons or PARTITION_PERSONS
    batch_rows = args.batch_rows or BATCH_ROWS
    *scanned, tract_blocks = scan_tracts(args.persons, name="--persons",
                                         batch_rows=batch_rows, blocks=True)
    persons = scanned[2]
    partition_persons, blocks_held = _partitions_held(scanned[1], tract_blocks, size)
    held = min(persons, partition_persons + batch_rows)
    check_memory(BYTES_PER_PERSON * held + BYTES_PER_BLOCK * blocks_held,
                 parameter="--partition-persons, --batch-rows",
                 what=f"{held} persons and the measurements of {blocks_held} blocks held at "
                 f"once (partitions of whole tracts: the largest tract holds "
                 f"{int(max(scanned[1], default=0))} persons)")
    target = work = store = None
    if args.out is not None:
        target = OutputDirectory(args.out, marker=MARKER, command="dprisk population risk")
        store = _store_dir(target.out)
    loader = load_measurements(args)
    with contextlib.ExitStack() as holding:
        if target is not None:  # its lock for the whole run: a second run is refused at once
            holding.enter_context(target)
        client, cluster = _client(args, several=persons > size)
        try:
            if target is not None:  # made once every input and the scheduler are known good
                work = _work_dir(target.out)
            risk = file_risk(args.persons, loader, name="--persons", adversary=args.adversary,
                             prior=prior, partition_persons=size, batch_rows=batch_rows,
                             client=client, store=store, work=work,
                             keep_answers=target is not None, progress=show_progress(args),
                             scanned=tuple(scanned))
        except BaseException:
            if work is not None:
                shutil.rmtree(work, ignore_errors=True)
            raise
        finally:
            if client is not None:
                client.close()
            if cluster is not None:
                cluster.close()
        try:
            payload = risk.summary()
            payload.update({"adversary": args.adversary, "prior": prior_name,
                            "noise_variance": _variance_description(risk.variance_range,
                                                                    loader.source),
                            "partitions": risk.partitions})
            if target is not None:
                from dprisk.inference.population.risk_files import write_risk_files

                attrs = {"adversary": args.adversary, "prior": prior_name,
                         "noise_variance_min": payload["noise_variance"]["min"],
                         "noise_variance_max": payload["noise_variance"]["max"],
                         "noise_variance_source": loader.source,
                         "persons_file": str(args.persons)}
                target.write(lambda tmp: write_risk_files(tmp, None, risk, payload, attrs))
                _remove_store(store)
                payload["out"] = str(target.out)
        finally:
            risk.close()
            if work is not None:
                shutil.rmtree(work, ignore_errors=True)
    emit(args, payload, _lines(payload))
    return EXIT_OK


def _store_dir(out: Path) -> Path:
    """``OUT.parts``, where finished partitions are kept for a rerun.

    Refused unless absent or a directory: a user's file or link there is never written into
    or replaced.
    """
    store = out.with_name(out.name + ".parts")
    if store.is_symlink() or (store.exists() and not store.is_dir()):
        raise ValueError(f"--out: {store} (where the finished partitions are kept for a rerun) "
                         "exists and is not a directory; move it away or choose another --out")
    return store


#: The file naming the process that made a working directory (:func:`_work_dir`).
WORK_OWNER = ".dprisk-population-work"


def _work_dir(out):
    """A fresh working directory beside ``out`` (spilled persons and answers; removed).

    In the system's temporary directory when ``out``'s parent does not exist yet (nothing is
    created before the inputs are known good). It holds :data:`WORK_OWNER`, naming this host
    and process, so that a later run removes it if this process was killed before it could
    (:func:`_remove_dead_work_dirs`, called first).
    """
    import json
    import os
    import socket
    import tempfile

    where = out.parent if out.parent.is_dir() else None
    if where is not None:
        _remove_dead_work_dirs(where, out.name)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}-work-", dir=where))
    try:
        (work / WORK_OWNER).write_text(json.dumps({"host": socket.gethostname(),
                                                   "pid": os.getpid()}) + "\n")
    except BaseException:  # a full disk: without its owner no later run would remove it
        shutil.rmtree(work, ignore_errors=True)
        raise
    return work


def _remove_dead_work_dirs(where: Path, name: str) -> list[Path]:
    """Remove the working directories of ``--out NAME`` whose process is gone (a ``kill -9``).

    Only a directory ``.NAME-work-*`` holding :data:`WORK_OWNER` that names this host and a
    process that no longer exists; anything else (another host's run, a live run, a directory
    without the file, or whose file is not a regular file: never opened) is left as it is.
    Returns the directories removed.
    """
    import glob
    import json
    import socket

    from dprisk.runtime.output_files import pid_alive, read_regular_text

    removed = []
    for work in where.glob(f".{glob.escape(name)}-work-*"):
        try:  # an owner file that is not a regular file (a FIFO would block): not ours
            owner = json.loads(read_regular_text(work / WORK_OWNER))
            host, pid = owner["host"], int(owner["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not one of ours, or unreadable: left alone
        if work.is_symlink() or host != socket.gethostname() or pid_alive(pid):
            continue
        shutil.rmtree(work, ignore_errors=True)
        removed.append(work)
    return removed


def _client(args, *, several: bool):
    """``(client, cluster)``: the scheduler's, a local cluster's, or none (this process)."""
    import logging

    if args.scheduler is not None:
        from dprisk.inference.sweeps.sweep import connect

        return connect(args.scheduler, name="--scheduler"), None
    if not several:
        return None, None
    from distributed import Client

    from dprisk.inference.sweeps.sweep import local_cluster

    # The local cluster's own log (a task cancelled when a refusal stops the run; a worker's
    # heartbeat failing while the cluster shuts down, with a traceback) is not the user's
    # business: what a worker raises reaches this process, which says it in one line.
    cluster = local_cluster(2, silence_logs=logging.CRITICAL)
    return Client(cluster, set_as_default=False), cluster


def _remove_store(store) -> None:
    from dprisk.inference.population.partitions import STORE_PATTERN
    from dprisk.runtime.writers import Owned, remove_owned

    if store is not None:
        remove_owned(store, Owned(patterns=(STORE_PATTERN, ".part-*.tmp")))


def _fraction(value) -> str:
    return "-" if value is None else f"{value:.4f}"


def _lines(payload: dict) -> list[str]:
    head = (f"{payload['persons']} persons, {payload['adversary']} adversary, prior "
            f"{payload['prior']}, sigma^2 {payload['noise_variance']['min']:.6g}"
            + ("" if payload["noise_variance"]["min"] == payload["noise_variance"]["max"]
               else f"-{payload['noise_variance']['max']:.6g}")
            + f" ({payload['noise_variance']['source']})")
    lines = [head, f"  {'band':<9}{'persons':>10}{'nonmodal':>10}{'MAP ok':>9}"
             f"{'MAP ok nm':>11}{'modal nm':>10}{'prop nm':>9}{'mean post':>11}{'f-DP':>8}"]
    for row in [*payload["by_block_size"], {"band": "all", **payload["all"]}]:
        lines.append(f"  {row['band']:<9}{row['persons']:>10}{row['nonmodal_persons']:>10}"
                     f"{_fraction(row['map_correct']):>9}"
                     f"{_fraction(row['map_correct_nonmodal']):>11}"
                     f"{_fraction(row['mdg_correct_nonmodal']):>10}"
                     f"{_fraction(row['prg_correct_nonmodal']):>9}"
                     f"{_fraction(row['mean_posterior_true']):>11}"
                     f"{_fraction(row['mean_fdp_bound']):>8}")
    if "out" in payload:
        lines.append(f"  written to {payload['out']}")
    return lines
