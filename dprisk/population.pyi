"""The names of ``dr.population`` for editors and type checkers (its ``_LAZY``)."""

from dprisk.inference.population.fdp import success_bound as success_bound
from dprisk.inference.population.kernels import informed_logits as informed_logits
from dprisk.inference.population.kernels import informed_posteriors as informed_posteriors
from dprisk.inference.population.kernels import outsider_logits as outsider_logits
from dprisk.inference.population.kernels import outsider_posteriors as outsider_posteriors
from dprisk.inference.population.measure import measure as measure
from dprisk.inference.population.measurements import BlockMeasurements as BlockMeasurements
from dprisk.inference.population.measurements import read_noisy_table as read_noisy_table
from dprisk.inference.population.nmf import read_nmf_block_detailed as read_nmf_block_detailed
from dprisk.inference.population.persons import read_persons as read_persons
from dprisk.inference.population.risk import population_risk as risk
from dprisk.inference.population.synth import synthesize as synthesize

__all__ = [
    "BlockMeasurements",
    "informed_logits",
    "informed_posteriors",
    "measure",
    "outsider_logits",
    "outsider_posteriors",
    "read_nmf_block_detailed",
    "read_noisy_table",
    "read_persons",
    "risk",
    "success_bound",
    "synthesize",
]
