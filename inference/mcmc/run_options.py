"""The budget of a sampler run, checked once: draws, chains, tune and the random generator."""

from __future__ import annotations

from dprisk.models.checks import check_positive_int
from dprisk.models.mechanism.dg_sampling import as_generator
from dprisk.runtime.memory_limit import check_memory

__all__ = ["DIAGNOSTIC_BYTES", "check_draws_memory", "draws_memory", "run_options"]

#: Bytes per draw of the ArviZ diagnostics of one unknown (its float copy, the indicator, the
#: split and rank-normalised arrays, sorts and normal quantiles): measured 98 with tracemalloc
#: (two-level Gibbs, 1e6 draws: a peak of 114 bytes per draw with the two int64 draws held).
DIAGNOSTIC_BYTES = 128
#: Bytes per kept draw and unknown of ``pm.sample``'s trace and its DataTree (step statistics,
#: ``target_has_c``, the copies of the conversion), and per draw besides: measured 160 per
#: draw at two levels and 204 at three (tracemalloc, 2 chains, the slope over 20000-60000
#: draws), i.e. about 72 + 44 h.
PYMC_LEVEL_BYTES, PYMC_DRAW_BYTES = 48, 96


def draws_memory(levels: int, chains: int, draws: int, *, tune: int = 0,
                 pymc: bool = False) -> float:
    """Bytes held at the peak of a sampled posterior of ``levels`` unknowns X1 … Xh.

    The largest of its stages, each counted per draw and chain (``n = chains x draws``):

    * sampling: the Gibbs samplers' int64 output and its copy (``32 h``); PyMC's trace
      (``96 + 48 h`` per draw, tuning draws included);
    * diagnostics: the draws held (``8 h``) plus one unknown's ArviZ temporaries
      (:data:`DIAGNOSTIC_BYTES`);
    * ``--save-draws``/``--plots`` (counted always): the draws, ``log_likelihood`` and
      ``posterior_predictive`` (``2h - 1`` float64/int64 each), ``lp``, the ``prior`` and
      ``prior_predictive`` groups of a proper prior, and 48 bytes for the netCDF writer.

    Measured peaks (tracemalloc and peak RSS over the imports) stay below it by a factor of
    1.2-1.8 (``tests/inference/mcmc/test_draws_memory.py``).
    """
    n = float(chains) * draws
    held = 8.0 * levels
    if pymc:
        sampling = (PYMC_DRAW_BYTES + PYMC_LEVEL_BYTES * levels) * float(chains) * (tune + draws)
    else:
        sampling = 32.0 * levels * n
    diagnostics = (held + DIAGNOSTIC_BYTES) * n
    observed = 2 * levels - 1
    tree = (held + 16.0 * observed + 8.0 + (8.0 * levels + 8.0 * observed) + 48.0) * n
    return max(sampling, diagnostics, tree)


def check_draws_memory(levels: int, chains: int, draws: int, *, releases: int = 1,
                       tune: int = 0, pymc: bool = False) -> None:
    """:func:`dprisk.runtime.memory_limit.check_memory` of :func:`draws_memory` (x releases)."""
    check_memory(releases * draws_memory(levels, chains, draws, tune=tune, pymc=pymc),
                 parameter="draws, chains" + (", tune" if pymc else ""),
                 what=f"{releases} release(s) x {chains} chains x {draws} draws of "
                 f"{levels} unknowns (draws, diagnostics and ArviZ groups)")


def run_options(draws, chains, tune, random_seed) -> dict:
    """Checked ``draws, chains, tune`` and the ``generator`` of ``random_seed``.

    ``draws >= 1``, ``chains >= 1``, ``tune >= 0`` (integers); ``random_seed`` as
    :func:`dprisk.models.mechanism.dg_sampling.as_generator` takes it.

    Raises
    ------
    ValueError, TypeError
        One line naming ``draws``, ``chains``, ``tune`` or ``random_seed``.
    """
    return {
        "draws": check_positive_int(draws, "draws"),
        "chains": check_positive_int(chains, "chains"),
        "tune": check_positive_int(tune, "tune", minimum=0),
        "generator": as_generator(random_seed, "random_seed"),
    }
