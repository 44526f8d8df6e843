r"""The decision summary that opens the report: what an adversary learns at the 2020 allocation.

The table (:func:`summary_table`) is
:func:`dprisk.inference.privacy.decision_summary.decision_summary` at the Census allocation
(block rho1, block-group rho2, global rho 2.56), as data: for the paper's five priors and a
unique target, the marginal posterior with the block alone and with the block group, the
marginal risk R, the Bayes rule's accuracy and the worst-case accuracy of any test on the same
two queries, and epsilon three ways (Bun–Steinke, Canonne–Kamath–Steinke, the PLD bracket of
the 65 queries). For a unique target the Bayes rule is the likelihood-ratio test, so its
accuracy *is* the worst case.

The figure (:func:`accuracy_curves`) shows where they part: the paper's two-level adversary
(§4.3, Figures 5–6: the block and block-group counts of a target whose block group has ``x2``
people, ``d = 27`` other blocks, an improper prior on X2),

.. math:: A_{\text{Bayes}}(\rho_1) = p\,P[\text{correct} \mid x_1 = 1, x_2]
          + (1 - p)\,P[\text{correct} \mid x_1 = 0, x_2 - 1]

(:func:`dprisk.inference.privacy.worst_case.bayes_accuracy_two_level`), beside the best
accuracy of any test on the same release pair,
:math:`A^*(\rho_1) = \sum_x \max(p P_1(x), (1 - p) P_0(x))` for the two queries
:math:`(\rho_1, \rho_2)` (:func:`dprisk.inference.privacy.worst_case.worst_case_accuracy`),
against rho1 at the Census block-group rho2. :math:`A_{\text{Bayes}} \le A^*` always (the
Bayes rule is one test); the block alone (one level, where the two coincide) is drawn for
reference. No published numbers: the records carry computed values and the checks.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from dprisk.inference.privacy.decision_summary import DecisionSummary, decision_summary
from dprisk.inference.privacy.worst_case import (
    bayes_accuracy,
    bayes_accuracy_two_level,
    worst_case_accuracy,
)
from dprisk.models.census.allocation import census_level
from dprisk.validation.beyond.das_noise import das_noise_records, das_noise_table
from dprisk.validation.figures.paper_priors import PAPER_PRIORS, prior_coords
from dprisk.validation.paper.records import StudyResult, exact_record
from dprisk.validation.registry import report_study

__all__ = ["D_OTHER_BLOCKS", "FIGURE_PRIORS", "FIGURE_X2", "NAME", "RHO1_POINTS", "ROW_VARIABLES",
           "TOLERANCE", "accuracy_curves", "study", "summary_records", "summary_table"]

#: The study's name (netCDF group; the page renders the study of this name first).
NAME = "decision_summary"
#: Other blocks in the block group of the two-level adversary (the paper's Figures 4–6).
D_OTHER_BLOCKS = 27
#: True block-group counts of the figure's two-level adversary (Figure 5's range).
FIGURE_X2 = (2, 5, 10)
#: Priors of the figure's panels (at small p every accuracy is near the base rate 1 - p).
FIGURE_PRIORS = (("1/2", 1 / 2),)
#: Grid of the figure (the two-level Bayes accuracy costs ~0.05 s a point).
RHO1_POINTS = 12
#: Bayes <= worst case is checked to this (both are sums of exact tail probabilities).
TOLERANCE = 1e-9
#: The table's columns, in order: variable name and (header, unit line).
ROW_VARIABLES = {
    "posterior_block": "posterior, block only",
    "posterior_block_group": "posterior, with the block group",
    "marginal_risk": "marginal risk R (block)",
    "accuracy": "Bayes accuracy",
    "worst_case_accuracy": "worst-case accuracy (any test)",
}
#: Units of the table's columns (the netCDF ``units`` attribute).
_ROW_UNITS = {"posterior_block": "probability", "posterior_block_group": "probability",
              "marginal_risk": "ratio", "accuracy": "probability",
              "worst_case_accuracy": "probability"}


def summary_table(summary: DecisionSummary | None = None) -> xr.Dataset:
    """The decision summary as data: one row per prior, epsilon and rhos as attributes.

    Parameters
    ----------
    summary : DecisionSummary, optional
        Default: ``decision_summary(census=True)``.

    Returns
    -------
    xarray.Dataset
        Variables :data:`ROW_VARIABLES` over ``p`` (with ``p_label``); attributes ``rho1``,
        ``rho2``, ``rho_total``, ``delta``, ``epsilon_bun_steinke``, ``epsilon_cks``,
        ``epsilon_pld_lower``, ``epsilon_pld_upper`` and ``worst_case_accuracy_all``.
    """
    summary = decision_summary(census=True) if summary is None else summary
    labels = {value: label for label, value in PAPER_PRIORS}
    priors = [(labels.get(row.p, f"{row.p:.4g}"), row.p) for row in summary.rows]
    data = {name: ("p", np.array([np.nan if getattr(row, name) is None else getattr(row, name)
                                  for row in summary.rows], dtype=float),
                  {"long_name": text, "units": _ROW_UNITS[name]})
            for name, text in ROW_VARIABLES.items()}
    attrs = {key: float(getattr(summary, key)) for key in (
        "rho1", "rho_total", "delta", "epsilon_bun_steinke", "epsilon_cks",
        "epsilon_pld_lower", "epsilon_pld_upper")}
    attrs["rho2"] = float("nan") if summary.rho2 is None else float(summary.rho2)
    attrs["worst_case_accuracy_all"] = (float("nan") if summary.worst_case_accuracy_all is None
                                        else float(summary.worst_case_accuracy_all))
    attrs["census"] = int(summary.census)
    return xr.Dataset(data, coords=prior_coords(priors), attrs=attrs)


def accuracy_curves(rho1=None, *, rho2=None, priors=FIGURE_PRIORS, x2=FIGURE_X2,
                    d: int = D_OTHER_BLOCKS) -> xr.Dataset:
    """Bayes (two-level adversary) and worst-case accuracy against rho1 at a fixed rho2.

    Parameters
    ----------
    rho1 : array of float (> 0), optional
        Default: :data:`RHO1_POINTS` points from 0.02 to 10 (log scale), plus the Census block's
        rho1.
    rho2 : float (> 0), optional
        Default: the Census block group's rho.
    priors : sequence of (label, p)
    x2 : sequence of int (>= 1)
        True block-group counts of the two-level adversary.
    d : int (>= 1)

    Returns
    -------
    xarray.Dataset
        ``bayes_two_level`` (rho1, p, x2), ``worst_case`` (rho1, p: the two queries) and
        ``one_level`` (rho1, p: the block alone, Bayes = worst case); attributes
        ``census_rho1``, ``rho2``, ``d``.
    """
    census_rho1 = census_level("block").rho
    rho2 = census_level("block-group").rho if rho2 is None else float(rho2)
    if rho1 is None:
        rho1 = np.union1d(np.geomspace(0.02, 10.0, RHO1_POINTS), [census_rho1])
    rho1 = np.asarray(rho1, dtype=float)
    p_values = [value for _, value in priors]
    bayes = np.array([[[bayes_accuracy_two_level(x2=k, rho1=r, rho2=rho2, d=d, p=p)
                        for k in x2] for p in p_values] for r in rho1])
    worst = np.array([[worst_case_accuracy([r, rho2], p).accuracy for p in p_values]
                      for r in rho1])
    single = np.array([[bayes_accuracy(r, p) for p in p_values] for r in rho1])
    return xr.Dataset(
        {"bayes_two_level": (("rho1", "p", "x2"), bayes,
                             {"long_name": "Bayes accuracy of the two-level adversary",
                              "units": "probability"}),
         "worst_case": (("rho1", "p"), worst,
                        {"long_name": "worst-case accuracy, block and block-group queries",
                         "units": "probability"}),
         "one_level": (("rho1", "p"), single,
                       {"long_name": "accuracy with the block alone (Bayes = worst case)",
                        "units": "probability"})},
        coords={"rho1": ("rho1", rho1, {"long_name": "block rho1 (zCDP)", "units": "1"}),
                "x2": ("x2", np.asarray(x2), {"long_name": "true block-group count x2",
                                              "units": "persons"}),
                **prior_coords(priors)},
        attrs={"census_rho1": census_rho1, "rho2": rho2, "d": d})


def summary_records(table: xr.Dataset, curves: xr.Dataset) -> list[dict]:
    """Records of the checks: Bayes <= worst case, the coincidence at one level, the release."""
    excess = float(max((curves["bayes_two_level"] - curves["worst_case"]).max(),
                       (table["accuracy"] - table["worst_case_accuracy"]).max()))
    at = curves.sel(rho1=curves.attrs["census_rho1"], p=0.5)
    gap = float(at["worst_case"] - at["bayes_two_level"].max())
    rho1 = curves.attrs["census_rho1"]
    one = bayes_accuracy(rho1, 0.5)
    worst_one = worst_case_accuracy(rho1, 0.5).accuracy
    source = "beyond the paper: the decision summary (issue 22)"
    records = [
        exact_record(
            "summary/bayes_le_worst_case", source, None, excess, excess <= TOLERANCE,
            f"largest Bayes accuracy minus worst-case accuracy over the summary table and the "
            f"figure's grid: {excess:.3g} (at most {TOLERANCE:g}: the Bayes rule is one test). "
            f"At the Census rho1 and p = 1/2 the two-level adversary leaves {gap:.4f} of "
            f"accuracy below the worst case of the same two queries."),
        exact_record(
            "summary/one_level_coincidence", source, None, one,
            abs(one - worst_one) <= TOLERANCE,
            f"at one level the Bayes rule is the likelihood-ratio test: at the Census block "
            f"rho1 = {rho1:.6g} and p = 1/2 its accuracy {one:.6f} equals the worst case "
            f"(1 + TV)/2 = {worst_one:.6f}."),
    ]
    everything = table.attrs["worst_case_accuracy_all"]
    if np.isfinite(everything):
        records.append(exact_record(
            "summary/worst_case_all_queries", source, None, everything,
            everything >= float(table["worst_case_accuracy"].sel(p=0.5)),
            f"every one of the 65 queries of the 2020 persons strategy moves with the target: "
            f"no test on the whole release is more accurate than {everything:.4f} at p = 1/2 "
            f"(PLD, pessimistic), against "
            f"{float(table['worst_case_accuracy'].sel(p=0.5)):.4f} on the two detailed "
            f"queries the paper's adversary reads."))
    return records


def _figure(curves: xr.Dataset) -> Figure:
    priors = curves["p_label"].values
    fig = Figure(figsize=(3.3 * len(priors) + 3.0, 3.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(priors), sharex=True))
    rho1 = curves["rho1"].values
    for ax, (k, label) in zip(axes, enumerate(priors), strict=True):
        ax.plot(rho1, curves["worst_case"][:, k], color="C3", linewidth=2,
                label="worst case: any test, same two queries")
        for j, x2 in enumerate(curves["x2"].values):
            ax.plot(rho1, curves["bayes_two_level"][:, k, j], color=f"C{j}", marker="o",
                    markersize=2.5, label=f"Bayes, two-level adversary, x2 = {x2}")
        ax.plot(rho1, curves["one_level"][:, k], color="k", linestyle=":",
                label="block alone (Bayes = worst case)")
        ax.axvline(curves.attrs["census_rho1"], color="grey", linestyle="--", linewidth=1)
        ax.set_xscale("log")
        if len(priors) > 1:
            ax.set_title(f"p = {label}", fontsize=9)
        ax.set_xlabel(r"block $\rho_1$ (dashed: the 2020 Census allocation)", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel("prior-weighted accuracy", fontsize=8)
    axes[0].legend(fontsize=7, loc="upper left")
    prior = f"p = {priors[0]}, " if len(priors) == 1 else ""
    fig.suptitle(rf"Bayes vs worst-case accuracy, {prior}$\rho_2$ = "
                 f"{curves.attrs['rho2']:.4g} (Census block group), d = {curves.attrs['d']}",
                 fontsize=9)
    return fig


@report_study(order=10, title="decision summary (what an adversary learns at the 2020 allocation)",
              cost=0.7)
def study(*, paper_scale: bool = False) -> StudyResult:
    """The decision summary section (a few seconds: the accounting is cached).

    Datasets ``table``, ``curves`` and ``das_noise`` (the block's answers at the noise the DAS
    drew beside the paper's convention, :mod:`dprisk.validation.beyond.das_noise`, whose
    records follow the summary's).
    """
    summary = decision_summary(census=True)
    table = summary_table(summary)
    das = das_noise_table(summary.das_noise)
    curves = accuracy_curves(None if not paper_scale else np.union1d(
        np.geomspace(0.02, 10.0, 4 * RHO1_POINTS), [census_level("block").rho]))
    notes = [
        "A unique target: the Bayes rule is the likelihood-ratio test, so the table's Bayes "
        "and worst-case accuracies coincide. The figure's two-level adversary, who must also "
        "infer the block group's other people, falls short of it.",
    ]
    records = summary_records(table, curves) + das_noise_records(das, summary.das_noise)
    return StudyResult(
        name=NAME, title="Decision summary: what an adversary learns at the 2020 allocation",
        records=records, datasets={"table": table, "curves": curves, "das_noise": das},
        figures={"decision_summary_accuracy": _figure(curves)}, notes=notes)
