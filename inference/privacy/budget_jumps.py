r"""First crossing of a target by the step-like single-level measures: P[correct] and the tail.

Both measures are one function of rho. With :math:`\eta \sim \mathrm{DG}(0, 1/(2\rho))` the
noise of the release :math:`X^* = m + 1 + \eta` (the target has the characteristic) and the
posterior log-odds :math:`L(x^*) = \operatorname{logit}(p) + \rho\,(2(x^* - m) - 1)`
(:mod:`dprisk.inference.single_level.closed_form`), the event "L exceeds a level :math:`\lambda`" is
:math:`x^* - m \ge c + 1` with

.. math:: c(\rho) = \Bigl\lfloor \tfrac12 + \frac{\delta}{2\rho} \Bigr\rfloor, \qquad
          \delta = \lambda - \operatorname{logit}(p),

so the measure is :math:`G(\rho; \delta) = P[\eta \ge c(\rho)]`:

* **P[correct]** (paper eq. 3.6): the adversary decides ``m + 1`` iff :math:`L > 0`, so
  :math:`\lambda = 0`, :math:`\delta = -\operatorname{logit}(p)`;
* **the tail** :math:`P[R'(X^*) > r^*]`: :math:`R' = \operatorname{expit}(L)/p > r^*` iff
  :math:`L > \operatorname{logit}(r^* p)`, so
  :math:`\delta = \log r^* + \log(1 - p) - \log(1 - r^* p)` (:func:`tail_delta`; no
  release exceeds :math:`r^*` when :math:`r^* p \ge 1`).

Hence the tail at prior ``p`` *is* P[correct] at the prior :math:`p' = \operatorname{expit}
(-\delta)`, and both are evaluated with :func:`dprisk.inference.single_level.closed_form.p_correct`
(``known`` does not matter: the threshold moves with ``m``).

**The jumps.** For :math:`\delta > 0`, :math:`c = k` on :math:`(\rho_{k+1}, \rho_k]` with
:math:`\rho_k = \delta / (2k - 1)` (at :math:`\rho_k` itself the posterior equals the level,
which is not "exceeds"), and :math:`c = 0` on :math:`(\rho_1, \infty)`. On a piece with
:math:`c = k \ge 1`, :math:`P[\eta \ge k]` decreases in rho (the noise concentrates), so
the piece's supremum is its left-end limit :math:`v_k = P[\eta \ge k]` at
:math:`\rho_{k+1}`, not attained; G jumps up just after each :math:`\rho_k`. On the last piece
:math:`G = (1 + P[\eta = 0])/2` increases to 1. So the first crossing
:math:`\rho^* = \inf\{\rho : G > T\}` is

* :math:`\rho_{k+1}` for the largest ``k >= 0`` with :math:`v_k > T` (found exactly: every
  piece is enumerated in order of rho; :math:`v_0 = P[\eta \ge 0]` at :math:`\rho_1`), else
* the root of :math:`P[\eta \ge 0] = T` on :math:`(\rho_1, \infty)` (Brent's method on the
  one continuous increasing piece).

Only finitely many pieces can cross: :math:`P[\eta \ge k] \le e^{-\rho k^2}` and
:math:`k^2/(2k+1) \ge (2k-1)/4` give :math:`v_k \le e^{-\delta (2k-1)/4}`, which is at most
``T`` from :math:`k_{\max} = \lceil (4 \log(1/T)/\delta + 1)/2 \rceil` on.
For :math:`\delta = 0` (P[correct] at p = 1/2) there is one increasing piece from 1/2; for
:math:`\delta < 0` G tends to 1 as rho -> 0, so no rho meets a target below 1.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np

from dprisk.models.mechanism.discrete_gaussian import log_tail_kernel
from dprisk.models.roots import brent_root

__all__ = ["MAX_PIECES", "at_or_below_jump", "check_pieces", "first_crossing", "jump_points",
           "piece_suprema", "smallest_delta", "tail_delta", "tail_prior"]

#: Most pieces enumerated before a target is refused (delta too close to 0).
MAX_PIECES = 5_000
#: Largest ``delta`` whose :math:`e^{\delta}` :func:`tail_prior` evaluates (709.78 overflows).
TAIL_PRIOR_EXP_MAX = 700.0
_BLOCK = 128
_ZERO = np.asarray(0, dtype=np.int64)


def tail_delta(p: float, max_ratio: float) -> float:
    r""":math:`\delta = \log r^* + \log(1 - p) - \log(1 - r^* p)`; ``inf`` when :math:`r^* p \ge 1`.

    The gap between the log-odds level of a posterior :math:`r^* p` and the prior log-odds.
    """
    bound = max_ratio * p
    if bound >= 1.0:
        return math.inf
    return math.log(max_ratio) + math.log1p(-p) - math.log1p(-bound)


def at_or_below_jump(rho: float, where: str, p: float, max_ratio=None,
                     max_posterior=None) -> float:
    r"""``rho``, or the largest float at or below the exact jump :math:`\delta/(2k+1)` if less.

    ``rho`` and ``where`` are :func:`first_crossing`'s answer; a ``"continuous"`` one is
    returned as it is, a ``"jump k"`` one is checked against the exact jump.

    The jump :math:`\rho_{k+1} = \delta/(2k + 1)` of :func:`first_crossing` is computed from a
    rounded :math:`\delta`, so its float may lie just *above* the exact jump of the given
    prior (and profile), where the measure in exact arithmetic is already the upper value
    :math:`v_k > T` (p = 0.3, T = 0.7: rho = 0.8472978603872038, 1.2e-16 above
    :math:`\operatorname{logit}(0.7)`, where P[correct] is 0.7597). Here :math:`\delta` is
    evaluated in 60-digit decimal arithmetic from the exact doubles,
    :math:`\delta = \operatorname{logit}(\lambda) - \operatorname{logit}(p)` with
    :math:`\lambda = 1/2` for P[correct] (no ``max_ratio``) and :math:`\lambda = r^*(p)\,p =
    \max(\tilde r p, \tilde a)` for the tail, and the float nearest
    :math:`\delta/(2k + 1)` is stepped down until :math:`\rho\,(2k + 1) \le \delta`
    exactly (at the jump itself the posterior equals the level: not "exceeds").
    """
    if where == "continuous":
        return rho
    k = int(where.split()[1])
    with localcontext() as context:
        context.prec = 60
        prior = Decimal(p)
        level = Decimal(1) / 2
        if max_ratio is not None:
            level = Decimal(max_ratio) * prior
            if max_posterior is not None:
                level = max(level, Decimal(max_posterior))
        delta = (level / (1 - level)).ln() - (prior / (1 - prior)).ln()
        jump = float(delta / (2 * k + 1))
        while Decimal(jump) * (2 * k + 1) > delta:
            jump = math.nextafter(jump, 0.0)
    return min(rho, jump)


def tail_prior(delta: float) -> float:
    r"""The shifted prior :math:`p' = \operatorname{expit}(-\delta) = 1 / (1 + e^{\delta})`.

    The tail at ``p`` is P[correct] at :math:`p'` (module notes). :func:`tail_delta` reaches
    about 727.5 (:math:`p = 10^{-300}`, :math:`r^* p` within an ulp of 1), where
    :math:`e^{\delta}` overflows; past :data:`TAIL_PRIOR_EXP_MAX` the prior is
    :math:`e^{-\delta}` (subnormal there, not 0), which :math:`1/(1 + e^{\delta})` equals to
    a relative :math:`e^{-\delta}` below the double's precision.
    """
    if delta > TAIL_PRIOR_EXP_MAX:
        return math.exp(-delta)
    return 1.0 / (1.0 + math.exp(delta))


def piece_count(delta: float, target: float) -> int:
    r""":math:`k_{\max} = \lceil (4 \log(1/T)/\delta + 1)/2 \rceil`: later pieces stay below T."""
    return max(1, math.ceil((4.0 * math.log(1.0 / target) / delta + 1.0) / 2.0))


def smallest_delta(target: float) -> float:
    r"""The smallest :math:`\delta` enumerated at ``target``: :math:`4\log(1/T)/(2N - 1)`.

    ``N`` is :data:`MAX_PIECES`: :func:`piece_count` is at most ``N`` exactly when
    :math:`\delta` is at least this (up to rounding).
    """
    return 4.0 * math.log(1.0 / target) / (2.0 * MAX_PIECES - 1.0)


def check_pieces(measure: str, p: float, target: float, delta: float, max_ratio,
                  max_posterior) -> None:
    r"""Refuse a :math:`\delta` too close to 0 to enumerate, naming the option and its range.

    Called before :func:`first_crossing` with the measure's prior and options (validated).

    :math:`\delta \ge \delta_{\min}` (:func:`smallest_delta`)
    is :math:`p \le \operatorname{expit}(-\delta_{\min})` for P[correct] and
    :math:`r^*(p)\,p \ge \operatorname{expit}(\operatorname{logit} p + \delta_{\min})` for
    the tail (the bound on ``max_ratio``, or on ``max_posterior`` where it sets
    :math:`r^*`); the ends are stated with a relative margin of 1e-6 in :math:`\delta`.
    """
    if delta <= 0.0 or piece_count(delta, target) <= MAX_PIECES:
        return
    least = smallest_delta(target) * (1.0 + 1e-6)
    name = "tail tolerance" if measure == "tail" else "target"
    why = (f"the {measure} has {piece_count(delta, target)} pieces below the {name} (delta "
           f"= {delta:.3g}; at most {MAX_PIECES} are enumerated, delta >= {least:.3g} at this "
           f"{name})")
    if measure == "p-correct":
        raise ValueError(f"p = {p!r} is too close to 1/2 for the p-correct at target = "
                         f"{target!r}: {why}; allowed range: 0 < p <= "
                         f"{_shown(1.0 / (1.0 + math.exp(least)), down=True)} at this target")
    level = 1.0 / (1.0 + math.exp(-(math.log(p) - math.log1p(-p) + least)))  # r* p at least
    if max_posterior is None or max_ratio >= max_posterior / p:
        raise ValueError(f"max_ratio = {max_ratio!r} is too close to 1 for the tail at p = "
                         f"{p!r}: {why}; allowed range: max_ratio >= "
                         f"{_shown(level / p, down=False)} at this p and tolerance")
    raise ValueError(f"max_posterior = {max_posterior!r} is too close to p = {p!r} for the "
                     f"tail: {why}; allowed range: max_posterior >= "
                     f"{_shown(level, down=False)} at this p and tolerance (or max_ratio >= "
                     f"{_shown(level / p, down=False)})")


def _shown(value: float, *, down: bool) -> str:
    """``value`` to 6 significant digits, rounded ``down`` (or up): a stated end that holds."""
    text = f"{value:.6g}"
    if (float(text) > value) if down else (float(text) < value):
        step = 10.0 ** (math.floor(math.log10(value)) - 5)
        text = f"{value - step if down else value + step:.6g}"
    return text


def jump_points(delta: float, n_pieces: int) -> np.ndarray:
    r"""The jump points :math:`\rho_k = \delta/(2k - 1)`, ``k = 1 .. n_pieces`` (decreasing)."""
    k = np.arange(1, n_pieces + 1, dtype=float)
    return delta / (2.0 * k - 1.0)


def piece_suprema(delta: float, pieces) -> np.ndarray:
    r""":math:`v_k = P[\eta \ge k]` at :math:`\rho_{k+1} = \delta/(2k+1)`, each ``k`` of ``pieces``.

    :math:`v_0` is the left-end value of the last, increasing piece (c = 0 above
    :math:`\rho_1 = \delta`), also approached but not attained. ``pieces``: an int ``n``
    (``k = 0 .. n``) or an array of ``k >= 0``.
    """
    k = np.arange(0, pieces + 1) if np.ndim(pieces) == 0 else np.asarray(pieces)
    k = k.astype(np.int64)  # k >= 0 and rho > 0 by construction: the kernel, unchecked
    return np.exp(log_tail_kernel(k, np.asarray(delta / (2.0 * k + 1.0), dtype=float)))


def _last_piece_root(lower: float, target: float) -> float:
    r"""Root of :math:`P[\eta \ge 0](\rho) = T` above ``lower`` (where it is at most ``T``)."""
    def excess(rho: float) -> float:
        return float(np.exp(log_tail_kernel(_ZERO, np.asarray(rho, dtype=float)))) - target

    upper = max(2.0 * lower, 1.0)
    while excess(upper) <= 0.0:
        upper *= 2.0
    if lower <= 0.0:  # delta = 0: the piece starts at rho -> 0 with value 1/2 < T
        lower = upper / 2.0
        while excess(lower) > 0.0:
            lower /= 2.0
    return float(brent_root(excess, lower, upper, xtol=1e-300, rtol=1e-15))


def first_crossing(delta: float, target: float) -> tuple[float, str]:
    r"""The first crossing :math:`\rho^* = \inf\{\rho : G(\rho; \delta) > T\}`, and where it is.

    Parameters
    ----------
    delta : float (>= 0)
        :math:`\delta` of the measure (see the module docstring); finite.
    target : float (0 < T < 1, and T > 1/2 when delta = 0)

    Returns
    -------
    rho : float
        :math:`\rho^*` from the rounded ``delta`` (the caller moves it down to the exact
        jump, :func:`at_or_below_jump`, and by rounding if the float evaluation at
        :math:`\rho^*` falls on the jump's upper side).
    where : str
        ``"jump k"`` (a jump point :math:`\rho_{k+1}`) or ``"continuous"`` (the last piece).

    Raises
    ------
    ValueError
        If more than :data:`MAX_PIECES` pieces would have to be enumerated.
    """
    if delta == 0.0:
        return _last_piece_root(0.0, target), "continuous"
    n_pieces = piece_count(delta, target)
    if n_pieces > MAX_PIECES:
        raise ValueError(
            f"the measure has {n_pieces} pieces below the target (delta = {delta:.3g} too close "
            f"to 0: p too close to 1/2 for p-correct, or the ratio bound too close to 1 for "
            f"tail; allowed: at most {MAX_PIECES} pieces)")
    # from the smallest rho (largest k) up, in blocks: a block's memory is bounded by
    # _BLOCK x the tail-sum terms at its smallest rho, and the first block that crosses ends it
    for top in range(n_pieces, -1, -_BLOCK):
        pieces = np.arange(top, max(top - _BLOCK, -1), -1)
        crossing = np.flatnonzero(piece_suprema(delta, pieces) > target)
        if crossing.size:
            k = int(pieces[crossing[0]])  # the largest k: the smallest rho
            return delta / (2.0 * k + 1.0), f"jump {k}"
    return _last_piece_root(delta, target), "continuous"
