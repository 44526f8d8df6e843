"""Posterior summaries of the two-level and nested models: one computation for both JSON forms.

:func:`summarize` turns a result -- an exact posterior in the ``h``-level form
(:class:`dprisk.inference.two_level.level_form.NestedPosterior`; the two-level one converted by
:func:`dprisk.inference.two_level.level_form.from_two_level`) or sampling draws (a DataTree whose
``posterior`` group holds ``X1 … Xh`` with dims (chain, draw)) -- into a
:class:`PosteriorSummary`. Its two JSON forms are the payloads of ``dprisk posterior``:
:meth:`PosteriorSummary.two_level_json` (keys ``posterior, risk, x2_posterior, method`` and,
for draws, ``mcse, r_hat, ess_bulk``) and :meth:`PosteriorSummary.nested_json` (keys
``posterior, risk, level_posteriors, method``). Monte Carlo diagnostics come from
:func:`dprisk.inference.mcmc.chain_stats.chain_diagnostics`. For draws both forms add
``diagnostics`` (``{"X1": {r_hat, ess_bulk, ess_tail, mcse_mean}, "X2": …}``, every unknown)
and ``verdict`` (``{"converged": bool, "reason": str}``) of
:mod:`dprisk.inference.mcmc.convergence`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dprisk.inference.mcmc.chain_stats import chain_diagnostics
from dprisk.inference.mcmc.convergence import draws_verdict, unknown_diagnostics
from dprisk.models.scenario import Scenario

__all__ = ["X2_MASS_MIN", "PosteriorSummary", "summarize"]

#: Smallest exact posterior mass of X2 = k2 listed in the two-level form.
X2_MASS_MIN = 1e-12


def _number(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _pmf_stats(values: np.ndarray, pmf: np.ndarray) -> dict:
    mean = float((values * pmf).sum())
    cdf = np.cumsum(pmf)

    def quantile(q):
        return int(values[min(int((cdf < q - 1e-12).sum()), len(values) - 1)])

    return {
        "mean": mean,
        "sd": float(np.sqrt((pmf * (values - mean) ** 2).sum())),
        "q025": quantile(0.025),
        "median": quantile(0.5),
        "q975": quantile(0.975),
    }


def _draw_stats(x: np.ndarray) -> dict:
    flat = x.ravel()
    # constant chain: mcse 0, R-hat/ESS undefined (None); fewer than 4 draws a chain: all None
    diagnostics = chain_diagnostics(x)
    return {
        "mean": float(flat.mean()),
        "sd": float(flat.std()),
        "q025": int(np.quantile(flat, 0.025, method="inverted_cdf")),
        "median": int(np.quantile(flat, 0.5, method="inverted_cdf")),
        "q975": int(np.quantile(flat, 0.975, method="inverted_cdf")),
        "mcse_mean": _number(diagnostics["mcse"]),
        "ess_bulk": _number(diagnostics["ess_bulk"]),
        "r_hat": _number(diagnostics["r_hat"]),
    }


@dataclass(frozen=True)
class PosteriorSummary:
    """Summary of one release's posterior (see :func:`summarize`).

    Attributes
    ----------
    posterior : float
        ``P[X1 = m + 1 | D]`` (exact, or the mean of the indicator over the draws).
    risk : float
        ``posterior / p``.
    method : str
        The method that produced the result.
    result : object
        The exact posterior (``h``-level form) or the DataTree of draws.
    target : dict or None
        For draws: ``mcse``, ``r_hat``, ``ess_bulk`` of the indicator ``1[X1 = m + 1]``
        (``None`` where undefined).
    scenario : Scenario or None
        The validated scenario of the result.
    release : Release or None
        The release the result conditions on (when the caller recorded it).
    """

    posterior: float
    risk: float
    method: str
    result: object
    target: dict | None
    scenario: Scenario | None = None
    release: object = None

    @property
    def _draws(self) -> bool:
        return self.target is not None

    def convergence(self) -> dict:
        """``{"diagnostics": {...}, "verdict": {...}}`` of the draws ({} for an exact result)."""
        if not self._draws:
            return {}
        posterior = self.result["posterior"]
        diagnostics = unknown_diagnostics(posterior)
        return {"diagnostics": diagnostics,
                "verdict": draws_verdict(posterior, diagnostics).as_json()}

    def _level_pmf(self, level: int) -> tuple[np.ndarray, np.ndarray]:
        """``(values, pmf)`` of ``X_level`` from the exact posterior of one release."""
        pmf = self.result.level_pmf[level - 1]
        return self.result.level_start[level - 1] + np.arange(pmf.shape[-1]), pmf

    def level_draws(self, level: int) -> np.ndarray:
        """Draws of ``X_level`` with dims (chain, draw) (sampling results only)."""
        return np.asarray(self.result["posterior"][f"X{level}"].values)

    def level_statistics(self, level: int) -> dict:
        """``mean, sd, q025, median, q975`` of ``X_level`` (+ ``mcse_mean, ess_bulk, r_hat``)."""
        if self._draws:
            return _draw_stats(self.level_draws(level))
        return _pmf_stats(*self._level_pmf(level))

    def x2_distribution(self) -> dict:
        """``{"k2": mass}``: exact masses ``>= X2_MASS_MIN`` or frequencies of the draws."""
        if self._draws:
            values, counts = np.unique(self.level_draws(2), return_counts=True)
            total = counts.sum()
            return {str(int(k2)): float(c / total) for k2, c in zip(values, counts, strict=True)}
        values, mass = self._level_pmf(2)
        keep = mass >= X2_MASS_MIN
        # Rounding in the joint table (about eps * (rho2 + rho1/d)) can lift a mass that is 1
        # within that accuracy just above 1: a printed probability stays in [0, 1].
        return {str(int(k2)): min(float(v), 1.0)
                for k2, v in zip(values[keep], mass[keep], strict=True)}

    def two_level_json(self) -> dict:
        """``{"posterior", "risk", "x2_posterior", "method"}`` (+ draws' diagnostics).

        Draws add ``mcse, r_hat, ess_bulk`` (of the indicator), ``diagnostics`` and ``verdict``.
        """
        out = {"posterior": self.posterior, "risk": self.risk,
               "x2_posterior": self.x2_distribution(), "method": self.method}
        return {**out, **self.target, **self.convergence()} if self._draws else out

    def nested_json(self, h: int) -> dict:
        """``{"posterior", "risk", "level_posteriors": {"1": {...}, ...}, "method"}`` (+ …).

        Draws add ``diagnostics`` and ``verdict``.
        """
        levels = {str(level): self.level_statistics(level) for level in range(1, h + 1)}
        return {"posterior": self.posterior, "risk": self.risk, "level_posteriors": levels,
                "method": self.method, **self.convergence()}


def summarize(result, scenario: Scenario, method: str, release=None) -> PosteriorSummary:
    """The summary of one release's exact posterior or draws (module docstring).

    Parameters
    ----------
    result : NestedPosterior or xarray.DataTree
        An exact posterior of one release in the ``h``-level form, or draws with a
        ``posterior`` group holding ``X1 … Xh`` (chain, draw).
    scenario : Scenario
        The validated scenario of the result (``known`` and ``p`` are read from it).
    method : str
        Recorded in the summary.
    release : Release, optional
        The release of the result, recorded in the summary.
    """
    if hasattr(result, "children"):  # a DataTree of draws
        x1 = np.asarray(result["posterior"]["X1"].values)
        diagnostics = chain_diagnostics(x1, known=scenario.known)
        posterior = diagnostics["mean"]
        target = {"mcse": _number(diagnostics["mcse"]), "r_hat": _number(diagnostics["r_hat"]),
                  "ess_bulk": _number(diagnostics["ess_bulk"])}
    else:
        posterior, target = float(result.prob_x1), None
    return PosteriorSummary(posterior, posterior / scenario.p, method, result, target,
                            scenario, release)
