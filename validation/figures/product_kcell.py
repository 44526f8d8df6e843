r"""Beyond the paper, data and figure: the target's whole record from the K-cell product.

:func:`kcell_data` / :func:`kcell_figure` -- the paper's 1940 histogram (ED 28-21, 864 cells)
as block 0 of a block group with one other block holding the same counts (everyone but the
target; the adversary knows both blocks), every cell measured at the Census block and
block-group :math:`\rho`; P[MAP = the target's cell] for an adversary with the uniform prior
over the 864 cells who sees the whole K-cell product (no invariant) or the noisy cells of
both levels: exact (order statistics over exact per-cell tables,
:func:`dprisk.inference.product.histogram_attribute.p_map_correct_exact`), the value reported,
and Monte Carlo (simulated releases through the top-down K-cell product, paired on the same
draws), its check: the MAP's share (20 % relative error at 2,000 releases: the target wins
about once in 100) and, on the same releases, the conditional estimator (the target cell's
score integrated exactly given the simulated other cells: about 2 %).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from dprisk.inference.product import histogram_attribute as kcell
from dprisk.models.census.allocation import census_level
from dprisk.models.census.histogram_1940 import ed_28_21_known, ed_28_21_target

__all__ = ["KCELL_RELEASES", "kcell_data", "kcell_figure"]

#: The two releases compared, in the dataset's ``release`` coordinate.
KCELL_RELEASES = ("product", "noisy")


def kcell_data(releases: int, random_seed: int) -> xr.Dataset:
    """Exact and Monte Carlo P[MAP = target's cell] on ED 28-21 (module notes).

    Returns
    -------
    xarray.Dataset
        ``exact``, ``monte_carlo``, ``mcse``, ``conditional``, ``conditional_mcse`` (the
        conditional estimator of the same releases, the check of ``exact``) over ``release``
        (product, noisy), and ``accuracy`` (the MAP's accuracy averaged over a uniformly drawn
        target cell); attrs: the paired differences and their MCSE, releases, seed, rho,
        neglected mass, unseen values.
    """
    known, target = ed_28_21_known(), ed_28_21_target()
    others = known[None, :]
    rho1, rho2 = census_level("block").rho, census_level("block-group").rho
    tables = {r: kcell.cell_tables(known, others, rho1, rho2, release=r) for r in KCELL_RELEASES}
    exact = np.array([kcell.p_map_correct_exact(tables[r], target) for r in KCELL_RELEASES])
    accuracy = np.array([kcell.map_accuracy_exact(tables[r]) for r in KCELL_RELEASES])
    mc = kcell.p_map_correct_mc(known, others, target, rho1, rho2, releases=releases,
                                random_seed=random_seed, product_tables=tables["product"],
                                noisy_tables=tables["noisy"])
    coords = {"release": list(KCELL_RELEASES)}
    probability = {"units": "probability"}  # every variable: P[MAP = target], its MCSE
    return xr.Dataset(
        {"exact": ("release", exact, {"long_name": "P[MAP cell = target's cell] (exact)",
                                      **probability}),
         "monte_carlo": ("release", np.array([mc.product, mc.noisy]),
                         {"long_name": "P[MAP cell = target's cell] (Monte Carlo)",
                          **probability}),
         "mcse": ("release", np.array([mc.product_mcse, mc.noisy_mcse]),
                  {"long_name": "MCSE of monte_carlo", **probability}),
         "conditional": ("release", np.array([mc.product_conditional, mc.noisy_conditional]),
                         {"long_name": "P[MAP cell = target's cell] (conditional estimator)",
                          **probability}),
         "conditional_mcse": ("release", np.array([mc.product_conditional_mcse,
                                                   mc.noisy_conditional_mcse]),
                              {"long_name": "MCSE of conditional", **probability}),
         "accuracy": ("release", accuracy,
                      {"long_name": "MAP accuracy, target cell drawn uniformly (exact)",
                       **probability})},
        coords=coords,
        attrs={"difference": mc.difference, "difference_mcse": mc.difference_mcse,
               "conditional_difference": mc.difference_conditional,
               "conditional_difference_mcse": mc.difference_conditional_mcse,
               "exact_difference": float(exact[0] - exact[1]), "releases": releases,
               "random_seed": random_seed, "rho1": rho1, "rho2": rho2, "n_cells": known.size,
               "target": target, "unseen": mc.unseen,
               "neglected_mass": max(t.neglected_mass for t in tables.values()),
               "tree": "block group over ED 28-21 and one other block with the same counts"},
    )


def kcell_figure(data: xr.Dataset) -> Figure:
    """P[MAP = target's cell]: exact (bars) and Monte Carlo (points, ±2 MCSE), both releases."""
    fig = Figure(figsize=(6.5, 4), layout="constrained")
    ax = fig.subplots()
    x = np.arange(data.release.size)
    ax.bar(x, data.exact, width=0.5, color="0.8", label="exact")
    ax.errorbar(x - 0.08, data.monte_carlo, yerr=2 * data.mcse, fmt="o", color="C0",
                capsize=4, label=f"Monte Carlo ({data.attrs['releases']} releases, ±2 MCSE)")
    ax.errorbar(x + 0.08, data.conditional, yerr=2 * data.conditional_mcse, fmt="s",
                color="C1", capsize=4, label="same releases, target cell integrated exactly "
                "(±2 MCSE)")
    ax.axhline(1 / data.attrs["n_cells"], color="grey", ls=":", label="prior guess 1/864")
    ax.set_xticks(x, ["K-cell product", "noisy cells (block + block group)"])
    ax.set_ylabel("P[MAP cell = target's cell]")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.suptitle(f"ED 28-21 (864 cells), Census rho1 = {data.attrs['rho1']:.4f}, "
                 f"rho2 = {data.attrs['rho2']:.4f}, seed {data.attrs['random_seed']}")
    return fig
