"""The one ArviZ routine for Monte Carlo diagnostics of draws with dims (chain, draw).

Used by the samplers' summaries (:mod:`dprisk.inference.two_level.sampling`,
:mod:`dprisk.inference.nested.posterior`) and by
:func:`dprisk.validation.crosschecks.diagnostics.convergence_report`: rank-normalised split R-hat,
bulk and
tail ESS and the MCSE of the mean (``sd / sqrt(ESS)``) of Vehtari et al. (2021), computed with
``arviz_stats.base.array_stats`` on plain arrays (the functions behind ``az.rhat``,
``az.ess`` and ``az.mcse``).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["chain_diagnostics"]


def chain_diagnostics(values, *, known: int | None = None) -> dict:
    """Mean, MCSE, R-hat and bulk and tail ESS of draws with dims (chain, draw).

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
        ``ess_bulk``, ``ess_tail``. For draws that are all equal ``mcse`` is 0 and
        ``r_hat``/``ess_bulk``/``ess_tail`` are NaN (undefined).

    Raises
    ------
    TypeError
        For boolean, object or other non-numeric draws (convert with ``.astype(float)``).
    ValueError
        For a shape other than (chains >= 1, draws >= 1) or non-finite draws.
    """
    draws = np.asarray(values)
    if draws.dtype.kind not in "iuf":
        raise TypeError(f"values must be integer or float draws, got dtype {draws.dtype}")
    if draws.ndim != 2 or draws.size == 0:
        raise ValueError(
            f"values must have dims (chain, draw) with at least one chain and one draw, "
            f"got shape {draws.shape}"
        )
    if not np.isfinite(draws).all():
        raise ValueError("values must be finite draws, got NaN or inf")
    stat = (draws == known + 1).astype(float) if known is not None else draws.astype(float)
    mean = float(stat.mean())
    if np.all(stat == stat.flat[0]):
        return {"mean": mean, "mcse": 0.0, "r_hat": math.nan, "ess_bulk": math.nan,
                "ess_tail": math.nan}
    from arviz_stats.base import array_stats
    from arviz_stats.validate import validate_ci_prob

    axes = {"chain_axis": 0, "draw_axis": 1}
    tail_prob = validate_ci_prob(None)  # ArviZ's default, as ``az.ess(method="tail")``
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "mean": mean,
            "mcse": float(array_stats.mcse(stat, **axes, method="mean")),
            "r_hat": float(array_stats.rhat(stat, **axes)),
            "ess_bulk": float(array_stats.ess(stat, **axes, method="bulk")),
            "ess_tail": float(array_stats.ess(stat, **axes, method="tail", prob=tail_prob)),
        }
