"""ArviZ convergence report for any sampling run of the adversary's posterior.

For a sampling result (an ``xarray.DataTree`` with a ``posterior`` group holding ``X1`` and
``X2`` with dims ``(chain, draw)``, as returned by PyMC or by the hand-written Gibbs
sampler) :func:`convergence_report` computes, with ArviZ 1.x,

* split rank-normalised R-hat, bulk and tail ESS for ``X2`` and for the indicator
  ``target = 1[X1 = m + 1]`` (Vehtari et al. 2021);
* the posterior probability P[X1 = m+1 | D] as the mean of the indicator, with its Monte
  Carlo standard error ``mcse = sd / sqrt(ESS)`` (``az.mcse(method="mean")``);
* trace and rank plots saved as PNG when an output directory is given;
* a verdict: converged when every R-hat < :data:`RHAT_MAX` and every bulk and tail ESS
  >= :data:`ESS_MIN` (Vehtari et al.'s thresholds), otherwise not, with the reasons.

A variable that is constant over all draws (e.g. X1 under a point-mass prior that rules out
m + 1) has no defined R-hat; it is reported as constant, which is not a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import arviz as az
import numpy as np
import xarray as xr

from dprisk.models.checks import check_count

__all__ = ["ESS_MIN", "RHAT_MAX", "ConvergenceReport", "convergence_report"]

#: Largest acceptable rank-normalised split R-hat.
RHAT_MAX = 1.01
#: Smallest acceptable bulk and tail effective sample size.
ESS_MIN = 400


@dataclass
class ConvergenceReport:
    """Result of :func:`convergence_report`.

    Attributes
    ----------
    table : xarray.Dataset
        Per-variable ``mean``, ``r_hat``, ``ess_bulk``, ``ess_tail``, ``mcse_mean`` with a
        ``variable`` dimension (``target`` is the indicator X1 = m+1).
    posterior : float
        Estimate of P[X1 = m+1 | D].
    posterior_mcse : float
        Its Monte Carlo standard error.
    converged : bool
        The verdict.
    reasons : list of str
        Why the verdict is what it is (one line per problem, or the reason it passed).
    figures : dict of str to Path
        Saved plot files (``trace``, ``rank``), empty when no directory was given.
    """

    table: xr.Dataset
    posterior: float
    posterior_mcse: float
    converged: bool
    reasons: list[str] = field(default_factory=list)
    figures: dict[str, Path] = field(default_factory=dict)

    def summary(self) -> str:
        """Plain-text summary: the table, the estimate with its MCSE and the verdict."""
        lines = [f"{'variable':<10}{'mean':>10}{'r_hat':>9}{'ess_bulk':>10}{'ess_tail':>10}"
                 f"{'mcse':>11}"]
        for name in self.table["variable"].values:
            row = self.table.sel(variable=name)
            lines.append(
                f"{name!s:<10}{float(row['mean']):>10.4f}{float(row['r_hat']):>9.4f}"
                f"{float(row['ess_bulk']):>10.0f}{float(row['ess_tail']):>10.0f}"
                f"{float(row['mcse_mean']):>11.2e}"
            )
        lines.append(
            f"P[X1 = m+1 | D] = {self.posterior:.4f} ± {self.posterior_mcse:.4f} (MCSE)"
        )
        verdict = "converged" if self.converged else "NOT converged"
        lines.append(f"verdict: {verdict}: " + "; ".join(self.reasons))
        return "\n".join(lines)


def _posterior_dataset(idata) -> xr.Dataset:
    if isinstance(idata, xr.DataTree):
        if "posterior" not in idata.children:
            raise ValueError("idata must have a 'posterior' group")
        return idata["posterior"].to_dataset()
    if isinstance(idata, xr.Dataset):
        return idata
    raise TypeError(f"idata must be an xarray DataTree or Dataset, got {type(idata).__name__}")


def convergence_report(
    idata,
    *,
    known: int = 0,
    out_dir=None,
    prefix: str = "",
    rhat_max: float = RHAT_MAX,
    ess_min: float = ESS_MIN,
) -> ConvergenceReport:
    """Convergence diagnostics and the estimate of P[X1 = m+1 | D] for one sampling run.

    Parameters
    ----------
    idata : xarray.DataTree or xarray.Dataset
        Sampling result with variables ``X1`` and ``X2`` of dims ``(chain, draw)``.
    known : int (known >= 0)
        The adversary's known count m; the target indicator is ``X1 == known + 1``.
    out_dir : str or Path, optional
        Where to save ``{prefix}trace.png`` and ``{prefix}rank.png``.
    prefix : str
        File-name prefix for the plots.
    rhat_max, ess_min : float
        Thresholds of the verdict.

    Returns
    -------
    ConvergenceReport
    """
    known = int(check_count(known, "known", minimum=0))
    posterior = _posterior_dataset(idata)
    for name in ("X1", "X2"):
        if name not in posterior:
            raise ValueError(f"idata posterior lacks variable {name!r}")
    if posterior.sizes.get("chain", 1) < 2:
        raise ValueError("convergence diagnostics need at least 2 chains")
    target = (posterior["X1"] == known + 1).astype(float)
    data = xr.Dataset({"target": target, "X2": posterior["X2"].astype(float)})
    tree = xr.DataTree.from_dict({"posterior": data})

    def _stat(values) -> dict:
        ds = values.to_dataset() if isinstance(values, xr.DataTree) else values
        return {name: float(ds[name]) for name in data.data_vars}

    with np.errstate(invalid="ignore", divide="ignore"):
        rhat = _stat(az.rhat(tree))
        ess_bulk = _stat(az.ess(tree, method="bulk"))
        ess_tail = _stat(az.ess(tree, method="tail"))
        mcse = _stat(az.mcse(tree, method="mean"))
    means = {name: float(data[name].mean()) for name in data.data_vars}

    names = list(data.data_vars)
    table = xr.Dataset(
        {
            "mean": ("variable", [means[n] for n in names]),
            "r_hat": ("variable", [rhat[n] for n in names]),
            "ess_bulk": ("variable", [ess_bulk[n] for n in names]),
            "ess_tail": ("variable", [ess_tail[n] for n in names]),
            "mcse_mean": ("variable", [mcse[n] for n in names]),
        },
        coords={"variable": names},
        attrs={"rhat_max": rhat_max, "ess_min": ess_min, "known": known},
    )

    reasons = []
    for name in names:
        if float(data[name].std()) == 0.0:
            reasons.append(f"{name} is constant over all draws (R-hat undefined)")
            continue
        if not rhat[name] < rhat_max:
            reasons.append(f"R-hat of {name} is {rhat[name]:.4f} >= {rhat_max}")
        if not ess_bulk[name] >= ess_min:
            reasons.append(f"bulk ESS of {name} is {ess_bulk[name]:.0f} < {ess_min}")
        if not ess_tail[name] >= ess_min:
            reasons.append(f"tail ESS of {name} is {ess_tail[name]:.0f} < {ess_min}")
    problems = [r for r in reasons if "constant" not in r]
    converged = not problems
    if converged:
        reasons.append(f"all R-hat < {rhat_max} and all bulk/tail ESS >= {ess_min}")

    target_mcse = mcse["target"] if float(target.std()) > 0 else 0.0
    figures: dict[str, Path] = {}
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        for kind, plot in (("trace", az.plot_trace), ("rank", az.plot_rank)):
            path = out_dir / f"{prefix}{kind}.png"
            collection = plot(tree, backend="matplotlib")
            collection.savefig(path)
            _close(collection)
            figures[kind] = path
    return ConvergenceReport(
        table=table,
        posterior=means["target"],
        posterior_mcse=target_mcse,
        converged=converged,
        reasons=reasons,
        figures=figures,
    )


def _close(collection) -> None:
    """Release the matplotlib figure behind an arviz-plots PlotCollection."""
    import matplotlib.pyplot as plt

    figure = getattr(collection, "viz", None)
    try:
        plt.close(figure["chart"].item())
    except (KeyError, TypeError, AttributeError, ValueError):
        plt.close("all")
