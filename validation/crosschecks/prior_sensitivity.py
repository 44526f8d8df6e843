r"""Sensitivity of the Figure 4 analysis to the prior of X2 given X1 (supplement S4, Figs 10-11).

Scenarios (Census rho, ``d = 27``, ``p = 1/2``, known ``m = 0``):

==============================  ============  =================
prior of X2 | X1                truth x1, x2  paper (S4 text)
==============================  ============  =================
improper uniform on {k1, ...}   1, 1          59 %
uniform on {k1, ..., 10}        1, 1          59 %
point mass at 1                 1, 1          59 %
point mass at 25                1, 1          74 %
point mass at 25                0, 0          42 % (counterfactual)
==============================  ============  =================

For each, :func:`prior_sensitivity_table` gives the exact P[correct] (ties to ``m``, and to
``m + 1``, with the probability of a posterior of exactly 1/2, which point-mass priors with
odd ``d`` produce), the constraint-dropping Gibbs variant's value, the single-level value and
the gain/loss split, as one xarray table; :func:`prior_sensitivity_maps` the decision maps.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from dprisk.inference.studies.finite_draws import finite_draws_p_correct
from dprisk.inference.studies.p_correct import p_correct_two_level, p_correct_variant
from dprisk.validation.figures.decision_maps import decision_map, plot_decision_map
from dprisk.validation.figures.two_level import census_rhos

__all__ = [
    "SCENARIOS",
    "figure9a",
    "figure9b",
    "prior_sensitivity_figure",
    "prior_sensitivity_maps",
    "prior_sensitivity_table",
]

#: (label, prior spec, truth x1, truth x2) of supplement S4.
SCENARIOS: tuple[tuple[str, str, int, int], ...] = (
    ("improper", "improper", 1, 1),
    ("truncated:10", "truncated:10", 1, 1),
    ("point:1", "point:1", 1, 1),
    ("point:25", "point:25", 1, 1),
    ("point:25, truth 0", "point:25", 0, 0),
)


def _params(rho1, rho2):
    c1, c2 = census_rhos()
    return (c1 if rho1 is None else float(rho1)), (c2 if rho2 is None else float(rho2))


def prior_sensitivity_table(*, rho1=None, rho2=None, d=27, p=0.5, scenarios=SCENARIOS,
                            draws=None, ties_draws="m+1") -> xr.Dataset:
    """Exact P[correct] per S4 scenario, side by side (dimension ``scenario``).

    Parameters
    ----------
    rho1, rho2 : float, optional
        Default: Census block and block-group rho.
    d, p
        As in :func:`dprisk.inference.studies.p_correct.p_correct_two_level`.
    scenarios : sequence of (label, prior, x1, x2)
    draws : int, optional
        Also give the expected P[correct] of the variant decided from ``draws`` Gibbs draws
        (:func:`dprisk.inference.studies.finite_draws.finite_draws_p_correct`, ties rule
        ``ties_draws``).

    Returns
    -------
    xarray.Dataset
        Variables ``p_correct`` (exact, ties to m), ``p_correct_ties_up`` (ties to m + 1),
        ``tie_mass``, ``p_correct_variant``, ``p_correct_no_hierarchy``, ``gain``, ``loss``
        (and ``p_correct_variant_draws``); coordinates ``prior``, ``x1``, ``x2``.
    """
    rho1, rho2 = _params(rho1, rho2)
    rows = []
    for _, prior, x1, x2 in scenarios:
        common = {"x2": x2, "x1": x1, "rho1": rho1, "rho2": rho2, "d": d, "p": p,
                  "known": 0, "prior": prior}
        exact = p_correct_two_level(**common)
        row = {
            "p_correct": exact.p_correct,
            "p_correct_ties_up": p_correct_two_level(**common, ties="m+1").p_correct,
            "tie_mass": exact.tie_mass,
            "p_correct_variant": p_correct_variant(**common).p_correct,
            "p_correct_no_hierarchy": exact.p_correct_no_hierarchy,
            "gain": exact.gain,
            "loss": exact.loss,
        }
        if draws is not None:
            row["p_correct_variant_draws"] = finite_draws_p_correct(
                **common, draws=draws, variant=True, ties=ties_draws)["p_correct"]
        rows.append(row)
    labels = [s[0] for s in scenarios]
    data = {key: ("scenario", [r[key] for r in rows]) for key in rows[0]}
    ds = xr.Dataset(
        data,
        coords={"scenario": labels,
                "prior": ("scenario", [s[1] for s in scenarios]),
                "x1": ("scenario", [s[2] for s in scenarios],
                       {"long_name": "true block count x1", "units": "persons"}),
                "x2": ("scenario", [s[3] for s in scenarios],
                       {"long_name": "true block-group count x2", "units": "persons"})},
        attrs={"rho1": rho1, "rho2": rho2, "d": d, "p": p, "known": 0},
    )
    ds["p_correct"].attrs["long_name"] = "P[correct], exact posterior, ties to m"
    ds["p_correct_ties_up"].attrs["long_name"] = "P[correct], exact posterior, ties to m+1"
    ds["p_correct_variant"].attrs["long_name"] = "P[correct], constraint-dropping Gibbs"
    ds["tie_mass"].attrs["long_name"] = "P[posterior exactly 1/2]"
    ds["p_correct_no_hierarchy"].attrs["long_name"] = "P[correct] from x1* alone"
    ds["gain"].attrs["long_name"] = "P[gain]: the hierarchy turns a wrong decision correct"
    ds["loss"].attrs["long_name"] = "P[loss]: the hierarchy turns a correct decision wrong"
    if draws is not None:
        ds["p_correct_variant_draws"].attrs["long_name"] = (
            f"expected P[correct], variant, {draws} Gibbs draws per release, "
            f"ties -> {ties_draws}")
        ds.attrs.update(draws=int(draws), ties_draws=ties_draws)
    for variable in ds.data_vars.values():  # P[correct], tie mass, gain, loss
        variable.attrs["units"] = "probability"
    return ds


def prior_sensitivity_maps(*, rho1=None, rho2=None, d=27, p=0.5, scenarios=SCENARIOS,
                           model="exact") -> dict[str, xr.Dataset]:
    """Decision maps (Figure 4 region) per scenario, keyed by scenario label."""
    rho1, rho2 = _params(rho1, rho2)
    return {label: decision_map(rho1=rho1, rho2=rho2, d=d, x2=x2, x1=x1, p=p, known=0,
                                prior=prior, model=model)
            for label, prior, x1, x2 in scenarios}


def _stacked(maps: dict, labels) -> Figure:
    fig = Figure(figsize=(13, 13), layout="constrained")
    for sub, label in zip(fig.subfigures(len(labels), 1), labels, strict=True):
        plot_decision_map(maps[label], fig=sub)
    return fig


def figure9a(maps: dict[str, xr.Dataset]) -> Figure:
    """Figure 10 (S4): improper (top, = Figure 4) and truncated:10 (bottom) maps."""
    return _stacked(maps, ["improper", "truncated:10"])


def figure9b(maps: dict[str, xr.Dataset]) -> Figure:
    """Figure 11 (S4): point mass at X2 = 1 (top) and at X2 = 25 (bottom) maps."""
    return _stacked(maps, ["point:1", "point:25"])


def prior_sensitivity_figure(table: xr.Dataset, published: dict | None = None) -> Figure:
    """Bars of P[correct] per scenario: exact, variant, single level, published values."""
    fig = Figure(figsize=(8.5, 4.2), layout="constrained")
    ax = fig.subplots()
    labels = [str(s) for s in table["scenario"].values]
    x = np.arange(len(labels))
    width = 0.27
    ax.bar(x - width, table["p_correct"], width, label="exact posterior (ties to m)")
    base, other = table["p_correct"].values, table["p_correct_ties_up"].values
    ax.errorbar(x - width, base, yerr=[base - np.minimum(base, other),
                                       np.maximum(base, other) - base],
                fmt="none", ecolor="black", capsize=3, label="range over the tie rule")
    ax.bar(x, table["p_correct_variant"], width, label="constraint-dropping Gibbs variant")
    ax.bar(x + width, table["p_correct_no_hierarchy"], width, color="0.7",
           label="without hierarchy")
    if published:
        ax.plot(x, [published.get(lab, np.nan) for lab in labels], "k*", ms=10,
                label="paper (S4 text)")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("P[correct decision about X1] (probability)")
    ax.set_xlabel("prior of X2 | X1 (and truth)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title(f"Supplement S4: prior sensitivity (rho1 = {table.attrs['rho1']:.4f}, "
                 f"rho2 = {table.attrs['rho2']:.4f}, d = {table.attrs['d']}, "
                 f"p = {table.attrs['p']:g})", fontsize=9)
    return fig
