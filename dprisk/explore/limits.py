r"""How much one request of a served view may cost: sized before it starts, refused at once.

The command line refuses requests above its limits (``DPRISK_MEMORY_LIMIT``, 2 GiB, and
``DPRISK_WORK_LIMIT``, :math:`10^{12}` steps: about an hour), which suit one person's own
run. A served view shares the machine with every visitor, so each view's request is held to
the smaller of those and the explorer's own caps, :data:`VIEW_MEMORY_CAP` and
:data:`VIEW_WORK_CAP` (:math:`5 \times 10^9` steps: about 22 s at the reference speed,
where the estimates err long: the slowest views allowed take about 10 s on the 2-core
machine, against minutes and gigabytes within the command line's limits). A server's
operator sets other caps with ``DPRISK_VIEW_MEMORY_LIMIT`` and ``DPRISK_VIEW_WORK_LIMIT``
(:mod:`dprisk.runtime.settings`), higher or lower; the command line's limits still bound
them (raise those too for views larger than they allow). The estimates
are made from the parameters alone, before anything is allocated, in the command line's
units (:mod:`dprisk.runtime.work_limit`), by :func:`size_two_level` and
:func:`size_p_correct`; the page shows the refusal (one line naming the parameters) at once,
from the event loop, and sends nothing to the pool of slow computations. The estimates:

- the two-level view (the posterior and the decision map): its k2 window
  :math:`W = 2K + 3`, with :math:`K` from
  :func:`dprisk.inference.kernels.table_kernels.initial_halfwidth` at the precision
  :math:`\rho_2 + \rho_1/d`; ``W x TWO_LEVEL_WINDOW_STEPS`` steps and
  ``W x TWO_LEVEL_WINDOW_BYTES`` bytes;
- the P[correct]-against-rho view: the exact study's release grid,
  :func:`dprisk.inference.studies.setup.grid_memory` bytes and ``cells x
  P_CORRECT_CELL_STEPS`` steps (the study itself checks ``cells x EXACT_GRID_CELL_STEPS``,
  a bound five times larger, against the command line's limits).

The single-level, budget and accounting views are closed forms or bounded searches (their
grids are clipped; a CKS conversion outside its range is refused by the library).
Nothing here imports Panel.
"""

from __future__ import annotations

from dprisk.runtime.memory_limit import format_bytes, memory_limit
from dprisk.runtime.settings import setting
from dprisk.runtime.work_limit import STEP_SECONDS, work_limit

__all__ = [
    "P_CORRECT_CELL_STEPS",
    "TWO_LEVEL_WINDOW_BYTES",
    "TWO_LEVEL_WINDOW_STEPS",
    "VIEW_MEMORY_CAP",
    "VIEW_WORK_CAP",
    "check_view",
    "size_p_correct",
    "size_two_level",
    "view_limits",
]

#: The explorer's cap on one view's memory (bytes), below ``DPRISK_MEMORY_LIMIT``.
VIEW_MEMORY_CAP = 512 * 1024**2
#: The explorer's cap on one view's work (steps; about 22 s at the reference speed, which the
#: estimates overstate: the slowest requests allowed take about 10 s, see below).
VIEW_WORK_CAP = 5e9
#: Steps of the two-level view per value of its k2 window (the posterior and the 17 x 17
#: decision map): measured 3 to 17 us per value at rho1 = rho2 from 1e-12 to 1e-8 on the
#: loaded 2-core machine (2026-11-28: 2.1 s at 1e-8, 7.4 s at 1e-10, 33 s at 1.2e-11);
#: 4000 steps is 18 us, so the largest window allowed is about 1.25e6 values (rho1 = rho2
#: = 1e-10, 7 s).
TWO_LEVEL_WINDOW_STEPS = 4000
#: Steps of the P[correct] view per release (x2*, y1*) of the exact study's grid: measured
#: 4 to 5.3 us per cell at rho1 = 1e-4 and 1e-5 (3.9 s and 9.6 s) on the same machine;
#: 2000 steps is 9 us, so the largest grid allowed is 2.5e6 cells (rho1 about 1e-5).
P_CORRECT_CELL_STEPS = 2000
#: Bytes of the two-level view per value of its k2 window (peak RSS 1.1 GB at a window of
#: 1.2e7 values, about 90 bytes each, rounded up).
TWO_LEVEL_WINDOW_BYTES = 128


def view_limits() -> tuple[float, float]:
    """``(bytes, steps)`` one view's request may use: the command line's limits, capped.

    The caps are ``DPRISK_VIEW_MEMORY_LIMIT`` and ``DPRISK_VIEW_WORK_LIMIT`` when set, else
    :data:`VIEW_MEMORY_CAP` and :data:`VIEW_WORK_CAP`.
    """
    memory_cap = setting("DPRISK_VIEW_MEMORY_LIMIT")
    work_cap = setting("DPRISK_VIEW_WORK_LIMIT")
    return (min(float(memory_limit()), VIEW_MEMORY_CAP if memory_cap is None else memory_cap),
            min(work_limit(), VIEW_WORK_CAP if work_cap is None else work_cap))


def check_view(nbytes: float, steps: float, *, parameter: str, what: str,
               advice: str = "use a larger rho") -> None:
    """Refuse a view's request above :func:`view_limits`.

    The message is one line naming ``parameter`` and ending with ``advice``.
    """
    max_bytes, max_steps = view_limits()
    if not nbytes <= max_bytes:  # NaN too
        raise ValueError(f"{parameter}: {what} needs about {format_bytes(nbytes)} of memory, "
                         f"above this server's limit of {format_bytes(max_bytes)} for one "
                         f"view; {advice}")
    if not steps <= max_steps:
        raise ValueError(f"{parameter}: {what} is about {steps:.3g} steps of work (roughly "
                         f"{steps * STEP_SECONDS:.2g} s on one core), above this server's "
                         f"limit of {max_steps:.3g} steps for one view; {advice}")


def size_two_level(*, rho1: float, rho2: float, d: int, tail_mass: float | None = None) -> None:
    """Size the two-level view at ``rho1, rho2, d`` (validated) before it runs."""
    from dprisk.inference.kernels.table_kernels import DEFAULT_TAIL_MASS, initial_halfwidth

    precision = rho2 + rho1 / d
    width = 2 * initial_halfwidth(precision, tail_mass or DEFAULT_TAIL_MASS) + 3
    check_view(float(width) * TWO_LEVEL_WINDOW_BYTES, float(width) * TWO_LEVEL_WINDOW_STEPS,
               parameter="rho1, rho2", what=f"the exact posterior on a k2 window of {width} "
               "values (with the decision map)")


def size_p_correct(*, rho1: float, rho2: float, d: int) -> None:
    """Size the P[correct]-against-rho view at ``rho1, rho2, d`` (validated) before it runs."""
    from dprisk.inference.kernels.table_kernels import DEFAULT_TAIL_MASS
    from dprisk.inference.studies.setup import grid_memory
    from dprisk.models.scenario import two_level_scenario

    scenario = two_level_scenario(None, rho1=rho1, rho2=rho2, d=d, p=0.5, known=0,
                                  prior="improper")  # the grid depends on rho1, rho2, d only
    nbytes = grid_memory(scenario, DEFAULT_TAIL_MASS)
    cells = nbytes / 32.0
    # y1* spans the sum of the d other blocks' noises: about 2 d K(rho1) values
    check_view(nbytes, cells * P_CORRECT_CELL_STEPS, parameter="rho1, rho2, d",
               what=f"the exact study's grid of {cells:.3g} releases (x2*, y1*)",
               advice="use a larger rho or a smaller d")
