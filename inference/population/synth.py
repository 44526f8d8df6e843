r"""A synthetic population of one state: block sizes, clustered compositions, group quarters.

The model (every draw from one ``numpy.random.Generator`` seeded with ``seed``, in a fixed
order, so a seed gives the same persons, row for row):

1. **Persons per block-size band.** The 2010 Census counted, in thousands of persons, 8,070 /
   67,598 / 69,073 / 80,021 / 42,911 / 27,029 / 14,043 persons in blocks of 1-9 / 10-49 /
   50-99 / 100-249 / 250-499 / 500-999 / 1000+ persons (:data:`PERSONS_BY_BAND_2010`, the
   table of the Census Bureau's reconstruction study). The ``N`` persons are split over the
   bands in those proportions (largest remainders); a band too small for one block of its
   smallest size passes its persons to the band below.
2. **Block sizes within a band** are log-uniform on the band's integers,
   :math:`P[s] \propto 1/s` for :math:`s \in [\ell_b, u_b]` (``1000+``: up to
   :data:`LARGEST_BLOCK`), drawn until the band's persons are used; the last block takes
   the remainder (spread one person at a time over the band's blocks when below the band's
   lower edge), so each band holds exactly its share of persons.
3. **Tracts and counties.** Blocks, shuffled, fill tracts of :math:`T \sim
   \mathrm{Uniform}\{2500, \dots, 6000\}` persons (the usual tract size), and tracts fill
   counties of 5-40 tracts. GEOIDs: state (2) + county (3, odd numbers 001, 003, ... as the
   Census numbers them) + tract (6, ``000100``, ``000200``, ...) + block (4: the block-group
   digit 1-9, then three digits), 15 characters, sorted rows by GEOID. Past 500 counties
   (about 48 million persons) the codes repeat, each later county of a code numbering its
   tracts after the earlier ones' (:data:`COUNTY_CODES`), so GEOIDs stay distinct.
4. **Race and ethnicity cluster by tract.** A base distribution :math:`\beta` over the 126
   categories (:func:`base_composition`: a few dominant categories, as the nation's) gives
   each tract :math:`\theta_T \sim \mathrm{Dirichlet}(\alpha_T \beta)` with
   :math:`\alpha_T = ` :data:`TRACT_CONCENTRATION` (small: tracts are dominated by one or a
   few categories, as segregated real tracts are), each block
   :math:`\theta_B \sim \mathrm{Dirichlet}(\kappa \theta_T + 10^{-3})` around its tract's
   (:math:`\kappa = ` :data:`BLOCK_CONCENTRATION`), and each person's category
   :math:`c \sim \mathrm{Categorical}(\theta_B)`; ``hispanic = c // 63``,
   ``cenrace = c % 63 + 1``.
5. **Group quarters and voting age.** A block holds a group-quarters facility with
   probability :data:`GQ_BLOCK_SHARE` (type 1-7 by :data:`GQ_TYPE_SHARES`, the 2010 shares
   of GQ persons by type); a share :math:`U(0.3, 0.9)` of its persons live there, the others
   in households (``hhgq = 0``): about 2-3 % of persons in group quarters, as in 2010. Voting
   age (18+) with probability 0.76 in households (2010: 76 %), by type in group quarters
   (:data:`GQ_ADULT_SHARE`: juvenile facilities mostly minors, the others mostly adults).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dprisk.inference.population.categories import BAND_EDGES, N_CATEGORIES, N_CENRACE
from dprisk.runtime.ascii_numbers import ascii_digits
from dprisk.runtime.memory_limit import check_memory

__all__ = [
    "BLOCK_CONCENTRATION",
    "BYTES_PER_PERSON",
    "COUNTY_CODES",
    "GQ_ADULT_SHARE",
    "GQ_BLOCK_SHARE",
    "GQ_TYPE_SHARES",
    "HOUSEHOLD_ADULT_SHARE",
    "LARGEST_BLOCK",
    "PERSONS_BY_BAND_2010",
    "TRACT_CONCENTRATION",
    "base_composition",
    "block_sizes",
    "synthesize",
    "write_persons",
]

#: Bytes per person while the population is drawn (columns, GEOID strings, temporaries).
BYTES_PER_PERSON = 200
#: Persons (thousands) in blocks of each size band, 2010 Census (reconstruction study table).
PERSONS_BY_BAND_2010 = (8_070, 67_598, 69_073, 80_021, 42_911, 27_029, 14_043)
#: Largest block drawn in the open band ``1000+``.
LARGEST_BLOCK = 4000
#: Dirichlet concentration of a tract's composition around the base distribution.
TRACT_CONCENTRATION = 4.0
#: Dirichlet concentration of a block's composition around its tract's.
BLOCK_CONCENTRATION = 20.0
#: Probability that a block holds a group-quarters facility.
GQ_BLOCK_SHARE = 0.04
#: Shares of group-quarters persons by type 1-7 (2010: correctional, juvenile, nursing, other
#: institutional, college housing, military, other noninstitutional).
GQ_TYPE_SHARES = (0.285, 0.02, 0.185, 0.02, 0.31, 0.04, 0.14)
#: P[18 and over] of a person in each group-quarters type 1-7.
GQ_ADULT_SHARE = (0.99, 0.1, 0.99, 0.9, 0.98, 0.99, 0.9)
#: P[18 and over] of a person in a household.
HOUSEHOLD_ADULT_SHARE = 0.76
#: Tract sizes (persons), uniform on these bounds.
TRACT_SIZE = (2500, 6000)
#: Counties' numbers of tracts, uniform on these bounds.
COUNTY_TRACTS = (5, 40)
#: County codes of a state (odd 001-999). County ``k`` takes code ``2 (k mod 500) + 1`` and
#: numbers its tracts after those of the earlier counties of that code, ``k // 500`` times
#: :data:`COUNTY_TRACTS`' largest count on: 2 * 500 + 1 = 1001 made a 16-character GEOID, cut
#: to 15 (a U15 array), so beyond 500 counties (about 48 million persons) blocks merged.
COUNTY_CODES = 500


def base_composition() -> np.ndarray:
    """The base distribution over the 126 categories ``c = 63 * hispanic + cenrace - 1``.

    Roughly the nation's 2010 shares: non-Hispanic White alone 0.64, Black alone 0.12, Asian
    alone 0.047, AIAN 0.007, NHOPI 0.002, Some other race 0.002, the two-race combinations
    of White 0.012 together; Hispanic White 0.083, Hispanic Some other race 0.059, the rest of
    the Hispanic mass on the other single races; every other combination shares what is left
    (each > 0). Sums to 1.
    """
    weights = np.full(N_CATEGORIES, 1e-5)
    nonhisp = {1: 0.64, 2: 0.12, 3: 0.007, 4: 0.047, 5: 0.002, 6: 0.002,
               7: 0.004, 8: 0.004, 9: 0.003, 10: 0.0005, 11: 0.0005}
    hisp = {1: 0.083, 2: 0.003, 3: 0.002, 4: 0.0008, 5: 0.0003, 6: 0.059, 7: 0.0005,
            11: 0.005}
    for cenrace, share in nonhisp.items():
        weights[cenrace - 1] = share
    for cenrace, share in hisp.items():
        weights[N_CENRACE + cenrace - 1] = share
    return weights / weights.sum()


def _persons_per_band(persons: int) -> np.ndarray:
    """The persons of each band: proportional to 2010's, largest remainders, shifted down."""
    shares = np.asarray(PERSONS_BY_BAND_2010, dtype=float)
    exact = persons * shares / shares.sum()
    counts = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - counts), kind="stable")
    counts[order[: persons - counts.sum()]] += 1
    for band in range(len(counts) - 1, 0, -1):  # too few for one block: to the band below
        if counts[band] < BAND_EDGES[band]:
            counts[band - 1] += counts[band]
            counts[band] = 0
    return counts


def _spread(sizes: list, extra: int, high: int) -> None:
    """Add ``extra`` persons one at a time to the blocks below ``high`` (a new block if none)."""
    while extra > 0:
        room = [i for i, size in enumerate(sizes) if size < high]
        if not room:
            sizes.append(extra)
            return
        for i in room[:extra]:
            sizes[i] += 1
        extra -= min(extra, len(room))


def block_sizes(persons: int, rng: np.random.Generator) -> np.ndarray:
    """Block sizes summing to ``persons``, by band (items 1 and 2 of the module's model)."""
    sizes = []
    for band, total in enumerate(_persons_per_band(persons)):
        low = BAND_EDGES[band]
        high = BAND_EDGES[band + 1] - 1 if band + 1 < len(BAND_EDGES) else LARGEST_BLOCK
        support = np.arange(low, high + 1)
        weights = 1.0 / support
        weights /= weights.sum()
        band_sizes = []
        left = int(total)
        while left > 0:
            draw = rng.choice(support, size=max(1, 2 * left // int(support.mean())), p=weights)
            for size in draw:
                if left <= 0:
                    break
                size = int(min(size, left))
                if size < low and band_sizes:  # the remainder: one person each to blocks
                    _spread(band_sizes, size, high)  # with room, so the band keeps them
                else:
                    band_sizes.append(size)
                left -= size
        sizes.extend(band_sizes)
    return np.asarray(sizes, dtype=np.int64)


def _geoids(sizes: np.ndarray, state: str, rng: np.random.Generator) -> np.ndarray:
    """A 15-character GEOID per block: blocks shuffled into tracts, tracts into counties."""
    order = rng.permutation(sizes.size)
    geoids = np.empty(sizes.size, dtype="U15")
    county, tract_in_county, county_tracts = 0, 0, int(rng.integers(*COUNTY_TRACTS, endpoint=True))
    tract_size = int(rng.integers(*TRACT_SIZE, endpoint=True))
    tract_persons, block_in_tract = 0, 0
    for index in order:
        if tract_persons >= tract_size:  # the tract is full: a new one
            tract_in_county += 1
            tract_persons, block_in_tract = 0, 0
            tract_size = int(rng.integers(*TRACT_SIZE, endpoint=True))
            if tract_in_county >= county_tracts:
                county += 1
                tract_in_county = 0
                county_tracts = int(rng.integers(*COUNTY_TRACTS, endpoint=True))
        block_group = 1 + min(block_in_tract // 100, 8)
        block = block_group * 1000 + block_in_tract % 100 + (100 * (block_in_tract // 900))
        repeat, code = divmod(county, COUNTY_CODES)  # odd codes 001-999, then again
        tract = 100 * (repeat * COUNTY_TRACTS[1] + tract_in_county + 1)
        if tract > 999_999:  # 6 digits; a longer code was cut to 15 characters
            raise ValueError(f"persons: more than {COUNTY_CODES * 250} counties of tracts do "
                             f"not fit 15-character GEOIDs (got {sizes.sum()} persons)")
        geoids[index] = f"{state}{2 * code + 1:03d}{tract:06d}{block:04d}"
        tract_persons += int(sizes[index])
        block_in_tract += 1
    return geoids


def synthesize(persons: int, seed: int, *, state: str = "01"):
    """A synthetic population of ``persons`` persons in one state (the module's model).

    Parameters
    ----------
    persons : int (>= 1)
        Number of persons (rows).
    seed : int (>= 0)
        Seeds ``numpy.random.default_rng``; the same seed gives the same rows.
    state : str
        Two-digit state FIPS code of every GEOID.

    Raises
    ------
    ValueError
        Naming the parameter: ``persons < 1``, ``seed < 0``, a ``state`` that is not two
        digits; ``persons`` above the memory limit
        (:class:`~dprisk.runtime.memory_limit.MemoryLimitError`, :data:`BYTES_PER_PERSON` a
        person), before anything is drawn.

    Returns
    -------
    pandas.DataFrame
        Columns ``geoid`` (str, 15 characters), ``hhgq``, ``votingage``, ``hispanic``,
        ``cenrace`` (int8/int8/int8/int8/int16), one row per person, sorted by GEOID.
    """
    import pandas as pd

    if isinstance(persons, bool) or not isinstance(persons, (int, np.integer)) or persons < 1:
        raise ValueError(f"persons must be an integer >= 1, got {persons!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if not ascii_digits(state, 2):
        raise ValueError(f"state must be a two-digit FIPS code, got {state!r}")
    check_memory(BYTES_PER_PERSON * int(persons), parameter="persons",
                 what=f"a population of {persons} persons")
    rng = np.random.default_rng(seed)
    sizes = block_sizes(int(persons), rng)
    geoids = _geoids(sizes, state, rng)
    by_geoid = np.argsort(geoids, kind="stable")
    sizes, geoids = sizes[by_geoid], geoids[by_geoid]
    tracts, tract_of_block = np.unique(geoids.astype("U11"), return_inverse=True)
    theta_tract = rng.dirichlet(TRACT_CONCENTRATION * base_composition(), size=tracts.size)
    theta_block = rng.dirichlet  # one block at a time (each block's own concentration)
    categories = np.empty(int(sizes.sum()), dtype=np.int64)
    hhgq = np.zeros(categories.size, dtype=np.int8)
    adult = np.empty(categories.size, dtype=bool)
    start = 0
    for block, size in enumerate(sizes):
        stop = start + int(size)
        composition = theta_block(BLOCK_CONCENTRATION * theta_tract[tract_of_block[block]]
                                  + 1e-3)
        categories[start:stop] = rng.choice(N_CATEGORIES, size=int(size), p=composition)
        adult_share = np.full(int(size), HOUSEHOLD_ADULT_SHARE)
        if rng.random() < GQ_BLOCK_SHARE:
            gq_type = 1 + int(rng.choice(len(GQ_TYPE_SHARES), p=GQ_TYPE_SHARES))
            in_gq = rng.random(int(size)) < rng.uniform(0.3, 0.9)
            hhgq[start:stop][in_gq] = gq_type
            adult_share[in_gq] = GQ_ADULT_SHARE[gq_type - 1]
        adult[start:stop] = rng.random(int(size)) < adult_share
        start = stop
    return pd.DataFrame({
        "geoid": np.repeat(geoids, sizes).astype(object),
        "hhgq": hhgq,
        "votingage": adult.astype(np.int8),
        "hispanic": (categories // N_CENRACE).astype(np.int8),
        "cenrace": (categories % N_CENRACE + 1).astype(np.int16),
    })


def write_persons(frame, path: Path) -> None:
    """Write ``frame`` to the Parquet file ``path`` atomically (complete or absent)."""
    from dprisk.runtime.output_files import atomic_path

    path = Path(path)
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False, engine="pyarrow")
