r"""The compiled (numba) loop of :meth:`dprisk.inference.mcmc.fused_steps.FusedSteps.run`.

:func:`fused_iterations` runs the iterations of PyMC's ``BinaryGibbsMetropolis`` step of the
indicator ``T`` and (optionally) the Metropolis step of ``X`` exactly as the Python loop of
:class:`~dprisk.inference.mcmc.fused_steps.FusedSteps` does, drawing from the steps' own
``numpy.random.Generator`` objects (numba's ``Generator.random`` and
``Generator.standard_normal`` are numpy's algorithms on the same bit generator: the same
doubles, and the generators' states advanced in place as by the Python calls). Per iteration:

* ``T``: ``u = random()``; if ``u < transit_p`` the flip ``1 - T`` is proposed with log-ratio
  :math:`r = \log \pi(1 - T, X) - \log \pi(T, X)`, accepted when ``r`` is finite and
  ``log u' < r`` for ``u' = random()``;
* ``X``: ``delta = (0.0 + s_0 z) \cdot scaling`` with ``z = standard_normal()``, the proposal
  ``X + round(delta)`` (half to even), accepted when :math:`r = \log \pi(T, X') - \log \pi(T,
  X)` is finite and ``log u < r``; ``steps_until_tune`` decremented.

The loop returns to its Python driver (``state[STATUS]``) whenever it needs what only the
driver does exactly as PyMC: a log density it has not been given (``MISS``: the model's
compiled graph at ``(state[MISS_T], state[MISS_X])``), the tuning of the Metropolis scale
(``TUNE``: PyMC's ``tune`` function), an acceptance whose ``log u`` lies within a relative
``1e-9`` of ``r`` (``TIE``: decided with ``np.log`` as PyMC computes it) and a proposal too
large for exact arithmetic (``BIG``: PyMC's array operations). ``state[PHASE]`` says where
the iteration resumes, with the draws already made kept in ``state`` and ``reals``, so every
draw is made once and in PyMC's order. Log densities are read from ``table[t, x - x_lo]``
(where ``known``) or from two spare slots for values far outside that window.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dprisk.runtime.numba_locator import use_content_keyed_locator

use_content_keyed_locator()  # cached by the source's contents, not its path (before decorating)

__all__ = ["BIG", "DONE", "MISS", "STATE_SIZE", "TIE", "TUNE", "fused_iterations"]

#: ``state`` slots (int64).
DONE_ITERATIONS, T, X, PHASE, STEPS_UNTIL_TUNE, ACCEPTED_SINCE, TUNING, HAS_X = range(8)
STATUS, MISS_T, MISS_X, PROPOSAL, DECISION, ACCEPTED, HAVE_RATE = range(8, 15)
SLOT_T, SLOT_X, SLOT_VALID = 15, 17, 19  # two slots each: (t, x) keys and validity
STATE_SIZE = 21
#: ``reals`` slots (float64).
TRANSIT_P, S0, SCALING, U, RATIO, ACCEPT_RATE, NORMAL, SLOT_VALUE = range(8)  # two values
REALS_SIZE = 10
#: ``state[STATUS]`` on return.
DONE, MISS, TUNE, TIE, BIG = range(5)
#: Phases of an iteration (``state[PHASE]``).
START, FLIP, FLIP_DECIDED, MOVE, MOVE_RATIO, MOVE_DECIDED = range(6)

_LOG_TIE = 1e-9
_EXACT_DELTA = 2.0**53
_EXACT_VALUE = 2**62


@njit(cache=True)
def _lookup(table, known, x_lo, state, reals, t, x):
    """``log pi(t, x)`` from the window or a slot; ``nan`` (and ``MISS`` keys set) if absent."""
    j = x - x_lo
    if 0 <= j < table.shape[1] and known[t, j]:
        return table[t, j]
    for s in range(2):
        if state[SLOT_VALID + s] and state[SLOT_T + s] == t and state[SLOT_X + s] == x:
            return reals[SLOT_VALUE + s]
    state[MISS_T] = t
    state[MISS_X] = x
    return math.nan


@njit(cache=True)
def _decide(u, ratio, reals):
    """0 / 1: ``log u < ratio`` decided by ``math.log``; -1: too close to call (``TIE``).

    On a tie ``u`` and ``ratio`` are kept in ``reals`` (slots ``U``, ``RATIO``): the driver
    decides with ``np.log`` as PyMC does.
    """
    if u > 0.0:
        gap = math.log(u) - ratio
        if abs(gap) > _LOG_TIE * (1.0 + abs(ratio)):
            return 1 if gap < 0.0 else 0
    reals[U] = u
    reals[RATIO] = ratio
    return -1


@njit(cache=True)
def fused_iterations(gibbs_rng, metropolis_rng, table, known, x_lo, state, reals,
                     t_out, x_out, iterations, record):
    """Run iterations until ``iterations`` are done or the driver is needed (module notes).

    ``state``/``reals`` hold the loop's values between calls (slots above); ``t_out`` and
    ``x_out`` receive each iteration's ``T`` and ``X`` when ``record``. Returns nothing: the
    outcome is ``state[STATUS]``.
    """
    i = state[DONE_ITERATIONS]
    t = state[T]
    x = state[X]
    phase = state[PHASE]
    has_x = state[HAS_X] != 0
    status = DONE
    while i < iterations:
        if phase == START:
            current = _lookup(table, known, x_lo, state, reals, t, x)
            if math.isnan(current):
                status = MISS
                break
            phase = FLIP if gibbs_rng.random() < reals[TRANSIT_P] else MOVE
        if phase == FLIP:
            proposed = _lookup(table, known, x_lo, state, reals, 1 - t, x)
            if math.isnan(proposed):
                status = MISS
                break
            current = _lookup(table, known, x_lo, state, reals, t, x)
            ratio = proposed - current
            phase = MOVE
            if math.isfinite(ratio):
                decision = _decide(gibbs_rng.random(), ratio, reals)
                if decision < 0:
                    phase = FLIP_DECIDED
                    status = TIE
                    break
                if decision:
                    t = 1 - t
        if phase == FLIP_DECIDED:
            if state[DECISION]:
                t = 1 - t
            phase = MOVE
        if phase == MOVE:
            if not has_x:
                if record:
                    t_out[i] = t
                i += 1
                phase = START
                continue
            if state[STEPS_UNTIL_TUNE] == 0 and state[TUNING]:
                status = TUNE
                break
            normal = 0.0 + reals[S0] * metropolis_rng.standard_normal()
            delta = normal * reals[SCALING]
            phase = MOVE_RATIO
            if abs(delta) < _EXACT_DELTA and abs(x) < _EXACT_VALUE:
                state[PROPOSAL] = x + np.int64(np.rint(delta))
            else:
                reals[NORMAL] = normal
                status = BIG
                break
        if phase == MOVE_RATIO:
            proposal = state[PROPOSAL]
            proposed = _lookup(table, known, x_lo, state, reals, t, proposal)
            if math.isnan(proposed):
                status = MISS
                break
            current = _lookup(table, known, x_lo, state, reals, t, x)
            if math.isnan(current):
                status = MISS
                break
            ratio = proposed - current
            reals[ACCEPT_RATE] = ratio
            state[HAVE_RATE] = 1
            state[DECISION] = 0
            phase = MOVE_DECIDED
            if math.isfinite(ratio):
                decision = _decide(metropolis_rng.random(), ratio, reals)
                if decision < 0:
                    status = TIE
                    break
                state[DECISION] = decision
        if phase == MOVE_DECIDED:
            state[ACCEPTED] = state[DECISION]
            if state[DECISION]:
                state[ACCEPTED_SINCE] += 1
                x = state[PROPOSAL]
            state[STEPS_UNTIL_TUNE] -= 1
            if record:
                t_out[i] = t
                x_out[i] = x
            i += 1
            phase = START
    state[DONE_ITERATIONS] = i
    state[T] = t
    state[X] = x
    state[PHASE] = phase
    state[STATUS] = status
