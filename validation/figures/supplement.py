r"""Supplement Figures 7, 8, 9 and 12 as matplotlib Figures (object API, no pyplot state).

Each function takes the dataset(s) of :mod:`dprisk.validation.paper.supplement` and
:mod:`dprisk.validation.paper.supplement_s6` and only draws them, so the report computes the data
once
and stores exactly what is drawn (and this module does not import the study modules).

* Figure 8: variance :math:`\sigma^2` of DG(0, s) against ``s`` (log-log, dashed
  :math:`\sigma^2 = s`, upper axis in :math:`\rho = 1/(2s)`), and the gap :math:`s - \sigma^2`
  with the supplement's bounds.
* Figure 9: exact pmf of a sum of ``n`` iid DG against DG(0, n/(2ρ)), 2 x 2 panels
  (rows ρ = 0.0992, 1; columns n = 27, 5), the total-variation distance in each title.
* Figure 12: marginal posterior with post-processing against :math:`\tilde x_2` (left) and
  :math:`\rho_1` (right), with the no-post-processing references.
* Figure 7: marginal posterior and ``R`` against the number of unique levels ``ell``.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from matplotlib.figure import Figure

from dprisk.models.census.allocation import census_level

__all__ = ["figure7", "figure8", "figure10", "figure11"]

_PURPLE = "tab:purple"


def _inverse_half(x):
    """``1 / (2 x)``, its own inverse (s <-> rho); ``inf`` at 0 for matplotlib's axis maps."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        return 1.0 / (2.0 * x)


def figure7(data) -> Figure:
    r"""Figure 8: :math:`\sigma^2` against ``s`` (left) and :math:`s - \sigma^2` (right)."""
    s = data["s"].values
    rho_block = census_level("block").rho
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    ax_var, ax_gap = fig.subplots(1, 2)
    ax_var.plot(s, data["variance"], label=r"$\sigma^2 = \mathrm{Var}\,\mathrm{DG}(0, s)$")
    ax_var.plot(s, s, linestyle="--", color="grey", label=r"$\sigma^2 = s$")
    ax_var.set_ylabel(r"variance $\sigma^2$ (persons$^2$)")
    gap = data["gap"].values
    positive = gap > 0
    ax_gap.plot(s[positive], gap[positive], label=r"$s - \sigma^2$")
    for bound, start, style in ((0.002, 0.5, ":"), (1e-6, 1.0, "-.")):
        ax_gap.hlines(bound, start, s.max(), colors="tab:red", linestyles=style,
                      label=f"S2 bound {bound:g} for s > {start:g}")
    ax_gap.set_ylabel(r"gap $s - \sigma^2$ (persons$^2$)")
    ax_gap.set_ylim(1e-18, 1.0)
    for ax in (ax_var, ax_gap):
        ax.axvline(1.0 / (2.0 * rho_block), color="black", linestyle="--", linewidth=1,
                   label=rf"Census block $\rho_1 \approx {rho_block:.4f}$")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(r"scale $s = 1/(2\rho)$ (persons$^2$)")
        top = ax.secondary_xaxis("top", functions=(_inverse_half, _inverse_half))
        top.set_xlabel(r"$\rho = 1/(2s)$ (zCDP parameter)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Figure 8: variance of the discrete Gaussian DG(0, s)")
    return fig


def figure8(data) -> Figure:
    """Figure 9: exact pmf of the noise sum (bars) against DG(0, n/(2 rho)) (line), 2 x 2."""
    fig = Figure(figsize=(11, 7.5), layout="constrained")
    axes = fig.subplots(2, 2)
    values = data["value"].values
    for i, ax in enumerate(axes.ravel()):
        rho, n = float(data["rho"][i]), int(data["n"][i])
        width = int(np.ceil(4.5 * np.sqrt(n / (2.0 * rho))))
        shown = np.abs(values) <= width
        ax.plot(values[shown], data["pmf_approximation"][i].values[shown], color="tab:red",
                marker=".", markersize=3, linewidth=1, label=r"DG$(0, n/(2\rho))$")
        # the unit-wide bars of the exact pmf as one filled step patch (drawn below the line,
        # listed after it in the legend)
        edges = np.append(values[shown] - 0.5, values[shown][-1] + 0.5)
        ax.stairs(data["pmf_sum"][i].values[shown], edges, fill=True, color="tab:blue",
                  alpha=0.6, label=r"exact $\sum_{i=1}^n Z_i$")
        tv = float(data["total_variation"][i])
        ax.set_title(rf"$\rho = {rho:.4g}$, $n = {n}$: TV = {tv:.2g}", fontsize=10)
        ax.set_xlabel("value of the noise sum (persons)")
        ax.set_ylabel("probability mass")
        ax.legend(fontsize=8)
    fig.suptitle("Figure 9: sum of n iid DG(0, 1/(2ρ)) against DG(0, n/(2ρ))")
    return fig


def _over(p: float, m):
    return m / p


def _times(p: float, r):
    return r * p


def _risk_axis(ax, p: float) -> None:
    """Right-hand axis in R = marginal posterior / p (module-level maps: the figure pickles)."""
    right = ax.secondary_yaxis("right", functions=(partial(_over, p), partial(_times, p)))
    right.set_ylabel(rf"marginal risk $R$ = posterior / p (ratio, p = {p:g})")


def figure10(left, right) -> Figure:
    """Figure 12: post-processed marginal posterior against x~2 (left) and rho1 (right)."""
    p = float(left.attrs["p"])
    fig = Figure(figsize=(12, 4.6), layout="constrained")
    ax_x2, ax_rho = fig.subplots(1, 2)
    ax_x2.plot(left["x2_tilde"], left["marginal_posterior"], marker="o", markersize=2,
               label="with post-processing")
    ax_x2.axhline(float(left["no_postprocessing"]), color=_PURPLE,
                  label=r"without post-processing ($x_1^*$ only)")
    ax_x2.axhline(float(left["before_postprocessing"]), color="grey", linestyle=":",
                  label=r"before post-processing ($x_1^*, y_1^*$, $x_2$ known)")
    ax_x2.set_xlabel(r"post-processed block-group count $\tilde x_2$ (persons)")
    ax_x2.set_title(rf"Census block $\rho_1 \approx {left.attrs['rho1']:.4f}$", fontsize=10)
    for j, t in enumerate(right["x2_tilde"].values):
        ax_rho.plot(right["rho1"], right["marginal_posterior"][:, j],
                    label=rf"with post-processing, $\tilde x_2 = {int(t)}$")
    ax_rho.plot(right["rho1"], right["no_postprocessing"], color=_PURPLE,
                label=r"without post-processing ($x_1^*$ only)")
    ax_rho.plot(right["rho1"], right["before_postprocessing"], color="grey", linestyle=":",
                label=r"before post-processing ($x_1^*, y_1^*$, $x_2$ known)")
    ax_rho.axvline(right.attrs["rho1_census"], color="black", linestyle="--", linewidth=1,
                   label=rf"Census block $\rho_1 \approx {right.attrs['rho1_census']:.4f}$")
    ax_rho.set_xscale("log")
    ax_rho.set_xlabel(r"$\rho_1$ (zCDP parameter of the block counts)")
    for ax in (ax_x2, ax_rho):
        ax.set_ylabel(r"marginal posterior $P[X_1 = 1 \mid x_1 = 1, \tilde x_2]$ (probability)")
        _risk_axis(ax, p)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Figure 12: effect of post-processing (p = {p:g}, d = {left.attrs['d']}, "
                 "adversary knows x2 = 1)")
    return fig


def figure11(data) -> Figure:
    """Figure 7: marginal posterior (left, log y) and R (right) against ell, one line per prior."""
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    ax_post, ax_risk = fig.subplots(1, 2)
    levels = data["levels"].values
    for j, label in enumerate(data["p_label"].values):
        ax_post.plot(levels, data["marginal_posterior"][:, j], marker="o",
                     label=f"p = {label}")
        ax_risk.plot(levels, data["marginal_risk"][:, j], marker="o", label=f"p = {label}")
    ticks = [f"{int(ell)}\n{name}\n" + rf"$\rho$={rho:.4f}" for ell, name, rho in
             zip(levels, data["level_name"].values, data["rho"].values, strict=True)]
    for ax in (ax_post, ax_risk):
        ax.set_xticks(levels, ticks, fontsize=7)
        ax.set_xlabel(r"levels $\ell$ at which the target is unique (Census $\rho$ per level)")
        ax.grid(True, which="both", alpha=0.3)
    # one legend for both panels, outside them: inside, it covered the p = 1/864 line
    fig.legend(*ax_post.get_legend_handles_labels(), title="adversary prior", fontsize=8,
               loc="outside right center")
    ax_post.set_yscale("log")
    ax_post.set_ylabel(r"marginal posterior $P[X_1 = 1 \mid x_1 = 1]$ (probability)")
    ax_risk.set_ylabel(r"marginal risk $R$ (ratio)")
    fig.suptitle("Figure 7: target unique at several levels of the hierarchy")
    return fig
