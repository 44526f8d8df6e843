"""Test helpers of the population room: in-memory block measurements (no file reader).

:class:`Measurements` has the fields of the contract's ``BlockMeasurements`` (geoids sorted,
noisy (n_blocks, 2016) int64, variance (n_blocks,)); :func:`measure` draws the block
``detailed`` cells of a persons table with discrete Gaussian noise of variance ``variance``
(pmf proportional to exp(-x^2 / (2 variance)), i.e. this suite's rho = 1 / (2 variance)).
"""

from dataclasses import dataclass

import numpy as np

from dprisk.inference.population.categories import N_DETAILED_CELLS, detailed_cell
from dprisk.models.mechanism.dg_sampling import sample


@dataclass(frozen=True)
class Measurements:
    geoids: np.ndarray
    noisy: np.ndarray
    variance: np.ndarray


def true_cells(persons):
    """The sorted block GEOIDs and their true (n_blocks, 2016) detailed counts."""
    geoids, block = np.unique(persons["geoid"].to_numpy().astype(str), return_inverse=True)
    cell = detailed_cell(persons["hhgq"], persons["votingage"], persons["hispanic"],
                         persons["cenrace"])
    counts = np.bincount(block * N_DETAILED_CELLS + cell,
                         minlength=geoids.size * N_DETAILED_CELLS)
    return geoids, counts.reshape(geoids.size, N_DETAILED_CELLS).astype(np.int64)


def measure(persons, variance: float, seed: int) -> Measurements:
    """The persons' blocks' noisy detailed cells, noise DG with variance ``variance``."""
    geoids, counts = true_cells(persons)
    noise = sample(0, 1.0 / (2.0 * variance), size=counts.shape, random_seed=seed)
    return Measurements(geoids=geoids.astype(object), noisy=counts + noise.astype(np.int64),
                        variance=np.full(geoids.size, float(variance)))
