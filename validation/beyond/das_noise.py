r"""The noise as the DAS drew it: the decision summary's block answers at sigma^2 = 10.09, as data.

The decision summary (:mod:`dprisk.validation.beyond.decision_summary`) prints the paper's
convention: one count with noise DG(0, 1/(2 rho1)), variance about 5.04 at the block. The 2020
DAS drew the block ``detailed`` query with pmf :math:`\propto e^{-x^2/(2\sigma^2)}`,
:math:`\sigma^2 = 1/\rho_{\text{query}} \approx 10.09` (replace-one neighbours;
``docs/noise-conventions.md``). :func:`das_noise_table` lays
:class:`dprisk.inference.privacy.das_noise.DasNoiseComparison` out over the paper's priors;
:func:`das_noise_records` checks and records it:

* ``das_noise/block_sigma_sq``: sigma^2, exactly 2 x the paper's 1/(2 rho1) once the paper's
  global rho 2.56 is replaced by the production (542/339)^2;
* ``das_noise/did_respond/p_correct`` and ``…/marginal_posterior`` (p = 1/2): one cell of
  variance sigma^2, against a direct lattice sum in the DAS's own pmf form;
* ``das_noise/replace_one/p_correct`` (p = 1/2): two cells of variance sigma^2, exact, within
  one lattice atom of its Gaussian limit :math:`\Phi(1/\sqrt{2\sigma^2})`;
* ``das_noise/replace_one/posterior_vs_half_variance``: the two-cell posterior and risk equal
  one cell at sigma^2/2 (the Gaussian-limit equivalence holds exactly here);
* ``das_noise/replace_one/{posterior,risk,p_correct,accuracy}_vs_paper``: the largest
  difference over the paper's priors from the paper's printed convention (rho1 at 2.56).

Every value is computed here (no published number: ``published`` is None); the paper's own
published-vs-computed records are untouched.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from dprisk.inference.privacy.das_noise import (
    AGREE_TOLERANCE,
    MEASURES,
    DasNoiseComparison,
    das_noise_comparison,
)
from dprisk.validation.figures.paper_priors import PAPER_PRIORS, prior_coords
from dprisk.validation.paper.records import exact_record

__all__ = ["QUESTIONS", "RECORD_IDS", "SOURCE", "das_noise_records", "das_noise_table"]

#: The ids of :func:`das_noise_records`, in order (kept: the report's records are looked up by id).
RECORD_IDS = (
    "das_noise/block_sigma_sq",
    "das_noise/did_respond/p_correct",
    "das_noise/did_respond/marginal_posterior",
    "das_noise/replace_one/p_correct",
    "das_noise/replace_one/posterior_vs_half_variance",
    "das_noise/replace_one/posterior_vs_paper",
    "das_noise/replace_one/risk_vs_paper",
    "das_noise/replace_one/p_correct_vs_paper",
    "das_noise/replace_one/accuracy_vs_paper",
)
#: Record source of every record here.
SOURCE = "beyond the paper: the noise as the DAS drew it (issue 34)"
#: The questions of the table, in order, with their long names.
QUESTIONS = {
    "paper": "the paper's convention: one cell, DG(0, 1/(2 rho1))",
    "two_cell": "which of two cells holds the target (replace-one): two cells of variance "
                "sigma^2, exact",
    "one_cell": "did the target respond: one cell of variance sigma^2",
    "half_variance": "one cell of variance sigma^2/2 (the two-cell question's Gaussian limit)",
}


def das_noise_table(comparison: DasNoiseComparison | None = None) -> xr.Dataset:
    """The comparison as data: ``MEASURE`` over (``question``, ``p``).

    Parameters
    ----------
    comparison : DasNoiseComparison, optional
        Default: the Census block at the paper's five priors.

    Returns
    -------
    xarray.Dataset
        Variables :data:`dprisk.inference.privacy.das_noise.MEASURES` over ``question``
        (:data:`QUESTIONS`) and ``p`` (with ``p_label``); attributes ``sigma_sq``,
        ``rho_query``, ``rho_paper``, ``census`` and the ``agreement`` sentences.
    """
    if comparison is None:
        comparison = das_noise_comparison(census=True, priors=[p for _, p in PAPER_PRIORS])
    labels = {value: label for label, value in PAPER_PRIORS}
    priors = [(labels.get(row.p, f"{row.p:.4g}"), row.p) for row in comparison.rows]
    data = {measure: (("question", "p"),
                      np.array([[getattr(getattr(row, question), measure)
                                 for row in comparison.rows] for question in QUESTIONS]),
                      {"long_name": measure.replace("_", " "),
                       "units": "ratio" if measure == "marginal_risk" else "probability"})
            for measure in MEASURES}
    coords = {"question": list(QUESTIONS), **prior_coords(priors)}
    table = xr.Dataset(data, coords=coords)
    table["question_long_name"] = ("question", list(QUESTIONS.values()))
    table.attrs.update(sigma_sq=comparison.sigma_sq, rho_query=comparison.rho_query,
                       rho_paper=comparison.rho_paper, census=int(comparison.census),
                       agreement="\n".join(comparison.agreement()))
    return table


def _one_cell_p_correct_direct(sigma_sq: float) -> float:
    """P[eta >= 0] for pmf proportional to exp(-x^2/(2 sigma^2)): a direct lattice fsum."""
    width = math.ceil(math.sqrt(2.0 * sigma_sq * 60.0))  # neglected terms below exp(-60)
    weights = [math.exp(-k * k / (2.0 * sigma_sq)) for k in range(-width, width + 1)]
    return math.fsum(weights[width:]) / math.fsum(weights)


def das_noise_records(table: xr.Dataset, comparison: DasNoiseComparison) -> list[dict]:
    """The records of the comparison (module docstring), each with its check."""
    s2, rho1, rho_q = comparison.sigma_sq, comparison.rho_paper, comparison.rho_query
    half = table.sel(p=0.5)
    ratio = 2.0 * rho1 * s2  # sigma^2 over the paper's variance parameter 1/(2 rho1)
    records = [exact_record(
        "das_noise/block_sigma_sq", SOURCE, None, s2,
        abs(ratio * rho_q / rho1 - 2.0) <= AGREE_TOLERANCE,
        f"the 2020 DAS drew the block detailed query with pmf ∝ exp(−x²/(2σ²)), σ² = "
        f"1/inverse_scale = {s2:.6g} (primitives.py RationalDiscreteGaussianMechanism; "
        f"engine_utils.getAdjustedInverseScalePerQuery: inverse_scale = geolevel share × query "
        f"share / global_scale², global_scale = 339/542): {ratio:.5f} × the paper's "
        f"1/(2ρ1) = {1 / (2 * rho1):.5g}, exactly 2 × at the same global ρ (replace-one "
        f"neighbours: ρ_query = 1/σ² = {rho_q:.6g}; the paper's ρ1 = {rho1:.6g} is at 2.56, "
        f"the production ρ is (542/339)² = 2.5562).")]
    did = float(half["p_correct"].sel(question="one_cell"))
    direct = _one_cell_p_correct_direct(s2)
    paper_pc = float(half["p_correct"].sel(question="paper"))
    records.append(exact_record(
        "das_noise/did_respond/p_correct", SOURCE, None, did,
        abs(did - direct) <= AGREE_TOLERANCE and did < paper_pc,
        f"did the target respond (one cell of variance σ² = {s2:.4g}), p = 1/2: P[correct] = "
        f"{did:.4f}, not the paper's convention's {paper_pc:.4f} (a direct lattice sum in "
        f"the DAS's pmf form gives {direct:.12f})."))
    did_post = float(half["marginal_posterior"].sel(question="one_cell"))
    paper_post = float(half["marginal_posterior"].sel(question="paper"))
    records.append(exact_record(
        "das_noise/did_respond/marginal_posterior", SOURCE, None, did_post,
        0.5 < did_post < paper_post,
        f"did the target respond, p = 1/2: marginal posterior {did_post:.4f} (risk "
        f"{2 * did_post:.4f}), not {paper_post:.4f}: half the paper's precision."))
    two = float(half["p_correct"].sel(question="two_cell"))
    k, pmf = _difference_pmf(comparison)
    atom = float(pmf[k == 0][0])
    limit = 0.5 * (1.0 + math.erf(1.0 / math.sqrt(2.0 * s2) / math.sqrt(2.0)))
    records.append(exact_record(
        "das_noise/replace_one/p_correct", SOURCE, None, two, abs(two - limit) <= atom,
        f"which of two cells holds the target (two cells of variance σ² = {s2:.4g}), p = 1/2: "
        f"P[correct] = {two:.4f} exactly (ties split), {two - paper_pc:+.2g} from the paper's "
        f"{paper_pc:.4f}; both within one lattice atom ({atom:.3f}) of the Gaussian limit "
        f"Φ(1/√(2σ²)) = {limit:.4f}."))
    records.extend(_difference_records(comparison))
    return records


def _difference_pmf(comparison: DasNoiseComparison):
    from dprisk.inference.single_level.replace_one import difference_pmf
    from dprisk.models.mechanism.discrete_gaussian import rho_of_das_sigma_sq

    return difference_pmf(float(rho_of_das_sigma_sq(comparison.sigma_sq)))


def _difference_records(comparison: DasNoiseComparison) -> list[dict]:
    """Largest differences over the priors: from one cell at sigma^2/2, from the paper."""
    from dprisk.models.mechanism.discrete_gaussian import log_normalizer

    post = max(comparison.largest_difference("two_cell", m, "half_variance")[0]
               for m in ("marginal_posterior", "marginal_risk"))
    records = [exact_record(
        "das_noise/replace_one/posterior_vs_half_variance", SOURCE, None, post,
        post <= AGREE_TOLERANCE,
        f"largest difference over the paper's priors between the two-cell (replace-one) "
        f"marginal posterior or risk and one cell of variance σ²/2 (the paper's convention at "
        f"ρ = 1/σ²): {post:.2g}, at most {AGREE_TOLERANCE:g}: the Gaussian-limit equivalence "
        f"holds for these smooth averages to rounding.")]
    k, pmf = _difference_pmf(comparison)
    # each lattice CDF is within one atom of the common Gaussian limit
    atoms = float(pmf[k == 0][0]) + math.exp(-float(log_normalizer(comparison.rho_paper)))
    names = {"marginal_posterior": "posterior", "marginal_risk": "risk",
             "p_correct": "p_correct", "accuracy": "accuracy"}
    for measure, short in names.items():
        diff, at = comparison.largest_difference("two_cell", measure)
        rounding, _ = comparison.largest_difference("half_variance", measure)
        lattice, _ = comparison.largest_difference("two_cell", measure, "half_variance")
        what = f"largest |two-cell − paper| {measure.replace('_', ' ')} over the paper's priors"
        if short in ("posterior", "risk"):
            ok = lattice <= AGREE_TOLERANCE
            why = (f"all of it the paper's global ρ 2.56 against the production (542/339)² "
                   f"(up to {rounding:.3g}): the two cells carry what one cell of σ²/2 "
                   f"carries, to {lattice:.2g}.")
        else:
            ok = diff <= atoms + rounding
            why = (f"of it, the lattice (two cells of σ² against one of σ²/2) up to "
                   f"{lattice:.3g}, the global-ρ rounding up to {rounding:.3g}; within the "
                   f"Gaussian-limit bound {atoms:.3f} (one atom of each lattice).")
        records.append(exact_record(
            f"das_noise/replace_one/{short}_vs_paper", SOURCE, None, diff, ok,
            f"{what}: {diff:.3g} (at p = {at:.4g}); {why}"))
    return records
