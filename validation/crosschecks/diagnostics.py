"""ArviZ convergence report for any sampling run of the adversary's posterior.

For a sampling result (an ``xarray.DataTree`` with a ``posterior`` group holding ``X1``,
``X2`` and, for the ``h``-level model, ``X3 … Xh`` with dims ``(chain, draw)``, as returned by
PyMC or by the hand-written Gibbs samplers) :func:`convergence_report` computes, with the one
ArviZ routine of the package (:func:`dprisk.inference.mcmc.chain_stats.chain_diagnostics`),

* split rank-normalised R-hat, bulk and tail ESS for ``X2 … Xh`` and for the indicator
  ``target = 1[X1 = m + 1]`` (Vehtari et al. 2021), with ``m`` (``known``) read from the
  scenario the sampler recorded in the result's attributes;
* the posterior probability P[X1 = m+1 | D] as the mean of the indicator, with its Monte
  Carlo standard error ``mcse = sd / sqrt(ESS)`` (``az.mcse(method="mean")``);
* trace and rank plots saved as PNG when an output directory is given
  (:mod:`dprisk.validation.crosschecks.trace_rank_plots`: randomised ranks for the tied
  discrete draws, the running mean of the binary X1);
* a verdict: converged when every R-hat < :data:`RHAT_MAX` and every bulk and tail ESS
  >= :data:`ESS_MIN` (Vehtari et al.'s thresholds), otherwise not, with the reasons.

A variable that is constant over all draws (e.g. X1 under a point-mass prior that rules out
m + 1) has no defined R-hat; it is reported as constant, which is not a failure, unless the
chains hold fewer than :data:`~dprisk.inference.mcmc.convergence.MIN_DRAWS` draws (one draw
is always constant: too few to judge, a failure).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

from dprisk.inference.mcmc.chain_stats import chain_diagnostics
from dprisk.inference.mcmc.convergence import ESS_MIN, MIN_DRAWS, RHAT_MAX, unknown_names
from dprisk.models.checks import check_count

__all__ = ["ESS_MIN", "RHAT_MAX", "ConvergenceReport", "convergence_report"]


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
    scenario : dict
        The scenario recorded in the result's attributes (``known``, ``p``, ``rho1`` or
        ``rhos``, ...), empty if none was recorded.
    """

    table: xr.Dataset
    posterior: float
    posterior_mcse: float
    converged: bool
    reasons: list[str] = field(default_factory=list)
    figures: dict[str, Path] = field(default_factory=dict)
    scenario: dict = field(default_factory=dict)

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


def _recorded_scenario(idata, posterior: xr.Dataset) -> dict:
    """The scenario attributes a sampler recorded (posterior group first, then the root)."""
    keys = ("rho1", "rho2", "d", "rhos", "siblings", "p", "known", "prior", "method")
    recorded = {}
    for attrs in (getattr(idata, "attrs", {}), posterior.attrs):
        recorded.update({key: attrs[key] for key in keys if key in attrs})
    return recorded


def _level_names(posterior: xr.Dataset) -> list[str]:
    """``X2, X3, …`` present in ``posterior`` (consecutive levels from 2)."""
    names = []
    while f"X{len(names) + 2}" in posterior:
        names.append(f"X{len(names) + 2}")
    return names


def convergence_report(
    idata,
    *,
    known: int | None = None,
    out_dir=None,
    prefix: str = "",
    rhat_max: float = RHAT_MAX,
    ess_min: float = ESS_MIN,
    random_seed=None,
) -> ConvergenceReport:
    """Convergence diagnostics and the estimate of P[X1 = m+1 | D] for one sampling run.

    Parameters
    ----------
    idata : xarray.DataTree or xarray.Dataset
        Sampling result with variables ``X1``, ``X2`` (and ``X3 … Xh`` for more levels) of
        dims ``(chain, draw)``.
    known : int (known >= 0), optional
        The adversary's known count m; the target indicator is ``X1 == known + 1``. Default:
        the ``known`` the sampler recorded in the result's attributes (0 if none). Every draw
        of X1 must be ``known`` or ``known + 1``.
    out_dir : str or Path, optional
        Where to save ``{prefix}trace.png`` and ``{prefix}rank.png`` (a directory, made if
        missing). Each is written to a temporary file beside it and moved onto its name once
        complete: an earlier plot of that name is replaced whole (a symbolic link there is
        replaced, never followed), and a failure leaves it as it was. An ``out_dir`` that
        exists and is not a directory is refused (``ValueError``).
    prefix : str
        File-name prefix for the plots.
    rhat_max : float (1 < rhat_max < inf)
        Largest R-hat of a converged run (the verdict needs every R-hat below it).
    ess_min : float (0 < ess_min < inf)
        Smallest bulk and tail ESS of a converged run.
    random_seed : int, optional
        Seed of the rank plot's random tie-breaking (default: the run's recorded
        ``random_seed``).

    Returns
    -------
    ConvergenceReport

    Raises
    ------
    ValueError
        If ``known``, ``rhat_max`` or ``ess_min`` is out of range, ``known`` contradicts the
        draws (an X1 outside ``{known, known + 1}``), or a group, variable or second chain is
        missing (``TypeError`` for a threshold that is not a number).
    """
    rhat_max = _threshold(rhat_max, "rhat_max", 1.0)
    ess_min = _threshold(ess_min, "ess_min", 0.0)
    posterior = _posterior_dataset(idata)
    scenario = _recorded_scenario(idata, posterior)
    if known is None:
        known = scenario.get("known", 0)
    known = int(check_count(known, "known", minimum=0))
    for name in ("X1", "X2"):
        if name not in posterior:
            raise ValueError(f"idata posterior lacks variable {name!r}")
    if posterior.sizes.get("chain", 1) < 2:
        raise ValueError("convergence diagnostics need at least 2 chains")
    _check_x1_draws(posterior["X1"], known, scenario)
    target = (posterior["X1"] == known + 1).astype(float)
    data = xr.Dataset(
        {"target": target, **{n: posterior[n].astype(float) for n in _level_names(posterior)}}
    )
    names = list(data.data_vars)
    stats = {
        name: chain_diagnostics(data[name].transpose("chain", "draw", ...).values)
        for name in names
    }
    columns = {"mean": "mean", "r_hat": "r_hat", "ess_bulk": "ess_bulk", "ess_tail": "ess_tail",
               "mcse_mean": "mcse"}
    table = xr.Dataset(
        {column: ("variable", [stats[n][key] for n in names]) for column, key in columns.items()},
        coords={"variable": names},
        attrs={"rhat_max": rhat_max, "ess_min": ess_min, "known": known},
    )

    reasons, failed = [], False  # in variable order: failures and constant-variable notes
    draws = posterior.sizes.get("draw", 1)
    for name in names:
        row = stats[name]
        if float(data[name].std()) == 0.0:
            if draws < MIN_DRAWS:  # one draw is always constant: too few to judge
                failed = True
                reasons.append(f"{name} is constant over only {draws} draw"
                               f"{'s' if draws != 1 else ''} per chain, too few to tell a "
                               f"point mass from a stuck chain (run at least {MIN_DRAWS} "
                               f"draws per chain)")
            else:
                reasons.append(f"{name} is constant over all draws (R-hat undefined)")
            continue
        problems = []
        if not row["r_hat"] < rhat_max:
            problems.append(f"R-hat of {name} is {row['r_hat']:.4f} >= {rhat_max}")
        if not row["ess_bulk"] >= ess_min:
            problems.append(f"bulk ESS of {name} is {row['ess_bulk']:.0f} < {ess_min}")
        if not row["ess_tail"] >= ess_min:
            problems.append(f"tail ESS of {name} is {row['ess_tail']:.0f} < {ess_min}")
        failed = failed or bool(problems)
        reasons.extend(problems)
    converged = not failed
    if converged:
        reasons.append(f"all R-hat < {rhat_max} and all bulk/tail ESS >= {ess_min}")

    figures: dict[str, Path] = {}
    if out_dir is not None:
        if random_seed is None:
            random_seed = posterior.attrs.get("random_seed")
        arrays = {name: posterior[name].transpose("chain", "draw").values
                  for name in unknown_names(posterior)}
        figures = _save_plots(arrays, Path(out_dir), prefix, known, random_seed)
    return ConvergenceReport(
        table=table,
        posterior=stats["target"]["mean"],
        posterior_mcse=stats["target"]["mcse"],
        converged=converged,
        reasons=reasons,
        figures=figures,
        scenario=scenario,
    )


def _threshold(value, name: str, lower: float) -> float:
    """``value`` as a float after checking ``lower < value < inf`` (a verdict's threshold)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not (lower < value < math.inf):
        raise ValueError(f"{name} must be a finite number > {lower:g} (allowed range: "
                         f"{lower:g} < {name} < inf), got {value!r}")
    return value


def _check_x1_draws(x1: xr.DataArray, known: int, scenario: dict) -> None:
    """Refuse a ``known`` the draws contradict: every draw of X1 is ``known`` or ``known + 1``.

    The samplers draw X1 in {m, m + 1}; with another ``known`` the indicator
    ``1[X1 = known + 1]`` would be a wrong estimate (0 with MCSE 0, "converged").
    """
    outside = x1.values[(x1.values != known) & (x1.values != known + 1)]
    if outside.size:
        found = outside.min().item()
        recorded = (f"; the sampler recorded known = {scenario['known']}"
                    if "known" in scenario else "")
        raise ValueError(
            f"known = {known} does not match the draws: X1 takes the value {found!r}, "
            f"outside {{known, known + 1}} = {{{known}, {known + 1}}}{recorded}"
        )


def _save_plots(arrays: dict, out_dir: Path, prefix: str, known: int,
                random_seed) -> dict[str, Path]:
    """Trace and rank plots of ``arrays`` as ``{prefix}trace.png`` and ``{prefix}rank.png``."""
    from dprisk.runtime.output_files import atomic_path
    from dprisk.validation.crosschecks.trace_rank_plots import save_rank_plot, save_trace_plot

    if (out_dir.exists() or out_dir.is_symlink()) and not out_dir.is_dir():
        raise ValueError(f"out_dir {str(out_dir)!r} exists and is not a directory; name a "
                         "directory for the plots")
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = {"trace": out_dir / f"{prefix}trace.png", "rank": out_dir / f"{prefix}rank.png"}
    with atomic_path(figures["trace"]) as tmp:
        save_trace_plot(arrays, Path(tmp), known=known)
    with atomic_path(figures["rank"]) as tmp:
        save_rank_plot(arrays, Path(tmp), random_seed=random_seed)
    return figures
