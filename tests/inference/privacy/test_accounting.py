"""Tests of inference/privacy/accounting.py: zCDP -> (epsilon, delta) by Bun–Steinke, CKS and PLD.

Published values: Bun–Steinke at rho = 2.56, delta = 1e-10 is 17.9153 (the paper's 17.91);
CKS gives 17.158 there (dp-accounting's grid 17.1584, autodp 17.1583) and 17.14 at the
production rho (542/339)^2 (the Census's figure); the PLD composition of the 65 strategy
queries is a little under 16.5. The CKS minimum over the Rényi order is checked against an
mpmath minimisation of the same bracket, and the PLD of one and of two discrete Gaussian queries
against their exact hockey-stick divergence summed over the integers.

Every value here is computed: the module's tests use an empty accounting cache of their own
(the shipped seed, checked by ``test_accounting_seed.py``, still answers the 2020 strategy's
fine bracket). Read from the user's cache, a value computed once -- by an earlier version, or
before a defect -- answered every later run: with a warm cache the PLD noise's variance
``1/rho`` instead of ``1/(2 rho)`` in ``composed_pld`` passed all of them.
"""

import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from pld_compositions import compose_once

from dprisk.inference.privacy.accounting import (
    PLD_BRACKET_INTERVAL,
    census_epsilon_pld,
    epsilon_bun_steinke,
    epsilon_cks,
    epsilon_pld,
    epsilon_pld_bracket,
    rho_bun_steinke,
    rho_cks,
)
from dprisk.models.census.strategy import PRODUCTION_RHO
from dprisk.models.mechanism.conversions import zcdp_to_dp

#: Every value computed, in an empty cache of this module's (``tests/conftest.py``).
pytestmark = pytest.mark.usefixtures("empty_accounting_cache")


def cks_reference(rho, delta):
    """min over alpha of alpha rho + log(1 - 1/alpha) - log(delta alpha)/(alpha - 1), mpmath."""
    with mp.workdps(30):
        rho, delta = mp.mpf(rho), mp.mpf(delta)

        def bracket(a):
            return a * rho + mp.log(1 - 1 / a) - mp.log(delta * a) / (a - 1)

        start = 1 + mp.sqrt(mp.log(1 / delta) / rho)
        alpha = mp.findroot(lambda a: mp.diff(bracket, a), start)
        return float(bracket(alpha))


def test_bun_steinke_is_the_paper_formula():
    assert epsilon_bun_steinke(2.56, 1e-10) == float(zcdp_to_dp(2.56, 1e-10))
    assert math.floor(epsilon_bun_steinke(2.56, 1e-10) * 100) / 100 == 17.91
    assert isinstance(epsilon_bun_steinke(2.56, 1e-10), float)


def test_cks_census_point():
    epsilon = epsilon_cks(2.56, 1e-10)
    assert isinstance(epsilon, float)
    assert round(epsilon, 3) == 17.158
    assert epsilon <= 17.1584  # at most dp-accounting's default-grid value
    assert epsilon == pytest.approx(cks_reference(2.56, 1e-10), rel=1e-9)


def test_cks_at_the_production_rho_is_the_census_figure():
    assert round(epsilon_cks(float(PRODUCTION_RHO), 1e-10), 2) == 17.14


@pytest.mark.parametrize("rho", [1e-3, 0.0992, 1.0, 2.56, 50.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5])
def test_cks_matches_the_continuous_minimum_and_is_tighter(rho, delta):
    epsilon = epsilon_cks(rho, delta)
    assert epsilon == pytest.approx(cks_reference(rho, delta), rel=1e-9)
    assert epsilon < epsilon_bun_steinke(rho, delta)


def test_cks_increases_in_rho():
    values = [epsilon_cks(rho, 1e-10) for rho in (0.01, 0.1, 0.5, 1.0, 2.0, 2.56, 5.0)]
    assert all(a < b for a, b in itertools.pairwise(values))


@pytest.mark.parametrize("rho", [1e-6, 0.01, 0.25, 2.56, 40.0])
def test_inverses_round_trip(rho):
    delta = 1e-10
    assert rho_bun_steinke(epsilon_bun_steinke(rho, delta), delta) == pytest.approx(rho, rel=1e-12)
    assert rho_cks(epsilon_cks(rho, delta), delta) == pytest.approx(rho, rel=1e-9)


def test_cks_inverse_is_the_largest_rho():
    rho = rho_cks(17.14, 1e-10)
    assert epsilon_cks(rho, 1e-10) == pytest.approx(17.14, rel=1e-12)
    assert epsilon_cks(rho * (1 + 1e-6), 1e-10) > 17.14
    assert rho > rho_bun_steinke(17.14, 1e-10)
    # the production rho states as 17.14: between the rhos of 17.14 and 17.145
    assert rho < float(PRODUCTION_RHO) < rho_cks(17.145, 1e-10)


@pytest.mark.parametrize("epsilon", [17.158308712104745, 3.0, 7.75, 33.0])
def test_cks_inverse_never_exceeds_the_target(epsilon):
    """Before: Brent's root to a relative 1e-14 fell on either side, so the "largest rho whose
    epsilon is at most E" had an epsilon above E (E = epsilon_cks(2.56, 1e-10) =
    17.158308712104745 gave rho 2.5600000000000014, epsilon 17.158308712104752; 26 of 60
    targets on 1..40). Now at most E, and still the largest to a relative 1e-12 (the
    root's tolerance 1e-14 and the step down, a few 1e-15)."""
    delta = 1e-10
    rho = rho_cks(epsilon, delta)
    assert epsilon_cks(rho, delta) <= epsilon
    assert epsilon_cks(rho * (1 + 1e-12), delta) > epsilon


def test_census_pld_is_a_little_under_16_5():
    epsilon = census_epsilon_pld()
    assert 16.4 < epsilon < 16.5
    assert epsilon < epsilon_cks(2.56, 1e-10)
    # a finer discretisation tightens the pessimistic bound
    assert census_epsilon_pld(value_discretization_interval=1e-3) >= epsilon


def test_pld_of_one_query_is_below_cks():
    """One DG query with rho: the tight epsilon is below the zCDP conversions of rho."""
    assert epsilon_pld([0.5], 1e-6) < epsilon_cks(0.5, 1e-6)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: epsilon_cks(0.0, 1e-10), "rho"),
    (lambda: epsilon_cks(1.0, 1.5), "delta"),
    (lambda: rho_cks(-1.0, 1e-10), "epsilon"),
    (lambda: rho_cks(1.0, 0.0), "delta"),
    (lambda: epsilon_bun_steinke(float("nan"), 1e-10), "rho"),
    (lambda: rho_bun_steinke(1.0, 2.0), "delta"),
    (lambda: epsilon_pld([], 1e-10), "rhos"),
    (lambda: epsilon_pld([0.1, -1.0], 1e-10), "rhos"),
    (lambda: epsilon_cks([1.0, 2.0], 1e-10), "rho"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_census_pld_bracket_contains_independent_value():
    """The optimistic/pessimistic PLDs bracket 16.4795 (an independent composition gives
    [16.4793, 16.4797]) within 1e-3, and the coarse pessimistic 16.4828 lies above."""
    from dprisk.inference.privacy.accounting import census_epsilon_pld_bracket

    lower, upper = census_epsilon_pld_bracket()
    assert lower <= 16.4795 <= upper
    assert upper - lower <= 1e-3
    assert upper < census_epsilon_pld()


def test_pld_bracket_one_query_and_relations():
    from dprisk.inference.privacy.accounting import epsilon_pld_bracket

    lower, upper = epsilon_pld_bracket([0.5], 1e-10)
    # rho 0.5's losses lie on both grids: both upper bounds are the exact epsilon but for the
    # epsilon solve's accuracy (connect-the-dots up to 1.4e-10 relative above epsilon_pld over
    # 54 such single queries, rho 0.005-3, delta 1e-10-1e-3; 9e-16 at 0.5 here)
    assert lower <= upper <= epsilon_pld([0.5], 1e-10) * (1 + 1e-9)
    # off the grids connect-the-dots is the tighter bound by far more than rounding (1e-5
    # relative at rho 0.4938, 2.6e-6 to 8.9e-5 over rho 0.005-3)
    off_lower, off_upper = epsilon_pld_bracket([0.4938], 1e-10)
    assert off_lower <= off_upper < epsilon_pld([0.4938], 1e-10) * (1 - 1e-6)
    # replace one: every query moves in two cells, the composition of each query twice; on
    # the grid 1e-4, where two queries of rho 0.5 stay sparse (0.01 s of CPU; at the default
    # grid their pessimistic end is dense, 2.3e6 points, 3.2 s: in make bench, by the exact test's
    # [0.5-2e-05] case, which also checks the replace-one bracket there)
    coarse = {"value_discretization_interval": 1e-4}
    rep_lower, rep_upper = epsilon_pld_bracket([0.5], 1e-10, relation="replace-one", **coarse)
    twice_lower, twice_upper = epsilon_pld_bracket([0.5, 0.5], 1e-10, **coarse)
    assert (rep_lower, rep_upper) == pytest.approx((twice_lower, twice_upper))
    assert rep_lower > upper
    with pytest.raises(ValueError, match="relation"):
        epsilon_pld_bracket([0.5], 1e-10, relation="swap")


def test_bracket_ends_exact_but_for_rounding_come_in_order():
    """At rho 0.3, delta 1e-10 both discretisations give the exact epsilon but for rounding,
    the optimistic end 8.8e-16 relative above the pessimistic one as computed (this machine,
    SciPy/NumPy of 2026-12): the bracket is returned in order, its ends within
    BRACKET_ENDS_ROUNDING."""
    from dprisk.inference.privacy.accounting import BRACKET_ENDS_ROUNDING, epsilon_pld_bracket

    lower, upper = epsilon_pld_bracket([0.3], 1e-10)
    assert lower <= upper <= lower * (1 + BRACKET_ENDS_ROUNDING)


@pytest.mark.parametrize("rho", [1e-16, 1e-14, 1e-13])
def test_cks_beyond_the_grid_finds_its_optimal_order(rho):
    # the optimum (order 2e8 .. 8e6) lies far above dp-accounting's grid (at most 1024): the
    # bracket is doubled until the bound rises, not until it exceeds the grid's best value
    with mp.workdps(30):  # the optimal order from its closed form, rho = log(1/(delta a))/(a-1)^2
        delta = mp.mpf(1e-10)
        alpha = mp.findroot(lambda a: mp.log(1 / (delta * a)) / (a - 1) ** 2 - rho,
                            (mp.mpf(2), 1 / delta), solver="bisect")
        want = alpha * rho + mp.log(1 - 1 / alpha) - mp.log(delta * alpha) / (alpha - 1)
    assert epsilon_cks(rho, 1e-10) == pytest.approx(float(want), rel=1e-9)


@pytest.mark.parametrize("delta", [1e-300, 1e-20, 1e-10, 1e-3, 0.5])
def test_cks_range_ends_are_computed_and_beyond_them_refused(delta):
    from dprisk.inference.privacy.accounting import cks_range

    span = cks_range(delta)
    low = span.rho_low * (1 + 1e-3)  # the stated ends are computed, 1e-2 beyond them not
    high = span.rho_high * (1 - 1e-6)
    assert 0 < epsilon_cks(low, delta) and epsilon_cks(high, delta) > 0
    shown = f"allowed range at delta = {delta:.6g}: about "
    for outside in (span.rho_low * (1 - 1e-2), span.rho_high * (1 + 1e-2)):
        with pytest.raises(ValueError, match=f"^rho = .*{shown}"):
            epsilon_cks(outside, delta)
    assert rho_cks(span.epsilon_high * (1 - 1e-6), delta) <= span.rho_high
    with pytest.raises(ValueError, match=f"^epsilon = .*{shown}"):
        rho_cks(span.epsilon_high * (1 + 1e-3), delta)


def test_cks_of_a_delta_without_any_rho_names_delta():
    with pytest.raises(ValueError, match=r"^delta = 0.999999999999: .* 0 < delta < about 0.9896"):
        epsilon_cks(1.0, 0.999999999999)
    with pytest.raises(ValueError, match=r"^delta = 0.999999999999: "):
        rho_cks(1.0, 0.999999999999)


def exact_dg_epsilon(rho, copies, delta):
    r"""The exact epsilon at ``delta`` of ``copies`` DG(0, 1/(2 rho)) queries of sensitivity 1.

    Neighbours move every count by 1: with noise sum :math:`s` (the ``copies``-fold
    convolution of the pmf) the privacy loss is :math:`\rho(c - 2s)`, and
    :math:`\delta(\varepsilon) = \sum_{s:\,\rho(c - 2s) > \varepsilon} P[s] -
    e^{\varepsilon} P[s - c]`, decreasing in epsilon: bisection to 1e-14. The pmf is summed
    over ``|x| <= K`` with ``rho K^2 >= 70``, whose neglected mass (about ``exp(-70) = 4e-31``)
    is far under delta; the terms are positive, so float64 sums are exact to about 1e-15
    relative.
    """
    half = math.ceil(math.sqrt(70.0 / rho))
    x = np.arange(-half, half + 1)
    pmf = np.exp(-rho * x**2)
    pmf /= pmf.sum()
    law = np.ones(1)
    for _ in range(copies):
        law = np.convolve(law, pmf)
    s = np.arange(law.size) - half * copies
    shifted = np.concatenate([np.zeros(copies), law[:-copies]])  # P[s - copies]

    def hockey(epsilon):
        above = rho * (copies - 2 * s) > epsilon
        return np.sum(law[above] - np.exp(epsilon) * shifted[above])

    lower, upper = 0.0, 100.0
    while upper - lower > 1e-14:
        middle = 0.5 * (lower + upper)
        lower, upper = (middle, upper) if hockey(middle) > delta else (lower, middle)
    return upper


@pytest.mark.parametrize(("rho", "interval"), [
    # two queries of rho 0.5 at the default grid: the pessimistic end dense (2.3e6 loss
    # points) and self-composed by FFT after 40 Chernoff-bound sums over them, 3.2 s of CPU,
    # in make bench (SLOW_CASES); rho 0.01 takes the same path, both ends dense (3.3e5
    # points), in about 1 s
    (0.01, PLD_BRACKET_INTERVAL), (0.5, PLD_BRACKET_INTERVAL),
    (0.5, 1e-4),  # both ends sparse (24 atoms a query): the sparse self-composition, 0.01 s
])
def test_pld_of_one_and_two_queries_brackets_the_exact_epsilon(rho, interval):
    """The bracket holds the exact epsilon (1e-12 of float rounding either side: the exact value
    is a lattice point of the losses, which the connect-the-dots upper end reproduces to the
    last bits), ``epsilon_pld`` is above it, and the relation replace-one is the two-query one.
    At the default grid the two queries' distributions are dense and self-composed by FFT; at
    rho 0.5 on the grid 1e-4 they stay sparse and are composed term by term."""
    for copies in (1, 2):
        exact = exact_dg_epsilon(rho, copies, 1e-10)
        lower, upper = epsilon_pld_bracket([rho] * copies, 1e-10,
                                           value_discretization_interval=interval)
        assert lower - 1e-12 <= exact <= upper + 1e-12
        assert upper - lower <= 1e-3
        assert epsilon_pld([rho] * copies, 1e-10) >= exact - 1e-12
    lower, upper = epsilon_pld_bracket([rho], 1e-10, relation="replace-one",
                                       value_discretization_interval=interval)
    assert lower - 1e-12 <= exact_dg_epsilon(rho, 2, 1e-10) <= upper + 1e-12


def exact_single_query_epsilon(rho, delta):
    """The exact epsilon of one DG(0, 1/(2 rho)) query, sensitivity 1, by mpmath enumeration.

    delta(eps) = sum_x P(x) (1 - e^(eps - L(x)))_+, L(x) = rho (1 - 2x); the noise values with
    e^(-rho x^2) below delta e^-60 are left out; bisection on eps to 2^-120 of its range.
    """
    with mp.workdps(30):
        rho, delta = mp.mpf(rho), mp.mpf(delta)
        reach = int(mp.sqrt((mp.log(1 / delta) + 60) / rho)) + 3
        log_norm = mp.log(mp.fsum(mp.exp(-rho * x * x) for x in range(-reach - 3, reach + 4)))

        def hockey_stick(eps):
            return mp.fsum(mp.exp(-rho * x * x - log_norm) * (1 - mp.exp(eps - rho * (1 - 2 * x)))
                           for x in range(-reach, reach + 2) if rho * (1 - 2 * x) > eps)

        low, high = mp.mpf(0), rho * (1 + 2 * reach)
        for _ in range(120):
            middle = (low + high) / 2
            low, high = (middle, high) if hockey_stick(middle) > delta else (low, middle)
        return float(high)


@pytest.mark.parametrize(("rho", "delta", "refused"), [
    (800.0, 0.3, True),     # dp-accounting gave [799.99998, 800]; exact 799.6433
    (720.0, 1e-10, True),   # [inf, inf]; exact 719.9999999999
    (0.01, 1e-30, True),    # [1.57795, 1.57797]; exact 1.57687
    (10.0, 1e-40, True),    # [inf, 50]; exact 69.87
    (2.56, 1e-10, False),
    (0.01, 1e-20, False),
    (50.0, 1e-20, False),
    (650.0, 0.3, False),
])
def test_pld_bracket_holds_the_exact_epsilon_or_is_refused(rho, delta, refused):
    # dp-accounting truncates each query's noise at a mass of 1e-30 and sums exp(-loss) in
    # doubles: below delta = 1e-20 and where epsilon + log(1/delta) reaches 700 its bracket
    # excluded the exact epsilon, and is refused; elsewhere it holds it (to 1e-12 relative,
    # the accountant's rounding: 1.3e-12 at epsilon = 12.4 was seen)
    from dprisk.inference.privacy.accounting import epsilon_pld_bracket

    if refused:
        with pytest.raises(ValueError, match=r"^(delta|rhos)"):
            epsilon_pld_bracket([rho], delta)
        return
    exact = exact_single_query_epsilon(rho, delta)
    lower, upper = epsilon_pld_bracket([rho], delta)
    assert lower * (1 - 1e-12) <= exact <= upper * (1 + 1e-12)


def test_composed_pld_near_the_double_exponent_is_refused():
    # two queries of rho = 400 at delta = 0.3: the loss is 800 with probability 1 - O(e^-400),
    # so the exact epsilon is 800 + log(0.7) = 799.643; dp-accounting gave [800, 800]
    from dprisk.inference.privacy.accounting import epsilon_pld_bracket

    with pytest.raises(ValueError, match=r"^rhos: .*allowed range: .* < 700"):
        epsilon_pld_bracket([400.0, 400.0], 0.3)
    with pytest.raises(ValueError, match=r"^rhos: "):
        epsilon_pld([400.0, 400.0], 0.3)


@pytest.mark.parametrize(("call", "delta"), [
    (lambda delta: epsilon_cks(1e4, delta), 5e-324),  # gave 15455.35, the bound is 15454.46
    (lambda delta: epsilon_cks(1e3, delta), 1e-320),  # gave 2715.27818, below the 2715.27833
    (lambda delta: rho_cks(10.0, delta), 5e-324),
])
def test_cks_refuses_a_subnormal_delta(call, delta):
    # dp-accounting evaluates log(delta * alpha) from the product, which keeps few digits
    # among the subnormal doubles: the CKS epsilon was off by up to 6e-5 relative there
    with pytest.raises(ValueError, match=r"^delta = .*allowed range for the CKS conversion: "
                                         r"2\.2250738585072014e-308 <= delta < 1"):
        call(delta)


def test_cks_at_the_smallest_normal_delta_is_the_bound():
    # the stated end is accepted, and there the product delta * alpha is a normal double
    delta = 2.2250738585072014e-308
    assert epsilon_cks(1e3, delta) == pytest.approx(float(cks_reference(1e3, delta)), rel=1e-9)


def _exact_epsilon_01_02(delta):
    """The exact epsilon of DG queries of rho 0.1 and 0.2 (sensitivity 1): the privacy loss is
    0.1 (1 - 2x) + 0.2 (1 - 2y) = 0.3 - 0.2 s, s = x + 2y (the pmf of x convolved with that of
    2y); delta(eps) sums the positive terms P[s] (1 - e^(eps - loss)) over loss > eps, exact
    in float64 to about 1e-15 relative; |x|, |y| <= 40, 28 leave out e^-160, e^-156."""
    x = np.arange(-40, 41)
    first = np.exp(-0.1 * x**2)
    y = np.arange(-28, 29)
    second = np.zeros(2 * y.size - 1)
    second[::2] = np.exp(-0.2 * y**2)
    law = np.convolve(first / first.sum(), second / second.sum())
    loss = 0.3 - 0.2 * (np.arange(law.size) - 40 - 56)

    def hockey(epsilon):
        above = loss > epsilon
        return np.sum(law[above] * -np.expm1(epsilon - loss[above]))

    lower, upper = 0.0, 40.0
    while upper - lower > 1e-13:
        middle = 0.5 * (lower + upper)
        lower, upper = (middle, upper) if hockey(middle) > delta else (lower, middle)
    return upper


def test_composed_pld_is_refused_below_its_delta_and_holds_the_exact_epsilon_above(
        monkeypatch):
    """dp-accounting composes two or more queries by FFT (delta rounded by about 1e-16) and
    truncates 1e-15 of tail mass per composition: for rhos [0.1, 0.2] the bracket at 1e-13 was
    [5.726200, 5.726586] against the exact 5.726113, at 1e-15 [6.23205, 6.25578] against
    6.23179, and at 1e-17 its upper end infinite (refused as an exp(-loss) underflow, naming
    rhos and a range the queries meet). Below 1e-12 a composition is refused naming delta;
    at 1e-12 and 1e-10 the bracket holds the exact epsilon; one query keeps 1e-20.

    The composed distribution does not depend on delta: each end's is composed once (0.6 s of
    CPU) and read at both deltas, through ``epsilon_pld_bracket`` as before (the same epsilons,
    bit for bit: reading a delta leaves the distribution as it was)."""
    from dprisk.inference.privacy import accounting

    compose_once(accounting, monkeypatch)
    for delta in (1e-13, 1e-15, 1e-17):
        for call in (lambda: epsilon_pld_bracket([0.1, 0.2], delta),
                     lambda: epsilon_pld([0.1, 0.2], delta),
                     lambda: epsilon_pld_bracket([0.1], delta, relation="replace-one")):
            with pytest.raises(ValueError, match=r"^delta = .* is below 1e-12 for a composition"
                                                 r" of 2 queries: .*allowed range: 1e-12 <= "):
                call()
    for delta in (1e-12, 1e-10):
        exact = _exact_epsilon_01_02(delta)
        lower, upper = epsilon_pld_bracket([0.1, 0.2], delta)
        assert lower <= exact <= upper
    lower, upper = epsilon_pld_bracket([0.5], 1e-15)
    assert lower - 1e-12 <= exact_dg_epsilon(0.5, 1, 1e-15) <= upper + 1e-12


@pytest.mark.parametrize("rho", [1e20, 1e30])
def test_pld_bracket_of_a_huge_rho_is_refused_naming_the_range(rho):
    """epsilon_pld refused rho = 1e20 ('the PLD epsilon ... is about 1e+20 ... allowed range'),
    but epsilon_pld_bracket and census_epsilon_pld_bracket raised dp-accounting's 'loop of
    ufunc does not support argument 0 of type float which has no callable exp method' from
    inside the library; the bracket now refuses as epsilon_pld does (its epsilon is at least
    rho_total - 1 for delta < 0.3)."""
    from dprisk.inference.privacy.accounting import census_epsilon_pld_bracket, epsilon_pld_bracket

    with pytest.raises(ValueError, match=r"^rhos: the PLD epsilon .*allowed range"):
        epsilon_pld_bracket([rho], 1e-10)
    with pytest.raises(ValueError, match=r"^rhos: the PLD epsilon .*allowed range"):
        census_epsilon_pld_bracket(rho, 1e-10)
