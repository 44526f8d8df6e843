r"""Rank histograms of simulation-based calibration runs (:mod:`dprisk.validation.sbc.calibration`).

One row per run, one column per variable (X1, X2): the counts of the ranks in ``B`` equal
groups, the expected count ``N / B`` and the 99% pointwise band of a uniform histogram,
:math:`\mathrm{Binomial}(N, 1/B)` quantiles 0.005 and 0.995 (Talts et al. 2018, Fig. 1).
Bars are red when the run's uniformity p-value (chi-square or KS) is below
:data:`dprisk.validation.sbc.ranks.P_VALUE_MIN`. Where a run carries a non-uniform expected X1
rank pmf (the broken sampler's, from its exact stationary law), it is drawn as black ticks.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import PathPatch
from matplotlib.path import Path
from scipy import stats

from dprisk.validation.figures.draw_once import texts_laid_out_once, ticks_placed_once
from dprisk.validation.sbc.ranks import P_VALUE_MIN, VARIABLES

__all__ = ["BAND_LEVEL", "BAR_WIDTH", "bars_patch", "rank_histograms"]

#: Coverage of the pointwise band drawn around the expected count.
BAND_LEVEL = 0.99
#: Width of a bar, in groups (the bars of groups ``g`` span ``g -+ BAR_WIDTH / 2``).
BAR_WIDTH = 0.85


def bars_patch(groups, counts, *, width: float, **kwargs) -> PathPatch:
    r"""The bars ``ax.bar(groups, counts, width=width, **kwargs)`` draws, as one patch.

    Bar ``g`` is the rectangle :math:`[g - w/2, g + w/2] \times [0, c_g]` (one closed
    subpath each, drawn in one call rather than one artist per bar); like ``ax.bar``'s, its
    bottom at 0 is a sticky edge of the y autoscaling. Add it with ``ax.add_patch``.
    """
    left = np.asarray(groups, dtype=float) - width / 2.0
    right = left + width
    top = np.asarray(counts, dtype=float)
    zero = np.zeros_like(top)
    corners = np.stack([np.stack([left, zero], axis=1), np.stack([left, top], axis=1),
                        np.stack([right, top], axis=1), np.stack([right, zero], axis=1),
                        np.stack([left, zero], axis=1)], axis=1)
    codes = np.tile([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY],
                    len(top))
    patch = PathPatch(Path(corners.reshape(-1, 2), codes), **kwargs)
    patch.sticky_edges.y.append(0.0)
    return patch


def rank_histograms(results, *, title: str | None = None) -> Figure:
    """Rank histograms of SBC runs with the expected band (matplotlib object API).

    Parameters
    ----------
    results : sequence of validation.sbc.SBCResult
        The runs, one row each.
    title : str, optional
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    results = list(results)
    if not results:
        raise ValueError("results must contain at least one SBC run")
    fig = Figure(figsize=(10, 2.2 * len(results) + 0.9))
    axes = fig.subplots(len(results), len(VARIABLES), squeeze=False)
    tail = (1.0 - BAND_LEVEL) / 2.0
    for row, result in zip(axes, results, strict=True):
        n, bins, n_ranks = result.n_simulations, result.bins, result.n_draws + 1
        lo, hi = stats.binom.ppf([tail, 1.0 - tail], n, 1.0 / bins)
        groups = np.arange(bins)
        for ax, variable in zip(row, VARIABLES, strict=True):
            test = result.tests[variable]
            ax.axhspan(lo, hi, color="0.88", label=f"{BAND_LEVEL:.0%} band if uniform")
            ax.axhline(n / bins, color="0.45", lw=1)
            colour = "#d62728" if test.p_value < P_VALUE_MIN else "#1f77b4"
            bars = bars_patch(groups, test.counts, width=BAR_WIDTH, facecolor=colour,
                               edgecolor="none", alpha=0.85, label="ranks of the truth")
            ax.add_patch(bars)
            ax.autoscale_view()  # as ax.bar does (add_patch only updates the data limits)
            pmf = result.extra.get("x1_rank_pmf")
            if variable == "X1" and pmf is not None and np.ptp(pmf) > 1e-9:
                expected = n * np.asarray(pmf).reshape(bins, -1).sum(axis=1)
                ax.plot(groups, expected, ls="none", marker="_", ms=14, mew=2, color="k",
                        label="expected (stationary law)")
                # the order ax.bar's container had: band, expected ticks, bars
                handles = [h for h in ax.get_legend_handles_labels()[0] if h is not bars]
                ax.legend(handles=[*handles, bars], fontsize=6, loc="upper right")
            ax.set_xticks(groups, [f"{g * n_ranks // bins}" for g in groups], fontsize=7)
            ax.set_title(
                f"{result.label}, {variable}\nN = {n}, L = {result.n_draws}; "
                f"chi2 p = {test.chi2_p_value:.2g}, KS p = {test.ks_p_value:.2g}",
                fontsize=8,
            )
            ax.set_ylabel("simulations", fontsize=7)
            ax.tick_params(axis="y", labelsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("rank of the truth among the draws (first rank of each group)", fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    with ticks_placed_once(fig), texts_laid_out_once():
        fig.tight_layout()
    return fig
