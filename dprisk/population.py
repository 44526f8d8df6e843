"""``dr.population``: every person of a population, from persons files and noisy measurements.

The names of this room without a prefix (``dr.population.risk``), each loaded from its module on
first use. ``import dprisk as dr; dir(dr.population)`` lists them.
"""

from __future__ import annotations

from dprisk._lazy import attach

#: Public name -> (module below ``dprisk``, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    "synthesize": ("inference.population.synth", "synthesize"),
    "read_persons": ("inference.population.persons", "read_persons"),
    "BlockMeasurements": ("inference.population.measurements", "BlockMeasurements"),
    "read_noisy_table": ("inference.population.measurements", "read_noisy_table"),
    "read_nmf_block_detailed": ("inference.population.nmf", "read_nmf_block_detailed"),
    "measure": ("inference.population.measure", "measure"),
    "risk": ("inference.population.risk", "population_risk"),
    "informed_logits": ("inference.population.kernels", "informed_logits"),
    "informed_posteriors": ("inference.population.kernels", "informed_posteriors"),
    "outsider_logits": ("inference.population.kernels", "outsider_logits"),
    "outsider_posteriors": ("inference.population.kernels", "outsider_posteriors"),
    "success_bound": ("inference.population.fdp", "success_bound"),
}

__getattr__, __dir__, __all__ = attach(__name__, _LAZY)
