r"""One entry point for the two-level posterior: exact enumeration or one of three samplers.

All methods target the same joint posterior of (X1, X2) given D = (x1*, x2*, y1*)
(paper §3.2, S3; DESIGN.md §3):

========== ===============================================================================
method     what runs
========== ===============================================================================
exact      :func:`dprisk.inference.exact.exact_posterior` (enumeration on a checked k2 grid)
gibbs      :func:`dprisk.inference.gibbs.gibbs_sample`, the vectorised exact Gibbs sampler
pymc-gibbs ``pm.sample`` of :func:`dprisk.models.hierarchical.build_hierarchical_model` with
           :class:`dprisk.inference.gibbs_step.ExactGibbsStep`
pymc       ``pm.sample`` with PyMC's own steps: ``BinaryGibbsMetropolis`` for
           ``target_has_c`` and ``Metropolis`` for ``X2`` (under ``point:K`` X2 is not free
           and only the indicator is sampled)
========== ===============================================================================

:func:`posterior_summary` returns the command line's JSON payload. The Monte Carlo
diagnostics of the target indicator ``1[X1 = m + 1]`` it reports (rank-normalised split
R-hat, bulk ESS, MCSE of the mean) are ArviZ's, the same definitions as
:func:`dprisk.validation.diagnostics.convergence_report` (computed here with
``arviz_stats.base.array_stats`` so that ``inference`` does not import ``validation``).
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import xarray as xr
from arviz_stats.base import array_stats

from dprisk.inference.exact import exact_posterior
from dprisk.inference.gibbs import gibbs_sample, to_datatree
from dprisk.inference.gibbs_step import ExactGibbsStep
from dprisk.models.checks import check_positive_int
from dprisk.models.dg_sampling import as_generator
from dprisk.models.hierarchical import (
    TARGET_VAR,
    X2_VAR,
    build_hierarchical_model,
    hierarchical_spec,
    validated_spec,
)

__all__ = [
    "METHODS",
    "SAMPLING_METHODS",
    "X2_MASS_MIN",
    "chain_diagnostics",
    "check_method",
        "posterior_summary",
    "pymc_steps",
    "sample_model",
    "sample_posterior",
]

#: Every method of :func:`sample_posterior`.
METHODS = ("exact", "gibbs", "pymc-gibbs", "pymc")
#: The Monte Carlo methods (their result is an ``xarray.DataTree`` of draws).
SAMPLING_METHODS = ("gibbs", "pymc-gibbs", "pymc")
#: Smallest exact posterior mass of X2 = k2 listed by :func:`posterior_summary`.
X2_MASS_MIN = 1e-12


def check_method(method, allowed=METHODS) -> str:
    """Return ``method`` if it is one of ``allowed``, else raise a one-line ``ValueError``."""
    if method not in allowed:
        raise ValueError(f"method must be one of {', '.join(allowed)}; got {method!r}")
    return method


def pymc_steps(model: pm.Model, method: str) -> list:
    """The step methods of ``method`` ("pymc-gibbs" or "pymc") for a two-level ``model``.

    Reusable across :func:`dprisk.models.hierarchical.set_release` calls: PyMC's steps read the
    model's data, :class:`ExactGibbsStep` re-tabulates when a chain starts.
    """
    check_method(method, ("pymc-gibbs", "pymc"))
    hierarchical_spec(model)
    if method == "pymc-gibbs":
        return [ExactGibbsStep(model=model)]
    steps = [pm.BinaryGibbsMetropolis([model[TARGET_VAR]], model=model)]
    if model[X2_VAR] in model.free_RVs:
        steps.append(pm.Metropolis([model[X2_VAR]], model=model))
    return steps


def sample_model(
    model: pm.Model,
    *,
    method: str = "pymc-gibbs",
    draws: int = 5000,
    chains: int = 4,
    tune: int = 1000,
    random_seed=None,
    cores: int = 1,
    progressbar: bool = False,
    step=None,
) -> xr.DataTree:
    """``pm.sample`` of a two-level model with the steps of ``method`` (or the given ``step``).

    Parameters
    ----------
    model : pymc.Model
        From :func:`dprisk.models.hierarchical.build_hierarchical_model`.
    method : {"pymc-gibbs", "pymc"}
        Which steps :func:`pymc_steps` builds when ``step`` is None.
    draws, chains, tune, random_seed, cores, progressbar
        As in ``pm.sample``. PyMC's log lines are silenced unless ``progressbar``; its own
        convergence checks are skipped (see :func:`chain_diagnostics`).
    step : list of step methods, optional
        Steps from an earlier :func:`pymc_steps` call on the same model (no recompilation).

    Returns
    -------
    xarray.DataTree
        PyMC's result: ``posterior`` with ``target_has_c``, ``X1``, ``X2`` (chain, draw).
    """
    check_method(method, ("pymc-gibbs", "pymc"))
    draws = check_positive_int(draws, "draws")
    chains = check_positive_int(chains, "chains")
    tune = check_positive_int(tune, "tune", minimum=0)
    cores = check_positive_int(cores, "cores")
    if step is None:
        step = pymc_steps(model, method)
    return pm.sample(
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        step=step,
        model=model,
        random_seed=random_seed,
        progressbar=progressbar,
        quiet=not progressbar,
        compute_convergence_checks=False,
    )


def sample_posterior(
    x1_star,
    x2_star,
    y1_star,
    *,
    rho1,
    rho2,
    d,
    p=0.5,
    known=0,
    prior="improper",
    method: str = "exact",
    draws: int = 5000,
    chains: int = 4,
    tune: int = 1000,
    random_seed=None,
    cores: int = 1,
    progressbar: bool = False,
) -> xr.Dataset | xr.DataTree:
    r"""The posterior of (X1, X2) given one release D by the chosen ``method``.

    Parameters
    ----------
    x1_star, x2_star, y1_star : int
        The release D (noisy block count, block-group count, other blocks' sum).
    rho1, rho2 : float (> 0)
        zCDP parameters of the block and block-group levels.
    d : int (d >= 1)
        Number of other blocks in the block group.
    p : float (0 < p < 1)
        Prior probability ``P[X1 = known + 1]``.
    known : int (known >= 0)
        ``m``, the adversary's count of the others in the block with ``c``.
    prior : str or X2Prior
        Prior of X2 given X1 (``improper``, ``truncated:U``, ``point:K``, ``PATH.py:NAME``).
    method : {"exact", "gibbs", "pymc-gibbs", "pymc"}
        See the module docstring.
    draws : int (>= 1)
        Recorded draws per chain (sampling methods).
    chains : int (>= 1)
        Number of chains.
    tune : int (>= 0)
        Discarded initial iterations per chain.
    random_seed : int, optional
        Seed; the same seed gives the same draws.
    cores : int (>= 1)
        Processes for PyMC (the standalone Gibbs sampler is vectorised and ignores it).
    progressbar : bool
        Show PyMC's progress bar and log lines.

    Returns
    -------
    xarray.Dataset or xarray.DataTree
        ``exact``: a Dataset with ``prob_x1`` = P[X1 = m+1 | D] and ``x2_pmf`` (dim ``k2``),
        the parameters in ``attrs``. Sampling methods: a DataTree whose ``posterior`` group
        holds ``X1`` and ``X2`` with dims (chain, draw).

    Raises
    ------
    ValueError
        One line naming the bad parameter: an unknown method (listing the supported ones),
        ``d < 1``, a prior with empty support such as ``truncated:U`` with
        ``U < known + 1``, a malformed prior spec, a missing model file or NAME, ...
    """
    check_method(method)
    spec = validated_spec(
        x1_star, x2_star, y1_star, rho1=rho1, rho2=rho2, d=d, p=p, known=known, prior=prior
    )
    if method == "exact":
        return exact_posterior(*spec.release, **spec.parameters()).to_dataset().isel(release=0)
    if random_seed is not None and not isinstance(random_seed, np.random.Generator):
        as_generator(random_seed, "random_seed")  # one-line error naming random_seed
    if method == "gibbs":
        draws = check_positive_int(draws, "draws")
        chains = check_positive_int(chains, "chains")
        tune = check_positive_int(tune, "tune", minimum=0)
        check_positive_int(cores, "cores")
        samples = gibbs_sample(
            *spec.release, **spec.parameters(), draws=draws, chains=chains, tune=tune,
            rng=random_seed,
        )
        attrs = {**spec.parameters(), "prior": spec.prior.spec, "method": method}
        return to_datatree(samples, attrs=attrs)
    model = build_hierarchical_model(*spec.release, **spec.parameters())
    return sample_model(
        model, method=method, draws=draws, chains=chains, tune=tune,
        random_seed=random_seed, cores=cores, progressbar=progressbar,
    )


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def chain_diagnostics(values, *, known: int | None = None) -> dict:
    """Mean, MCSE, R-hat and bulk ESS of draws with dims (chain, draw).

    Parameters
    ----------
    values : array_like, shape (chains, draws)
        Numeric draws (e.g. of X2), or draws of X1 when ``known`` is given.
    known : int, optional
        The known count m: the statistic is then the indicator ``1[X1 = known + 1]``.

    Returns
    -------
    dict
        ``mean``, ``mcse`` (``az.mcse(method="mean")``), ``r_hat`` (rank-normalised split),
        ``ess_bulk``. For draws that are all equal ``mcse`` is 0 and ``r_hat``/``ess_bulk``
        are NaN (undefined).
    """
    draws = np.asarray(values)
    if draws.ndim != 2:
        raise ValueError(f"values must have dims (chain, draw), got shape {draws.shape}")
    stat = (draws == known + 1).astype(float) if known is not None else draws.astype(float)
    mean = float(stat.mean())
    if np.all(stat == stat.flat[0]):
        return {"mean": mean, "mcse": 0.0, "r_hat": math.nan, "ess_bulk": math.nan}
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "mean": mean,
            "mcse": float(array_stats.mcse(stat, chain_axis=0, draw_axis=1, method="mean")),
            "r_hat": float(array_stats.rhat(stat, chain_axis=0, draw_axis=1)),
            "ess_bulk": float(array_stats.ess(stat, chain_axis=0, draw_axis=1, method="bulk")),
        }


def posterior_summary(
    x1_star,
    x2_star,
    y1_star,
    *,
    rho1,
    rho2,
    d,
    p=0.5,
    known=0,
    prior="improper",
    method: str = "exact",
    draws: int = 5000,
    chains: int = 4,
    tune: int = 1000,
    random_seed=None,
    cores: int = 1,
    progressbar: bool = False,
) -> dict:
    """The ``dprisk posterior --json`` payload (parameters as in :func:`sample_posterior`).

    Returns
    -------
    dict
        ``{"posterior": P[X1 = m+1 | D], "risk": posterior / p, "x2_posterior": {"k2": mass},
        "method": method}``; ``x2_posterior`` lists, with string keys in increasing ``k2``,
        the exact masses ``>= 1e-12`` (:data:`X2_MASS_MIN`) or the observed frequencies of
        the draws. Sampling methods add ``"mcse"``, ``"r_hat"`` and ``"ess_bulk"`` of the
        indicator 1[X1 = m+1] (``None`` when undefined: the indicator never changed).

    Raises
    ------
    ValueError
        As :func:`sample_posterior`.
    """
    result = sample_posterior(
        x1_star, x2_star, y1_star, rho1=rho1, rho2=rho2, d=d, p=p, known=known, prior=prior,
        method=method, draws=draws, chains=chains, tune=tune, random_seed=random_seed,
        cores=cores, progressbar=progressbar,
    )
    p = float(p)  # validated by sample_posterior
    if method == "exact":
        posterior = float(result["prob_x1"])
        mass = result["x2_pmf"].values
        keep = mass >= X2_MASS_MIN
        x2_posterior = {
            str(int(k2)): float(v)
            for k2, v in zip(result["k2"].values[keep], mass[keep], strict=True)
        }
        return {"posterior": posterior, "risk": posterior / p, "x2_posterior": x2_posterior,
                "method": method}
    draws_ds = result["posterior"]
    diagnostics = chain_diagnostics(draws_ds["X1"].values, known=int(known))
    values, counts = np.unique(draws_ds["X2"].values, return_counts=True)
    total = counts.sum()
    return {
        "posterior": diagnostics["mean"],
        "risk": diagnostics["mean"] / p,
        "x2_posterior": {
            str(int(k2)): float(c / total) for k2, c in zip(values, counts, strict=True)
        },
        "method": method,
        "mcse": diagnostics["mcse"],
        "r_hat": _finite_or_none(diagnostics["r_hat"]),
        "ess_bulk": _finite_or_none(diagnostics["ess_bulk"]),
    }
