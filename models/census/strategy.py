r"""The 2020 Census persons (PL 94-171) measurement strategy as data: every query's rho.

The production run measured, at each of the six geographic levels, a set of marginal queries
of the persons histogram (``hhgq x votingage x hispanic x cenrace``), each with discrete
Gaussian noise. A query's zCDP budget is

.. math:: \rho_{\text{query}} = \rho \times \text{geolevel share} \times \text{query fraction},

with the geolevel shares of :data:`dprisk.models.census.allocation.CENSUS_LEVELS` (paper Table 2)
and
the query fractions below; each level's fractions sum to 1, so the shares compose (zCDP adds)
back to the global rho. Under add/remove-one neighbours every query, a partition of the
histogram into cells, changes by 1 in exactly one cell: sensitivity 1, noise
:math:`\mathrm{DG}(0, \sigma^2)` with :math:`\sigma^2 = 1/(2\rho_{\text{query}})` (this
project's convention). The DAS itself accounts under replace-one neighbours and drew each
query with variance :math:`1/\rho_{\text{query}}`, twice that
(:attr:`StrategyQuery.das_variance`; ``docs/noise-conventions.md``).

Sources (numbers taken as facts), the public repository
``uscensusbureau/DAS_2020_Redistricting_Production_Code`` (checked at commit 289ee46, where the
code is under ``source/``; before 2021-09-05 the same files were under ``DAS_PL94.release/``):

* query fractions: the strategy ``ProductionCandidate20210527US_mult8_add02_dsepJune3`` in
  ``source/programs/strategies/strategies.py`` (no ``total`` query at the US level);
* the production configuration ``source/configs/production/pl94/person_US.ini`` names that
  strategy and the geolevel shares ``104/4099, 1440/4099, 447/4099, 687/4099, 1256/4099,
  165/4099`` (US first; equal to Table 2);
* the global scale ``global_scale = 339/542`` in
  ``source/configs/production/pl94/person_default.ini``; the DAS turns it into the
  global rho as ``rho = 1 / global_scale**2`` (``source/programs/engine/budget.py``,
  ``Budget.computeTotal``), so :data:`PRODUCTION_RHO` = (542/339)^2 = 2.55624..., which the
  Census states as 2.56.

The ``detailed`` fraction of every level is the GVHR query share of Table 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from dprisk.models.census.allocation import CENSUS_LEVELS, CENSUS_RHO_TOTAL, census_level
from dprisk.models.checks import check_rho

__all__ = [
    "PRODUCTION_GLOBAL_SCALE",
    "PRODUCTION_RHO",
    "QUERY_FRACTIONS",
    "STRATEGY_NAME",
    "STRATEGY_QUERY_NAMES",
    "StrategyQuery",
    "strategy_queries",
]

#: Name of the production strategy in the Census DAS source.
STRATEGY_NAME = "ProductionCandidate20210527US_mult8_add02_dsepJune3"
#: ``global_scale`` of the production persons configuration.
PRODUCTION_GLOBAL_SCALE = Fraction(339, 542)
#: The production global rho, 1 / global_scale^2 = (542/339)^2 (stated as 2.56).
PRODUCTION_RHO = 1 / PRODUCTION_GLOBAL_SCALE**2

#: The queries of every level below the US, in the DAS order.
STRATEGY_QUERY_NAMES: tuple[str, ...] = (
    "total",
    "cenrace",
    "hispanic",
    "votingage",
    "hhinstlevels",
    "hhgq",
    "hispanic * cenrace",
    "votingage * cenrace",
    "votingage * hispanic",
    "votingage * hispanic * cenrace",
    "detailed",
)


def _fractions(*pairs: tuple[int, int]) -> tuple[Fraction, ...]:
    return tuple(Fraction(num, den) for num, den in pairs)


#: Query fractions of each level (level names of :mod:`dprisk.models.census.allocation`), in
#: the order of :data:`STRATEGY_QUERY_NAMES`; the US level has no ``total`` query.
QUERY_FRACTIONS: dict[str, dict[str, Fraction]] = {
    "block": dict(zip(STRATEGY_QUERY_NAMES, _fractions(
        (5, 4097), (9, 4097), (5, 4097), (5, 4097), (5, 4097), (5, 4097), (21, 4097),
        (21, 4097), (5, 4097), (71, 4097), (3945, 4097)), strict=True)),
    "block-group": dict(zip(STRATEGY_QUERY_NAMES, _fractions(
        (1705, 4099), (3, 4099), (3, 4099), (3, 4099), (3, 4099), (3, 4099), (1055, 4099),
        (9, 4099), (3, 4099), (24, 4099), (1288, 4099)), strict=True)),
    "tract": dict(zip(STRATEGY_QUERY_NAMES, _fractions(
        (1567, 4102), (4, 2051), (5, 4102), (5, 4102), (5, 4102), (5, 4102), (1933, 4102),
        (10, 2051), (5, 4102), (67, 4102), (241, 2051)), strict=True)),
    "county": dict(zip(STRATEGY_QUERY_NAMES, _fractions(
        (3126, 4097), (10, 4097), (10, 4097), (10, 4097), (10, 4097), (10, 4097), (28, 4097),
        (28, 4097), (10, 4097), (101, 4097), (754, 4097)), strict=True)),
    "state": dict(zip(STRATEGY_QUERY_NAMES, _fractions(
        (3773, 4097), (6, 4097), (6, 4097), (6, 4097), (6, 4097), (6, 4097), (12, 4097),
        (12, 4097), (6, 4097), (2, 241), (230, 4097)), strict=True)),
    "us": dict(zip(STRATEGY_QUERY_NAMES[1:], _fractions(
        (52, 4097), (26, 4097), (26, 4097), (26, 4097), (26, 4097), (130, 4097), (130, 4097),
        (26, 4097), (26, 241), (189, 241)), strict=True)),
}


@dataclass(frozen=True)
class StrategyQuery:
    """One noisy query of the strategy and its budget.

    Attributes
    ----------
    level : str
        Geographic level, ``block`` ... ``us``.
    query : str
        Query name as in the DAS (``detailed`` is the full histogram, the GVHR query).
    fraction : Fraction
        Share of the level's rho given to this query.
    rho_exact : Fraction
        The query's rho: global rho x geolevel share x fraction.
    """

    level: str
    query: str
    fraction: Fraction
    rho_exact: Fraction

    @property
    def rho(self) -> float:
        """The query's rho as a float."""
        return float(self.rho_exact)

    @property
    def das_variance(self) -> float:
        r"""The noise variance the 2020 DAS drew this query with, :math:`\sigma^2 = 1/\rho`.

        The DAS draws pmf :math:`\propto \exp(-x^2 / (2\sigma^2))` with
        :math:`\sigma^2 = 1/\text{inverse\_scale}`, inverse_scale = geolevel share x query
        share / global_scale^2 = the query's rho (bounded, replace-one neighbours;
        docs/noise-conventions.md), twice this project's :math:`1/(2\rho)` at the same rho. At
        the production budget (:data:`PRODUCTION_RHO`) the block ``detailed`` query's is
        :math:`(339/542)^2 / (165/4099 \cdot 3945/4097) = 10.0928`; at the rounded 2.56,
        10.078.

        Checked in ``uscensusbureau/DAS_2020_Redistricting_Production_Code`` (commit 289ee46;
        ``docs/noise-conventions.md`` has the details):

        * ``source/programs/engine/primitives.py``, ``RationalDiscreteGaussianMechanism``:
          pmf ``exp(-x^2 inverse_scale / 2)`` normalised over the integers,
          ``sigma_sq = 1/inverse_scale``; its ``variance`` is the discrete Gaussian's own
          (``computeDiscreteGaussianVariance``), equal to sigma^2 to double precision here;
          ``basic_dp_answer`` passes ``inverse_scale`` through unchanged (``bounded_dp=True``
          only checks that the query is a marginal);
        * ``source/programs/engine/engine_utils.py``, ``getAdjustedInverseScalePerQuery``:
          under zCDP ``dpq_prop * geolevel_prop / global_scale**2``; ``makeDPQuery`` draws with
          ``bounded_dp=True``;
        * ``source/programs/engine/budget.py`` (``rho = 1 / global_scale**2``, epsilon with
          ``bounded=True``) and ``source/programs/engine/curve.py`` (``BaseCurve.get_hit`` /
          ``get_rho``: the squared sensitivity doubled for bounded DP, so rho = sum of
          inverse_scale = sum of 1/sigma^2: a query's rho is 1/sigma^2);
        * ``source/configs/production/pl94/person_default.ini``: ``global_scale = 339/542``,
          ``dp_mechanism = discrete_gaussian_mechanism``; ``prod_default.ini``:
          ``privacy_framework = zcdp``.
        """
        return float(1 / self.rho_exact)


def strategy_queries(rho_total=CENSUS_RHO_TOTAL) -> list[StrategyQuery]:
    """Every query of the persons strategy with its rho at global budget ``rho_total``.

    Parameters
    ----------
    rho_total : Fraction or float (> 0)
        Global rho; 2.56 (:data:`dprisk.models.census.allocation.CENSUS_RHO_TOTAL`) by default,
        :data:`PRODUCTION_RHO` for the production run's exact value.

    Returns
    -------
    list of StrategyQuery
        65 queries, block level first, in the DAS order within a level; their rhos sum to
        ``rho_total``.
    """
    if isinstance(rho_total, Fraction) and rho_total > 0:
        total = rho_total
    else:
        checked = check_rho(rho_total, "rho_total")
        if checked.ndim:
            raise ValueError(f"rho_total must be a single number > 0, got {rho_total!r}")
        total = Fraction(float(checked))
    queries = []
    for level in CENSUS_LEVELS:
        share = census_level(level.name).geolevel_share
        for query, fraction in QUERY_FRACTIONS[level.name].items():
            queries.append(StrategyQuery(level.name, query, fraction, total * share * fraction))
    return queries
