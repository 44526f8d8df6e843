r"""Every person's risk: persons and block measurements in, per-person posteriors and a summary out.

:func:`population_risk` is the entry point. It checks the inputs once (:func:`prepare`:
every person's block among the measurements, its variance within
:data:`~dprisk.inference.population.variances.VARIANCE_RANGE`), splits the persons into
partitions of whole tracts (:mod:`dprisk.inference.population.partitions`), computes each
partition with :func:`partition_risk` -- a pure function of the partition's persons, their
blocks' noisy cells and variances, the adversary and the prior -- in this process or on Dask,
and adds the partitions' exact tallies (:class:`~dprisk.inference.population.metrics.Tally`).
The per-person answers come back in the persons' row order; the summary does not depend on
the partitioning, the number of workers or the order partitions finish.

One partition's computation: :mod:`dprisk.inference.population.pipeline`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dprisk.inference.population import kernels
from dprisk.inference.population.metrics import Tally, summary_payload
from dprisk.inference.population.persons import check_persons
from dprisk.inference.population.pipeline import (
    ADVERSARIES,
    PERSON_COLUMNS,
    Partition,
    partition_risk,
    prepare,
)
from dprisk.inference.population.priors import PRIOR_KINDS

__all__ = [
    "ADVERSARIES",
    "PERSON_COLUMNS",
    "Partition",
    "PopulationRisk",
    "partition_risk",
    "population_risk",
    "prepare",
]


@dataclass(frozen=True)
class PopulationRisk:
    """Per-person answers in the persons' row order, and the population's tally."""

    posterior_true: np.ndarray
    map: np.ndarray
    map_posterior: np.ndarray
    fdp_bound: np.ndarray
    tally: Tally
    partitions: int
    variance_range: tuple = (float("nan"), float("nan"))

    def summary(self) -> dict:
        """The JSON summary (:func:`dprisk.inference.population.metrics.summary_payload`)."""
        return summary_payload(self.tally)


def _check_options(adversary, prior) -> None:
    if adversary not in ADVERSARIES:
        raise ValueError(f"adversary must be one of {', '.join(ADVERSARIES)}, got {adversary!r}")
    if isinstance(prior, str):
        if prior not in PRIOR_KINDS:
            raise ValueError(f"prior must be one of {', '.join(PRIOR_KINDS)} or 126 "
                             f"probabilities, got {prior!r}")
        return
    vector = np.asarray(prior, dtype=np.float64)
    kernels.check_prior_rows(vector.reshape(1, -1))


def population_risk(persons, measurements, *, adversary: str = "informed", prior="tract",
                    partition_persons: int | None = None, client=None, store=None,
                    progress: bool = False) -> PopulationRisk:
    """Every person's posterior of their category, and the population's summary.

    Parameters
    ----------
    persons : pandas.DataFrame
        One row per person with the persons file's columns (``geoid``, ``hhgq``,
        ``votingage``, ``hispanic``, ``cenrace``; :mod:`dprisk.inference.population.persons`),
        as :func:`~dprisk.inference.population.persons.read_persons` or
        :func:`~dprisk.inference.population.synth.synthesize` return it; checked as a file's
        rows are (a value out of range is refused naming its column and row).
    measurements : BlockMeasurements or callable
        ``geoids`` (sorted), ``noisy`` (n_blocks, 2016), ``variance`` (n_blocks,); or a
        loader ``geoids -> BlockMeasurements`` called once per partition with its blocks
        (:func:`dprisk.inference.population.partitions.run_streamed`: memory bounded by a
        partition, whatever the population's size).
    adversary : {"informed", "outsider"}
        ``informed`` (the paper's): knows every other person's record; ``outsider``: knows
        only each group's count.
    prior : {"tract", "uniform"} or (126,) array
        The adversary's prior of a person's category: the person's tract's composition
        within their voting-age group, 1/126 each, or 126 probabilities summing to 1.
    partition_persons : int, optional
        Persons per partition (whole tracts; default
        :data:`dprisk.inference.population.partitions.PARTITION_PERSONS`). The answers do not
        depend on it.
    client : dask.distributed.Client, optional
        Compute the partitions there (default: in this process).
    store : Path, optional
        A directory keeping each finished partition (resumable; see
        :mod:`dprisk.inference.population.partitions`).
    progress : bool
        Show a progress bar over the partitions.

    Returns
    -------
    PopulationRisk
        Per person, in the persons' row order: ``posterior_true`` (the posterior of their own
        category), ``map`` (the MAP category), ``map_posterior`` and ``fdp_bound``
        (:func:`dprisk.inference.population.fdp.success_bound` at their prior); the
        population's ``tally``, the number of ``partitions`` and the ``variance_range`` of
        the blocks read.
    """
    from dprisk.inference.population.partitions import (
        run_partitions,
        run_streamed,
        split_partitions,
    )

    _check_options(adversary, prior)
    persons = check_persons(persons, "persons")
    if callable(measurements):
        results = run_streamed(persons, measurements, adversary=adversary, prior=prior,
                               partition_persons=partition_persons, client=client,
                               store=store, progress=progress)
        low = min(r["variance_range"][0] for r in results)
        high = max(r["variance_range"][1] for r in results)
    else:
        prepared = prepare(persons, measurements)
        parts = split_partitions(prepared, partition_persons)
        results = run_partitions(parts, adversary=adversary, prior=prior, client=client,
                                 store=store, progress=progress)
        used = prepared.variance[np.unique(prepared.block)]
        low, high = float(used.min()), float(used.max())
    n = len(persons)
    out = {"posterior_true": np.empty(n), "map": np.empty(n, dtype=np.int64),
           "map_posterior": np.empty(n), "fdp_bound": np.empty(n)}
    tally = Tally()
    for result in results:
        for name in out:
            out[name][result["rows"]] = result[name]
        tally = tally + result["tally"]
    return PopulationRisk(**out, tally=tally, partitions=len(results),
                          variance_range=(low, high))
