r"""The adversary's decision on a region of releases (paper Figure 4, supplement Figs 10-11).

For every ``(x1*, x2*, y1*)`` of a region, :func:`decision_map` records the 0-1-loss decision
with the hierarchy (the two-level posterior, or the constraint-dropping Gibbs variant of
:func:`dprisk.inference.studies.variant.variant_log_odds`) and without it (``x1*`` alone), the
posterior,
the probability of the release under the truth,

.. math:: P[D \mid x_1, x_2] = \mathrm{DG}(x_1^*; x_1, \rho_1)\,\mathrm{DG}(x_2^*; x_2, \rho_2)\,
          P\Big[\textstyle\sum_{i=1}^d \eta^{(i)} = y_1^* - y_1\Big],

and whether the hierarchy changes the decision to the correct one (``gain``), to the wrong
one (``loss``) or not at all (``none``). The gain and loss *masses* are summed over all
``x1*`` (exact tails, :mod:`dprisk.inference.studies.p_correct`), over the ``(x2*, y1*)`` region
(as the
paper's 2.48 % / 1.83 %) and over every release.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from dprisk.inference.single_level import closed_form as single_level
from dprisk.inference.studies.p_correct import (
    p_correct_two_level,
    p_correct_variant,
    sum_over_grid,
)
from dprisk.inference.studies.setup import TIES, validated_study_params
from dprisk.inference.studies.thresholds import decision_offsets
from dprisk.inference.studies.variant import variant_log_odds
from dprisk.inference.two_level.exact import posterior_x1
from dprisk.models.checks import check_count
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.mechanism.dg_sums import sum_pmf
from dprisk.models.numerics import expit

__all__ = [
    "FIGURE4_REGION",
    "MODELS",
    "decision_map",
    "plot_decision_map",
]

#: The paper's Figure 4 region: x1* panels, -3 <= x2* <= 5, -30 <= y1* <= 30.
FIGURE4_REGION = {"x1_star": np.arange(-1, 3), "x2_star": np.arange(-3, 6),
                  "y1_star": np.arange(-30, 31)}
#: Posterior models a map can use.
MODELS = ("exact", "variant")
_CHANGE = np.array(["none", "gain", "loss"])
_COLOURS = ("#e4e4e4", "#4a7ab5", "#2ca02c", "#d62728")


def _axis(values, name):
    arr = check_count(values, name)
    if arr.ndim != 1 or arr.size == 0 or np.any(np.diff(arr) <= 0):
        raise ValueError(f"{name} must be a non-empty increasing 1-d sequence of integers")
    return arr


def decision_map(*, rho1, rho2, d, x2=1, x1=None, p=0.5, known=0, prior="improper",
                 x1_star=FIGURE4_REGION["x1_star"], x2_star=FIGURE4_REGION["x2_star"],
                 y1_star=FIGURE4_REGION["y1_star"], model="exact", ties="m") -> xr.Dataset:
    """Decisions with and without the hierarchy on a region of releases (labelled xarray).

    Parameters
    ----------
    rho1, rho2, d, x2, x1, p, known, prior
        As in :func:`dprisk.inference.studies.p_correct.p_correct_two_level` (truth ``x1``,
        ``x2``).
    x1_star, x2_star, y1_star : sequences of int (increasing)
        The region; the paper's Figure 4 uses x1* panels -1..2, x2* in [-3, 5], y1* in
        [-30, 30] (:data:`FIGURE4_REGION`).
    model : {"exact", "variant"}
        The model's exact posterior or the constraint-dropping Gibbs variant.
    ties : {"m", "m+1"}
        Decision when the posterior is exactly 1/2.

    Returns
    -------
    xarray.Dataset
        Dims ``(x1_star, x2_star, y1_star)``; variables ``decision``,
        ``decision_no_hierarchy`` (m or m+1), ``posterior`` (P[X1 = m+1 | D] under
        ``model``), ``tie`` (posterior exactly 1/2), ``release_probability``, ``change``
        ("gain", "loss", "none"); scalars ``gain_region``, ``loss_region``, ``region_mass``
        (summed over all x1*), ``gain_total``, ``loss_total``, ``p_correct``,
        ``p_correct_no_hierarchy`` (all releases); parameters in ``attrs``.
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if ties not in ("m", "m+1"):
        raise ValueError(f"ties must be 'm' or 'm+1' for a decision map, got {ties!r}")
    params, x1, x2, y1 = validated_study_params(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p,
                                                known=known, prior=prior)
    xs1, xs2, ys1 = (_axis(v, n) for v, n in ((x1_star, "x1_star"), (x2_star, "x2_star"),
                                               (y1_star, "y1_star")))
    m = params.known
    grid2, grid_y = np.meshgrid(xs2, ys1, indexing="ij")
    offset, tie_cell = decision_offsets(grid2, grid_y, params, model)
    threshold = m + offset
    decide_up = (xs1[:, None, None] >= threshold[None]) | (
        (ties == "m+1") & tie_cell[None] & (xs1[:, None, None] == threshold[None] - 1))
    tie = tie_cell[None] & (xs1[:, None, None] == threshold[None] - 1)
    t0 = int(single_level.decision_threshold(params.rho1, params.p, m))
    single_up = np.broadcast_to((xs1 >= t0)[:, None, None], decide_up.shape)

    full = np.meshgrid(xs1, xs2, ys1, indexing="ij")
    if model == "exact":
        posterior = posterior_x1(*full, rho1=params.rho1, rho2=params.rho2, d=params.d,
                                 p=params.p, known=m, prior=params.prior)
    else:
        log_odds = variant_log_odds(*full, rho1=params.rho1, rho2=params.rho2, d=params.d,
                                    p=params.p, known=m, prior=params.prior)
        posterior = expit(log_odds)

    noise_sum = sum_pmf(params.d, params.rho1, tail_mass=1e-15)
    p_x1 = dg.pmf(xs1, x1, params.rho1)
    p_x2 = dg.pmf(xs2, x2, params.rho2)
    p_y1 = noise_sum.at(ys1 - y1)
    release = p_x1[:, None, None] * p_x2[None, :, None] * p_y1[None, None, :]
    correct_h = decide_up if x1 == m + 1 else ~decide_up
    correct_0 = single_up if x1 == m + 1 else ~single_up
    change = _CHANGE[np.where(correct_h & ~correct_0, 1, np.where(~correct_h & correct_0, 2, 0))]

    # Masses over all x1* for the (x2*, y1*) region, and over every release.
    region_weights = p_x2[:, None] * p_y1[None, :]
    _, _, gain_region, loss_region, _ = sum_over_grid(
        threshold, tie_cell, region_weights, x1=x1, m=m, rho1=params.rho1, t0=t0,
        tie_weight=TIES[ties])
    total = (p_correct_two_level if model == "exact" else p_correct_variant)(
        x2=x2, rho1=params.rho1, rho2=params.rho2, d=params.d, x1=x1, p=params.p, known=m,
        prior=params.prior, ties=ties)

    level = {"long_name": "adversary's decision about X1", "units": "persons"}
    dims = ("x1_star", "x2_star", "y1_star")
    ds = xr.Dataset(
        {
            "decision": (dims, np.where(decide_up, m + 1, m), level),
            "decision_no_hierarchy": (dims, np.where(single_up, m + 1, m),
                                      {**level, "long_name": "decision from x1* alone"}),
            "posterior": (dims, posterior, {"long_name": f"P[X1 = {m + 1} | D] ({model})"}),
            "tie": (dims, tie, {"long_name": "posterior exactly 1/2"}),
            "release_probability": (dims, release,
                                    {"long_name": "P[D | truth] under the true mechanism"}),
            "change": (dims, change.astype(str),
                       {"long_name": "effect of the hierarchy on the decision",
                        "values": "gain (now correct), loss (now wrong), none"}),
            "gain_region": ((), gain_region, {"long_name": "P[gain], (x2*, y1*) in region"}),
            "loss_region": ((), loss_region, {"long_name": "P[loss], (x2*, y1*) in region"}),
            "region_mass": ((), float(region_weights.sum()),
                            {"long_name": "P[(x2*, y1*) in region]"}),
            "gain_total": ((), total.gain, {"long_name": "P[gain], all releases"}),
            "loss_total": ((), total.loss, {"long_name": "P[loss], all releases"}),
            "p_correct": ((), total.p_correct, {"long_name": "P[correct], all releases"}),
            "p_correct_no_hierarchy": ((), total.p_correct_no_hierarchy,
                                       {"long_name": "P[correct] from x1* alone"}),
        },
        coords={
            "x1_star": ("x1_star", xs1, {"long_name": "released block count x1*",
                                         "units": "persons"}),
            "x2_star": ("x2_star", xs2, {"long_name": "released block-group count x2*",
                                         "units": "persons"}),
            "y1_star": ("y1_star", ys1, {"long_name": "released count of the other d blocks "
                                         "y1*", "units": "persons"}),
        },
        attrs={"rho1": params.rho1, "rho2": params.rho2, "d": params.d, "p": params.p,
               "known": m, "prior": params.prior.spec, "x1": x1, "x2": x2, "model": model,
               "ties": ties},
    )
    for name in ("posterior", "release_probability", "gain_region", "loss_region",
                 "region_mass", "gain_total", "loss_total", "p_correct",
                 "p_correct_no_hierarchy"):
        ds[name].attrs["units"] = "probability"
    return ds


def plot_decision_map(ds: xr.Dataset, *, title: str | None = None, fig=None) -> Figure:
    """One panel per ``x1*``: tiles over (y1*, x2*) coloured by the decision and its change.

    Colours: grey = decide m, blue = decide m+1 (both unchanged by the hierarchy); green =
    the hierarchy makes the decision correct (gain), red = it makes it wrong (loss); black
    crosses mark posteriors of exactly 1/2 (decided by the map's ``ties`` rule), with a legend
    entry when the map has any.

    Parameters
    ----------
    ds : xarray.Dataset
        Output of :func:`decision_map`.
    title : str, optional
    fig : matplotlib Figure or SubFigure, optional
        Draw into it (e.g. one of ``Figure.subfigures``); default a new Figure.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn into (the parent Figure for a SubFigure).
    """
    m = int(ds.attrs["known"])
    n = ds.sizes["x1_star"]
    cols = min(n, 2)
    rows = int(np.ceil(n / cols))
    if fig is None:
        fig = Figure(figsize=(6.5 * cols, 2.6 * rows + 0.9), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False))
    ys, xs = ds["y1_star"].values, ds["x2_star"].values
    for i, ax in enumerate(axes.ravel()):
        if i >= n:
            ax.set_visible(False)
            continue
        panel = ds.isel(x1_star=i)
        code = np.where(panel["decision"].values == m + 1, 1, 0)
        code = np.where(panel["change"].values == "gain", 2, code)
        code = np.where(panel["change"].values == "loss", 3, code)
        cmap = ListedColormap(_COLOURS)
        ax.pcolormesh(np.append(ys - 0.5, ys[-1] + 0.5), np.append(xs - 0.5, xs[-1] + 0.5),
                      code, cmap=cmap, norm=BoundaryNorm(np.arange(-0.5, 4.5), cmap.N),
                      edgecolors="white", linewidth=0.2)
        ties = panel["tie"].values
        if ties.any():
            yy, xx = np.meshgrid(ys, xs)
            ax.plot(yy[ties], xx[ties], "kx", markersize=4)
        ax.set_title(f"x1* = {int(panel['x1_star'])}", fontsize=10)
        ax.set_xlabel("y1* (released count of the other d blocks, persons)")
        ax.set_ylabel("x2* (block group, persons)")
        ax.label_outer()
    handles = [Patch(color=_COLOURS[0], label=f"decide X1 = {m}"),
               Patch(color=_COLOURS[1], label=f"decide X1 = {m + 1}"),
               Patch(color=_COLOURS[2], label="hierarchy changes decision: now correct (gain)"),
               Patch(color=_COLOURS[3], label="hierarchy changes decision: now wrong (loss)")]
    if ds["tie"].values.any():
        tie_decision = m + 1 if ds.attrs["ties"] == "m+1" else m
        handles.append(Line2D([], [], color="k", marker="x", markersize=4, linestyle="none",
                              label=f"posterior exactly 1/2 (tie, decided X1 = {tie_decision})"))
    fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=8)
    a = ds.attrs
    fig.suptitle(title or (
        f"Decision under 0-1 loss ({a['model']} posterior, prior {a['prior']}); truth x1 = "
        f"{a['x1']}, x2 = {a['x2']}; ρ1 = {a['rho1']:.4f}, ρ2 = {a['rho2']:.4f}, "
        f"d = {a['d']}, p = {a['p']:g}\ngain {100 * float(ds['gain_region']):.2f}%, "
        f"loss {100 * float(ds['loss_region']):.2f}% of the probability in the region "
        f"(region mass {100 * float(ds['region_mass']):.2f}%)"), fontsize=9)
    return fig.figure  # the root Figure (itself for a Figure)
