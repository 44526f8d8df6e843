r"""The K-cell adversary as a PyMC model: a categorical target cell, a vector DG likelihood.

.. math::

    C \sim \mathrm{Categorical}(\pi), \qquad
    x_j^* \mid C \sim \mathrm{DG}\bigl(m_j + 1[j = C],\, 1/(2\rho)\bigr),\ j = 0, \ldots, K-1,

with the project's discrete Gaussian distribution
(:class:`dprisk.models.mechanism.pymc_dist.DiscreteGaussian`). Its exact posterior is
:func:`dprisk.inference.attribute.posterior.cell_posterior`; PyMC samples ``C`` with
``CategoricalGibbsMetropolis`` (uniform proposal; the proportional proposal is wrong in
PyMC 6.4, see the project notes).
"""

from __future__ import annotations

import numpy as np

from dprisk.models.checks import check_count, check_rho
from dprisk.models.priors.histogram import check_cell_prior, check_known_counts, uniform_prior
from dprisk.models.scenario import scalar_value

__all__ = ["CELL_VAR", "RELEASE_VAR", "build_attribute_model"]

#: Name of the target's cell in the model.
CELL_VAR = "cell"
#: Name of the observed noisy histogram.
RELEASE_VAR = "x_star"


def build_attribute_model(release, known, rho, prior=None):
    """The PyMC model of the module docstring for one release.

    Parameters
    ----------
    release : array_like of int, shape ``(K,)``
        The noisy counts :math:`x^*` of the ``K >= 2`` cells.
    known : array_like of int (>= 0), shape ``(K,)``
        ``m_j``: the count of everyone but the target in cell ``j``.
    rho : float (rho > 0)
        zCDP parameter of each cell's noise.
    prior : array_like of float, shape ``(K,)``, optional
        Uniform by default.

    Returns
    -------
    pymc.Model
    """
    import pymc as pm
    import pytensor.tensor as pt

    from dprisk.models.mechanism.pymc_dist import DiscreteGaussian

    known = check_known_counts(known)
    release = check_count(release, "release")
    if release.shape != known.shape:
        raise ValueError(f"release must have one count per cell ({known.size}), got shape "
                         f"{release.shape}")
    rho = float(scalar_value(check_rho(rho, "rho"), "rho"))
    prior = uniform_prior(known.size) if prior is None else check_cell_prior(prior, known.size)
    with pm.Model() as model:
        cell = pm.Categorical(CELL_VAR, p=np.asarray(prior, dtype=np.float64),
                              initval=int(np.argmax(prior)))
        hit = pt.cast(pt.eq(pt.arange(known.size), cell), "int64")
        DiscreteGaussian(RELEASE_VAR, mu=pt.as_tensor(known) + hit, rho=np.float64(rho),
                         observed=release)
    return model
