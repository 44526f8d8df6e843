r"""Figures 4-6 of the paper (two levels, §4.3): exact data as xarray, plots as matplotlib.

* Figure 4: the decision map (:mod:`dprisk.validation.figures.decision_maps`) at the Census rho,
truth
  ``x1 = x2 = 1``, ``d = 27``, ``p = 1/2``.
* Figure 5: P[correct decision] against the true block-group count ``x2``, with the
  single-level line and the average over ``x2 >= 4``.
* Figure 6: P[correct decision] against ``rho2`` (log grid) for ``x2 in {1, 10, 100}``, the
  single-level line and the Census ``rho2`` marked.

Every curve is exact (:func:`dprisk.inference.studies.p_correct.p_correct_two_level`); the
constraint-dropping Gibbs variant the paper's figures appear to use
(:func:`dprisk.inference.studies.p_correct.p_correct_variant`) is drawn beside it, and Monte Carlo
points
(e.g. from :func:`dprisk.inference.studies.monte_carlo.simulate_p_correct`) are overlaid when given.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from dprisk.inference.studies.finite_draws import finite_draws_p_correct
from dprisk.inference.studies.p_correct import p_correct_two_level, p_correct_variant
from dprisk.models.census.allocation import census_level
from dprisk.validation.figures.decision_maps import decision_map, plot_decision_map

__all__ = [
    "FIGURE5_X2",
    "FIGURE6_RHO2",
    "FIGURE6_X2",
    "PLATEAU",
    "census_rhos",
    "figure4",
    "figure4_data",
    "figure5",
    "figure5_data",
    "figure6",
    "figure6_data",
    "mc_points",
]

#: x2 values of Figure 5 (the paper shows 1..10; a few larger ones show the plateau).
#: The "x2 > 3" average of the paper is taken over :data:`PLATEAU` = 4..10.
FIGURE5_X2 = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30])
#: rho2 grid of Figure 6 (log-spaced, with the paper's rho2 = 100 end point).
FIGURE6_RHO2 = np.logspace(-2, 2, 17)
#: x2 curves of Figure 6.
FIGURE6_X2 = (1, 10, 100)
#: The x2 values averaged for the paper's "x2 > 3" line (Figure 5 shows x2 = 1..10).
PLATEAU = (4, 10)
_PC_LABEL = "P[correct decision about X1] (probability)"
#: ``long_name`` of the gain, the loss and the single-level P[correct] (Figures 5, 6; S4).
_GAIN = "P[gain]: the hierarchy turns a wrong decision from x1* alone into a correct one"
_LOSS = "P[loss]: the hierarchy turns a correct decision from x1* alone into a wrong one"
_NO_HIERARCHY = "P[correct] from x1* alone"


def census_rhos() -> tuple[float, float]:
    """``(rho1, rho2)`` of the 2020 Census block and block group (exact fractions)."""
    return float(census_level("block").rho), float(census_level("block-group").rho)


def _params(rho1, rho2, d, p):
    c1, c2 = census_rhos()
    return (c1 if rho1 is None else float(rho1), c2 if rho2 is None else float(rho2),
            int(d), float(p))


# --------------------------------------------------------------------------- Figure 4
def figure4_data(*, rho1=None, rho2=None, d=27, p=0.5, prior="improper", model="exact",
                 ties="m") -> xr.Dataset:
    """The Figure 4 decision map (truth x1 = x2 = 1, known m = 0)."""
    rho1, rho2, d, p = _params(rho1, rho2, d, p)
    return decision_map(rho1=rho1, rho2=rho2, d=d, x2=1, x1=1, p=p, known=0, prior=prior,
                        model=model, ties=ties)


def figure4(data: xr.Dataset | None = None, **kwargs) -> Figure:
    """Draw Figure 4 from :func:`figure4_data` (computed with ``kwargs`` if not given)."""
    return plot_decision_map(figure4_data(**kwargs) if data is None else data)


# --------------------------------------------------------------------------- Figure 5
def figure5_data(*, x2_values=FIGURE5_X2, rho1=None, rho2=None, d=27, p=0.5,
                 prior="improper", draws=None, ties_draws="m+1") -> xr.Dataset:
    """Exact P[correct] against ``x2`` (truth x1 = 1, m = 0), exact model and variant.

    Parameters
    ----------
    x2_values : sequence of int (>= 1)
    rho1, rho2 : float, optional
        Default: the Census block and block-group rho.
    d, p, prior
        As in :func:`dprisk.inference.studies.p_correct.p_correct_two_level`.
    draws : int, optional
        Also compute the expected P[correct] of the paper's procedure with this many Gibbs
        draws per release, for the variant, with the rule ``ties_draws`` for an estimate of
        exactly 1/2 (:func:`dprisk.inference.studies.finite_draws.finite_draws_p_correct`).

    Returns
    -------
    xarray.Dataset
        ``p_correct``, ``p_correct_variant`` (and ``p_correct_variant_draws``) over ``x2``;
        scalars ``p_correct_no_hierarchy`` and the averages over ``4 <= x2 <= 10``
        (:data:`PLATEAU`).
    """
    rho1, rho2, d, p = _params(rho1, rho2, d, p)
    x2_values = np.asarray(x2_values, dtype=np.int64)
    common = {"rho1": rho1, "rho2": rho2, "d": d, "p": p, "known": 0, "x1": 1,
              "prior": prior}
    # the variant first: the exact model then reads its log-odds off the posterior tables the
    # variant built for the same releases (dprisk.inference.studies.setup)
    variant = [p_correct_variant(x2=int(x2), **common) for x2 in x2_values]
    exact = [p_correct_two_level(x2=int(x2), **common) for x2 in x2_values]
    plateau = (x2_values >= PLATEAU[0]) & (x2_values <= PLATEAU[1])
    coords = {"x2": ("x2", x2_values, {"long_name": "true block-group count x2",
                                        "units": "persons"})}
    ds = xr.Dataset(
        {
            "p_correct": ("x2", [r.p_correct for r in exact],
                          {"long_name": "P[correct], exact posterior"}),
            "gain": ("x2", [r.gain for r in exact], {"long_name": _GAIN}),
            "loss": ("x2", [r.loss for r in exact], {"long_name": _LOSS}),
            "p_correct_variant": ("x2", [r.p_correct for r in variant],
                                  {"long_name": "P[correct], constraint-dropping Gibbs "
                                                "variant (stationary)"}),
            "p_correct_no_hierarchy": ((), exact[0].p_correct_no_hierarchy,
                                       {"long_name": _NO_HIERARCHY}),
            "p_correct_plateau": ((), float(np.mean([r.p_correct for r, k
                                                     in zip(exact, plateau, strict=True)
                                                     if k])) if plateau.any() else np.nan,
                                  {"long_name": "mean P[correct] over 4 <= x2 <= 10, exact"}),
            "p_correct_variant_plateau": (
                (), float(np.mean([r.p_correct for r, k in zip(variant, plateau, strict=True)
                                   if k])) if plateau.any() else np.nan,
                {"long_name": "mean P[correct] over 4 <= x2 <= 10, Gibbs variant"}),
        },
        coords=coords,
        attrs={"rho1": rho1, "rho2": rho2, "d": d, "p": p, "known": 0, "x1": 1,
               "prior": str(prior), "ties": "m"},
    )
    if draws is not None:
        expected = [finite_draws_p_correct(x2=int(x2), draws=draws, variant=True,
                                           ties=ties_draws, **common)["p_correct"]
                    for x2 in x2_values]
        ds["p_correct_variant_draws"] = ("x2", expected, {
            "long_name": f"expected P[correct], variant, {draws} Gibbs draws per release, "
                         f"ties -> {ties_draws}"})
        ds.attrs.update(draws=int(draws), ties_draws=ties_draws)
    for variable in ds.data_vars.values():  # every one a probability
        variable.attrs["units"] = "probability"
    return ds


def mc_points(results) -> xr.Dataset:
    """Monte Carlo results as a Dataset over ``x2``.

    The results are :class:`dprisk.inference.studies.monte_carlo.MCResult` objects.

    Variables ``p_correct``, ``mcse`` and ``random_seed`` (the seed of each run); attributes
    name the sampler and budget.
    """
    results = list(results)
    return xr.Dataset(
        {"p_correct": ("x2", [r.p_correct for r in results]),
         "mcse": ("x2", [r.mcse for r in results]),
         "random_seed": ("x2", [r.random_seed for r in results])},
        coords={"x2": [r.x2 for r in results]},
        attrs={"sampler": results[0].sampler, "datasets": results[0].datasets,
               "draws": results[0].draws, "ties": results[0].ties},
    )


def _overlay_mc(ax, mc, x_name, label_extra=""):
    if mc is None:
        return
    for item in (mc if isinstance(mc, list | tuple) else [mc]):
        sel = item.dropna("x2", how="all") if x_name == "x2" else item
        label = (f"MC: {item.attrs.get('sampler')} sampler, {item.attrs.get('datasets'):,} "
                 f"releases x {item.attrs.get('draws'):,} draws, ties -> "
                 f"{item.attrs.get('ties')}{label_extra}")
        ax.errorbar(sel[x_name].values, sel["p_correct"].values,
                    yerr=2 * sel["mcse"].values, fmt="o", ms=4, capsize=2, label=label)


def _legend_below(fig: Figure, ax) -> None:
    """One legend for both panels, below them (off the data); needs a constrained layout."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=8)


def figure5(data: xr.Dataset | None = None, *, mc=None) -> Figure:
    """Draw Figure 5: P[correct] vs x2, single-level (dashed black), x2 in 4..10 mean (red).

    Parameters
    ----------
    data : xarray.Dataset, optional
        :func:`figure5_data` (computed with the defaults if not given).
    mc : xarray.Dataset or list of them, optional
        Monte Carlo points (:func:`mc_points`), drawn with 2-MCSE error bars.
    """
    ds = figure5_data() if data is None else data
    x2 = ds["x2"].values

    def draw(ax) -> None:
        ax.plot(x2, ds["p_correct"], "-", color="C0", marker=".",
                label="exact posterior (model)")
        ax.plot(x2, ds["p_correct_variant"], "-", color="C1", marker=".",
                label="constraint-dropping Gibbs variant (stationary)")
        if "p_correct_variant_draws" in ds:
            ax.plot(x2, ds["p_correct_variant_draws"], ":", color="C1", marker="x",
                    label=f"variant, {ds.attrs['draws']} draws, estimate ≥ 1/2 (expected)")
        ax.axhline(float(ds["p_correct_no_hierarchy"]), color="black", ls="--",
                   label="without the block group")
        ax.axhline(float(ds["p_correct_plateau"]), color="red", ls="--",
                   label="exact, mean over 4 ≤ x2 ≤ 10")
        _overlay_mc(ax, mc, "x2")

    return _zoom_figure(ds, draw, "Figure 5: P[correct] vs x2", above=0.010,
                        xlabel="x2 (true block-group count with characteristics c, persons)")


def _zoom_figure(ds, draw, title: str, *, above: float, xlabel: str) -> Figure:
    """Figures 5 and 6: the curves ``draw(ax)`` in two panels, all of them and a zoom.

    The zoom panel's range is from 0.008 below the no-hierarchy level to ``above`` above
    it; one legend for both panels, below them; the figure's ``title`` followed by the fixed
    parameters of ``ds.attrs`` (``ρ2`` unless it is swept).
    """
    fig = Figure(figsize=(12, 4.8), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax in axes:
        draw(ax)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(_PC_LABEL)
    centre = float(ds["p_correct_no_hierarchy"])
    axes[1].set_ylim(centre - 0.008, centre + above)
    axes[0].set_title("all curves", fontsize=9)
    axes[1].set_title("zoom on the paper's range", fontsize=9)
    _legend_below(fig, axes[0])
    a = ds.attrs
    rho2 = f"ρ2 = {a['rho2']:.4f}, " if "rho2" in a else ""
    fig.suptitle(f"{title}; ρ1 = {a['rho1']:.4f}, {rho2}d = {a['d']}, p = {a['p']:g}, "
                 f"truth x1 = 1, prior {a['prior']}", fontsize=10)
    return fig


# --------------------------------------------------------------------------- Figure 6
def figure6_data(*, rho2_values=FIGURE6_RHO2, x2_values=FIGURE6_X2, rho1=None, d=27, p=0.5,
                 prior="improper") -> xr.Dataset:
    """Exact P[correct] over a ``rho2`` grid for several ``x2`` (truth x1 = 1, m = 0).

    Returns
    -------
    xarray.Dataset
        ``p_correct`` and ``p_correct_variant`` over ``(x2, rho2)``, with ``tie_mass``;
        scalar ``p_correct_no_hierarchy``; ``attrs['rho2_census']``.
    """
    rho1, rho2_census, d, p = _params(rho1, None, d, p)
    rho2_values = np.asarray(rho2_values, dtype=float)
    x2_values = np.asarray(x2_values, dtype=np.int64)
    shape = (x2_values.size, rho2_values.size)
    exact, variant, ties = np.empty(shape), np.empty(shape), np.empty(shape)
    no_hierarchy = np.nan
    for i, x2 in enumerate(x2_values):
        for j, rho2 in enumerate(rho2_values):
            common = {"x2": int(x2), "rho1": rho1, "rho2": float(rho2), "d": d, "p": p,
                      "known": 0, "x1": 1, "prior": prior}
            variant[i, j] = p_correct_variant(**common).p_correct  # first: as in Figure 5
            result = p_correct_two_level(**common)
            exact[i, j], ties[i, j] = result.p_correct, result.tie_mass
            no_hierarchy = result.p_correct_no_hierarchy
    dims = ("x2", "rho2")
    probability = {"units": "probability"}
    return xr.Dataset(
        {"p_correct": (dims, exact, {"long_name": "P[correct], exact posterior",
                                     **probability}),
         "p_correct_variant": (dims, variant, {"long_name": "P[correct], Gibbs variant",
                                               **probability}),
         "tie_mass": (dims, ties, {"long_name": "P[posterior exactly 1/2]", **probability}),
         "p_correct_no_hierarchy": ((), no_hierarchy, {"long_name": _NO_HIERARCHY,
                                                       **probability})},
        coords={"x2": ("x2", x2_values, {"long_name": "true block-group count x2",
                                         "units": "persons"}),
                "rho2": ("rho2", rho2_values, {"long_name": "zCDP parameter of the block "
                                                            "group", "units": "1"})},
        attrs={"rho1": rho1, "rho2_census": rho2_census, "d": d, "p": p, "known": 0,
               "x1": 1, "prior": str(prior), "ties": "m"},
    )


def figure6(data: xr.Dataset | None = None, *, mc=None) -> Figure:
    """Draw Figure 6: P[correct] vs rho2 (log x) per x2, single-level line, Census rho2.

    ``mc``: Monte Carlo points over ``rho2`` (Datasets with ``rho2``, ``p_correct``,
    ``mcse`` and an ``x2`` attribute), drawn with 2-MCSE error bars.
    """
    ds = figure6_data() if data is None else data

    def draw(ax) -> None:
        for i, x2 in enumerate(ds["x2"].values):
            ax.plot(ds["rho2"], ds["p_correct"].sel(x2=x2), "-", color=f"C{i}",
                    label=f"x2 = {x2}, exact posterior")
            ax.plot(ds["rho2"], ds["p_correct_variant"].sel(x2=x2), ":", color=f"C{i}",
                    label=f"x2 = {x2}, Gibbs variant")
        ax.axhline(float(ds["p_correct_no_hierarchy"]), color="black", ls="--",
                   label="without the block group")
        ax.axvline(ds.attrs["rho2_census"], color="purple", ls="--",
                   label=f"Census ρ2 = {ds.attrs['rho2_census']:.4f}")
        for item in ([] if mc is None else (mc if isinstance(mc, list | tuple) else [mc])):
            ax.errorbar(item["rho2"].values, item["p_correct"].values,
                        yerr=2 * item["mcse"].values, fmt="o", ms=4, capsize=2,
                        label=f"MC, x2 = {item.attrs.get('x2')}")
        ax.set_xscale("log")

    return _zoom_figure(
        ds, draw, "Figure 6: P[correct] vs ρ2", above=0.012,
        xlabel="ρ2 (zCDP privacy-loss parameter of the block-group count, log scale)")
