r"""Beyond the paper: the post-processed product beside the noisy measurements (issue 21).

The paper assesses the noisy measurements and leaves the published product (TopDown's
post-processing) as future work (§6, with the one-block closed form of S6). Here the same
adversary (it knows ``m``, ``p`` and the other blocks' counts) sees either the noisy
measurements or the product (:mod:`dprisk.inference.product.exact`): the block-group total
``max(0, x2*)`` or, with the block-group invariant, the true total; the blocks projected onto
non-negative counts adding up to it and rounded by largest remainders with random ties. All
values exact (enumeration, neglected probability < 1e-12).

The study computes the marginal posterior, P[correct] (truth: the target has ``c``) and the
prior-weighted accuracy for the three releases against :math:`\rho_1` (block-group
:math:`\rho_2` at the Census allocation, one other block with 3) and against ``d`` (Census
rho, others 1 each), and the records:

* the data-processing bound (no invariant): the product's marginal posterior and accuracy
  never exceed the noisy measurements' (every grid point; computed: the margin);
* the counterexample for P[correct] at the truth alone (one other block with 0, p = 0.4):
  the product's is higher, a true-positive rate is not a data-processing quantity;
* the invariant: with the block-group total exact and the others known the product reveals
  the target (marginal posterior 1): an invariant is confidential data, not post-processing;
* S6 as a special case: with d = 1, the block-group total exact and the adversary's others
  ``x2 - k``, the product's likelihood is the average of S6's round-half-up and
  round-half-down likelihoods (the product breaks ties at random).

* the K-cell product (issue 21 §2) on the paper's 1940 histogram (ED 28-21, 864 cells, as
  one block of a block group with a second block of the same counts, everyone but the target
  known): P[MAP = the target's cell] from the product and from the noisy cells, exact and by
  Monte Carlo through the top-down K-cell product
  (:mod:`dprisk.validation.figures.product_kcell`); the records check Monte Carlo against
  exact within 4 MCSE (``within-mc-error``), for each release and their paired difference,
  and the data-processing bound on the MAP's accuracy over the uniform prior (exact).

No record has a published number: the paper has none for this question.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from dprisk.inference.product import exact
from dprisk.inference.product import one_block as s6
from dprisk.models.census.allocation import census_level
from dprisk.validation.figures.product_kcell import kcell_data, kcell_figure
from dprisk.validation.paper.records import StudyResult, exact_record
from dprisk.validation.registry import report_study

__all__ = ["COUNTEREXAMPLE", "RELEASES", "figure", "records", "risk_grid", "s6_difference",
           "study"]

#: The three releases compared, in the dataset's ``release`` coordinate.
RELEASES = ("noisy", "product", "product_invariant")
#: Block rho values of the study (the Census allocation is added and marked).
RHO1_GRID = (0.03, 0.05, 0.1, 0.2, 0.35, 0.6, 1.0, 1.5)
#: Others' counts along the d axis: one each.
D_GRID = (1, 2, 3)
#: The P[correct] counterexample: (others, m, p) at the Census rho.
COUNTEREXAMPLE = ((0,), 0, 0.4)
P_PRIOR = 0.5
#: Seed of the K-cell ED 28-21 Monte Carlo (reported in ``seeds``).
KCELL_SEED = 20261126
#: Simulated releases of the K-cell study: report scale, paper scale.
KCELL_RELEASES = {False: 2000, True: 20_000}
#: Monte Carlo records are ``within-mc-error`` when within this many MCSE of exact.
N_MCSE = 4
_SOURCE = "beyond the paper: the post-processed product (§6 future work; issue 21)"
_MEASURES = ("marginal_posterior", "p_correct", "accuracy")


def _measures(rho1, rho2, others, m, p) -> np.ndarray:
    """``(release, measure)`` array for the three releases."""
    plain = exact.product_risk(rho1, rho2, others, m, p, "none")
    fixed = exact.product_risk(rho1, rho2, others, m, p, "block-group")
    return np.array([
        [plain.noisy_marginal_posterior, plain.noisy_p_correct, plain.noisy_accuracy],
        [plain.marginal_posterior, plain.p_correct, plain.accuracy],
        [fixed.marginal_posterior, fixed.p_correct, fixed.accuracy],
    ])


def risk_grid(rho1_grid=RHO1_GRID, d_grid=D_GRID, p: float = P_PRIOR) -> xr.Dataset:
    """The three measures of the three releases against rho1 and against d, exact.

    Returns
    -------
    xarray.Dataset
        ``against_rho1`` (dims ``release, measure, rho1``; rho2 Census block group, others
        (3,), m 0) and ``against_d`` (dims ``release, measure, d``; Census rho, others 1
        each); attrs give the fixed parameters and the Census block rho.
    """
    rho_block, rho_bg = census_level("block").rho, census_level("block-group").rho
    rhos = np.unique(np.append(np.asarray(rho1_grid, dtype=float), rho_block))
    by_rho = np.stack([_measures(r, rho_bg, [3], 0, p) for r in rhos], axis=-1)
    by_d = np.stack([_measures(rho_block, rho_bg, [1] * d, 0, p) for d in d_grid], axis=-1)
    coords = {"release": list(RELEASES), "measure": list(_MEASURES)}
    probability = {"units": "probability"}  # the measures: posterior, P[correct], accuracy
    return xr.Dataset(
        {"against_rho1": (("release", "measure", "rho1"), by_rho,
                          {"long_name": "the measure against the block rho1 (3 others)",
                           **probability}),
         "against_d": (("release", "measure", "d"), by_d,
                       {"long_name": "the measure against the other blocks d (1 each)",
                        **probability})},
        coords={**coords,
                "rho1": ("rho1", rhos, {"long_name": "block rho1 (zCDP)", "units": "1"}),
                "d": ("d", np.asarray(d_grid), {"long_name": "other blocks in the block group",
                                                "units": "blocks"})},
        attrs={"p": p, "m": 0, "rho2": rho_bg, "census_rho1": rho_block,
               "others_against_rho1": "3", "others_against_d": "1 each",
               "truth": "marginal posterior and P[correct]: target has c; accuracy: prior-"
                        "weighted over both truths"},
    )


def s6_difference(x2: int = 4, m: int = 1, rho1: float = 0.4) -> float:
    """Largest |product likelihood - mean of S6's up/down likelihoods| (module notes)."""
    rows = []
    for h, k in enumerate((m, m + 1)):
        table = exact.product_table(rho1, 1.0, [x2 - k], m=m, invariant="block-group")
        at = table.outputs[:, 0] == x2
        lik = np.zeros(x2 + 1)
        lik[table.outputs[at, 1]] = table.likelihood[h, at]
        rows.append(lik)
    mean = sum(np.exp(s6.likelihood(x2, rho1, 1, known=m, x2=x2, ties=t,
                                    y_noise="exact").log_likelihood) for t in ("up", "down")) / 2
    return float(np.max(np.abs(np.stack(rows) - mean)))


def records(data: xr.Dataset) -> list[dict]:
    """Data-processing margins, the P[correct] counterexample, the invariant, S6."""
    out = []
    for axis in ("rho1", "d"):
        grid = data[f"against_{axis}"]
        for name in ("marginal_posterior", "accuracy"):
            margin = grid.sel(release="noisy", measure=name) - grid.sel(release="product",
                                                                        measure=name)
            worst = float(margin.min())
            out.append(exact_record(
                f"product/data_processing/{name}/against_{axis}", _SOURCE, None, worst,
                worst >= -1e-12,
                f"Smallest margin noisy - product of the {name.replace('_', ' ')} over the "
                f"{axis} grid (no invariant): {worst:.3g} >= 0 (to the enumeration's 1e-12), "
                "as data processing requires: the product is a randomised function of the "
                "noisy measurements."))
    rho1, rho2 = census_level("block").rho, census_level("block-group").rho
    others, m, p = COUNTEREXAMPLE
    risk = exact.product_risk(rho1, rho2, list(others), m, p)
    excess = risk.p_correct - risk.noisy_p_correct
    out.append(exact_record(
        "product/p_correct_not_bounded", _SOURCE, None, excess, excess > 0,
        f"P[correct | target has c] is a true-positive rate, not a data-processing quantity: "
        f"one other block of count {others[0]}, m = {m}, p = {p:g}, Census rho: product "
        f"{risk.p_correct:.4f} against noisy {risk.noisy_p_correct:.4f} (excess {excess:.2e}); "
        f"the accuracy over the prior stays bounded ({risk.accuracy:.4f} <= "
        f"{risk.noisy_accuracy:.4f})."))
    revealed = float(data.against_rho1.sel(release="product_invariant",
                                           measure="marginal_posterior").min())
    out.append(exact_record(
        "product/invariant_reveals", _SOURCE, None, revealed, revealed > 1 - 1e-12,
        "With the block-group total held exact (an invariant) and the other blocks known, the "
        f"product's marginal posterior is {revealed:.12f} at every rho1: the invariant is "
        "confidential data, not post-processing, and reveals the target exactly."))
    diff = s6_difference()
    out.append(exact_record(
        "product/s6_special_case", _SOURCE, None, diff, diff <= 1e-12,
        "S6 as a special case (d = 1, block-group total exact at x2 = 4, m = 1, rho1 = 0.4): "
        "the product's likelihood equals the mean of S6's round-half-up and round-half-down "
        f"likelihoods (largest difference {diff:.1e}); the product breaks ties at random."))
    return out


def kcell_records(data: xr.Dataset) -> list[dict]:
    """Monte Carlo against exact for the K-cell ED 28-21 study (product, noisy, difference)."""
    out = []
    rows = [(r, float(data.exact.sel(release=r)), float(data.monte_carlo.sel(release=r)),
             float(data.mcse.sel(release=r)), float(data.conditional.sel(release=r)),
             float(data.conditional_mcse.sel(release=r)))
            for r in data.release.values.tolist()]
    rows.append(("difference", data.attrs["exact_difference"], data.attrs["difference"],
                 data.attrs["difference_mcse"], data.attrs["conditional_difference"],
                 data.attrs["conditional_difference_mcse"]))
    for name, exact_value, share_mc, share_mcse, mc, mcse in rows:
        ok = (abs(mc - exact_value) <= N_MCSE * mcse
              and abs(share_mc - exact_value) <= N_MCSE * share_mcse)
        what = ("P[MAP = target's cell] from the product minus from the noisy cells (paired "
                "on the same releases)" if name == "difference"
                else f"P[MAP = target's cell] from the {name} release")
        out.append({
            "id": f"product/kcell/ed28_21/p_map_correct/{name}", "source": _SOURCE,
            "published": None, "computed": exact_value, "mcse": mcse,
            "status": "within-mc-error" if ok else "differs",
            "explanation": f"{what}, ED 28-21 (864 cells) at the Census rho: exact "
                           f"{exact_value:.6g} (order statistics over exact per-cell tables; "
                           f"the value reported); checked by Monte Carlo over "
                           f"{data.attrs['releases']} simulated releases (the product "
                           f"through the top-down K-cell post-processing, the noisy cells of "
                           f"the same draws; seed {data.attrs['random_seed']}): the target "
                           f"cell integrated exactly given the simulated other cells "
                           f"{mc:.6g} ± {mcse:.2g} (MCSE; "
                           f"{abs(mc - exact_value) / mcse if mcse else 0:.2f} MCSE apart), "
                           f"the MAP's share {share_mc:.6g} ± {share_mcse:.2g} "
                           f"({abs(share_mc - exact_value) / share_mcse if share_mcse else 0:.2f}"
                           f" MCSE apart); within {N_MCSE} MCSE both."})
    acc_p, acc_n = (float(data.accuracy.sel(release=r)) for r in ("product", "noisy"))
    margin = acc_n - acc_p
    out.append(exact_record(
        "product/kcell/ed28_21/accuracy_data_processing", _SOURCE, None, margin,
        margin >= -data.attrs["n_cells"] * 1e-12,
        f"Accuracy of the MAP cell over the uniform prior (the target's cell drawn uniformly; "
        f"the Bayes decision), ED 28-21 at the Census rho: product {acc_p:.6g}, noisy cells "
        f"{acc_n:.6g}, margin {margin:.3g} >= 0 as data processing requires (the product is "
        "a randomised function of the noisy cells); exact."))
    return out


def figure(data: xr.Dataset) -> Figure:
    """Marginal posterior and P[correct] against rho1 (top) and d (bottom), one line per release."""
    fig = Figure(figsize=(11, 7.5), layout="constrained")
    axes = fig.subplots(2, 2)
    styles = {"noisy": ("noisy measurements", "-"), "product": ("product", "--"),
              "product_invariant": ("product, block-group invariant", ":")}
    for row, axis in enumerate(("rho1", "d")):
        grid = data[f"against_{axis}"]
        for col, (name, label) in enumerate((("marginal_posterior", "marginal posterior"),
                                             ("p_correct", "P[correct | target has c]"))):
            ax = axes[row, col]
            for release, (text, ls) in styles.items():
                ax.plot(grid[axis], grid.sel(release=release, measure=name), ls=ls,
                        marker=".", label=text)
            if axis == "rho1":
                ax.set_xscale("log")
                ax.axvline(data.attrs["census_rho1"], color="grey", lw=1,
                           label="Census block rho1")
                ax.set_xlabel("rho1 (others (3), Census rho2)")
            else:
                ax.set_xlabel("d other blocks (1 each, Census rho)")
                ax.set_xticks(list(grid.d.values))
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"Post-processed product vs noisy measurements, p = {data.attrs['p']:g}, "
                 "m = 0, the adversary knows the other blocks")
    return fig


@report_study(order=100, title="beyond the paper: the post-processed product", cost=2.5)
def study(*, paper_scale: bool = False) -> StudyResult:
    """The product study for the report (``paper_scale``: more K-cell Monte Carlo releases)."""
    data = risk_grid()
    kcell = kcell_data(KCELL_RELEASES[bool(paper_scale)], KCELL_SEED)
    at = data.against_rho1.sel(rho1=data.attrs["census_rho1"])
    rho1, rho2 = census_level("block").rho, census_level("block-group").rho
    others, m, p = COUNTEREXAMPLE
    counter = exact.product_risk(rho1, rho2, list(others), m, p)
    notes = [
        "Beyond the paper (§6 future work): the same adversary, knowing the other blocks' "
        "counts, sees either the noisy measurements or the post-processed product (block-group "
        "total max(0, x2*), blocks projected onto non-negative counts adding up to it, then "
        "rounded by largest remainders with random ties). Exact enumeration over the "
        "block-noise differences; neglected probability below 1e-12.",
        f"At the Census allocation (others (3), p = {P_PRIOR:g}) the marginal posterior is "
        f"{float(at.sel(release='noisy', measure='marginal_posterior')):.4f} from the noisy "
        f"measurements and {float(at.sel(release='product', measure='marginal_posterior')):.4f}"
        f" from the product; P[correct] "
        f"{float(at.sel(release='noisy', measure='p_correct')):.4f} and "
        f"{float(at.sel(release='product', measure='p_correct')):.4f}. Releasing the noisy "
        "measurements adds risk beyond the product, by the data-processing inequality for "
        "the marginal posterior and the accuracy (records).",
        "An invariant is confidential data, not post-processing: with the block-group total "
        "held exact and the other blocks known, the product reveals the target (marginal "
        "posterior and P[correct] 1), whatever rho.",
        "P[correct] at the truth alone is not bounded by data processing: with one other block "
        f"of count 0 and p = 0.4 the product's is {counter.p_correct:.4f} against "
        f"{counter.noisy_p_correct:.4f} for the noisy measurements (the accuracy over the "
        f"prior: {counter.accuracy:.4f} against {counter.noisy_accuracy:.4f}).",
        "K-cell histograms (issue 21 §2): every node holds a K-cell histogram; top-down, the "
        "block group's cells are max(0, x*), then each cell's blocks are the least-squares "
        "projection onto non-negative counts adding up to it (exact rational projection; "
        "SciPy SLSQP for unequal weights or the block-total invariant), then integers keeping "
        "every parent cell (HiGHS 0-1 program minimising the L1 change, a random tie-break "
        "reproducing the uniform choice among tied roundings). Without an invariant each "
        "cell's column is post-processed alone, so the product's likelihood factorises over "
        "cells and each cell's factor is the exact one-count table above.",
        f"On the paper's ED 28-21 (864 cells, the target unique; a block group with a second "
        f"block of the same counts; Census rho; uniform prior over the cells) P[MAP = the "
        f"target's cell] is {float(kcell.exact.sel(release='product')):.5f} from the K-cell "
        f"product and {float(kcell.exact.sel(release='noisy')):.5f} from the noisy cells of "
        f"both levels (exact; the prior guess is 1/864 = {1 / 864:.5f}); checked by Monte "
        f"Carlo over {kcell.attrs['releases']} releases (seed {KCELL_SEED}; the target's cell "
        f"integrated exactly given the simulated other cells): "
        f"{float(kcell.conditional.sel(release='product')):.5f} ± "
        f"{float(kcell.conditional_mcse.sel(release='product')):.1g} and "
        f"{float(kcell.conditional.sel(release='noisy')):.5f} ± "
        f"{float(kcell.conditional_mcse.sel(release='noisy')):.1g} (the MAP's plain share: "
        f"{float(kcell.monte_carlo.sel(release='product')):.4f} ± "
        f"{float(kcell.mcse.sel(release='product')):.1g} and "
        f"{float(kcell.monte_carlo.sel(release='noisy')):.4f} ± "
        f"{float(kcell.mcse.sel(release='noisy')):.1g}). Exact: "
        f"{864 * float(kcell.exact.sel(release='product')):.1f} and "
        f"{864 * float(kcell.exact.sel(release='noisy')):.1f} times the prior guess. "
        "The product is a randomised function of the noisy cells, but P[MAP = the truth] for "
        "one target is not a data-processing quantity (as P[correct] above), so neither order "
        "is guaranteed; here the noisy cells add risk beyond the product. Averaged over a "
        "uniformly drawn target cell (the Bayes decision's accuracy, which data processing "
        f"bounds) it is {float(kcell.accuracy.sel(release='product')):.5f} from the product "
        f"and {float(kcell.accuracy.sel(release='noisy')):.5f} from the noisy cells.",
    ]
    return StudyResult(
        name="product",
        title="Beyond the paper: the post-processed product beside the noisy measurements",
        records=records(data) + kcell_records(kcell),
        datasets={"product_risk": data, "product_kcell": kcell},
        figures={"product": figure(data), "product_kcell": kcell_figure(kcell)},
        notes=notes,
        seeds={"product/kcell_ed28_21": KCELL_SEED},
    )
