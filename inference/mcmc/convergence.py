r"""Per-unknown convergence diagnostics of a sampling run and the one verdict that sums them up.

Every unknown of the adversary's posterior -- ``X1`` and ``X2`` in the two-level model,
``X1 … Xh`` in the ``h``-level model -- gets, from
:func:`dprisk.inference.mcmc.chain_stats.chain_diagnostics` (ArviZ's ``array_stats``, Vehtari
et al. 2021):

* ``r_hat``: the rank-normalised split :math:`\hat R` (the larger of the bulk and folded
  versions);
* ``ess_bulk`` and ``ess_tail``: the bulk and tail effective sample sizes;
* ``mcse_mean``: the Monte Carlo standard error of the posterior mean,
  :math:`\mathrm{sd} / \sqrt{\mathrm{ESS}_\mathrm{mean}}`.

``X1 = m + 1[\text{target}]`` is an affine function of the target indicator, so its R-hat and
ESS are those of the indicator and its ``mcse_mean`` is the MCSE of ``P[X1 = m+1 | D]``.

The verdict (:func:`verdict`): *converged* when every non-constant unknown has
``r_hat < RHAT_MAX`` and ``ess_bulk, ess_tail >= ESS_MIN`` (Vehtari et al.'s thresholds,
1.01 and 400), otherwise *not converged*; its reason names every failing statistic, or
states the thresholds met. An unknown constant over all draws (e.g. ``X1`` under a
point-mass prior that rules out ``m + 1``) has undefined R-hat and ESS (``None``); it is
named in the reason and is not a failure. Constancy is read from the draws themselves
(:func:`constant_unknowns`, passed to :func:`verdict` by :func:`draws_verdict`), never from
a missing statistic: with fewer than :data:`MIN_DRAWS` draws per chain every statistic of a
varying unknown is undefined too, and that is a failure (too few draws to judge), as is an
undefined R-hat with one chain. With fewer than :data:`MIN_DRAWS` draws per chain a constant
unknown is a failure as well: one draw is always constant, so constancy then tells a point
mass from a stuck chain no better than the undefined statistics do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dprisk.inference.mcmc.chain_stats import chain_diagnostics

__all__ = [
    "ESS_MIN",
    "MIN_DRAWS",
    "RHAT_MAX",
    "Verdict",
    "constant_unknowns",
    "draws_verdict",
    "unknown_diagnostics",
    "unknown_names",
    "verdict",
]

#: Largest acceptable rank-normalised split R-hat.
RHAT_MAX = 1.01
#: Smallest acceptable bulk and tail effective sample size.
ESS_MIN = 400
#: Fewest draws per chain for which ArviZ's split R-hat, ESS and MCSE are defined (each chain
#: is split in halves of at least two draws).
MIN_DRAWS = 4
#: The statistics reported per unknown, in order.
STATISTICS = ("r_hat", "ess_bulk", "ess_tail", "mcse_mean")


def _number(value) -> float | None:
    """A finite float, or None for an undefined (NaN) statistic."""
    value = float(value)
    return value if math.isfinite(value) else None


def unknown_names(posterior) -> list[str]:
    """``["X1", "X2", …]``: the consecutive levels ``X1 … Xh`` present in ``posterior``."""
    names = []
    while f"X{len(names) + 1}" in posterior:
        names.append(f"X{len(names) + 1}")
    return names


def _chain_draw(values) -> np.ndarray:
    """The draws of one unknown as an array with dims (chain, draw)."""
    if hasattr(values, "transpose") and hasattr(values, "dims"):
        values = values.transpose("chain", "draw", ...)
    return np.asarray(values)


def constant_unknowns(posterior) -> list[str]:
    """The unknowns ``X1 … Xh`` of ``posterior`` that take one value in every draw.

    Read from the draws (all equal to the first), whatever their statistics.
    """
    out = []
    for name in unknown_names(posterior):
        values = _chain_draw(posterior[name])
        if values.size and np.all(values == values.flat[0]):
            out.append(name)
    return out


def unknown_diagnostics(posterior) -> dict[str, dict]:
    """``{name: {r_hat, ess_bulk, ess_tail, mcse_mean}}`` for every unknown ``X1 … Xh``.

    Parameters
    ----------
    posterior : xarray.Dataset or mapping of str to DataArray
        The ``posterior`` group of a sampling run: ``X1 … Xh`` with dims ``(chain, draw)``.

    Returns
    -------
    dict
        Per unknown, the four statistics of the module docstring; an undefined statistic
        (a constant unknown) is ``None``, a constant unknown's ``mcse_mean`` is 0.

    Raises
    ------
    ValueError
        If ``posterior`` holds no ``X1``.
    """
    names = unknown_names(posterior)
    if not names:
        raise ValueError("posterior must hold the unknowns X1, X2, ... with dims (chain, draw)")
    table = {}
    for name in names:
        stats = chain_diagnostics(_chain_draw(posterior[name]).astype(float))
        table[name] = {"r_hat": _number(stats["r_hat"]), "ess_bulk": _number(stats["ess_bulk"]),
                       "ess_tail": _number(stats["ess_tail"]),
                       "mcse_mean": _number(stats["mcse"])}
    return table


@dataclass(frozen=True)
class Verdict:
    """Whether a run converged, and why (:func:`verdict`).

    Attributes
    ----------
    converged : bool
        Every non-constant unknown meets the R-hat and ESS thresholds.
    reason : str
        One line: the failing statistics (``"R-hat of X2 is 1.0300 >= 1.01; ..."``) or the
        thresholds met, with any constant unknown named.
    """

    converged: bool
    reason: str

    def as_json(self) -> dict:
        """``{"converged": bool, "reason": str}``."""
        return {"converged": self.converged, "reason": self.reason}


def verdict(diagnostics: dict[str, dict], *, constant=None, shape: tuple[int, int] | None = None,
            rhat_max: float = RHAT_MAX, ess_min: float = ESS_MIN) -> Verdict:
    """The verdict on the diagnostics of :func:`unknown_diagnostics` (module docstring).

    Parameters
    ----------
    diagnostics : dict
        ``{name: {r_hat, ess_bulk, ess_tail, mcse_mean}}``. ``r_hat`` None for an unknown
        that varies (one chain: R-hat compares chains; fewer than :data:`MIN_DRAWS` draws per
        chain: nothing is defined) is a failure, as the run's mixing is unchecked.
    constant : iterable of str, optional
        The unknowns constant over the draws (:func:`constant_unknowns`; not failures). When
        not given, an unknown is taken as constant when its ``mcse_mean`` is exactly 0 with
        ``r_hat`` None, as :func:`unknown_diagnostics` reports constant draws (an undefined
        ``mcse_mean``, None, is not 0: the draws vary but are too few).
    shape : (int, int), optional
        ``(chains, draws per chain)`` of the run, to say why an R-hat is undefined; with
        fewer than :data:`MIN_DRAWS` draws per chain a constant unknown is a failure too.
    rhat_max : float (> 1)
        Largest acceptable R-hat (default :data:`RHAT_MAX`).
    ess_min : float (> 0)
        Smallest acceptable bulk and tail ESS (default :data:`ESS_MIN`).
    """
    if constant is None:
        constant = [name for name, row in diagnostics.items()
                    if row["r_hat"] is None and row["mcse_mean"] is not None
                    and row["mcse_mean"] == 0]
    constant = [name for name in diagnostics if name in set(constant)]
    chains, draws = shape if shape is not None else (None, None)
    problems = []
    too_few = draws is not None and draws < MIN_DRAWS
    for name, row in diagnostics.items():
        if name in constant:  # the same value in every draw: a point mass, unless too few
            if too_few:
                problems.append(f"{name} is constant over only {draws} draw"
                                f"{'s' if draws != 1 else ''} per chain, too few to tell a "
                                f"point mass from a stuck chain (run at least {MIN_DRAWS} "
                                f"draws per chain)")
            continue
        if row["r_hat"] is None:  # varies, but R-hat is undefined
            if draws is not None and draws < MIN_DRAWS:
                problems.append(f"R-hat of {name} is undefined with {draws} draw"
                                f"{'s' if draws != 1 else ''} per chain (run at least "
                                f"{MIN_DRAWS} draws per chain and 2 chains)")
            elif chains is None or chains == 1:
                problems.append(f"R-hat of {name} is undefined with one chain (run at least 2 "
                                f"chains to check mixing)")
            else:
                problems.append(f"R-hat of {name} is undefined")
        elif not row["r_hat"] < rhat_max:
            problems.append(f"R-hat of {name} is {row['r_hat']:.4f} >= {rhat_max}")
        for kind in ("bulk", "tail"):
            ess = row[f"ess_{kind}"]
            if ess is None or not ess >= ess_min:
                shown = "undefined" if ess is None else f"{ess:.0f}"
                problems.append(f"{kind} ESS of {name} is {shown} < {ess_min}")
    notes = [] if too_few else [
        f"{name} is constant over all draws (R-hat undefined, not a failure)" for name in constant]
    if problems:
        return Verdict(False, "; ".join(problems + notes))
    checked = [name for name in diagnostics if name not in constant]
    met = (f"R-hat < {rhat_max} and bulk/tail ESS >= {ess_min} for {', '.join(checked)}"
           if checked else "no unknown varies over the draws")
    return Verdict(True, "; ".join([met, *notes]))


def draws_verdict(posterior, diagnostics: dict[str, dict] | None = None) -> Verdict:
    """:func:`verdict` of a run's ``posterior`` group, constancy and shape read from its draws.

    ``diagnostics``: :func:`unknown_diagnostics` of ``posterior`` when already computed.
    """
    if diagnostics is None:
        diagnostics = unknown_diagnostics(posterior)
    names = unknown_names(posterior)
    shape = _chain_draw(posterior[names[0]]).shape[:2]
    return verdict(diagnostics, constant=constant_unknowns(posterior), shape=shape)
