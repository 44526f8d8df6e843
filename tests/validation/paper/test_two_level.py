"""Tests of the §4.3 Tables 6–8 study (LaTeX tab:tab3–5) and of the variant-sampler evidence.

References:
* the variant's X1 update (paper eq. X1fc without ``k1 <= k2``) against the correct
  conditional of ``ExactConditionals`` where the constraint is inactive (k2 >= m + 1):
  same formula, tolerance 1e-12 (rounding);
* the variant's stationary law (2-state reduction) against a brute-force stationary vector
  of the full (k1, k2) transition matrix: tolerance 1e-10 (eigen-solver rounding on a
  ~60-state chain);
* runs of the variant sampler against its stationary law: N_MCSE = 4 MCSE;
* the analytic MCSE of a correct 1e4-draw run against the spread of N_RUNS independent runs:
  the sd of N_RUNS values has relative standard error ~1/sqrt(2 (N_RUNS - 1)) = 3.5%, so
  the ratio must be within 4 x 3.5% = 14% of 1.
"""

import numpy as np
import pytest
from matplotlib.figure import Figure
from study_checks import numbers_without_units_in_results

from dprisk.inference.studies.variant import (
    variant_gibbs_sample,
    variant_prob_x1,
    variant_stationary,
)
from dprisk.inference.two_level.exact import exact_posterior
from dprisk.inference.two_level.gibbs import ExactConditionals, gibbs_sample
from dprisk.inference.two_level.sampling import chain_diagnostics
from dprisk.validation.paper import published as pub
from dprisk.validation.paper.two_level import (
    N_MCSE,
    PAPER_DRAWS,
    TABLE3_RELEASE,
    TABLE5_K2,
    PaperBudget,
    budget_runs,
    correct_sampler_mcse,
    study,
    table3_parameters,
)
from dprisk.validation.paper.two_level_records import Comparison
from dprisk.validation.report.build import RECORD_KEYS, validate_records

PARAMS = table3_parameters()
MODEL_ARGS = {k: v for k, v in PARAMS.items() if k != "prior"}
N_RUNS = 400
TINY = PaperBudget(
    runs=budget_runs(gibbs=2000, pymc_gibbs=300, pymc=300, chains=2, pymc_gibbs_tune=50,
                     tune=100),
    paper_runs=8,
    crosscheck_battery=None,
)


def _full_chain_stationary(release, params):
    """Stationary law of the variant on states (k1, k2) by an eigenvector (no 2-state trick)."""
    cond = ExactConditionals(*release, **params, prior="improper")
    k2 = cond.k2_values
    p_unc = variant_prob_x1(k2, x1_star=release[0], y1_star=release[2], rho1=params["rho1"],
                            d=params["d"], p=params["p"], known=params["known"])
    width = k2.size
    # state index = b * width + j; (b, j) -> (b', j'): P_unc(b' | k2_j) P(k2_j' | b').
    move = np.stack([1 - p_unc, p_unc], axis=1)  # (j, b')
    kernel = np.zeros((2 * width, 2 * width))
    for b in (0, 1):
        for bp in (0, 1):
            kernel[b * width:(b + 1) * width, bp * width:(bp + 1) * width] = (
                move[:, bp][:, None] * cond.x2_pmf_table[bp][None, :]
            )
    values, vectors = np.linalg.eig(kernel.T)
    stationary = np.real(vectors[:, np.argmin(np.abs(values - 1))])
    stationary /= stationary.sum()
    joint = stationary.reshape(2, width)
    return joint[1].sum(), joint.sum(0)


class TestVariant:
    def test_x1_update_equals_correct_one_where_constraint_is_inactive(self):
        cond = ExactConditionals(*TABLE3_RELEASE, **PARAMS)
        k2 = np.arange(1, 12)
        unc = variant_prob_x1(k2, x1_star=2, y1_star=-1, rho1=PARAMS["rho1"], d=27, p=0.5)
        np.testing.assert_allclose(unc, cond.prob_x1_given_x2(k2), rtol=1e-12, atol=0)
        assert cond.prob_x1_given_x2(0) == 0.0
        assert variant_prob_x1(0, x1_star=2, y1_star=-1, rho1=PARAMS["rho1"], d=27) > 0.4

    @pytest.mark.parametrize("release", [TABLE3_RELEASE, (0, 2, 5), (3, -1, -4)])
    def test_stationary_law_matches_full_chain(self, release):
        law = variant_stationary(*release, **MODEL_ARGS)
        prob_x1, x2_pmf = _full_chain_stationary(release, MODEL_ARGS)
        assert law.prob_x1 == pytest.approx(prob_x1, abs=1e-10)
        np.testing.assert_allclose(law.x2_pmf, x2_pmf, atol=1e-10)
        np.testing.assert_allclose(law.transition.sum(1), 1.0, atol=1e-14)

    def test_runs_match_stationary_law(self):
        law = variant_stationary(*TABLE3_RELEASE, **MODEL_ARGS)
        runs = variant_gibbs_sample(*TABLE3_RELEASE, **MODEL_ARGS, draws=5000, chains=16,
                                    tune=200, random_seed=3)
        x1 = chain_diagnostics(runs.x1, known=0)
        assert abs(x1["mean"] - law.prob_x1) < N_MCSE * x1["mcse"]
        for k in (0, 1, 2):
            freq = chain_diagnostics((runs.x2 == k).astype(float))
            assert abs(freq["mean"] - float(law.x2_pmf_at(k))) < N_MCSE * freq["mcse"]

    def test_published_tables_consistent_with_variant_not_exact(self):
        """The finding, from computed numbers: published X1 is far from exact, near the variant."""
        law = variant_stationary(*TABLE3_RELEASE, **MODEL_ARGS)
        exact = exact_posterior(*TABLE3_RELEASE, **PARAMS)
        runs = variant_gibbs_sample(*TABLE3_RELEASE, **MODEL_ARGS, draws=PAPER_DRAWS,
                                    chains=20, random_seed=4)
        spread = (runs.x1 == 1).mean(1).std(ddof=1)
        paper_mcse = correct_sampler_mcse(*TABLE3_RELEASE, **PARAMS)["prob_x1"]
        published = pub.get("table4/k1=1/posterior")
        assert abs(published.value - float(exact.prob_x1)) > N_MCSE * paper_mcse
        assert abs(published.value - law.prob_x1) < N_MCSE * spread + published.half_unit
        for k in TABLE5_K2[:5]:
            record = pub.get(f"table5/k2={k}/posterior")
            sd = (runs.x2 == k).mean(1).std(ddof=1)
            assert abs(record.value - float(law.x2_pmf_at(k))) < N_MCSE * sd + record.half_unit


class TestPaperMcse:
    def test_analytic_mcse_matches_spread_of_runs(self):
        mcse = correct_sampler_mcse(*TABLE3_RELEASE, **PARAMS, draws=PAPER_DRAWS)
        runs = gibbs_sample(*TABLE3_RELEASE, **PARAMS, draws=PAPER_DRAWS, chains=N_RUNS,
                            tune=200, random_seed=5)
        tolerance = N_MCSE / np.sqrt(2 * (N_RUNS - 1))
        sd_x1 = (runs.x1 == 1).mean(1).std(ddof=1)
        assert sd_x1 / mcse["prob_x1"] == pytest.approx(1.0, abs=tolerance)
        for k in range(5):
            sd = (runs.x2 == k).mean(1).std(ddof=1)
            assert sd / mcse["x2"][k] == pytest.approx(1.0, abs=tolerance)

    def test_tau_of_independent_draws_is_one(self):
        """With point:K the X1 draws are iid: lambda = 0, MCSE = sqrt(q (1 - q) / N)."""
        mcse = correct_sampler_mcse(*TABLE3_RELEASE, **{**PARAMS, "prior": "point:3"},
                                    draws=100)
        q = float(exact_posterior(*TABLE3_RELEASE, **{**PARAMS, "prior": "point:3"}).prob_x1)
        assert mcse["lambda"] == pytest.approx(0.0, abs=1e-14)
        assert mcse["prob_x1"] == pytest.approx(np.sqrt(q * (1 - q) / 100), rel=1e-12)


@pytest.mark.parametrize("prior", ["improper", "point:1"])
def test_tables_columns_and_crosscheck_cells_read_off_the_reports_are_the_same_numbers(prior):
    """The Tables 7-8 runs' P[X1 = 1] with its MCSE (``_mc_column``) and their cross-check
    statistics (``_cell_estimates``) are read off the runs' convergence reports: bit for bit
    the numbers computed from the draws themselves (``point:1``: X2 constant, R-hat NaN)."""
    from dprisk.inference.two_level.sampling import sample_posterior
    from dprisk.validation.crosschecks.crosscheck import _estimates
    from dprisk.validation.crosschecks.diagnostics import convergence_report
    from dprisk.validation.paper.two_level import _cell_estimates, _mc_column

    tree = sample_posterior(*TABLE3_RELEASE, **{**PARAMS, "prior": prior}, method="gibbs",
                            draws=500, chains=2, tune=50, random_seed=8)
    report = convergence_report(tree, known=0)
    post = tree["posterior"]
    direct = _estimates(post["X1"].values, post["X2"].values, 0)
    read = _cell_estimates(report)
    assert list(read) == list(direct)
    for quantity, stats in direct.items():
        assert list(read[quantity]) == list(stats)
        np.testing.assert_array_equal(list(read[quantity].values()), list(stats.values()))
    column = _mc_column(tree, report)
    x1 = chain_diagnostics(post["X1"].values, known=0, statistics=("mcse",))
    assert (column["p_x1"], column["p_x1_mcse"]) == (x1["mean"], x1["mcse"])


@pytest.fixture(scope="module")
def tiny_study():
    return study(budget=TINY)


class TestStudy:
    def test_result_shape(self, tiny_study):
        assert tiny_study.name == "hierarchical"
        assert isinstance(tiny_study.figures["table4_table5"], Figure)
        tables = tiny_study.datasets["tables"]
        assert set(tables["method"].values) >= {"published", "exact", "gibbs", "pymc-gibbs",
                                                 "pymc", "variant", "variant-runs",
                                                 "no-hierarchy"}
        assert tiny_study.notes and tiny_study.diagnostics and tiny_study.seeds

    def test_every_number_has_units(self, tiny_study, tmp_path):
        # results.nc's two-level tables group had no units on 11 of its 14 numeric variables and
        # coordinates (the MCSEs and sds, the variant's runs and transition, k2, run, k1)
        assert not numbers_without_units_in_results(tiny_study.name, tiny_study.datasets,
                                                    tmp_path / "results.nc")

    def test_records(self, tiny_study):
        recs = tiny_study.records
        validate_records(recs)
        assert all(tuple(sorted(r)) == tuple(sorted(RECORD_KEYS)) for r in recs)
        ids = [r["id"] for r in recs]
        assert ids == ["table4/k1=0/posterior", "table4/k1=1/posterior",
                       *(f"table5/k2={k}/posterior" for k in TABLE5_K2)]
        exact = exact_posterior(*TABLE3_RELEASE, **PARAMS)
        by_id = {r["id"]: r for r in recs}
        assert by_id["table4/k1=1/posterior"]["computed"] == pytest.approx(
            float(exact.prob_x1), abs=1e-14)
        # Table 7's k1 = 0 column is P[X1 = 0 | D] = 1 - P[X1 = 1 | D] (not P[X1 = 1 | D]
        # again), and so are its variant value and the MC estimates its explanation quotes
        assert by_id["table4/k1=0/posterior"]["computed"] == pytest.approx(
            1.0 - float(exact.prob_x1), abs=1e-14)
        for k in TABLE5_K2:
            assert by_id[f"table5/k2={k}/posterior"]["computed"] == pytest.approx(
                float(exact.x2_pmf_at(k)), abs=1e-14)
        for r in recs:
            record = pub.get(r["id"])
            beyond = abs(r["published"] - r["computed"]) - record.half_unit > N_MCSE * r["mcse"]
            assert r["status"] == ("differs" if beyond else "within-mc-error")
            assert "support constraint k1 <= k2" in r["explanation"]
        assert by_id["table4/k1=1/posterior"]["status"] == "differs"
        # Table 8's tail (P[X2 = 7 | D] = 4.5e-5): its MCSEs and spread were printed as
        # "± 0.0000" and "sd 0.0000" beside z = +2.0
        tail = by_id["table5/k2=7/posterior"]["explanation"]
        assert "± 0.0000" not in tail and "sd 0.0000" not in tail and "0.00004" not in tail
        assert f"Exact enumeration: {float(exact.x2_pmf_at(7)):.2g}." in tail


def test_a_comparison_without_spread_is_never_within_mc_error():
    # an MCSE of 0 (every draw equal) gives no z: the published number is not "within"
    record = pub.get("table4/k1=1/posterior")
    c = Comparison(record, exact=0.5, paper_mcse=0.0, variant=0.5, variant_sd=0.0,
                   estimates={})
    assert c.versus_exact() == (False, "z undefined (no spread)")
    assert c.versus_variant()[0] is False


def test_the_study_joined_from_parts_run_apart_is_the_one_piece_study(tiny_study):
    """The report runs the study's parts in separate workers (``study_part``, pickled back)
    and joins them (``study(parts=...)``): the same records, datasets, notes and seeds."""
    import pickle

    from dprisk.validation.paper.two_level import STUDY_PARTS, study_part

    parts = {name: pickle.loads(pickle.dumps(study_part(name, budget=TINY)))
             for name in reversed(STUDY_PARTS)}
    joined = study(budget=TINY, parts=parts)
    assert joined.records == tiny_study.records and joined.seeds == tiny_study.seeds
    assert joined.notes == tiny_study.notes
    assert joined.datasets.keys() == tiny_study.datasets.keys() == {"tables"}
    assert joined.datasets["tables"].identical(tiny_study.datasets["tables"])
    assert joined.figures.keys() == tiny_study.figures.keys()


def test_analytic_mcse_is_the_exact_markov_chain_mcse():
    """correct_sampler_mcse's closed forms (tau = (1 + lambda) / (1 - lambda) for X1, the
    lambda^(s-1) Var h autocovariance for 1[X2 = k]) against brute force on the sweep's own
    Markov chain: states (X1 - m, X2) on the tabulated window, kernel
    P[b' | k2] P[k2' | b'], stationary law by power iteration, tau = 1 + 2 sum_s rho_s summed
    to lag 400 (lambda^400 < 1e-70). A release with lambda = 0.65 (3, 0, 0; rho1 = 0.5,
    rho2 = 1, d = 3, p = 0.3), where tau_x1 = 4.8: the two agree to 1e-9 relative; the
    sampling test above, at the paper's lambda = 0.03, cannot tell tau from 1 / (1 - lambda)."""
    params = {"rho1": 0.5, "rho2": 1.0, "d": 3, "p": 0.3, "known": 0}
    cond = ExactConditionals(3, 0, 0, **params)
    p1, x2 = cond.prob_x1_table, cond.x2_pmf_table
    w = p1.size
    step = np.einsum("kc,cl->kcl", np.stack([1.0 - p1, p1], axis=1), x2).reshape(w, 2 * w)
    kernel = np.concatenate([step, step])  # the next state does not depend on the old X1
    pi = np.full(2 * w, 1.0 / (2 * w))
    for _ in range(5000):
        pi = pi @ kernel

    def mcse(f, n=10_000):
        mean = pi @ f
        g0 = pi @ (f * f) - mean**2
        v, tau = f.copy(), 1.0
        for _ in range(400):
            v = kernel @ v
            tau += 2 * (pi @ (f * v) - mean**2) / g0
        return np.sqrt(g0 * tau / n)

    got = correct_sampler_mcse(3, 0, 0, **params, draws=10_000, k2=(0, 1, 2, 3))
    assert got["lambda"] == pytest.approx(0.6527, abs=1e-4)
    assert got["prob_x1"] == pytest.approx(mcse(np.r_[np.zeros(w), np.ones(w)]), rel=1e-9)
    for i, k in enumerate((0, 1, 2, 3)):
        f = np.tile((cond.k2_values == k).astype(float), 2)
        assert got["x2"][i] == pytest.approx(mcse(f), rel=1e-9)
