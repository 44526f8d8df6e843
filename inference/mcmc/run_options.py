"""The budget of a sampler run, checked once: draws, chains, tune and the random generator."""

from __future__ import annotations

from dprisk.models.checks import check_positive_int
from dprisk.models.mechanism.dg_sampling import as_generator

__all__ = ["run_options"]


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
