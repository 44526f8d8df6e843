"""Tests of inference.unique_levels (the sorted-sweep exact sum, supplement S1.3).

References: a brute-force sum over an explicit joint release grid (numpy, every grid point
evaluated with ``posterior_unique_levels``), the existing exact enumeration of
inference.single_level for up to four levels, and, for six Census levels, the contour
integral (fast) and a direct pair-by-pair sum over the whole high-probability grid (slow).
Tolerances: the sweep's error budget is 1e-16 relative plus rounding (about 1e-15 measured,
the alternating series loses about log10(2/delta) digits), so rtol 1e-13 against exact sums.
"""

import math

import numpy as np
import pytest

from dprisk.inference.nested import unique_levels as ul
from dprisk.inference.nested import unique_levels_sweep as sweep
from dprisk.inference.single_level import closed_form as sl
from dprisk.models.census.allocation import census_rhos
from dprisk.models.mechanism import discrete_gaussian as dg

RTOL = 1e-13
PRIORS = np.array([0.5, 0.2, 1 / 864])


def brute_marginal(rhos, p, tail=1e-22):
    """sum over the full box of releases of posterior x product of pmfs (m = 0, x1 = 1)."""
    axes = []
    for r in rhos:
        k = int(dg.support_halfwidth(r, tail))
        axes.append(np.arange(1 - k, 2 + k))
    grids = np.meshgrid(*axes, indexing="ij")
    x = np.stack([g.ravel() for g in grids], axis=-1)
    weight = np.prod([dg.pmf(x[:, i], 1, r) for i, r in enumerate(rhos)], axis=0)
    post = ul.posterior_unique_levels(x, np.asarray(rhos), p)
    return math.fsum(weight * post)


@pytest.mark.parametrize("rhos", [census_rhos(2), census_rhos(3), [0.7, 0.7], [0.3, 0.3, 0.3],
                                  [100.0, 0.05], [2.0, 0.01, 0.4]])
@pytest.mark.parametrize("p", [0.5, 1 / 864])
def test_sweep_equals_brute_force_grid(rhos, p):
    result = ul.marginal_posterior_sweep(rhos, p)
    assert float(result.marginal_posterior) == pytest.approx(brute_marginal(rhos, p), rel=RTOL)


def test_sweep_equals_enumeration_four_census_levels():
    rhos = census_rhos(4)
    exact = ul.marginal_posterior_unique_levels(rhos, PRIORS, method="enumerate")
    np.testing.assert_allclose(ul.marginal_posterior_sweep(rhos, PRIORS).marginal_posterior,
                               exact, rtol=RTOL)


def test_six_census_levels_against_contour_and_budget():
    """The Figure 11 case (p = 1/2): sweep vs contour integral, error accounting."""
    rhos = census_rhos(6)
    result = ul.marginal_posterior_sweep(rhos, 0.5)
    contour = ul.marginal_posterior_unique_levels(rhos, 0.5, method="contour")
    assert float(result.marginal_posterior) == pytest.approx(float(contour), rel=RTOL)
    assert result.neglected_mass + result.series_bound < sl.TAIL_RELATIVE * 0.5
    assert result.split == 3 and int(result.window_pairs) < 2e8


@pytest.mark.parametrize("delta", [0.03, 0.5, 2.0])
def test_window_width_does_not_change_the_sum(delta):
    """Moving pairs between the window and the series must not change the result."""
    rhos = census_rhos(4)
    base = ul.marginal_posterior_sweep(rhos, PRIORS).marginal_posterior
    other = ul.marginal_posterior_sweep(rhos, PRIORS, delta=delta)
    np.testing.assert_allclose(other.marginal_posterior, base, rtol=RTOL)
    assert other.series_terms == math.ceil(math.log(4 / (sl.TAIL_RELATIVE * PRIORS.min()))
                                           / delta)


def test_one_level_and_known_invariance():
    rho = census_rhos(1)
    np.testing.assert_array_equal(ul.marginal_posterior_sweep(rho, PRIORS).marginal_posterior,
                                  sl.marginal_posterior(rho[0], PRIORS))
    rhos = census_rhos(3)
    np.testing.assert_array_equal(
        ul.marginal_posterior_sweep(rhos, PRIORS, known=7).marginal_posterior,
        ul.marginal_posterior_sweep(rhos, PRIORS, known=0).marginal_posterior)


def test_extreme_priors_relative_accuracy():
    rhos = census_rhos(3)
    for p in (1e-9, 1 - 1e-6):
        exact = ul.marginal_posterior_unique_levels(rhos, p, method="enumerate")
        assert float(ul.marginal_posterior_sweep(rhos, p).marginal_posterior) == \
            pytest.approx(float(exact), rel=RTOL)


def test_two_level_cumsum_is_accurate():
    x = np.random.default_rng(3).random(50_001) ** 8
    exact = np.array([math.fsum(x[: i + 1]) for i in range(0, x.size, 997)])
    np.testing.assert_allclose(sweep._cumsum(x)[::997], exact, rtol=4e-15)


def test_prefix_power_sums_match_direct_sums():
    """Segment sums by small matrix products, lifted to a running anchor (issue 36), against
    ``math.fsum`` of every term ``w_b exp(k (s_b - s_{L-1}))``. Each term is two exponentials
    (about 2 ulp) and the sums are of positive terms: rtol 1e-14. The atoms span more than
    ``_SPAN / K`` so the running sum is re-anchored."""
    rng = np.random.default_rng(5)
    s = np.sort(rng.uniform(-8.0, 8.0, 300))
    w = rng.random(300)
    cuts = np.unique(rng.integers(1, 301, 20))
    n_terms = 60
    got = sweep._prefix_power_sums(s, w, cuts, n_terms)
    k = np.arange(1, n_terms + 1)
    want = np.array([[math.fsum(row) for row in
                      w[:cut] * np.exp(np.outer(k, s[:cut] - s[cut - 1]))] for cut in cuts])
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_far_sums_by_block_power_sums_match_the_term_by_term_series():
    """The far pairs by the blocks' power sums of ``A`` (``K`` terms per block, shared by the
    priors) against ``math.fsum`` of every term ``w_a (-1)^{k+1} e^{k y_a} P_k(L)``, on both
    sides (issue 36). The rounding is below ``K`` ulp of ``sum_k P_k e^{k y} S_k`` (the
    alternating series with ``z`` up to ``e^{-0.1}`` costs about a factor 20 over the sum
    itself), observed 1e-16: rtol 1e-13."""
    rng = np.random.default_rng(8)
    s_b = np.sort(rng.uniform(-6.0, 2.0, 300))
    w_b = rng.random(300)
    s_a = np.sort(rng.uniform(-3.0, 1.0, 100))
    w_a = rng.random(100)
    logit_p = -0.3
    starts, ends = sweep._blocks(s_a.size)
    n_terms = 60
    prefix_blocks, suffix_blocks = sweep._block_power_sums(s_a, w_a, starts, ends, n_terms)
    for side, (t, s, w, blocks, cuts) in enumerate((
            # per block: the longest prefix of B with u_a + s_b <= -0.1 for all a of the block
            (s_a, s_b, w_b, prefix_blocks,
             np.searchsorted(s_b, -0.1 - logit_p - s_a[ends - 1], side="right")),
            # the suffix side: -u_a on the reversed, negated B
            (-s_a, -s_b[::-1], w_b[::-1], suffix_blocks,
             s_b.size - np.searchsorted(s_b, 0.1 - logit_p - s_a[starts], side="left")))):
        offset = logit_p if side == 0 else -logit_p
        sums = sweep._power_sums(s, w, cuts, n_terms)
        got = sweep._far_sums(offset, blocks, cuts, sums)
        terms = []
        for blk, cut in enumerate(cuts):
            if cut == 0:
                continue
            p_k = [math.fsum(w[:cut] * np.exp(k * (s[:cut] - s[cut - 1])))
                   for k in range(1, n_terms + 1)]
            for a in range(starts[blk], ends[blk]):
                y = offset + t[a] + s[cut - 1]
                assert y <= -0.1
                terms += [w_a[a] * (-1) ** (k + 1) * math.exp(k * y) * p_k[k - 1]
                          for k in range(1, n_terms + 1)]
        assert terms, side
        assert got == pytest.approx(math.fsum(terms), rel=1e-13)


def test_refusals_and_invalid_inputs():
    with pytest.raises(ValueError, match="max_window_pairs"):
        ul.marginal_posterior_sweep(census_rhos(3), 0.5, max_window_pairs=10)
    with pytest.raises(ValueError, match="MAX_HALF_ATOMS"):
        ul.marginal_posterior_sweep([1e-5] * 4, 0.5)
    with pytest.raises(ValueError, match="rhos"):
        ul.marginal_posterior_sweep([0.1, 0.0], 0.5)
    with pytest.raises(ValueError, match="p"):
        ul.marginal_posterior_sweep([0.1, 0.2], 1.0)
    with pytest.raises(ValueError, match="delta"):
        ul.marginal_posterior_sweep([0.1, 0.2], 0.5, delta=0.0)
    with pytest.raises(ValueError, match="known"):
        ul.marginal_posterior_sweep([0.1, 0.2], 0.5, known=-1)


def _direct_pair_sum(rhos, p, q_max=50.0, tail=1e-22):
    """Every pair of the joint grid with sum_i rho_i j_i^2 <= q_max, one by one (slow)."""
    def half(levels):
        s, q, log_w = np.zeros(1), np.zeros(1), np.zeros(1)
        for r in levels:
            k = int(dg.support_halfwidth(r, tail))
            j = np.arange(-k, k + 1, dtype=float)
            s = (s[:, None] + r * (2 * j + 1)).ravel()
            q = (q[:, None] + r * j**2).ravel()
            log_w = (log_w[:, None] - r * j**2 - dg.log_normalizer(r)).ravel()
        return s, q, np.exp(log_w)

    s_a, q_a, w_a = half(rhos[:3])
    s_b, q_b, w_b = half(rhos[3:])
    order_b = np.argsort(q_b)
    s_b, q_b, w_b = s_b[order_b], q_b[order_b], w_b[order_b]
    prefix = np.searchsorted(q_b, q_max - q_a, side="right")
    tail_b = np.append(np.cumsum(w_b[::-1])[::-1], 0.0)
    neglected = float(w_a @ tail_b[prefix])
    exp_a = np.exp(-(math.log(p) - math.log1p(-p) + s_a))
    exp_b = np.exp(-s_b)
    parts = []
    for a in range(0, s_a.size, 16):
        width = int(prefix[a : a + 16].max())
        if width:
            matrix = 1.0 / (1.0 + np.multiply.outer(exp_a[a : a + 16], exp_b[:width]))
            parts.append(float(w_a[a : a + 16] @ (matrix @ w_b[:width])))
    return math.fsum(parts), neglected


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.5, 1 / 864])
def test_six_census_levels_against_direct_pair_sum(p):
    """About 1.6e9 pairs evaluated one by one (a minute per prior)."""
    rhos = census_rhos(6)
    direct, neglected = _direct_pair_sum(rhos, p)
    assert neglected < 1e-18
    assert float(ul.marginal_posterior_sweep(rhos, p).marginal_posterior) == pytest.approx(
        direct, rel=RTOL)


# --------------------------------------------------------------------------- entry point
def test_unique_levels_summary_keys_and_values():
    out = ul.unique_levels_summary(census_rhos(3), p=0.2, known=4)
    assert set(out) == {"marginal_posterior", "marginal_risk", "p_correct"}
    assert all(isinstance(v, float) for v in out.values())
    exact = float(ul.marginal_posterior_unique_levels(census_rhos(3), 0.2, method="enumerate"))
    assert out["marginal_posterior"] == pytest.approx(exact, rel=1e-13)
    assert out["marginal_risk"] == pytest.approx(exact / 0.2, rel=1e-13)
    assert out["p_correct"] == float(ul.p_correct_unique_levels(census_rhos(3), 0.2))
    one = ul.unique_levels_summary([census_rhos(1)[0]])
    assert one["marginal_posterior"] == pytest.approx(float(sl.marginal_posterior(
        census_rhos(1)[0])), rel=1e-14)


def test_unique_levels_summary_falls_back_to_contour(monkeypatch):
    rhos = census_rhos(4)
    p = np.asarray(0.1)
    assert ul.choose_method(np.asarray(rhos), p,
                            max_window_pairs=ul.SUMMARY_MAX_WINDOW_PAIRS)[0] == "sweep"
    assert ul.choose_method(np.asarray(rhos), p, max_window_pairs=10)[0] == "contour"
    swept = ul.unique_levels_summary(rhos, p=0.1)
    monkeypatch.setattr(ul, "SUMMARY_MAX_WINDOW_PAIRS", 10)
    fallback = ul.unique_levels_summary(rhos, p=0.1)
    assert fallback["marginal_posterior"] == float(ul.marginal_unique_levels(
        rhos, p=0.1, method="contour"))
    assert fallback["marginal_posterior"] == pytest.approx(swept["marginal_posterior"],
                                                           rel=1e-13)
    assert fallback["p_correct"] == swept["p_correct"]


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"rhos": [0.1, 0.0]}, "rhos"), ({"rhos": []}, "rhos"), ({"rhos": [0.1], "p": 1.0}, "p"),
    ({"rhos": [0.1, 0.2], "known": -1}, "known"),
])
def test_unique_levels_summary_invalid_inputs(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ul.unique_levels_summary(**kwargs)


def test_auto_rule_is_explicit():
    one = np.asarray([census_rhos(1)[0]])
    assert ul.choose_method(one, np.asarray(0.5)) == ("closed", None)
    method, plan = ul.choose_method(np.asarray(census_rhos(3)), np.asarray(0.5))
    assert method == "sweep" and plan.fits(ul.SUMMARY_MAX_WINDOW_PAIRS)
    # a half of the levels beyond MAX_HALF_ATOMS: no atoms are built, the contour is chosen
    method, plan = ul.choose_method(np.asarray([1e-5] * 4), np.asarray(0.5))
    assert method == "contour" and plan is None


@pytest.mark.parametrize("method", ["enumerate", "contour", "sweep"])
def test_named_methods_agree(method):
    rhos = census_rhos(3)
    reference = ul.marginal_unique_levels(rhos, p=PRIORS, method="enumerate")
    np.testing.assert_allclose(ul.marginal_unique_levels(rhos, p=PRIORS, method=method),
                               reference, rtol=RTOL)
    auto = ul.marginal_unique_levels(rhos, p=PRIORS)
    np.testing.assert_array_equal(auto, ul.marginal_posterior_sweep(rhos, PRIORS)
                                  .marginal_posterior)


def test_unknown_method_names_the_supported_ones():
    with pytest.raises(ValueError, match="method must be one of auto, enumerate, contour, sweep"):
        ul.marginal_unique_levels([0.1, 0.2], method="mcmc")


def test_scalar_p_gives_a_float():
    value = ul.marginal_unique_levels(census_rhos(2), p=0.2)
    assert type(value) is float
    assert round(value, 5) == round(float(ul.marginal_unique_levels(census_rhos(2), p=[0.2])[0]),
                                    5)
    assert type(ul.p_correct_unique_levels(census_rhos(2), 0.2)) is float


def test_merge_atoms_with_distinct_keys_sorts_by_the_inverse_permutation():
    """Distinct keys (issue 36): the weights are placed by ``np.unique``'s inverse instead of a
    second argsort; the same permutation, so exactly the sorted atoms."""
    from dprisk.inference.nested.unique_levels_kernels import merge_atoms

    rng = np.random.default_rng(4)
    s_vals, log_w = rng.normal(size=5000), rng.normal(size=5000)
    keys, weights = merge_atoms(s_vals, log_w)
    order = np.argsort(s_vals, kind="stable")
    np.testing.assert_array_equal(keys, s_vals[order])
    np.testing.assert_array_equal(weights, log_w[order])


@pytest.mark.parametrize("keys", [
    np.add.outer(np.sort(np.random.default_rng(3).normal(size=40)).round(1),
                 np.arange(-7, 8) * 0.1).ravel(),  # sorted runs with many equal sums
    np.random.default_rng(4).integers(0, 9, size=300).astype(float),
    np.array([]), np.array([2.0]), np.array([1.0, np.nan, 0.0, np.nan]),
])
def test_unique_inverse_is_numpys(keys):
    # merge_atoms' stable-sort unique: the same distinct keys and inverse as np.unique
    from dprisk.inference.nested.unique_levels_kernels import _unique_inverse

    uniq, inverse = _unique_inverse(keys)
    want_uniq, want_inverse = np.unique(keys, return_inverse=True)
    np.testing.assert_array_equal(uniq, want_uniq)
    np.testing.assert_array_equal(inverse, want_inverse)
