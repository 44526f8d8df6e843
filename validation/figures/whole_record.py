r"""Beyond the paper, data and figures: the adversary who reads the target's whole record.

* :func:`k_cells_data` / :func:`k_cells_figure` -- exact :math:`P[\mathrm{MAP} = t]` and the
  expected posterior of the true cell against :math:`\rho_1` for ``K`` cells, with a uniform
  prior and a concentrated one (the target's cell ten times as likely as each other cell).
* :func:`ed_28_21_data` / :func:`ed_28_21_figure` -- the paper's own 1940 histogram (ED 28-21,
  864 cells): the posterior of every cell for one seeded release, and the one-cell adversary
  of the paper against the adversary reading all 864 cells.
* :func:`strategy_data` / :func:`strategy_figure` -- at the Census block allocation: the
  detailed query alone (exact), the eleven block queries (conditional Monte Carlo), the
  detailed query with the block group (exact P[MAP]), and the eleven queries with the block
  group (Monte Carlo, exact two-level Bayes factors).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from dprisk.inference.attribute.design import expected_true_posterior, p_map_correct
from dprisk.inference.attribute.posterior import cell_posterior, sample_releases
from dprisk.inference.attribute.strategy import (
    BlockGroup,
    census_block_design,
    strategy_measures,
)
from dprisk.inference.attribute.two_level import p_map_correct_two_level
from dprisk.inference.single_level import closed_form as single_level
from dprisk.models.census.allocation import census_level
from dprisk.models.census.histogram_1940 import ed_28_21, ed_28_21_known, ed_28_21_target

__all__ = [
    "CELL_COUNTS",
    "concentrated_prior",
    "ed_28_21_data",
    "ed_28_21_figure",
    "k_cells_data",
    "k_cells_figure",
    "strategy_data",
    "strategy_figure",
]

#: Numbers of cells of the K-cell curves (2,016 = the 2020 GVHR query, 864 = 1940).
CELL_COUNTS = (2, 8, 126, 864, 2016)
#: Prior weight of the target's cell relative to each other cell in the concentrated prior.
CONCENTRATION = 10.0
_RHO_LABEL = r"$\rho_1$ (zCDP parameter of each cell's noise)"
#: The rho1 coordinate of the datasets: dimensionless, as every rho.
_RHO_ATTRS = {"long_name": "zCDP rho of each cell's noise", "units": "1"}
_PROBABILITY = {"units": "probability"}


def concentrated_prior(n_cells: int, true_cell: int = 0) -> np.ndarray:
    """The target's cell ``CONCENTRATION`` times as likely as each other cell."""
    prior = np.ones(n_cells)
    prior[true_cell] = CONCENTRATION
    return prior / prior.sum()


def k_cells_data(rhos, cells=CELL_COUNTS) -> xr.Dataset:
    """Exact P[MAP = t] and E[posterior of t] on a (prior, cells, rho1) grid."""
    rhos = np.asarray(rhos, dtype=float)
    shape = (2, len(cells), rhos.size)
    p_map, mean_post, prior_true = np.empty(shape), np.empty(shape), np.empty(shape[:2])
    for i, kind in enumerate(("uniform", "concentrated")):
        for j, k in enumerate(cells):
            prior = np.full(k, 1.0 / k) if kind == "uniform" else concentrated_prior(k)
            prior_true[i, j] = prior[0]
            for r, rho in enumerate(rhos):
                p_map[i, j, r] = p_map_correct(rho, prior=prior)
                mean_post[i, j, r] = expected_true_posterior(rho, prior=prior)
    coords = {"prior": ["uniform", "concentrated"],
              "cells": ("cells", list(cells), {"long_name": "cells K", "units": "cells"}),
              "rho1": ("rho1", rhos, _RHO_ATTRS)}
    return xr.Dataset({
        "p_map_correct": (("prior", "cells", "rho1"), p_map,
                          {"long_name": "P[MAP cell = true cell] (exact)", **_PROBABILITY}),
        "expected_true_posterior": (("prior", "cells", "rho1"), mean_post,
                                    {"long_name": "E[posterior of the true cell] (exact)",
                                     **_PROBABILITY}),
        "prior_true": (("prior", "cells"), prior_true,
                       {"long_name": "prior of the true cell", **_PROBABILITY}),
    }, coords=coords, attrs={"concentration": CONCENTRATION})


def k_cells_figure(ds: xr.Dataset) -> Figure:
    """Two panels against rho1 (log-log): P[MAP = t] and E[posterior of t] / prior."""
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    axes = fig.subplots(1, 2)
    colors = dict(zip(ds["cells"].values.tolist(), ["C0", "C1", "C2", "C3", "C4"],
                      strict=False))
    for kind, style in (("uniform", "-"), ("concentrated", "--")):
        for k in ds["cells"].values:
            sel = ds.sel(prior=kind, cells=k)
            label = f"K = {k}, {kind}"
            axes[0].plot(ds["rho1"], sel["p_map_correct"], style, color=colors[int(k)],
                         label=label)
            axes[1].plot(ds["rho1"], sel["expected_true_posterior"] / sel["prior_true"], style,
                         color=colors[int(k)], label=label)
    rho_block = census_level("block").rho
    for ax, ylabel in zip(axes, ("P[MAP cell = true cell]",
                                 "E[posterior of true cell] / prior (expected R)"), strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axvline(rho_block, color="grey", ls=":", lw=1)
        ax.set_xlabel(_RHO_LABEL)
        ax.set_ylabel(ylabel)
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle("The whole record: an adversary reading all K noisy cells (exact; solid "
                 "uniform prior, dashed the true cell 10x as likely; dotted: Census block "
                 "rho1)", fontsize=10)
    return fig


def ed_28_21_data(rhos, *, random_seed: int) -> xr.Dataset:
    """The 1940 ED 28-21 adversaries against rho1, and one seeded release's posterior."""
    hist, known, target = ed_28_21(), ed_28_21_known(), ed_28_21_target()
    k = hist.n_cells
    rhos = np.asarray(rhos, dtype=float)
    whole_map = np.array([p_map_correct(r, k, true_cell=target) for r in rhos])
    whole_mean = np.array([expected_true_posterior(r, k, true_cell=target) for r in rhos])
    one_cell = np.array([single_level.marginal_posterior(r, 1.0 / k, 0) for r in rhos])
    rho = census_level("block").rho
    release = sample_releases(known, rho, target, 1, random_seed=random_seed)[0]
    post = cell_posterior(release, known, rho)
    persons = {"units": "persons"}
    return xr.Dataset({
        "whole_p_map_correct": ("rho1", whole_map, {
            "long_name": "all cells: P[MAP cell = true cell] (exact)", **_PROBABILITY}),
        "whole_expected_true_posterior": ("rho1", whole_mean, {
            "long_name": "all cells: E[posterior of the true cell] (exact)", **_PROBABILITY}),
        "one_cell_expected_true_posterior": ("rho1", one_cell, {
            "long_name": "the true cell's count alone, prior 1/cells: marginal posterior",
            **_PROBABILITY}),
        "release": ("cell", release, {"long_name": "noisy count of the seeded release",
                                      **persons}),
        "known": ("cell", known, {"long_name": "count of everyone but the target", **persons}),
        "posterior": ("cell", post.posterior, {"long_name": "posterior of the cell",
                                               **_PROBABILITY}),
    }, coords={"rho1": ("rho1", rhos, _RHO_ATTRS),
               "cell": ("cell", np.arange(k), {"long_name": "cell index of the histogram",
                                               "units": "1"})},
        attrs={"target": target, "map_cell": int(post.map_cell), "rho_release": rho,
               "random_seed": random_seed})


def ed_28_21_figure(ds: xr.Dataset) -> Figure:
    """Left: one release's posterior over the 864 cells; right: the adversaries vs rho1."""
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    target, k = int(ds.attrs["target"]), ds.sizes["cell"]
    left.plot(ds["cell"], ds["posterior"], ".", ms=2, color="C0", label="cells")
    left.plot([target], [float(ds["posterior"][target])], "o", color="C3",
              label="target's cell (voting-age Black householder)")
    left.axhline(1.0 / k, color="grey", ls=":", lw=1, label="prior 1/864")
    left.set_xlabel("cell of the 1940 GVHR histogram (8 x 2 x 6 x 9)")
    left.set_ylabel("posterior of the cell")
    left.set_title(f"one release at rho1 = {ds.attrs['rho_release']:.4f} (seed "
                   f"{ds.attrs['random_seed']})", fontsize=9)
    left.legend(fontsize=7)
    right.plot(ds["rho1"], ds["whole_p_map_correct"], label="all 864 cells: P[MAP = target]")
    right.plot(ds["rho1"], ds["whole_expected_true_posterior"],
               label="all 864 cells: E[posterior of target]")
    right.plot(ds["rho1"], ds["one_cell_expected_true_posterior"], "--",
               label="paper (target's cell only): marginal posterior")
    right.axvline(ds.attrs["rho_release"], color="grey", ls=":", lw=1)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel(_RHO_LABEL)
    right.set_ylabel("probability")
    right.legend(fontsize=7)
    fig.suptitle("The paper's own histogram (1940, ED 28-21, Dare County NC): the adversary "
                 "who reads all 864 noisy cells against the paper's one-cell adversary "
                 "(p = 1/864)", fontsize=10)
    return fig


def strategy_data(*, n_releases: int, n_block_group: int, d: int = 27,
                  x2_priors=("improper", "truncated:10"), random_seed: int) -> xr.Dataset:
    """P[MAP = t] and E[posterior of t] at the Census block allocation, by release design."""
    full = census_block_design()
    detailed = census_block_design(queries=("detailed",))
    rho1 = float(detailed.rhos[0])
    rho2 = census_level("block-group").rho
    target = 0
    rows = [("detailed query alone (exact)", p_map_correct(rho1, 2016, true_cell=target), 0.0,
             expected_true_posterior(rho1, 2016, true_cell=target), 0.0)]
    res = strategy_measures(full, target, n_releases, random_seed=random_seed)
    rows.append(("eleven block queries", res.p_map_correct, res.p_map_correct_mcse,
                 res.expected_true_posterior, res.expected_true_posterior_mcse))
    zeros = np.zeros(2016, dtype=np.int64)
    for prior in x2_priors:
        exact = p_map_correct_two_level(rho1, rho2, d, 2016, x2_prior=prior)
        rows.append((f"detailed + block group, X2 prior {prior} (exact P[MAP])", exact, 0.0,
                     np.nan, np.nan))
    for i, prior in enumerate(x2_priors):
        group = BlockGroup.checked(rho2, d, zeros, prior=prior)
        res = strategy_measures(full, target, n_block_group, block_group=group,
                                random_seed=random_seed + 1 + i)
        rows.append((f"eleven + block group, X2 prior {prior}", res.p_map_correct,
                     res.p_map_correct_mcse, res.expected_true_posterior,
                     res.expected_true_posterior_mcse))
    names = [r[0] for r in rows]
    cols = np.array([r[1:] for r in rows])
    return xr.Dataset({
        "p_map_correct": ("design", cols[:, 0],
                          {"long_name": "P[MAP cell = true cell]", **_PROBABILITY}),
        "p_map_correct_mcse": ("design", cols[:, 1],
                               {"long_name": "MCSE of p_map_correct (0: exact)",
                                **_PROBABILITY}),
        "expected_true_posterior": ("design", cols[:, 2],
                                    {"long_name": "E[posterior of the true cell] (NaN: not "
                                                  "computed)", **_PROBABILITY}),
        "expected_true_posterior_mcse": ("design", cols[:, 3],
                                         {"long_name": "MCSE of expected_true_posterior "
                                                       "(0: exact)", **_PROBABILITY}),
    }, coords={"design": names},
        attrs={"rho1": rho1, "rho2": rho2, "d": d, "cells": 2016, "prior_true": 1 / 2016,
               "n_releases": n_releases, "n_block_group": n_block_group,
               "random_seed": random_seed})


def strategy_figure(ds: xr.Dataset) -> Figure:
    """Bars (with 2 MCSE) of P[MAP = t] and of E[posterior of t] per release design."""
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    axes = fig.subplots(1, 2)
    names = [str(n) for n in ds["design"].values]
    y = np.arange(len(names))
    for ax, var, xlabel in ((axes[0], "p_map_correct", "P[MAP cell = true cell]"),
                            (axes[1], "expected_true_posterior",
                             "E[posterior of the true cell]")):
        ax.barh(y, ds[var], xerr=2 * ds[f"{var}_mcse"], color="C0", capsize=3)
        ax.axvline(ds.attrs["prior_true"], color="grey", ls=":", lw=1, label="prior 1/2016")
        ax.set_yticks(y, names if ax is axes[0] else [""] * len(names), fontsize=8)
        ax.set_xlabel(xlabel)
        ax.legend(fontsize=7)
    fig.suptitle(f"The 2020 strategy at the Census block allocation (2,016 cells, detailed "
                 f"rho1 = {ds.attrs['rho1']:.4f}, block group rho2 = {ds.attrs['rho2']:.4f}, "
                 f"d = {ds.attrs['d']}); bars: 2 MCSE", fontsize=10)
    return fig
