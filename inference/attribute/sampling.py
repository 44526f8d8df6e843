"""Sampling the target's cell with PyMC's discrete steps (a cross-check of the exact answer).

The model is :func:`dprisk.models.builders.attribute.build_attribute_model`; the step is
``pm.CategoricalGibbsMetropolis`` with the uniform proposal. The exact posterior is
:func:`dprisk.inference.attribute.posterior.cell_posterior`; the two are compared within 4 MCSE
(``dprisk.inference.mcmc.chain_stats``) in the tests and in the report.
"""

from __future__ import annotations

import numpy as np

from dprisk.models.builders.attribute import CELL_VAR, build_attribute_model
from dprisk.models.checks import check_positive_int
from dprisk.models.mechanism.dg_sampling import resolve_random_seed

__all__ = ["sample_cell_pymc"]


def sample_cell_pymc(release, known, rho, prior=None, *, draws: int = 1000, chains: int = 2,
                     tune: int = 200, random_seed=None) -> tuple[np.ndarray, int]:
    """Draws of the target's cell from PyMC, shape ``(chains, draws)``, and the seed used.

    Parameters
    ----------
    release, known, rho, prior
        As in :func:`dprisk.models.builders.attribute.build_attribute_model`.
    draws, chains : int (>= 1)
    tune : int (>= 0)
    random_seed : int, optional
        Drawn and reported when not given.
    """
    import pymc as pm

    draws, chains = check_positive_int(draws, "draws"), check_positive_int(chains, "chains")
    tune = check_positive_int(tune, "tune", minimum=0)
    seed = resolve_random_seed(random_seed)
    model = build_attribute_model(release, known, rho, prior)
    with model:
        step = pm.CategoricalGibbsMetropolis([model[CELL_VAR]], proposal="uniform")
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, step=step,
                          random_seed=seed, progressbar=False, quiet=True,
                          compute_convergence_checks=False)
    return np.asarray(idata.posterior[CELL_VAR].values, dtype=np.int64), seed
