r"""Figures 1–3 of the paper (single level, §4.2): data as xarray, plots as matplotlib Figures.

Each figure has a ``figureN_data`` function returning a labelled :class:`xarray.Dataset`
(what the report stores) and a ``figureN`` function drawing it with matplotlib's object API
(:class:`matplotlib.figure.Figure`, no pyplot state), one line per adversary prior.

* Figure 1: posterior :math:`P[X_1 = 1 \mid x_1^*]` and :math:`R'(x_1^*)` against
  :math:`x_1^*` at the Census block rho.
* Figure 2: marginal posterior and marginal risk :math:`R` against :math:`\rho_1`
  (log scales), Census block rho dashed.
* Figure 3: probability of a correct 0-1-loss decision against :math:`\rho_1` (log x).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from dprisk.inference.single_level import closed_form as single_level
from dprisk.models.census.allocation import census_level
from dprisk.validation.figures.paper_priors import PAPER_PRIORS, prior_coords

__all__ = [
    "DEFAULT_RHO_GRID",
    "DEFAULT_X1_STAR",
    "figure1",
    "figure1_data",
    "figure2",
    "figure2_data",
    "figure3",
    "figure3_data",
]

#: rho1 grid of Figures 2 and 3: 500 points, log-spaced over [1e-3, 1e2].
DEFAULT_RHO_GRID = np.logspace(-3, 2, 500)
#: x1* range of Figure 1.
DEFAULT_X1_STAR = np.arange(-10, 16)
_RHO_LABEL = r"$\rho_1$ (zCDP privacy-loss parameter of the block count, dimensionless)"


def _rho_block() -> float:
    return census_level("block").rho


def _prior_label(label: str) -> str:
    return f"p = {label}"


def figure1_data(rho=None, priors=PAPER_PRIORS, x1_star=DEFAULT_X1_STAR) -> xr.Dataset:
    """Posterior and :math:`R'` on an ``x1_star`` grid for each prior (known m = 0)."""
    rho = _rho_block() if rho is None else float(rho)
    x1_star = np.asarray(x1_star)
    p = np.array([value for _, value in priors])
    post = single_level.posterior(x1_star[:, None], rho, p[None, :])
    risk = single_level.risk(x1_star[:, None], rho, p[None, :])
    coords = {"x1_star": ("x1_star", x1_star, {"long_name": "released noisy count x1*",
                                               "units": "persons"}), **prior_coords(priors)}
    return xr.Dataset(
        {
            "posterior": (("x1_star", "p"), post,
                          {"long_name": "P[X1 = 1 | X1* = x1*]", "units": "probability"}),
            "risk": (("x1_star", "p"), risk,
                     {"long_name": "R'(x1*) = posterior / prior", "units": "ratio"}),
        },
        coords=coords,
        attrs={"rho1": rho, "known_m": 0, "true_x1": 1, "source": "paper Figure 1"},
    )


def figure2_data(rho_grid=DEFAULT_RHO_GRID, priors=PAPER_PRIORS) -> xr.Dataset:
    """Marginal posterior and marginal risk on a ``rho1`` grid for each prior."""
    rho_grid = np.asarray(rho_grid, dtype=float)
    p = np.array([value for _, value in priors])
    log_marginal = single_level.log_marginal_posterior(rho_grid[:, None], p[None, :])
    return xr.Dataset(
        {
            "marginal_posterior": (("rho1", "p"), np.exp(log_marginal),
                                   {"long_name": "P[X1 = 1 | x1 = 1] (eq. 3.3)",
                                    "units": "probability"}),
            "marginal_risk": (("rho1", "p"), np.exp(log_marginal - np.log(p)[None, :]),
                              {"long_name": "R (eq. 3.4)", "units": "ratio"}),
        },
        coords={"rho1": ("rho1", rho_grid, {"long_name": "rho1", "units": "1"}),
                **prior_coords(priors)},
        attrs={"rho1_census": _rho_block(), "source": "paper Figure 2"},
    )


def figure3_data(rho_grid=DEFAULT_RHO_GRID, priors=PAPER_PRIORS) -> xr.Dataset:
    """Probability of a correct decision and the decision threshold on a ``rho1`` grid."""
    rho_grid = np.asarray(rho_grid, dtype=float)
    p = np.array([value for _, value in priors])
    return xr.Dataset(
        {
            "p_correct": (("rho1", "p"), single_level.p_correct(rho_grid[:, None], p[None, :]),
                          {"long_name": "P[correct 0-1-loss decision | x1 = 1] (eq. 3.6)",
                           "units": "probability"}),
            "decision_threshold": (("rho1", "p"),
                                   single_level.decision_threshold(rho_grid[:, None],
                                                                   p[None, :]),
                                   {"long_name": "smallest x1* deciding X1 = 1",
                                    "units": "persons"}),
        },
        coords={"rho1": ("rho1", rho_grid, {"long_name": "rho1", "units": "1"}),
                **prior_coords(priors)},
        attrs={"rho1_census": _rho_block(), "source": "paper Figure 3"},
    )


def _mark_census(ax, rho_census: float) -> None:
    ax.axvline(rho_census, color="black", linestyle="--", linewidth=1,
               label=rf"Census block $\rho_1 \approx {rho_census:.4f}$")


def figure1(rho=None, priors=PAPER_PRIORS, x1_star=DEFAULT_X1_STAR) -> Figure:
    """Figure 1: posterior (left) and :math:`R'` (right) against :math:`x_1^*`.

    Returns a Figure with two axes, each with one line per prior; the right panel also has
    a dashed reference line at :math:`R' = 1`.
    """
    data = figure1_data(rho, priors, x1_star)
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    ax_post, ax_risk = fig.subplots(1, 2)
    for k, label in enumerate(data["p_label"].values):
        ax_post.plot(data["x1_star"], data["posterior"][:, k], marker="o", markersize=3,
                     label=_prior_label(label))
        ax_risk.plot(data["x1_star"], data["risk"][:, k], marker="o", markersize=3,
                     label=_prior_label(label))
    ax_risk.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="R' = 1")
    for ax in (ax_post, ax_risk):
        ax.set_yscale("log")
        ax.set_xlabel(r"released noisy count $x_1^*$ (persons)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(title="adversary prior", fontsize=8)
    ax_post.set_ylabel(r"posterior $P[X_1 = 1 \mid X_1^* = x_1^*]$ (probability)")
    ax_risk.set_ylabel(r"risk $R'(x_1^*)$ = posterior / prior (ratio)")
    fig.suptitle(rf"Figure 1: single level, $\rho_1 = {data.attrs['rho1']:.4f}$, "
                 r"$x_{1,-t} = 0$")
    return fig


def figure2(rho_grid=DEFAULT_RHO_GRID, priors=PAPER_PRIORS) -> Figure:
    """Figure 2: marginal posterior (left) and marginal risk ``R`` (right) against rho1.

    Two log-log axes, one line per prior, the Census block rho dashed.
    """
    data = figure2_data(rho_grid, priors)
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    ax_post, ax_risk = fig.subplots(1, 2)
    for k, label in enumerate(data["p_label"].values):
        ax_post.plot(data["rho1"], data["marginal_posterior"][:, k], label=_prior_label(label))
        ax_risk.plot(data["rho1"], data["marginal_risk"][:, k], label=_prior_label(label))
    for ax in (ax_post, ax_risk):
        _mark_census(ax, data.attrs["rho1_census"])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(_RHO_LABEL)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(title="adversary prior", fontsize=8)
    ax_post.set_ylabel(r"marginal posterior $P[X_1 = 1 \mid x_1 = 1]$ (probability)")
    ax_risk.set_ylabel(r"marginal risk $R$ (ratio)")
    fig.suptitle("Figure 2: averaged over releases, true $x_1 = 1$")
    return fig


def figure3(rho_grid=DEFAULT_RHO_GRID, priors=PAPER_PRIORS) -> Figure:
    """Figure 3: probability of a correct 0-1-loss decision against rho1 (log x).

    One axes, one line per prior, the Census block rho dashed.
    """
    data = figure3_data(rho_grid, priors)
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.subplots()
    for k, label in enumerate(data["p_label"].values):
        ax.plot(data["rho1"], data["p_correct"][:, k], label=_prior_label(label))
    _mark_census(ax, data.attrs["rho1_census"])
    ax.set_xscale("log")
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel(_RHO_LABEL)
    ax.set_ylabel(r"$P[\hat X_1 = x_1]$, correct decision under 0-1 loss (probability)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(title="adversary prior", fontsize=8)
    fig.suptitle("Figure 3: probability of a correct decision, true $x_1 = 1$")
    return fig
