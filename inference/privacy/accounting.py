r"""Privacy accounting: the (epsilon, delta)-DP guarantee of a rho-zCDP release, three ways.

(a) **Bun–Steinke** (the paper's Theorem 1), :math:`\varepsilon = \rho + 2\sqrt{\rho
\log(1/\delta)}`; its home is :mod:`dprisk.models.mechanism.conversions` (``zcdp_to_dp``,
``dp_to_zcdp``), re-exposed here as scalar functions.

(b) **Canonne–Kamath–Steinke** (2020, Proposition 12; the conversion the Census DAS uses),
through the Rényi-DP accountant of ``dp-accounting``: rho-zCDP is Rényi DP of every order
:math:`\alpha > 1` with :math:`\varepsilon_\alpha = \alpha\rho`, and

.. math:: \varepsilon = \min_{\alpha > 1}\; \alpha\rho + \log(1 - 1/\alpha)
          - \frac{\log(\delta\alpha)}{\alpha - 1}.

The accountant evaluates the bracket on its default grid of orders; the minimum is then
refined continuously between the grid orders around the best one (a bounded Brent search,
each evaluation again the accountant at a single order). At rho = 2.56, delta = 1e-10 this
gives 17.1584 (the Census states 17.14 for its production rho, (542/339)^2).

(c) **Composition of the actual release**: the privacy-loss distribution (PLD) of each
discrete Gaussian query, :math:`\mathrm{DG}(0, \sigma^2)` with :math:`\sigma^2 =
1/(2\rho_i)` and sensitivity 1, composed over every query of the 2020 persons strategy
(:mod:`dprisk.models.census.strategy`) with ``dp-accounting``'s PLD. The exact epsilon of this
composition lies between an optimistic and a pessimistic discretisation of the losses:
:func:`epsilon_pld` is the pessimistic one at a coarse loss grid (1e-4; 16.4828 at the Census
rho, about 0.003 above the exact value, so an upper bound, *not* the exact epsilon), and
:func:`epsilon_pld_bracket` gives both ends at a grid fine enough that they are at most 1e-3
apart ([16.4789, 16.4796] at the Census rho, interval 2e-5; optimistic: privacy buckets,
pessimistic: connect-the-dots). Both are refused (ValueError) where ``dp-accounting``
does not resolve them: :mod:`dprisk.inference.privacy.accounting_limits`.

**Neighbouring relation.** The accounting assumes *add or remove one person*: each query of
the strategy is a partition of the histogram into cells, so one person changes one cell of
each query by 1 (sensitivity 1 per query; the Census DAS's convention). Under *replace one
person* (change one record's characteristics) a query's count moves by 1 in two cells when
the old and new records fall in different cells of it, so in the worst case every query is a
pair of shifted discrete Gaussians (L2 sensitivity :math:`\sqrt 2`, its zCDP doubles to
:math:`2\rho`): ``relation="replace-one"`` composes each query twice, which gives the larger
epsilon of that convention.

Both conversions increase in rho; the inverses (the largest rho whose guarantee is at most a
given epsilon) are the closed form for (a) and a bracketing root-finder (Brent) on the
monotone map for (b).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from dprisk.inference.privacy.accounting_cache import cached_float
from dprisk.inference.privacy.accounting_cks_range import (
    MAX_ORDER,
    MIN_ORDER,
    CksRange,
    cks_range,
    refuse_cks,
    refuse_cks_delta,
    show_range,
)
from dprisk.inference.privacy.accounting_limits import (
    PLD_EXPONENT_MAX,
    cks_delta,
    pld_composed_delta,
    pld_delta,
    pld_resolved,
)
from dprisk.models.census.allocation import CENSUS_DELTA, CENSUS_RHO_TOTAL
from dprisk.models.census.strategy import strategy_queries
from dprisk.models.checks import check_rho
from dprisk.models.mechanism.conversions import dp_to_zcdp, zcdp_to_dp
from dprisk.models.roots import brent_root
from dprisk.models.scenario import scalar_value

__all__ = [
    "BRACKET_ENDS_ROUNDING",
    "NEIGHBOUR_RELATIONS",
    "PLD_BRACKET_INTERVAL",
    "CksRange",
    "census_epsilon_pld",
    "census_epsilon_pld_bracket",
    "cks_range",
    "composed_pld",
    "epsilon_bun_steinke",
    "epsilon_cks",
    "epsilon_pld",
    "epsilon_pld_bracket",
    "rho_bun_steinke",
    "rho_cks",
]

#: Neighbouring relations of the PLD accounting: one person added or removed (each query's
#: count moves by 1 in one cell), or one person's record replaced (by 1 in two cells).
NEIGHBOUR_RELATIONS = ("add-remove", "replace-one")
#: Loss grid of :func:`epsilon_pld_bracket` (brackets the Census epsilon within 1e-3).
PLD_BRACKET_INTERVAL = 2e-5
def _scalar(value, name: str, check) -> float:
    """``value`` checked by ``check`` and required to be one number (``ValueError`` naming it)."""
    return float(scalar_value(check(value, name), name))


def _scalar_result(value, names: str) -> float:
    if np.ndim(value):
        raise ValueError(f"{names} must be single numbers, got arrays")
    return float(value)


def epsilon_bun_steinke(rho, delta) -> float:
    r"""Epsilon of rho-zCDP by Bun–Steinke: :math:`\rho + 2\sqrt{\rho\log(1/\delta)}`.

    Parameters
    ----------
    rho : float (rho > 0)
        zCDP parameter of the release.
    delta : float (0 < delta < 1)
        The delta of the (epsilon, delta)-DP guarantee.

    Returns
    -------
    float
        epsilon (> rho).
    """
    return _scalar_result(zcdp_to_dp(rho, delta), "rho and delta")


def rho_bun_steinke(epsilon, delta) -> float:
    r"""The largest rho whose Bun–Steinke epsilon at ``delta`` is ``epsilon`` (closed form).

    Parameters
    ----------
    epsilon : float (epsilon > 0)
    delta : float (0 < delta < 1)
    """
    return _scalar_result(dp_to_zcdp(epsilon, delta), "epsilon and delta")


def _cks_at_orders(rho: float, delta: float, orders) -> tuple[float, float]:
    """dp-accounting's RDP accountant for one zCDP event: (epsilon, optimal order)."""
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant

    accountant = rdp_privacy_accountant.RdpAccountant(orders=orders)
    accountant.compose(dp_event.ZCDpEvent(rho))
    epsilon, order = accountant.get_epsilon_and_optimal_order(delta)
    return float(epsilon), float(order)


def _cks_epsilon(rho: float, delta: float) -> float:
    """CKS epsilon of validated scalars: the accountant's grid, refined between orders."""
    from dp_accounting.rdp import rdp_privacy_accountant
    from scipy.optimize import minimize_scalar

    grid = sorted(float(a) for a in rdp_privacy_accountant.DEFAULT_RDP_ORDERS)
    epsilon, order = _cks_at_orders(rho, delta, grid)
    if epsilon == 0.0 or not np.isfinite(epsilon):
        return epsilon
    i = grid.index(order)
    lower = grid[i - 1] if i > 0 else MIN_ORDER
    upper = grid[i + 1] if i + 1 < len(grid) else order
    if upper == order:  # the optimum may lie beyond the grid (small rho): extend the bracket
        at, value = order, epsilon
        while True:  # the bound is unimodal in the order: doubling until it rises brackets it
            upper = min(2.0 * at, MAX_ORDER)
            above = _cks_at_orders(rho, delta, [upper])[0]
            if above > value:
                break
            if upper == MAX_ORDER:  # the last order: the optimum is below it if it rises there
                if _cks_at_orders(rho, delta, [upper * (1.0 - 1e-3)])[0] >= above:
                    refuse_cks(rho, delta, f"above {MAX_ORDER:.0e}")
                break
            at, value = upper, above
        if at > order:  # the bracket moved past the grid: the order before the last
            lower = at / 2.0
    found = minimize_scalar(lambda a: _cks_at_orders(rho, delta, [a])[0],
                            bounds=(lower, upper), method="bounded",
                            options={"xatol": 1e-10 * upper})
    if lower == MIN_ORDER and found.x <= lower * (1.0 + 1e-6):
        refuse_cks(rho, delta, f"below {MIN_ORDER}")
    return min(epsilon, float(found.fun))


def epsilon_cks(rho, delta) -> float:
    r"""Epsilon of rho-zCDP by the Canonne–Kamath–Steinke conversion (via dp-accounting).

    .. math:: \varepsilon = \min_{\alpha > 1}\; \alpha\rho + \log(1 - 1/\alpha)
              - \frac{\log(\delta\alpha)}{\alpha - 1}

    Parameters
    ----------
    rho, delta
        As in :func:`epsilon_bun_steinke` (refused where the accountant gives no epsilon > 0).

    Returns
    -------
    float
        epsilon (> 0), at most :func:`epsilon_bun_steinke` of the same ``rho`` and ``delta``.

    Notes
    -----
    Results are cached on disk (:mod:`dprisk.inference.privacy.accounting_cache`), keyed by
    ``rho``, ``delta`` and the ``dp-accounting`` version.

    Examples
    --------
    rho = 2.56, delta = 1e-10 gives epsilon = 17.1583... (Bun–Steinke: 17.9153).
    """
    rho = _scalar(rho, "rho", check_rho)
    delta = cks_delta(delta)
    epsilon = cached_float("epsilon_cks", {"rho": repr(rho), "delta": repr(delta)},
                           lambda: _cks_epsilon(rho, delta))
    if epsilon <= 0.0:  # the accountant's bound clipped at 0 (or the refined one below it)
        refuse_cks(rho, delta, None)
    return epsilon


def rho_cks(epsilon, delta) -> float:
    r"""The largest rho whose CKS epsilon at ``delta`` is at most ``epsilon``.

    The CKS epsilon increases in rho and is at most the Bun–Steinke one, so the root lies
    above :func:`rho_bun_steinke`; the upper end of the bracket is doubled until the epsilon
    exceeds the target, then Brent's method finds the root to a relative 1e-14, and a root
    whose epsilon rounds above the target is moved down (by a relative 1e-15, doubling) until
    it does not: the rho returned has a CKS epsilon at most ``epsilon``.

    Parameters
    ----------
    epsilon : float (epsilon > 0)
    delta : float (0 < delta < 1)
    """
    epsilon = _scalar(epsilon, "epsilon", check_rho)
    delta = cks_delta(delta)
    span = cks_range(delta)
    if span is None:
        refuse_cks_delta(delta)
    if not span.epsilon_low <= epsilon <= span.epsilon_high:
        raise ValueError(
            f"epsilon = {epsilon!r} with delta = {delta!r}: the largest rho has its CKS optimal "
            f"Renyi order outside the orders the accountant evaluates ({MIN_ORDER} to "
            f"{MAX_ORDER:.0e}); allowed range at delta = {delta:.6g}: about "
            f"{show_range(span.epsilon_low, span.epsilon_high, span.low_open, 'epsilon')}; "
            "the Bun-Steinke conversion covers every epsilon"
        )
    lower = rho_bun_steinke(epsilon, delta)
    if not span.low_open:
        lower = max(lower, span.rho_low)
    if lower >= span.rho_high or _cks_epsilon(lower, delta) >= epsilon:
        return min(lower, span.rho_high)
    upper = min(2.0 * lower, span.rho_high)
    while _cks_epsilon(upper, delta) <= epsilon:
        if upper == span.rho_high:  # epsilon rounds to the top's
            return upper
        lower, upper = upper, min(2.0 * upper, span.rho_high)
    root = float(brent_root(lambda r: _cks_epsilon(r, delta) - epsilon, lower, upper,
                            xtol=1e-300, rtol=1e-14))
    step = 1e-15  # the root to 1e-14 may lie on either side: keep the side at most epsilon
    while root > lower and _cks_epsilon(root, delta) > epsilon:
        root, step = max(lower, root * (1.0 - step)), 2.0 * step
    return root


def epsilon_pld(rhos, delta, *, value_discretization_interval: float = 1e-4) -> float:
    r"""Pessimistic PLD epsilon of a composition of discrete Gaussian queries (an upper bound).

    Query ``i`` adds :math:`\mathrm{DG}(0, \sigma_i^2)`, :math:`\sigma_i^2 = 1/(2\rho_i)`, to
    a count of sensitivity 1; the privacy-loss distributions of all queries are composed
    (identical queries by self-composition) and the smallest epsilon with hockey-stick
    divergence at most ``delta`` is returned. The discretisation is pessimistic: the value is
    an upper bound that tightens as ``value_discretization_interval`` shrinks (at the default
    1e-4 it is about 0.003 above the exact epsilon of the 2020 strategy;
    :func:`epsilon_pld_bracket` gives a lower bound too), up to the rounding of
    ``dp-accounting``'s FFT composition (about 1e-16 in delta: for rhos [0.1, 0.2] at delta
    1e-10, whose losses lie on the grid, it came out 1.8e-7 below the exact epsilon).
    Neighbours: add or remove one person, sensitivity 1 per query (module docstring).

    Parameters
    ----------
    rhos : sequence of float (each > 0)
        The zCDP budget of each query.
    delta : float (1e-20 <= delta < 1; 1e-12 for two or more queries)
        The delta of the (epsilon, delta)-DP guarantee (ranges:
        :mod:`dprisk.inference.privacy.accounting_limits`).
    value_discretization_interval : float (> 0), default 1e-4
        Grid of the privacy-loss values.

    Returns
    -------
    float
        epsilon, an upper bound of the composition's exact epsilon.

    Notes
    -----
    Results are cached on disk (:mod:`dprisk.inference.privacy.accounting_cache`), keyed by the
    queries' rhos, ``delta``, the interval and the ``dp-accounting`` version.
    """
    rho_values = check_rho(rhos, "rhos")
    if rho_values.ndim != 1 or rho_values.size == 0:
        raise ValueError(f"rhos must be a non-empty list of numbers > 0, got {rhos!r}")
    delta = pld_delta(delta)
    interval = _scalar(value_discretization_interval, "value_discretization_interval",
                       check_rho)
    queries = sorted(Counter(rho_values.tolist()).items())
    pld_composed_delta(delta, rho_values.size)
    key = {"queries": [[repr(rho), count] for rho, count in queries], "delta": repr(delta),
           "value_discretization_interval": repr(interval)}
    return pld_resolved(cached_float("epsilon_pld", key,
                                      lambda: _compose_pld(queries, delta, interval)), delta)


def composed_pld(queries: list[tuple[float, int]], interval: float, *, pessimistic: bool = True,
                 connect_dots: bool = False):
    r"""The composed ``dp-accounting`` PLD of ``(rho, count)`` groups of discrete Gaussian queries.

    Query noise :math:`\mathrm{DG}(0, \sigma^2)`, :math:`\sigma^2 = 1/(2\rho)`, sensitivity 1
    (one person added or removed moves each query's count by one); ``count`` identical queries
    by self-composition. ``pessimistic`` rounds losses up and keeps the truncated tails as an
    infinite loss (every hockey-stick divergence is then an upper bound), the optimistic
    discretisation rounds down and drops them (a lower bound). ``connect_dots`` (pessimistic
    only) uses the connect-the-dots discretisation (Doroshenko et al. 2022), a valid upper
    bound much closer to the exact value at the same interval. Inputs are validated.
    """
    from dp_accounting.pld import privacy_loss_distribution

    composed = None
    for rho, count in queries:
        pld = privacy_loss_distribution.from_discrete_gaussian_mechanism(
            float(np.sqrt(1.0 / (2.0 * rho))), sensitivity=1,
            pessimistic_estimate=pessimistic, value_discretization_interval=interval,
            use_connect_dots=connect_dots and pessimistic)
        if count > 1:
            pld = pld.self_compose(count)
        composed = pld if composed is None else composed.compose(pld)
    return composed


def _compose_pld(queries: list[tuple[float, int]], delta: float, interval: float,
                 pessimistic: bool = True) -> float:
    """``epsilon_pld`` computed: compose the PLD of each ``(rho, count)`` query group."""
    return float(composed_pld(queries, interval, pessimistic=pessimistic)
                 .get_epsilon_for_delta(delta))


def _bracket_end(queries: list[tuple[float, int]], delta: float, interval: float,
                 pessimistic: bool) -> float:
    """One end of :func:`epsilon_pld_bracket`: optimistic, or pessimistic connect-the-dots.

    A query of large rho (about 350 and above) has losses whose ``expm1`` overflows inside
    ``dp-accounting``'s connect-the-dots pmf: the quotient it divides is then 0, the correct
    limit, and the overflow warning is silenced (it printed on stderr beside an answer).
    """
    with np.errstate(over="ignore"):
        return float(composed_pld(queries, interval, pessimistic=pessimistic,
                                  connect_dots=True).get_epsilon_for_delta(delta))


#: Relative gap up to which :func:`epsilon_pld_bracket`'s ends are put in order when the
#: optimistic one comes out above the pessimistic one: floating-point rounding of the two
#: epsilon solves where a query's losses lie on the grid and both ends are exact (at most
#: 8.8e-16 relative over 54 such single queries, rho 0.005-3, delta 1e-10-1e-3), far below the
#: discretisations' own gap (about 7e-4 for the 2020 strategy at the default interval). A
#: larger inversion is returned as computed.
BRACKET_ENDS_ROUNDING = 1e-12


def epsilon_pld_bracket(rhos, delta, *,
                        value_discretization_interval: float = PLD_BRACKET_INTERVAL,
                        relation: str = "add-remove") -> tuple[float, float]:
    r"""``(lower, upper)``: the exact PLD epsilon of the composition lies between them.

    The optimistic discretisation of the same composition as :func:`epsilon_pld`
    (``dp-accounting``, privacy buckets rounded down, truncated tails dropped) and the
    pessimistic one by connect-the-dots (Doroshenko et al. 2022; a valid upper bound much
    tighter than :func:`epsilon_pld`'s at the same interval); the gap shrinks with
    ``value_discretization_interval`` (at the default 2e-5 it is about 7e-4 for the 2020
    strategy, most of it on the optimistic side). Both ends are cached like :func:`epsilon_pld`.

    Parameters
    ----------
    rhos, delta
        As in :func:`epsilon_pld`.
    value_discretization_interval : float (> 0), default 2e-5
        Grid of the privacy-loss values.
    relation : {"add-remove", "replace-one"}
        The neighbouring relation: add or remove one person (sensitivity 1 per query, the
        default and the Census's), or replace one person's record (each query's count may
        move in two cells: every query composed twice).

    Returns
    -------
    (float, float)
        ``(lower, upper)``, the optimistic and the pessimistic epsilon; where both are exact
        but for rounding and come out reversed (within :data:`BRACKET_ENDS_ROUNDING`), in
        order.
    """
    rho_values = check_rho(rhos, "rhos")
    if rho_values.ndim != 1 or rho_values.size == 0:
        raise ValueError(f"rhos must be a non-empty list of numbers > 0, got {rhos!r}")
    if relation not in NEIGHBOUR_RELATIONS:
        raise ValueError(f"relation must be one of {NEIGHBOUR_RELATIONS}, got {relation!r}")
    delta = pld_delta(delta)
    interval = _scalar(value_discretization_interval, "value_discretization_interval",
                       check_rho)
    copies = 2 if relation == "replace-one" else 1
    queries = sorted((rho, copies * count)
                     for rho, count in Counter(rho_values.tolist()).items())
    pld_composed_delta(delta, copies * rho_values.size)
    # epsilon >= rho_total - 1 for delta < 0.3 (the loss is >= rho_total with probability
    # > 1/2): refused before dp-accounting, whose bracket at rho 1e20 raised a TypeError
    total = float(sum(rho * count for rho, count in queries))
    if delta < 0.3 and total - 1.0 - np.log(delta) >= PLD_EXPONENT_MAX:
        pld_resolved(total, delta)
    ends = []
    for pessimistic in (False, True):
        key = {"queries": [[repr(rho), count] for rho, count in queries], "delta": repr(delta),
               "value_discretization_interval": repr(interval), "pessimistic": pessimistic}
        ends.append(cached_float("epsilon_pld_bracket", key, lambda pes=pessimistic: (
            _bracket_end(queries, delta, interval, pes))))
    pld_resolved(max(ends), delta)
    lower, upper = ends
    if upper < lower <= upper * (1.0 + BRACKET_ENDS_ROUNDING):
        # both discretisations exact but for rounding (rho 0.3 at delta 1e-10: the optimistic
        # end 8.8e-16 relative above the pessimistic one); the exact epsilon is within
        # rounding of both
        lower, upper = upper, lower
    return lower, upper


def census_epsilon_pld_bracket(rho_total=CENSUS_RHO_TOTAL, delta=CENSUS_DELTA, *,
                               value_discretization_interval: float = PLD_BRACKET_INTERVAL,
                               relation: str = "add-remove") -> tuple[float, float]:
    """:func:`epsilon_pld_bracket` of every query of the 2020 persons strategy.

    At rho = 2.56 and delta = 1e-10: about [16.4789, 16.4796] (add or remove one person); the
    exact epsilon, 16.4795 by an independent composition, lies inside.

    Parameters
    ----------
    rho_total : float (> 0), default 2.56
        The persons strategy's global zCDP budget (each query's rho is its share).
    delta, value_discretization_interval, relation
        As in :func:`epsilon_pld_bracket` (``delta`` default 1e-10).

    Returns
    -------
    (float, float)
        ``(lower, upper)``, as :func:`epsilon_pld_bracket`.
    """
    rhos = [query.rho for query in strategy_queries(rho_total)]
    return epsilon_pld_bracket(rhos, delta,
                               value_discretization_interval=value_discretization_interval,
                               relation=relation)


def census_epsilon_pld(rho_total=CENSUS_RHO_TOTAL, delta=CENSUS_DELTA, *,
                       value_discretization_interval: float = 1e-4) -> float:
    """Pessimistic PLD epsilon of every discrete Gaussian query of the 2020 persons strategy.

    Each query's rho is ``rho_total`` x geolevel share x query fraction
    (:func:`dprisk.models.census.strategy.strategy_queries`); see :func:`epsilon_pld`.
    At rho = 2.56 and delta = 1e-10 the (pessimistic, interval 1e-4) value is 16.4828, an
    upper bound about 0.003 above the exact epsilon (:func:`census_epsilon_pld_bracket`).

    Parameters
    ----------
    rho_total : float (> 0), default 2.56
        The persons strategy's global zCDP budget (each query's rho is its share).
    delta, value_discretization_interval
        As in :func:`epsilon_pld` (``delta`` default 1e-10).

    Returns
    -------
    float
        epsilon, an upper bound of the composition's exact epsilon.
    """
    rhos = [query.rho for query in strategy_queries(rho_total)]
    return epsilon_pld(rhos, delta, value_discretization_interval=value_discretization_interval)
