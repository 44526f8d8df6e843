r"""The work limit: requests whose running time is known up front are refused before they run.

The companion of :mod:`dprisk.runtime.memory_limit` (memory) for time. Work is counted in *steps*,
the cost of one update of the two-state X1 chain of the Monte Carlo study (about 4.5 ns on
one core of the reference machine); every long computation estimates its steps from its
parameters with the weights below and calls :func:`check_work` *before* it starts:

=========================================  ===============================================
computation                                steps
=========================================  ===============================================
Monte Carlo study (``marginal --method     ``datasets x (draws + MC_DATASET_STEPS) + (d - 1)
mc``, one point of ``sweep --method mc``)  x (datasets x NOISE_SUM_DRAW_STEPS +
                                           NOISE_SUM_TERM_STEPS)`` (d: other blocks), plus
                                           the posterior tables of a k2 window wider than
                                           50 values (small rho: ``posterior_table_cost``
                                           of ``dprisk.inference.studies.setup``)
Gibbs posterior (``posterior --method      ``releases x chains x (tune + draws) x
gibbs``)                                   GIBBS_DRAW_STEPS`` (nested levels, h > 2:
                                           ``(tune + draws) x (NESTED_SWEEP_STEPS + h x
                                           chains x GIBBS_DRAW_STEPS)``)
PyMC posterior (``posterior --method       ``chains x ((tune + draws) x PYMC_DRAW_STEPS +
pymc``)                                    PYMC_CHAIN_STEPS)`` (nested levels: ``+ h^3 x
                                           NESTED_PYMC_LEVEL_STEPS``, the model's compilation)
exact sweep                                ``points x EXACT_POINT_STEPS``
exact two-level study (``marginal --rho2   ``grid cells (x2*, y1*) x EXACT_GRID_CELL_STEPS``
...``, ``budget --rho1``: per rho)
two-level budget search (``budget         ``priors x grid cells summed over the scan's
--rho1``, ``budget --census --d --x2``)    rho x EXACT_GRID_CELL_STEPS``
unknown others, marginal posterior and     ``release grid points x window of k terms x
risk (``marginal --unknown-others N``)     UNKNOWN_OTHERS_TERM_STEPS``
unknown others, P[correct] and accuracy    ``(N + 1) x 2 (h + 2) x DG_TAIL_TERM_STEPS`` a
(``marginal --unknown-others N``)          set of tails (h: the DG's half-width at 1e-20,
                                           about sqrt(46 / rho)); accuracy takes two sets
decision summary (``summary --rho1``),     the windows, atoms, PLD values and buckets of
single-level marginal (``marginal          :mod:`dprisk.inference.privacy.decision_sizing`
--rho1``)                                  (its weights)
=========================================  ===============================================

The weights are measured costs (``benchmarks/``-style timings of the default scenarios,
rounded up), so an estimate is a running time within a small factor, not a promise.

The limit is :data:`DEFAULT_WORK_LIMIT` (``1e12`` steps, roughly an hour on one core), or
the value of the environment variable :data:`LIMIT_ENV` (``DPRISK_WORK_LIMIT``; its old name
``DPRISK_WORK_BUDGET`` is an alias): a number of steps such as ``1e13``. Above it
:class:`WorkLimitError` (a ``ValueError``: exit status 2 on the command line) names the
parameter, the estimate and how to raise the limit.
"""

from __future__ import annotations

from dprisk.runtime.settings import setting, variable_set

__all__ = [
    "DEFAULT_WORK_LIMIT",
    "DG_TAIL_TERM_STEPS",
    "EXACT_GRID_CELL_STEPS",
    "EXACT_POINT_STEPS",
    "GIBBS_DRAW_STEPS",
    "LIMIT_ENV",
    "MC_DATASET_STEPS",
    "NESTED_PYMC_LEVEL_STEPS",
    "NESTED_SWEEP_STEPS",
    "NOISE_SUM_DRAW_STEPS",
    "NOISE_SUM_TERM_STEPS",
    "OLD_LIMIT_ENV",
    "PYMC_CHAIN_STEPS",
    "PYMC_DRAW_STEPS",
    "STEP_SECONDS",
    "UNKNOWN_OTHERS_TERM_STEPS",
    "WorkLimitError",
    "check_work",
    "mc_study_steps",
    "pymc_work_steps",
    "work_limit",
]

#: Work limit in steps when :data:`LIMIT_ENV` is not set.
DEFAULT_WORK_LIMIT = 1e12
#: Environment variable that sets the limit (a number of steps, e.g. ``1e13``).
LIMIT_ENV = "DPRISK_WORK_LIMIT"
#: Its old name, still accepted.
OLD_LIMIT_ENV = "DPRISK_WORK_BUDGET"
#: Seconds per step on one core of the reference machine (for the message's time estimate).
STEP_SECONDS = 4.5e-9
#: Steps of a simulated release of the Monte Carlo study besides its draws (its DG noise,
#: the decision and the bookkeeping: about 4.5 us).
MC_DATASET_STEPS = 1000
#: Steps per simulated release and other block of the Monte Carlo study's y1* noise, the sum
#: of d DG draws drawn one block at a time (measured 5-8 per draw in blocks of 16384
#: releases, plus the per-block term below spread over a block; rounded up).
NOISE_SUM_DRAW_STEPS = 12
#: Steps per other block of that sum besides its draws (one pass of the sampler over a block
#: of releases: 9,500-18,000 measured, about 40-80 us, CPU time; rounded up).
NOISE_SUM_TERM_STEPS = 20_000
#: Steps per recorded or tuning draw of one chain of the standalone Gibbs posterior
#: (drawing, storing and summarising: about 0.8 us).
GIBBS_DRAW_STEPS = 200
#: Steps per sweep of the nested-levels Gibbs sampler with h > 2 levels besides its draws
#: (its Python loop over the levels: about 55 us).
NESTED_SWEEP_STEPS = 12_000
#: Steps per draw of one chain of PyMC's sampler (about 150 us).
PYMC_DRAW_STEPS = 30_000
#: Steps per cube of the number of levels h of the nested-levels PyMC model's building and
#: compilation, paid once (measured beyond a fixed 2 s: 7.7 s of CPU at h = 10, 44 s at
#: h = 20, more than 120 s at h = 30; 6e-3 h^3 s, rounded up).
NESTED_PYMC_LEVEL_STEPS = 1_500_000
#: Steps per chain of PyMC's sampler besides its draws (its set-up, start and trace: 26-41 ms
#: of CPU measured at two and three levels, 4 draws; rounded up to 45 ms).
PYMC_CHAIN_STEPS = 10_000_000
#: Steps per point of an exact sweep (about 1.3 ms).
EXACT_POINT_STEPS = 300_000
#: Steps per (x2*, y1*) cell of the exact two-level study's release grid (at most about
#: 40 us per cell measured, at small rho1 where the y1* noise sum is wide; 20 steps at
#: small rho2): an upper bound, so the estimate errs long.
EXACT_GRID_CELL_STEPS = 10_000
#: Steps per term of the unknown-others release sums (one exponential of a log-sum-exp over
#: the window of binomial weights around its largest term, about 15 ns measured; rounded up).
UNKNOWN_OTHERS_TERM_STEPS = 5
#: Steps per term of an exact DG tail sum (one exponential of
#: :func:`dprisk.models.mechanism.discrete_gaussian.logcdf_kernel`'s sums: 10-39 ns of CPU
#: measured for the unknown others' P[correct] at rho = 1e-8 and 1e-6; rounded up).
DG_TAIL_TERM_STEPS = 8


class WorkLimitError(ValueError):
    """A request whose estimated work exceeds the limit (names the parameter)."""


def work_limit() -> float:
    """The limit in steps: :data:`LIMIT_ENV` if set, else :data:`DEFAULT_WORK_LIMIT`.

    A value that is not a finite number >= 1 raises ``ValueError`` naming the variable
    (parsed by :mod:`dprisk.runtime.settings`).
    """
    return float(setting(LIMIT_ENV))


def pymc_work_steps(chains: int, tune: int, draws: int) -> float:
    """Steps of a PyMC posterior.

    ``chains x ((tune + draws) x PYMC_DRAW_STEPS + PYMC_CHAIN_STEPS)``.
    """
    return float(chains) * ((float(tune) + float(draws)) * PYMC_DRAW_STEPS + PYMC_CHAIN_STEPS)


def mc_study_steps(datasets: int, draws: int, d: int = 1) -> float:
    """Steps of one Monte Carlo study of ``d`` other blocks.

    ``datasets x (draws + MC_DATASET_STEPS) + (d - 1) x (datasets x NOISE_SUM_DRAW_STEPS +
    NOISE_SUM_TERM_STEPS)``: each release's y1* noise is the sum of ``d`` DG draws, the first
    counted in :data:`MC_DATASET_STEPS`.
    """
    return (float(datasets) * (float(draws) + MC_DATASET_STEPS)
            + (float(d) - 1.0) * (float(datasets) * NOISE_SUM_DRAW_STEPS
                                  + NOISE_SUM_TERM_STEPS))


def _number(value: float) -> str:
    """``value`` to 3 digits, exponent without ``+`` (``2e12``, ``1.5e13``)."""
    mantissa, _, exponent = f"{value:.3g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


def _duration(seconds: float) -> str:
    """``seconds`` in the largest unit that keeps it >= 1 (``"3.2 h"``)."""
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.2g} {unit}"
    return f"{seconds:.2g} s" if seconds >= 1 else "under a second"


def check_work(steps: float, *, parameter: str, what: str) -> None:
    """Refuse a request whose estimated work ``steps`` exceeds :func:`work_limit`.

    Parameters
    ----------
    steps : float
        The estimate, from the parameters and the weights of this module.
    parameter : str
        The parameter(s) that set the work, named first in the message (e.g. ``"datasets"``).
    what : str
        What would run, e.g. ``"1000000000 datasets x 1000 draws"``.

    Raises
    ------
    WorkLimitError
        One line: the parameter, the estimate (steps and a rough time), the limit and how to
        raise it.
    """
    limit = work_limit()
    if not steps <= limit:
        env = variable_set(LIMIT_ENV)
        raise WorkLimitError(
            f"{parameter}: {what} is about {_number(steps)} steps of work (roughly "
            f"{_duration(steps * STEP_SECONDS)} on one core), above the work limit of "
            f"{_number(limit)} steps; reduce it, or raise the limit with the environment "
            f"variable {env} (e.g. {env}={_number(limit * 10)})"
        )
