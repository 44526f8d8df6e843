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

__all__ = ["STATISTICS", "chain_diagnostics"]

#: The statistics :func:`chain_diagnostics` computes besides the mean.
STATISTICS = ("mcse", "r_hat", "ess_bulk", "ess_tail")


def chain_diagnostics(values, *, known: int | None = None,
                      statistics: tuple[str, ...] = STATISTICS) -> dict:
    """Mean, MCSE, R-hat and bulk and tail ESS of draws with dims (chain, draw).

    Parameters
    ----------
    values : array_like, shape (chains, draws)
        Numeric draws (e.g. of X2), or draws of X1 when ``known`` is given.
    known : int, optional
        The known count m: the statistic is then the indicator ``1[X1 = known + 1]``.
    statistics : tuple of str
        Which of :data:`STATISTICS` to compute besides the mean (default: all). Each is
        computed by its own ArviZ function whichever others are asked for, so a subset is
        the same numbers for less work: R-hat and bulk ESS rank-normalise the draws (a
        sort and a normal quantile per draw), which costs 10 times the MCSE on 1e5 draws.

    Returns
    -------
    dict
        ``mean`` and the chosen ``statistics``: ``mcse`` (``az.mcse(method="mean")``),
        ``r_hat`` (rank-normalised split), ``ess_bulk``, ``ess_tail``. For draws that are
        all equal ``mcse`` is 0 and ``r_hat``/``ess_bulk``/``ess_tail`` are NaN (undefined).

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
    unknown = [name for name in statistics if name not in STATISTICS]
    if unknown:
        raise ValueError(f"statistics must be among {', '.join(STATISTICS)}; got {unknown}")
    stat = (draws == known + 1).astype(float) if known is not None else draws.astype(float)
    mean = float(stat.mean())
    if np.all(stat == stat.flat[0]):
        constant = {"mcse": 0.0, "r_hat": math.nan, "ess_bulk": math.nan, "ess_tail": math.nan}
        return {"mean": mean, **{name: constant[name] for name in statistics}}
    from arviz_stats.base import array_stats
    from arviz_stats.validate import validate_ci_prob

    axes = {"chain_axis": 0, "draw_axis": 1}
    functions = {
        "mcse": lambda: array_stats.mcse(stat, **axes, method="mean"),
        "r_hat": lambda: array_stats.rhat(stat, **axes),
        "ess_bulk": lambda: array_stats.ess(stat, **axes, method="bulk"),
        # ArviZ's default probability, as ``az.ess(method="tail")``
        "ess_tail": lambda: array_stats.ess(stat, **axes, method="tail",
                                            prob=validate_ci_prob(None)),
    }
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"mean": mean, **{name: float(functions[name]()) for name in statistics}}
