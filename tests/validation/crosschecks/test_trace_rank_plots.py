"""Randomised ranks of discrete draws, their uniformity test and the saved plots.

The test of a converged run must not flag it (the issue: ArviZ's rank plot printed p=0.00 on
tied draws while the verdict said converged); chains stuck in different places must be
flagged. Significance ALPHA = 0.01 per variable; the converged runs below are checked with
fixed seeds, so the assertions are deterministic.
"""

import numpy as np
import pytest

from dprisk.inference.mcmc.convergence import unknown_diagnostics, verdict
from dprisk.inference.two_level.sampling import sample_posterior
from dprisk.validation.crosschecks.trace_rank_plots import (
    ALPHA,
    randomised_ranks,
    rank_uniformity,
    save_rank_plot,
    save_trace_plot,
)

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def converged():
    tree = sample_posterior(1, 2, 1, rho1=0.1, rho2=0.25, d=3, method="gibbs", draws=2000,
                            chains=4, random_seed=11)
    return {name: tree["posterior"][name].values for name in ("X1", "X2")}


def test_ranks_are_a_permutation_with_ties_in_random_order():
    draws = np.array([[0, 1, 1, 0], [1, 0, 1, 1]])
    ranks = randomised_ranks(draws, random_seed=1)
    assert sorted(ranks.ravel()) == list(range(1, 9))
    assert (ranks[draws == 0].max() < ranks[draws == 1].min())  # values stay in order
    other = randomised_ranks(draws, random_seed=2)
    assert not np.array_equal(ranks, other)  # ties broken differently by another seed
    np.testing.assert_array_equal(ranks, randomised_ranks(draws, random_seed=1))


def test_converged_run_is_not_flagged_and_the_verdict_agrees(converged):
    assert verdict(unknown_diagnostics(converged)).converged
    for values in converged.values():
        test = rank_uniformity(values, random_seed=11)
        assert not test["flagged"] and test["p_value"] >= ALPHA


def test_plain_tied_ranks_would_have_flagged_it(converged):
    # The problem being fixed: average ranks of ties pile the binary X1 into two bins.
    from scipy import stats

    x1 = converged["X1"]
    average = stats.rankdata(x1.ravel()).reshape(x1.shape)
    counts = np.stack([np.histogram(r, bins=20, range=(0.5, x1.size + 0.5))[0]
                       for r in average])
    assert (counts == 0).any()


def test_stuck_chains_are_flagged():
    rng = np.random.default_rng(0)
    stuck = np.stack([rng.integers(0, 3, 1000), rng.integers(5, 8, 1000)])
    assert rank_uniformity(stuck, random_seed=1)["flagged"]


def test_constant_variable_is_not_flagged():
    assert rank_uniformity(np.zeros((2, 100)), random_seed=1)["p_value"] == 1.0


def test_plots_are_pngs_with_the_method_stated(converged, tmp_path):
    p_values = save_rank_plot(converged, tmp_path / "rank.png", random_seed=11)
    save_trace_plot(converged, tmp_path / "trace.png", known=0)
    assert set(p_values) == {"X1", "X2"} and min(p_values.values()) >= ALPHA
    for name in ("rank.png", "trace.png"):
        assert (tmp_path / name).read_bytes()[:8] == PNG


@pytest.mark.parametrize(("step", "text"), [(2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"),
                                            (12, "12th"), (21, "21st"), (22, "22nd"),
                                            (111, "111th")])
def test_thinned_trace_title_uses_english_ordinals(step, text):
    """The trace title's "every 2th" read wrongly: the thinning step gets its own suffix."""
    from dprisk.validation.crosschecks.trace_rank_plots import _ordinal_suffix

    assert f"{step}{_ordinal_suffix(step)}" == text
