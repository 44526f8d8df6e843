r"""The noise of every noisy measurement, as the 2020 DAS drew it, from counter-based streams.

**The law.** The DAS adds to each cell of a query's answer an independent discrete Gaussian

.. math:: P[\eta = x] = \frac{\exp(-x^2 / (2\sigma^2))}{\sum_{z \in \mathbb{Z}}
          \exp(-z^2 / (2\sigma^2))}, \qquad \sigma^2 = 1 / \text{inverse\_scale},

with ``inverse_scale = dpq_prop * geolevel_prop / global_scale**2`` under zCDP. Checked in the
DAS source, ``uscensusbureau/DAS_2020_Redistricting_Production_Code``:
``DAS_PL94.release/programs/engine/primitives.py`` (``RationalDiscreteGaussianMechanism``:
"perturbations drawn from exp(-x^2 inverse_scale / 2)", ``self.sigma_sq = 1/inverse_scale``,
the stored ``variance`` = ``computeDiscreteGaussianVariance(sigma_sq)``, the exact variance,
below σ² by 4.1e-9 relative at the smallest σ² of this strategy, the State ``total``'s 1.2092
(4.9e-9 at 1.2), by less than 1e-23 for every other query) and
``source/programs/engine/engine_utils.py`` (``getAdjustedInverseScalePerQuery``: ``dpq_prop *
geolevel_prop / (global_scale**2)`` for zCDP). So σ² = 1/ρ_query =
:attr:`dprisk.models.census.strategy.StrategyQuery.das_variance` (block ``detailed``: 10.093
at :data:`~dprisk.models.census.strategy.PRODUCTION_RHO`), which is DG(0, 1/(2ρ')) in this
project's convention with ρ' = ρ_query / 2 (docs/noise-conventions.md).

**The sampler.** The project's fast exact sampler, the alias table of
:func:`dprisk.models.mechanism.dg_sampling.alias_table` (the pmf to within 2^-64, tail
beyond 1e-20 dropped), fed one uniform 64-bit word per cell
(:func:`~dprisk.models.mechanism.dg_sampling.noise_from_words`).

**The words: a pure function of (seed, level, query, geounit).** Each geounit has its own
Philox4x64-10 stream (numpy's ``Philox``, a counter-based generator) keyed by the 128-bit
BLAKE2b digest of ``"dprisk-nmf-v1|{seed}|{level}|{unit}"``; within it, the queries of the
level take fixed counter ranges in the DAS order, query ``q`` starting at counter
:math:`C_q = \sum_{q' < q} \lceil n_{q'} / 4 \rceil` (a Philox counter step gives four words).
``unit`` is the geounit's spine geocode, except at the Block level where it is the block's
16-character tabulation code (the geocode's last 16 characters), so a block's noise does not
depend on the spine numbering above it. The noise of a query at a geounit is therefore the
same whatever else is measured, in whatever order, by whatever partitioning, and in either
output layout.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dprisk.models.census.strategy import (
    PRODUCTION_RHO,
    STRATEGY_QUERY_NAMES,
    strategy_queries,
)
from dprisk.models.mechanism.dg_sampling import alias_table, noise_from_words

__all__ = [
    "LEVELS",
    "QUERY_SIZES",
    "LevelNoise",
    "query_counter_offsets",
    "stream_key",
    "unit_words",
]

#: The levels of the released layout (folder names), top first, and their names in
#: :mod:`dprisk.models.census.allocation`.
LEVELS = {"US": "us", "State": "state", "County": "county", "Tract": "tract",
          "Block_Group": "block-group", "Block": "block"}
#: Cells of each strategy query's answer (hhinstlevels: 3 groups of hhgq).
QUERY_SIZES = {"total": 1, "cenrace": 63, "hispanic": 2, "votingage": 2, "hhinstlevels": 3,
               "hhgq": 8, "hispanic * cenrace": 126, "votingage * cenrace": 126,
               "votingage * hispanic": 4, "votingage * hispanic * cenrace": 252,
               "detailed": 2016}
_WORDS_PER_STEP = 4
_DOMAIN = "dprisk-nmf-v1"


def query_counter_offsets(queries=STRATEGY_QUERY_NAMES) -> dict[str, int]:
    """First Philox counter step of each query's words in a geounit's stream, in DAS order.

    Every level uses the offsets of the full query list (the US level, which has no
    ``total``, leaves its range unused), so a query's words are at the same place at every
    level.
    """
    offsets, step = {}, 0
    for query in queries:
        offsets[query] = step
        step += -(-QUERY_SIZES[query] // _WORDS_PER_STEP)
    return offsets


_OFFSETS = query_counter_offsets()
#: Counter steps a geounit's stream spans (all queries).
_STREAM_STEPS = sum(-(-QUERY_SIZES[q] // _WORDS_PER_STEP) for q in STRATEGY_QUERY_NAMES)


def stream_key(seed: int, level: str, unit: str) -> int:
    """The 128-bit Philox key of geounit ``unit`` at ``level`` (BLAKE2b of the three)."""
    text = f"{_DOMAIN}|{int(seed)}|{level}|{unit}".encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=16).digest(), "little")


def _unit_id(level: str, geocode: str) -> str:
    return geocode[-16:] if level == "Block" else geocode


def unit_words(seed: int, level: str, geocode: str, query: str | None = None) -> np.ndarray:
    """The uniform 64-bit words of one geounit: of ``query`` only, or of its whole stream.

    Parameters
    ----------
    seed : int
    level : str
        A key of :data:`LEVELS`.
    geocode : str
        The geounit's spine geocode.
    query : str, optional
        One of :data:`~dprisk.models.census.strategy.STRATEGY_QUERY_NAMES`; ``None``: the
        words of every query, ``4 * _STREAM_STEPS`` of them, query ``q`` at ``4 * C_q``.
    """
    bits = np.random.Philox(key=stream_key(seed, level, _unit_id(level, geocode)))
    if query is None:
        return bits.random_raw(_WORDS_PER_STEP * _STREAM_STEPS)
    if _OFFSETS[query]:
        bits.advance(_OFFSETS[query])
    return bits.random_raw(QUERY_SIZES[query])


@dataclass
class LevelNoise:
    """Noise of the queries of one level, drawn at the production allocation.

    Parameters
    ----------
    level : str
        A key of :data:`LEVELS`.
    seed : int
        The run's seed (>= 0).
    rho_total : Fraction
        Global rho (default :data:`~dprisk.models.census.strategy.PRODUCTION_RHO`).
    """

    level: str
    seed: int
    rho_total: Fraction = PRODUCTION_RHO

    def __post_init__(self):
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {self.level!r}")
        name = LEVELS[self.level]
        self.queries = {q.query: q for q in strategy_queries(self.rho_total) if q.level == name}
        self._tables = {}

    def variance(self, query: str) -> float:
        """σ² = 1/ρ_query, the DAS's noise variance of ``query`` at this level."""
        return self.queries[query].das_variance

    def plb(self, query: str) -> Fraction:
        """The query's rho (its privacy-loss budget) as an exact fraction."""
        return self.queries[query].rho_exact

    def _table(self, query: str):
        if query not in self._tables:
            # DAS: pmf ∝ exp(-x²/(2σ²)), σ² = 1/ρ_q; the project's DG(0, 1/(2ρ')) has ρ' = ρ_q/2.
            self._tables[query] = alias_table(float(self.queries[query].rho_exact / 2))
        return self._tables[query]

    def draw(self, geocodes, queries=None) -> dict[str, np.ndarray]:
        """Noise of ``queries`` (default: every query of the level) at each geounit.

        Returns
        -------
        dict of str to ndarray of int64
            ``noise[q]`` of shape ``(len(geocodes), QUERY_SIZES[q])``, row i for geocodes[i].
        """
        queries = list(self.queries) if queries is None else list(queries)
        unknown = [q for q in queries if q not in self.queries]
        if unknown:
            raise ValueError(f"level {self.level} has no query {unknown[0]!r}")
        geocodes = list(geocodes)
        if len(queries) == 1:
            words = {queries[0]: np.empty((len(geocodes), QUERY_SIZES[queries[0]]), np.uint64)}
            for i, geocode in enumerate(geocodes):
                words[queries[0]][i] = unit_words(self.seed, self.level, geocode, queries[0])
        else:
            stream = np.empty((len(geocodes), _WORDS_PER_STEP * _STREAM_STEPS), np.uint64)
            for i, geocode in enumerate(geocodes):
                stream[i] = unit_words(self.seed, self.level, geocode)
            words = {q: stream[:, 4 * _OFFSETS[q]:4 * _OFFSETS[q] + QUERY_SIZES[q]]
                     for q in queries}
        return {q: noise_from_words(self._table(q), np.ascontiguousarray(words[q]))
                for q in queries}
