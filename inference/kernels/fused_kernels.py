r"""Fused (compiled) exact kernels and the rule that decides when they are used.

The two-level exact computations (:mod:`dprisk.inference.two_level.exact`, the exact P[correct] sums
of :mod:`dprisk.inference.studies.p_correct` through :mod:`dprisk.inference.studies.thresholds`,
the sweeps)
need, per release, the two branch masses :math:`\log \sum_{k_2} \pi(m + b, k_2)` on a
checked k2 window (:mod:`dprisk.inference.kernels.table_kernels`, which derives the formulas).
:func:`checked_masses` computes them either with the numpy reference
(:func:`dprisk.inference.kernels.table_kernels.checked_table`, one exponential per table cell) or
with the compiled kernel of :mod:`dprisk.inference.kernels.fused_kernels_jit` (one pass per release,
the Gaussian factor summed by a recurrence: about 6 exponentials per release instead of one
per cell); both agree within 1e-13 relative (tests/inference/test_fused_kernels.py).

When the compiled kernel is used
--------------------------------
Importing numba costs about 0.25-0.3 s and the first call of the cached kernel about
0.55-0.7 s more (numba sets up its typing and code-generation contexts even when the machine
code comes from its cache): :data:`LOAD_SECONDS`, measured on the 2-core development machine
under load, several times a whole closed-form command (``python -c "import numpy, scipy"``
takes 0.2-0.3 s). The numpy path
evaluates about :data:`NUMPY_CELLS_PER_SECOND` table cells per second. So, with
``DPRISK_KERNELS`` unset or ``auto`` (the rule is a ski rental: pay for numpy until the
numpy work would have paid for the load, then load; never worse than twice the better
choice in hindsight):

* the compiled kernel is used when numba or the kernels are already loaded in the process
  (nothing left to pay), or when the estimated numpy time of this call plus the numpy time
  already spent in the process reaches :data:`LOAD_SECONDS` (the load is then paid back);
* otherwise the numpy path runs and its estimated time is added to the process's tally.

The numpy time is estimated from measured rates: :data:`NUMPY_CELLS_PER_SECOND` table cells
(exact enumeration), :data:`NUMPY_SWEEPS_PER_SECOND` chain-sweeps and
:data:`NUMPY_ALIAS_ROW_SECONDS` per alias-table row (Gibbs sampler).

A single command-line posterior, P[correct] point or short Gibbs run therefore never imports
numba; a batch of about 2e5 releases or more, about a hundred P[correct] points, or a Monte
Carlo study loads it once. ``DPRISK_KERNELS=numpy``
or ``compiled`` forces one path (the tests use both); the compiled kernel serves the priors
whose log weight is constant on each branch's support (``improper``, ``truncated:U``,
``point:K``); other priors (user files) always take the numpy path. numba missing or failing
to load also means the numpy path.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from dprisk.inference.kernels.mass_kernels import checked_log_masses
from dprisk.inference.kernels.table_kernels import (
    MAX_PRECISION,
    MAX_WINDOW,
    initial_halfwidth,
)
from dprisk.models.numerics import expit
from dprisk.models.scenario import Scenario
from dprisk.runtime.cache import use_numba_cache
from dprisk.runtime.settings import setting

__all__ = [
    "KERNEL_MODES",
    "LOAD_SECONDS",
    "NUMPY_ALIAS_ROW_SECONDS",
    "NUMPY_CELLS_PER_SECOND",
    "NUMPY_SWEEPS_PER_SECOND",
    "branch_constant_weights",
    "checked_masses",
    "compiled_kernels",
    "kernel_mode",
    "serves",
    "table_seconds",
    "use_compiled",
]

#: Values of the ``DPRISK_KERNELS`` environment variable.
KERNEL_MODES = ("auto", "numpy", "compiled")
#: Seconds to import numba and load the cached kernels in a new process (measured).
LOAD_SECONDS = 0.9
#: Table cells (releases x 2 branches x window) per second of the numpy path (measured).
NUMPY_CELLS_PER_SECOND = 2.0e7
#: Chain-sweeps per second of the numpy Gibbs block loop (measured, Census window).
NUMPY_SWEEPS_PER_SECOND = 1.0e7
#: Seconds per alias-table row of the numpy builder (measured, window of 29).
NUMPY_ALIAS_ROW_SECONDS = 1.2e-5

#: Empty ``out_prob`` of the compiled kernel: no probabilities wanted.
_NO_PROB = np.empty(0)

_state = {"numpy_seconds": 0.0, "kernels": None, "failed": False}


def kernel_mode() -> str:
    """The ``DPRISK_KERNELS`` setting (default ``auto``).

    Raises
    ------
    ValueError
        If it is set to something other than :data:`KERNEL_MODES`.
    """
    return setting("DPRISK_KERNELS")  # parsed by dprisk.runtime.settings


def compiled_kernels():
    """The compiled kernel module (imports numba on first use), or ``None`` if unavailable."""
    if _state["kernels"] is None and not _state["failed"]:
        use_numba_cache()  # compiled kernels are cached under the user's cache directory
        try:
            from dprisk.inference.kernels import fused_kernels_jit
        except ImportError:  # numba not installed: numpy only
            _state["failed"] = True
        else:
            _state["kernels"] = fused_kernels_jit
    return _state["kernels"]


def use_compiled(numpy_seconds: float) -> bool:
    """Whether a computation estimated at ``numpy_seconds`` on numpy should be compiled.

    The rule of the module docstring; a ``False`` answer adds ``numpy_seconds`` to the tally
    (so ask once per computation).
    """
    mode = kernel_mode()
    if mode == "numpy" or _state["failed"]:
        return False
    if mode == "compiled" or _state["kernels"] is not None or "numba" in sys.modules:
        return compiled_kernels() is not None
    if _state["numpy_seconds"] + numpy_seconds >= LOAD_SECONDS:
        return compiled_kernels() is not None
    _state["numpy_seconds"] += numpy_seconds
    return False


def table_seconds(releases: int, halfwidth: int) -> float:
    """Estimated numpy seconds of the joint tables of ``R`` releases: ``2 R (2K + 3)`` cells."""
    return 2.0 * releases * (2 * halfwidth + 3) / NUMPY_CELLS_PER_SECOND


def serves(params: Scenario) -> bool:
    """Whether the compiled kernel serves this scenario (prior and precision allow it)."""
    return params.precision <= MAX_PRECISION and branch_constant_weights(params) is not None


def branch_constant_weights(params: Scenario):
    """``(feasible, lows, highs, has_high, log_weights)`` per branch, or ``None``.

    For priors whose log weight is constant on each branch's support (the built-in
    ``improper``, ``truncated:U`` and ``point:K``), the support ``[low, high]`` of
    ``X2 | X1 = known + b`` and the log weight there (from the prior's own
    ``log_weight``); ``None`` for any other prior.
    """
    from dprisk.models.priors.library import ImproperUniform, PointMass, TruncatedUniform

    prior = params.prior
    if type(prior) not in (ImproperUniform, TruncatedUniform, PointMass):
        return None
    feasible = np.zeros(2, dtype=np.bool_)
    lows = np.zeros(2, dtype=np.int64)
    highs = np.zeros(2, dtype=np.int64)
    has_high = np.zeros(2, dtype=np.bool_)
    log_weights = np.zeros(2)
    for b in range(2):
        k1 = params.known + b
        support = prior.branch_support(k1)
        if support is None:
            continue
        feasible[b] = True
        lows[b] = support[0]
        if support[1] is not None:
            highs[b], has_high[b] = support[1], True
        log_weights[b] = float(prior.log_weight(support[0], k1))
    return feasible, lows, highs, has_high, log_weights


def checked_masses(x1s, x2s, y1s, params: Scenario, tail_mass: float,
                   halfwidth: int | None, *, want_neglected: bool = True,
                   compiled: bool | None = None, out_prob: np.ndarray | None = None):
    r"""``(log_branch_mass, log_neglected)``, each (R, 2), of the checked joint tables.

    The quantities of :class:`dprisk.inference.kernels.table_kernels.JointTable` without the
    tables: from the compiled kernel when ``compiled`` (default: :func:`use_compiled` with
    this batch's cells) and the prior allows, else from
    :func:`dprisk.inference.kernels.mass_kernels.checked_log_masses` (the masses of
    :func:`dprisk.inference.kernels.table_kernels.checked_table`, bit for bit). The compiled kernel
    widens the window per release, the numpy one per batch; the results differ only where a
    widening happens (by less than ``tail_mass`` of a branch's mass). Without
    ``want_neglected`` the compiled kernel may return an upper bound of ``log_neglected``.
    With ``out_prob`` (float array, one entry per release) it also receives
    :math:`P[X_1 = m + 1 \mid D] = \operatorname{expit}(\text{mass}_1 - \text{mass}_0)`
    (in the compiled pass when it runs, else by :func:`dprisk.models.numerics.expit`).
    Raises what ``checked_table`` raises (the numpy path re-runs on failure).
    """
    x1s, x2s, y1s = (np.ascontiguousarray(a, dtype=np.int64) for a in (x1s, x2s, y1s))
    k0 = halfwidth if halfwidth is not None else initial_halfwidth(params.precision, tail_mass)
    if compiled is None:
        compiled = use_compiled(table_seconds(x1s.size, k0))
    weights = None
    if compiled and params.precision <= MAX_PRECISION and compiled_kernels() is not None:
        weights = branch_constant_weights(params)
    if weights is not None:
        kernels = compiled_kernels()
        n = x1s.size
        mass = np.empty((n, 2))
        neglected = np.empty((n, 2))
        start = np.empty(n, dtype=np.int64)
        width = np.empty(n, dtype=np.int64)
        logit_p = math.log(params.p) - math.log1p(-params.p)
        failed = kernels.two_level_masses(
            x1s, x2s, y1s, np.int64(params.known), float(params.rho1), float(params.rho2),
            float(params.d), logit_p, *weights, float(params.prior.log_weight_max),
            np.int64(k0), halfwidth is not None, np.int64(MAX_WINDOW), math.log(tail_mass),
            want_neglected, mass, neglected, start, width,
            _NO_PROB if out_prob is None else out_prob)
        if failed < 0:
            return mass, neglected
    mass, neglected = checked_log_masses(x1s, x2s, y1s, params, tail_mass, halfwidth)
    if out_prob is not None:
        out_prob[:] = expit(mass[:, 1] - mass[:, 0])
    return mass, neglected
