r"""One partition's computation: its groups, priors, posteriors, bound and tally.

:func:`partition_risk` is a pure function of a :class:`Partition` (whole tracts: persons,
their blocks' noisy cells and variances, in local indices), the adversary and the prior
(docs/population.md): the persons' (block, hhgq, votingage) groups, each group's true counts
:math:`n_c` and noisy cells :math:`y_c` (the block's ``detailed`` row, cells
``g * 126 + c``), its :math:`\sigma^2`, its prior :math:`\pi`
(:mod:`dprisk.inference.population.priors`: the tract prior is the composition of the
partition's own persons of that tract and voting age, whole tracts being in one partition);
then the informed or outsider posterior (:mod:`dprisk.inference.population.kernels`), the
f-DP bound at :math:`\kappa = \max_c \pi_c` (:mod:`dprisk.inference.population.fdp`) and the
block-level baselines (:mod:`dprisk.inference.population.metrics`). :func:`prepare` checks the
persons against the measurements once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dprisk.inference.population import fdp, kernels
from dprisk.inference.population.categories import (
    N_CATEGORIES,
    N_DETAILED_CELLS,
    N_GROUPS,
    band_index,
    category,
    group,
)
from dprisk.inference.population.metrics import Tally, modal_categories, proportional_guess
from dprisk.inference.population.priors import tract_priors
from dprisk.inference.population.variances import (
    VARIANCE_RANGE,
    check_variances,
    variance_range_text,
)

__all__ = ["ADVERSARIES", "PERSON_COLUMNS", "VARIANCE_RANGE", "Partition", "Prepared",
           "check_variances", "integer_counts", "partition_risk", "prepare",
           "variance_range_text"]

#: The adversaries (docs/population.md).
ADVERSARIES = ("informed", "outsider")
#: The per-person results, in the order they are added to the persons' columns.
PERSON_COLUMNS = ("posterior_true", "map", "map_posterior", "fdp_bound")


@dataclass(frozen=True)
class Partition:
    r"""The inputs of one partition (whole tracts), every array in its own local indices.

    Attributes
    ----------
    rows : (P,) int64
        The persons' rows in the persons table (ascending).
    block, group, category : (P,) int64
        Each person's local block (0..B-1), (hhgq, votingage) group and category.
    block_tract : (B,) int64
        Each local block's local tract (0..T-1).
    noisy : (B, 2016) int64
        The blocks' ``detailed`` noisy cells.
    variance : (B,) float64
        The blocks' :math:`\sigma^2`.
    """

    rows: np.ndarray
    block: np.ndarray
    group: np.ndarray
    category: np.ndarray
    block_tract: np.ndarray
    noisy: np.ndarray
    variance: np.ndarray


def _prior_rows(prior, part: Partition, group_block: np.ndarray, group_id: np.ndarray,
                person_group: np.ndarray) -> np.ndarray:
    """The (G, 126) prior of each group."""
    if isinstance(prior, str) and prior == "uniform":
        return np.full((group_id.size, N_CATEGORIES), 1.0 / N_CATEGORIES)
    if isinstance(prior, str) and prior == "tract":
        tract = part.block_tract[part.block]
        rows = tract_priors(tract, part.group % 2, part.category)
        return rows[2 * part.block_tract[group_block] + group_id % 2]
    vector = np.asarray(prior, dtype=np.float64)
    return np.broadcast_to(vector, (group_id.size, N_CATEGORIES))


def partition_risk(part: Partition, *, adversary: str, prior) -> dict:
    """One partition's per-person answers and tally (a pure function of its arguments).

    Returns
    -------
    dict
        ``rows`` and the :data:`PERSON_COLUMNS` arrays (the partition's persons, ascending
        rows) and ``tally`` (:class:`~dprisk.inference.population.metrics.Tally`).
    """
    keys = part.block * N_GROUPS + part.group
    group_key, person_group = np.unique(keys, return_inverse=True)
    group_block, group_id = group_key // N_GROUPS, group_key % N_GROUPS
    n_blocks = part.noisy.shape[0]
    true = np.bincount(person_group * N_CATEGORIES + part.category,
                       minlength=group_key.size * N_CATEGORIES).reshape(-1, N_CATEGORIES)
    cells = part.noisy.reshape(n_blocks, N_GROUPS, N_CATEGORIES)
    noisy = cells[group_block, group_id]
    variance = part.variance[group_block]
    prior_rows = _prior_rows(prior, part, group_block, group_id, person_group)
    if adversary == "informed":
        logits = kernels.informed_logits(noisy, true, prior_rows, variance)
        posterior_true, map_posterior, map_category = kernels.informed_posteriors(
            logits, person_group, part.category)
    else:
        logits = kernels.outsider_logits(noisy, true.sum(axis=1), prior_rows, variance)
        posterior_true, map_posterior, map_category = kernels.outsider_posteriors(
            logits, person_group, part.category)
    bound = fdp.success_bound(prior_rows.max(axis=1), variance)[person_group]
    block_population = np.bincount(part.block, minlength=n_blocks)
    block_band = band_index(np.maximum(block_population, 1))
    block_counts = np.bincount(part.block * N_CATEGORIES + part.category,
                               minlength=n_blocks * N_CATEGORIES).reshape(-1, N_CATEGORIES)
    modal = modal_categories(block_counts)
    noisy_modal = np.argmax(cells.sum(axis=1), axis=1)
    prg = proportional_guess(noisy)[person_group, part.category]
    tally = Tally.of(
        band=block_band[part.block], block_band=block_band[block_population > 0],
        category=part.category, modal=modal[part.block], map_category=map_category,
        posterior_true=posterior_true, map_posterior=map_posterior, fdp_bound=bound,
        mdg_guess=noisy_modal[part.block], prg_probability=prg,
    )
    return {"rows": part.rows, "posterior_true": posterior_true, "map": map_category,
            "map_posterior": map_posterior, "fdp_bound": bound, "tally": tally}


def integer_counts(noisy: np.ndarray, geoids: np.ndarray) -> np.ndarray:
    """The noisy counts as int64: integers, or numbers that are all whole (as floats hold them).

    A count that is not a whole finite number (2.5, NaN, inf) is refused naming its block and
    cell, never truncated toward zero (nor NaN cast to -2**63) as an int64 cast would.
    """
    if noisy.dtype.kind in "iu":
        return noisy.astype(np.int64, copy=False)
    try:
        values = noisy.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"measurements: noisy must hold integers (noisy counts), got dtype "
                         f"{noisy.dtype}") from None
    with np.errstate(invalid="ignore"):
        whole = np.isfinite(values) & (values == np.round(values)) & (np.abs(values) <= 2**53)
    if not whole.all():
        block, cell = (int(i) for i in np.argwhere(~whole)[0])
        raise ValueError(f"measurements: noisy count of block {str(geoids[block])!r} cell "
                         f"{cell} is {float(values[block, cell])!r}, not an integer")
    return values.astype(np.int64)


@dataclass(frozen=True)
class Prepared:
    """The checked persons: each person's global block, group, category and the blocks' tracts."""

    block: np.ndarray
    group: np.ndarray
    category: np.ndarray
    block_tract: np.ndarray
    noisy: np.ndarray
    variance: np.ndarray


def prepare(persons, measurements, *, name: str = "persons") -> Prepared:
    """Check the persons against the measurements; return the arrays partitions are cut from.

    Raises
    ------
    ValueError
        A person's GEOID absent from the measurements (naming the first, by row), a
        measurement array of the wrong shape, a noisy count that is not a whole number
        (:func:`integer_counts`), or a variance of a person's block outside
        :data:`VARIANCE_RANGE` (:func:`check_variances`).
    """
    import pandas as pd

    geoids = np.asarray(measurements.geoids).astype(str)
    noisy = np.asarray(measurements.noisy)
    variance = np.asarray(measurements.variance, dtype=np.float64)
    if noisy.ndim != 2 or noisy.shape != (geoids.size, N_DETAILED_CELLS):
        raise ValueError(f"measurements: noisy must have shape ({geoids.size}, "
                         f"{N_DETAILED_CELLS}), got {noisy.shape}")
    noisy = integer_counts(noisy, geoids)
    if variance.shape != (geoids.size,):
        raise ValueError(f"measurements: variance must have shape ({geoids.size},), "
                         f"got {variance.shape}")
    if geoids.size > 1 and not (geoids[1:] > geoids[:-1]).all():
        raise ValueError("measurements: geoids must be sorted ascending without repeats")
    codes, uniques = pd.factorize(persons["geoid"], sort=False)
    uniques = np.asarray(uniques).astype(str)
    where = np.searchsorted(geoids, uniques)
    found = (where < geoids.size) & (geoids[np.minimum(where, max(geoids.size - 1, 0))]
                                     == uniques) if geoids.size else np.zeros(uniques.size, bool)
    if not found.all():
        first_unique = np.flatnonzero(~found)
        row = int(np.flatnonzero(np.isin(codes, first_unique))[0])
        raise ValueError(f"{name}: row {row}: geoid {persons['geoid'].iloc[row]!r} has no "
                         f"noisy measurements ({first_unique.size} unknown block(s))")
    used = where[found]
    check_variances(geoids[used], variance[used])
    tract_codes, block_tract = np.unique(geoids.astype("U11"), return_inverse=True)
    del tract_codes
    return Prepared(
        block=where[codes].astype(np.int64),
        group=group(persons["hhgq"].to_numpy(), persons["votingage"].to_numpy()),
        category=category(persons["hispanic"].to_numpy(), persons["cenrace"].to_numpy()),
        block_tract=block_tract.astype(np.int64),
        noisy=noisy,
        variance=variance,
    )


