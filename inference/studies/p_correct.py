r"""Exact probability of a correct decision with two-level information (paper §4.3, S4).

The data holder fixes the truth ``(x1, x2)``, ``y1 = x2 - x1``, and asks how often the
adversary's 0-1-loss decision about ``X1 in {m, m+1}`` is right when the releases come from
the TRUE mechanism,

.. math::

    x_1^* \sim \mathrm{DG}(x_1, \tfrac{1}{2\rho_1}), \quad
    x_2^* \sim \mathrm{DG}(x_2, \tfrac{1}{2\rho_2}), \quad
    y_1^* = y_1 + \textstyle\sum_{i=1}^d \eta^{(i)},\ \eta^{(i)} \overset{iid}{\sim}
    \mathrm{DG}(0, \tfrac{1}{2\rho_1})

(the exact d-fold sum, :func:`dprisk.models.mechanism.dg_sums.sum_pmf`), while the adversary
decides with the
model's exact posterior (:mod:`dprisk.inference.two_level.exact`, which uses the DG(0, d/(2 rho1))
approximation of the sum: that is the adversary's model).

Structure used for speed. ``x1*`` enters the joint posterior only through
:math:`e^{-\rho_1 (x_1^* - k_1)^2}`, so the posterior log-odds is

.. math::

    L(x_1^*, x_2^*, y_1^*) = L_m(x_2^*, y_1^*) + 2\rho_1 (x_1^* - m),

with :math:`L_m` the log-odds at ``x1* = m`` (one exact k2 enumeration per ``(x2*, y1*)``).
The adversary decides ``m + 1`` iff :math:`L > 0`, i.e. iff ``x1* >= t(x2*, y1*)`` with
:math:`t = m + \lfloor -L_m / (2\rho_1) \rfloor + 1`, and

.. math::

    P[\text{correct}] = \sum_{x_2^*, y_1^*} P[x_2^*]\,P[y_1^*]\,
        \begin{cases} P[X_1^* \ge t \mid x_1] & x_1 = m + 1 \\
                      P[X_1^* < t \mid x_1] & x_1 = m \end{cases}

with exact discrete-Gaussian tails in ``x1*`` (no sum over ``x1*``). The ``(x2*, y1*)`` grid
is chosen from the parameters so that its neglected probability is below ``tail_mass``
(checked, reported as ``neglected_mass``). Posteriors equal to 1/2 within
:data:`dprisk.inference.studies.setup.TIE_ATOL` on the log-odds scale are *ties* (they occur
exactly, e.g. for point-mass priors with odd ``d``); the paper's rule "decide m + 1 iff the
posterior exceeds 1/2" sends them to ``m`` (``ties="m"``, the default); ``"m+1"`` and
``"half"`` (a fair coin) are the alternatives. ``tie_mass`` reports their probability.

:func:`p_correct_variant` gives the same quantities for the paper's Gibbs sampler *as the
published numbers suggest it was run* (the constraint-dropping variant,
:mod:`dprisk.inference.studies.variant`). The set-up shared with the Monte Carlo studies (release
grid, exact log-odds, thresholds) lives in :mod:`dprisk.inference.studies.setup` and
:mod:`dprisk.inference.studies.thresholds`; imports point one way (this module uses
:mod:`dprisk.inference.studies.monte_carlo`, never the reverse).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from dprisk.inference.single_level import closed_form_kernels as single_level_kernels
from dprisk.inference.studies.setup import (
    DEFAULT_TAIL_MASS,
    TIES,
    check_ties,
    grid_for_truth,
    grid_memory,
    validated_study_params,
)
from dprisk.inference.studies.thresholds import decision_offsets
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.numerics import check_tail_mass, dg_log_normalizer
from dprisk.runtime.renamed import renamed_attributes

__all__ = [
    "SUMMARY_METHODS",
    "TwoLevelPCorrect",
    "check_study_work",
    "marginal_summary",
    "p_correct_two_level",
    "p_correct_variant",
    "study_kernel",
    "sum_over_grid",
    "upper_tail",
]

#: Decision methods of :func:`marginal_summary`.
SUMMARY_METHODS = ("exact", "mc")


# --------------------------------------------------------------------------- the sum
@dataclass(frozen=True)
class TwoLevelPCorrect:
    """Exact probability of a correct 0-1-loss decision with and without the hierarchy.

    Attributes
    ----------
    p_correct : float
        With the two-level information (two-level posterior).
    p_correct_no_hierarchy : float
        With ``x1*`` alone (:func:`dprisk.inference.single_level.closed_form.decision_threshold`).
    gain, loss : float
        ``P[two-level decision correct, single-level wrong]`` and the reverse, so that
        ``p_correct - p_correct_no_hierarchy = gain - loss``.
    neglected_mass : float
        Bound of the release probability outside the ``(x2*, y1*)`` grid.
    tie_mass : float
        Probability of a release whose posterior is exactly 1/2.
    x1, x2 : int
        The truth.
    model, ties : str
    """

    p_correct: float
    p_correct_no_hierarchy: float
    gain: float
    loss: float
    neglected_mass: float
    tie_mass: float
    x1: int
    x2: int
    model: str = "exact"
    ties: str = "m"

    def to_dict(self) -> dict:
        """All fields as a plain dict."""
        return asdict(self)


#: ``P[X1* >= t | x1]`` by ``(x1, rho1)``: the first threshold and the values from there.
_UPPER_TAILS: dict = {}
#: Widest range of thresholds tabulated at once.
_UPPER_TAIL_SPAN = 2**16


def upper_tail(threshold: np.ndarray, x1: int, rho1: float) -> np.ndarray:
    """``P[X1* >= t | x1]``, X1* ~ DG(x1, 1/(2 rho1)), for float ``t`` (integer or +-inf).

    1 at ``t = -inf``, 0 at ``inf``; else the exact
    :func:`dprisk.models.mechanism.discrete_gaussian.logsf_kernel` at ``t - 1``, tabulated per
    ``(x1, rho1)`` over the range of thresholds met so far (an extension widened by the span
    met on both sides: a search's thresholds drift; a repeated study, a what-if control or a
    warm benchmark finds its table here). The kernel is elementwise, so a value from the table
    is the value of a new call, whatever range was tabulated.
    """
    out = np.where(threshold == -np.inf, 1.0, 0.0)
    finite = np.isfinite(threshold)
    if not finite.any():
        return out
    ints = threshold[finite].astype(np.int64)
    low, high = int(ints.min()), int(ints.max())
    mu, precision = np.asarray(x1, dtype=np.int64), np.asarray(rho1, dtype=float)
    if high - low > _UPPER_TAIL_SPAN:  # a very wide range: only the values met
        values, inverse = np.unique(ints, return_inverse=True)
        out[finite] = np.exp(dg.logsf_kernel(values - 1, mu, precision))[inverse]
        return out
    key = (int(x1), float(rho1))
    start, table = _UPPER_TAILS.get(key, (low, np.empty(0)))
    if low < start or high >= start + table.size:
        # a first table: the range met; an extension: the union, widened by the span met on
        # both sides (a search with rho1 fixed meets drifting ranges)
        span = high - low + 1 if table.size else 0
        start, stop = min(low, start) - span, max(high + 1, start + table.size) + span
        if stop - start > _UPPER_TAIL_SPAN:
            start, stop = low, high + 1
        table = np.exp(dg.logsf_kernel(np.arange(start, stop, dtype=np.int64) - 1, mu,
                                       precision))
        if len(_UPPER_TAILS) >= 64:
            _UPPER_TAILS.clear()
        _UPPER_TAILS[key] = (start, table)
    out[finite] = table[ints - start]
    return out


def _point(t: np.ndarray, x1: int, rho1: float) -> np.ndarray:
    """``P[X1* = t]`` (0 for infinite ``t``)."""
    out = np.zeros(t.shape)
    finite = np.isfinite(t)
    if finite.any():
        out[finite] = np.exp(-rho1 * (t[finite] - x1) ** 2 - dg_log_normalizer(rho1))
    return out


def sum_over_grid(threshold, tie, weights, *, x1, m, rho1, t0, tie_weight):
    r"""Reduce per-cell thresholds to ``(p_correct, p0, gain, loss, tie_mass)`` (kernel).

    With :math:`U(t) = P[X_1^* \ge t \mid x_1]` and the single-level threshold ``t0``,
    :math:`P[\text{decide } m+1 \mid x_2^*, y_1^*] = U(t) + w_{\text{tie}} P[X_1^* = t - 1]`
    on tie cells; the sums weight each cell by ``weights`` = ``P[x2*] P[y1*]``.
    """
    both = upper_tail(np.append(np.ravel(threshold), float(t0)), x1, rho1)  # one tail table
    u_t, u_0 = both[:-1].reshape(np.shape(threshold)), float(both[-1])
    tie_point = np.where(tie, _point(threshold - 1.0, x1, rho1), 0.0)
    decide_up = u_t + tie_weight * tie_point          # P[decide m+1 | x2*, y1*]
    tie_below_t0 = tie & (threshold - 1.0 < t0)
    # P[hier = m+1, single = m] and P[hier = m, single = m+1]
    up_only = np.maximum(u_t - u_0, 0.0) + tie_weight * np.where(tie_below_t0, tie_point, 0.0)
    down_only = (np.maximum(u_0 - u_t, 0.0)
                 - tie_weight * np.where(tie & ~tie_below_t0, tie_point, 0.0))
    total = weights.sum()
    if x1 == m + 1:
        correct, correct0, gain, loss = decide_up, u_0, up_only, down_only
    else:
        correct, correct0, gain, loss = 1.0 - decide_up, 1.0 - u_0, down_only, up_only
    return (float((weights * correct).sum()), correct0 * float(total),
            float((weights * gain).sum()), float((weights * loss).sum()),
            float((weights * tie_point).sum()))


def check_study_work(params, tail_mass: float) -> None:
    """Refuse up front a study whose grid exceeds the memory or the work limit (tiny rho).

    The memory check of :func:`grid_for_truth` comes first (its message is the one for a grid
    too large for both); then steps = grid cells ``n2 ny`` (:func:`grid_memory` / 32 bytes
    per cell) times :data:`dprisk.runtime.work_limit.EXACT_GRID_CELL_STEPS`.
    """
    from dprisk.runtime.memory_limit import check_memory
    from dprisk.runtime.work_limit import EXACT_GRID_CELL_STEPS, check_work

    check_memory(grid_memory(params, tail_mass), parameter="rho1, rho2, d",
                 what="the grid of releases (x2*, y1*)")
    cells = grid_memory(params, tail_mass) / 32.0
    check_work(cells * EXACT_GRID_CELL_STEPS, parameter="rho1, rho2, d",
               what=f"the exact study's grid of {cells:.3g} releases (x2*, y1*)")


def _study(*, x2, rho1, rho2, d, x1, p, known, prior, tail_mass, ties, model):
    params, x1, x2, _ = validated_study_params(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p,
                                                known=known, prior=prior)
    check_ties(ties)
    return study_kernel(params, x1=x1, x2=x2, tail_mass=check_tail_mass(tail_mass), ties=ties,
                        model=model)


def study_kernel(params, *, x1: int, x2: int, tail_mass: float, ties: str = "m",
                 model: str = "exact") -> TwoLevelPCorrect:
    """:func:`p_correct_two_level` (``model="exact"``) on validated values (kernel).

    ``params`` a validated :class:`~dprisk.models.scenario.Scenario` (or one derived from it
    inside a validated range, as the budget searches do), ``x1`` in ``{known, known + 1}``,
    ``x2 >= x1``, ``tail_mass`` checked, ``ties`` one of ``TIES``. Only the work budget is
    checked here (it depends on the rho of each evaluation).
    """
    y1 = x2 - x1
    tie_weight = TIES[ties]
    check_study_work(params, tail_mass)
    grid = grid_for_truth(x2, y1, params, tail_mass)
    x2s, y1s = np.meshgrid(grid.x2_star, grid.y1_star, indexing="ij")
    offset, tie = decision_offsets(x2s, y1s, params, model)
    t0 = int(single_level_kernels.decision_threshold(
        np.asarray(params.rho1, dtype=float), np.asarray(params.p, dtype=float),
        np.asarray(params.known, dtype=np.int64)))
    pc, pc0, gain, loss, tie_mass = sum_over_grid(
        params.known + offset, tie, grid.weights, x1=x1, m=params.known, rho1=params.rho1,
        t0=t0, tie_weight=tie_weight)
    return TwoLevelPCorrect(pc, pc0, gain, loss, grid.neglected_mass, tie_mass, x1, x2,
                                model, ties)


def p_correct_two_level(*, x2, rho1, rho2, d, x1=None, p=0.5, known=0, prior="improper",
                           tail_mass=DEFAULT_TAIL_MASS, ties="m") -> TwoLevelPCorrect:
    r"""Exact P[correct 0-1-loss decision] using the block group (paper Figs 4-6, 10-11).

    .. math::

        P[\hat X_1 = x_1] = \sum_{x_2^*, y_1^*} P[x_2^* \mid x_2]\, P[y_1^* \mid y_1]\,
            P[\hat X_1(X_1^*, x_2^*, y_1^*) = x_1 \mid x_1]

    with the exact posterior deciding (see the module docstring for the threshold form and
    ties). Sums are exact up to ``neglected_mass < tail_mass``.

    Parameters
    ----------
    x2 : int (x2 >= x1)
        True block-group count.
    rho1, rho2 : float (> 0)
        zCDP parameters of the block and block-group releases.
    d : int (d >= 1)
        Other blocks in the block group.
    x1 : int, optional
        True block count, ``known`` or ``known + 1`` (default ``known + 1``).
    p : float (0 < p < 1)
        The adversary's prior probability :math:`P[X_1 = m+1]`.
    known : int (known >= 0)
        ``m``, the adversary's count of the others in the block with ``c``.
    prior : str or X2Prior
        ``improper``, ``truncated:U``, ``point:K``, ``PATH.py:NAME`` or a prior object.
    tail_mass : float (0 < tail_mass <= 1e-3)
        Bound on the release probability left out of the grid.
    ties : {"m", "m+1", "half"}
        Decision at a posterior of exactly 1/2.

    Returns
    -------
    TwoLevelPCorrect

    Raises
    ------
    ValueError
        Naming the bad parameter (e.g. ``x2 < x1``, ``d < 1``, an unknown prior).
    """
    return _study(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p, known=known, prior=prior,
                  tail_mass=tail_mass, ties=ties, model="exact")


def p_correct_variant(*, x2, rho1, rho2, d, x1=None, p=0.5, known=0, prior="improper",
                      tail_mass=DEFAULT_TAIL_MASS, ties="m") -> TwoLevelPCorrect:
    """As :func:`p_correct_two_level`, deciding with the constraint-dropping Gibbs variant.

    The adversary's posterior is replaced by the stationary X1 probability of the sampler
    described in :mod:`dprisk.inference.studies.variant` (what the paper's figures appear to use).
    """
    return _study(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p, known=known, prior=prior,
                  tail_mass=tail_mass, ties=ties, model="variant")


# --------------------------------------------------------------------------- CLI summary
def marginal_summary(*, rho1, rho2, d, x2, x1=None, p=0.5, known=0, prior="improper",
                     method="exact", datasets=20_000, draws=1000, random_seed=None,
                     progress: bool = False) -> dict:
    """P[correct] with and without the hierarchy, and the gain/loss split (for the CLI).

    Parameters
    ----------
    rho1, rho2, d, x2, x1, p, known, prior
        As in :func:`p_correct_two_level`.
    method : {"exact", "mc"}
        Exact grid sum, or Monte Carlo
        (:func:`dprisk.inference.studies.monte_carlo.simulate_p_correct`:
        ``datasets`` releases from the true mechanism, ``draws`` Gibbs draws each).
    datasets, draws : int (>= 1)
        Monte Carlo budget (``method="mc"`` only).
    random_seed : int, optional
        Seed of the Monte Carlo run; drawn (and returned) when not given.
    progress : bool
        A progress bar on stderr over the Monte Carlo blocks (``method="mc"`` only).

    Returns
    -------
    dict
        Exactly ``{"p_correct", "p_correct_no_hierarchy", "gain", "loss"}`` (floats), plus
        ``"mcse"`` (standard error of ``p_correct``) and ``"seed"`` (the seed used) for
        ``method="mc"``.
    """
    if method not in SUMMARY_METHODS:
        raise ValueError(f"method must be one of {SUMMARY_METHODS}, got {method!r}")
    if method == "exact":
        result = p_correct_two_level(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p,
                                        known=known, prior=prior)
        return {"p_correct": result.p_correct,
                "p_correct_no_hierarchy": result.p_correct_no_hierarchy,
                "gain": result.gain, "loss": result.loss}
    from dprisk.inference.studies.monte_carlo import simulate_p_correct  # Monte Carlo only

    run = simulate_p_correct(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p, known=known,
                             prior=prior, datasets=datasets, draws=draws,
                             random_seed=random_seed, progress=progress)
    return {"p_correct": run.p_correct, "p_correct_no_hierarchy": run.p_correct_no_hierarchy,
            "gain": run.gain, "loss": run.loss, "mcse": run.mcse, "seed": run.random_seed}


#: Old names (issue 35: ``two_level`` for two levels, ``nested`` for h levels), still importable
#: from this module with a FutureWarning naming the new one.
__getattr__ = renamed_attributes(__name__, {
    "p_correct_hierarchical": "p_correct_two_level",
    "HierarchicalPCorrect": "TwoLevelPCorrect",
})
