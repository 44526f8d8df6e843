r"""Trace and rank plots of discrete draws that agree with the convergence verdict.

The unknowns of the adversary's posterior are integers (``X1 ∈ {m, m+1}``, ``X2 … Xh``), so
their draws are full of ties. Plain ranks of tied draws share one (average) rank, the rank
histogram of each chain then has empty and overfull bins, and a uniformity test flags every
run, converged or not (ArviZ's ``plot_rank`` printing ``p=0.00``). Here:

* **Randomised ranks** (:func:`randomised_ranks`): the draws of all chains are pooled and
  ranked ``1 … N`` with ties broken at random, i.e. the ranks of ``value + U`` with ``U ~
  U(0, 1)`` independent per draw (``U < 1`` keeps distinct values in order), ``U`` from
  ``np.random.default_rng(random_seed)``, the run's seed. Under convergence every chain's
  randomised ranks are uniform on ``1 … N`` (for continuous and discrete draws alike).
* **Uniformity test** (:func:`rank_uniformity`): the chains × bins table of rank counts
  (``bins`` equal-width bins) against homogeneity, Pearson's
  :math:`\chi^2 = \sum_{c,b} (O_{cb} - E_{cb})^2 / E_{cb}` with ``E_cb`` the bin's mean count
  over the chains, scaled by ``ESS_w / N`` to allow for autocorrelated draws (a chain of
  ``n`` correlated draws carries the information of ``ESS`` independent ones; ``ESS_w`` is
  the sum of each chain's own bulk ESS of its ranks, which stays large when chains disagree,
  unlike the pooled ESS), referred to
  :math:`\chi^2_{(C-1)(B-1)}`. A rank panel is flagged when ``p < ALPHA``.
* **Trace with distribution**: per unknown, the posterior pmf of each chain (left) and its
  trace (right). A binary unknown (``X1``) is drawn as the running mean of its indicator
  ``1[X1 = m+1]`` per chain (a trace of 0/1 values is an unreadable solid block); the others
  as a step plot of a thinned window: the last :data:`TRACE_WINDOW` draws of each chain,
  thinned evenly to at most :data:`TRACE_POINTS` points.
  Every axis is labelled. Figures are drawn with matplotlib's object API (no pyplot state).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dprisk.inference.mcmc.chain_stats import chain_diagnostics

__all__ = ["ALPHA", "BINS", "TRACE_POINTS", "randomised_ranks", "rank_uniformity",
           "save_rank_plot", "save_trace_plot"]

#: Significance level below which a rank panel is flagged as not uniform.
ALPHA = 0.01
#: Bins of the rank histograms.
BINS = 20
#: Largest number of points per chain in a step trace (the window is thinned evenly).
TRACE_POINTS = 200
#: The trace's window: the last draws of each chain (thinned to TRACE_POINTS points).
TRACE_WINDOW = 2000
#: The method, as stated on the rank plot.
RANK_METHOD = ("ranks of the pooled draws with ties broken at random (value + U(0,1) jitter, "
               "seed {seed}); chi-square homogeneity test of the chains' rank histograms, "
               "scaled by the within-chain ESS / N")


def randomised_ranks(draws, *, random_seed=None) -> np.ndarray:
    """Ranks ``1 … N`` of the pooled draws, ties broken uniformly at random (module docstring).

    Parameters
    ----------
    draws : array_like, shape (chains, draws)
        Numeric draws of one variable.
    random_seed : int, numpy.random.Generator or None
        Seed of the ``U(0, 1)`` jitter.

    Returns
    -------
    ndarray of int64, shape (chains, draws)
        The rank of each draw among all ``N = chains x draws``.
    """
    values = np.asarray(draws, dtype=float)
    jitter = np.random.default_rng(random_seed).random(values.shape)
    order = np.lexsort((jitter.ravel(), values.ravel()))
    ranks = np.empty(values.size, dtype=np.int64)
    ranks[order] = np.arange(1, values.size + 1)
    return ranks.reshape(values.shape)


def rank_uniformity(draws, *, bins: int = BINS, random_seed=None) -> dict:
    """Randomised rank histograms per chain and the ESS-scaled chi-square test of uniformity.

    Parameters
    ----------
    draws : array_like, shape (chains >= 2, draws)
        Numeric draws of one variable.
    bins : int (>= 2)
        Equal-width rank bins.
    random_seed : int, numpy.random.Generator or None
        Seed of the tie-breaking jitter.

    Returns
    -------
    dict
        ``counts`` (chains, bins), ``expected`` per bin of one chain, ``statistic`` (scaled
        chi-square), ``dof``, ``p_value`` and ``flagged`` (``p_value < ALPHA``); a constant
        variable has ``p_value`` 1 (nothing to rank).
    """
    from scipy import stats

    values = np.asarray(draws, dtype=float)
    chains, n = values.shape
    ranks = randomised_ranks(values, random_seed=random_seed)
    edges = np.linspace(0.5, values.size + 0.5, bins + 1)
    counts = np.stack([np.histogram(r, bins=edges)[0] for r in ranks])
    expected = n / bins
    dof = (chains - 1) * (bins - 1)
    if np.all(values == values.flat[0]):  # constant draws: nothing to compare
        return {"counts": counts, "expected": expected, "statistic": 0.0, "dof": dof,
                "p_value": 1.0, "flagged": False}
    column = counts.sum(axis=0, keepdims=True) / chains
    pearson = float(((counts - column) ** 2 / column).sum())
    statistic = pearson * min(1.0, _within_chain_ess(ranks) / values.size)
    p_value = float(stats.chi2.sf(statistic, dof))
    return {"counts": counts, "expected": expected, "statistic": statistic, "dof": dof,
            "p_value": p_value, "flagged": p_value < ALPHA}


def _within_chain_ess(ranks: np.ndarray) -> float:
    """Sum over chains of each chain's own bulk ESS of its ranks (``n`` where undefined).

    Within-chain only: the ESS of all chains together collapses when the chains disagree,
    which would hide exactly the disagreement the test is for.
    """
    total = 0.0
    for row in ranks:
        ess = chain_diagnostics(row[None, :].astype(float))["ess_bulk"]
        total += ess if np.isfinite(ess) else row.size
    return total


def _binary(values: np.ndarray, known: int | None) -> bool:
    return known is not None and bool(np.isin(values, (known, known + 1)).all())


def save_rank_plot(posterior: dict, path: Path, *, random_seed=None, bins: int = BINS) -> dict:
    """Save the randomised rank plot of every variable of ``posterior`` to ``path`` (PNG).

    Parameters
    ----------
    posterior : dict of str to ndarray (chains, draws)
        Draws per variable (e.g. ``X1``, ``X2``).
    path : Path
        The PNG file to write.
    random_seed : int or None
        Seed of the tie-breaking (stated in the title).
    bins : int
        Rank bins.

    Returns
    -------
    dict
        ``{variable: p_value}`` of :func:`rank_uniformity` as drawn.
    """
    from matplotlib.figure import Figure

    names = list(posterior)
    fig = Figure(figsize=(7, 2.6 * len(names)))
    axes = fig.subplots(len(names), 1, squeeze=False)
    p_values = {}
    for ax, name in zip(axes[:, 0], names, strict=True):
        test = rank_uniformity(posterior[name], bins=bins, random_seed=random_seed)
        p_values[name] = test["p_value"]
        centres = np.arange(bins) + 0.5
        for chain, counts in enumerate(test["counts"]):
            ax.step(centres, counts, where="mid", label=f"chain {chain}")
        band = 2 * np.sqrt(test["expected"] * (1 - 1 / bins))  # binomial sd of a bin count
        ax.axhspan(test["expected"] - band, test["expected"] + band, color="0.85", zorder=0,
                   label="uniform ± 2 sd (independent draws)")
        verdict = "NOT uniform" if test["flagged"] else "uniform"
        ax.set_title(f"{name}: randomised ranks {verdict} (p = {test['p_value']:.2f})")
        ax.set_xlabel(f"rank bin (of {bins}) of the pooled draws")
        ax.set_ylabel("draws per chain")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize="small")
    fig.text(0.01, 0.005, RANK_METHOD.format(seed=random_seed), fontsize="x-small",
             wrap=True)
    fig.tight_layout(rect=(0, 0.05, 1, 1 - 0.4 / (2.6 * len(names))))
    fig.savefig(path, format="png")
    return p_values


def _ordinal_suffix(number: int) -> str:
    """English ordinal suffix of ``number``: 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st."""
    if number % 100 in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")


def save_trace_plot(posterior: dict, path: Path, *, known: int | None = None) -> None:
    """Save the trace-with-distribution plot of every variable of ``posterior`` (PNG).

    Parameters
    ----------
    posterior : dict of str to ndarray (chains, draws)
        Draws per variable.
    path : Path
        The PNG file to write.
    known : int, optional
        The known count m: a variable on ``{m, m+1}`` is drawn as the running mean of
        ``1[value = m+1]``.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    names = list(posterior)
    fig = Figure(figsize=(10, 2.6 * len(names)))
    axes = fig.subplots(len(names), 2, squeeze=False, gridspec_kw={"width_ratios": (1, 2)})
    for (left, right), name in zip(axes, names, strict=True):
        values = np.asarray(posterior[name])
        support = np.arange(values.min(), values.max() + 1)
        for chain, row in enumerate(values):
            pmf = np.bincount(row - support[0], minlength=support.size) / row.size
            left.plot(support, pmf, marker="o", linewidth=1, label=f"chain {chain}")
        left.xaxis.set_major_locator(MaxNLocator(integer=True))
        left.set_xlabel(name)
        left.set_ylabel("posterior probability")
        left.set_title(f"{name}: distribution per chain")
        draw = np.arange(values.shape[1])
        if _binary(values, known):
            indicator = (values == known + 1).astype(float)
            running = np.cumsum(indicator, axis=1) / (draw + 1)
            every = max(1, draw.size // TRACE_WINDOW)  # a smooth curve: a few points suffice
            for chain, row in enumerate(running):
                right.plot(draw[::every], row[::every], label=f"chain {chain}")
            right.set_ylabel(f"running mean of 1[{name} = {known + 1}]")
            right.set_title(f"{name}: running mean of the indicator per chain")
        else:
            start = max(0, values.shape[1] - TRACE_WINDOW)
            step = max(1, (values.shape[1] - start) // TRACE_POINTS)
            for chain, row in enumerate(values):
                right.step(draw[start::step], row[start::step], where="post", linewidth=0.8,
                           label=f"chain {chain}")
            right.yaxis.set_major_locator(MaxNLocator(integer=True))
            thinned = f", every {step}{_ordinal_suffix(step)}" if step > 1 else ""
            right.set_ylabel(name)
            right.set_title(f"{name}: trace of draws {start}-{values.shape[1] - 1}{thinned}")
        right.set_xlabel("draw")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize="small")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.4 / (2.6 * len(names))))
    fig.savefig(path, format="png")
