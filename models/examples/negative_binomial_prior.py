r"""A worked user prior: a negative-binomial belief about the other blocks' count X2 - X1.

The adversary believes the number of people with characteristics ``c`` in the ``d`` other
blocks of the block group, ``Y1 = X2 - X1``, is negative binomial with mean 5 and dispersion
``alpha = 2`` (variance ``5 + 5**2 / 2 = 17.5``):

.. math::

    P[X_2 = k_2 \mid X_1 = k_1] = \binom{j + \alpha - 1}{j}
        \Big(\frac{\alpha}{\alpha + \mu}\Big)^{\alpha} \Big(\frac{\mu}{\alpha + \mu}\Big)^{j},
    \qquad j = k_2 - k_1 \ge 0,

with :math:`\log\binom{j + \alpha - 1}{j} = \ln\Gamma(j + \alpha) - \ln\Gamma(\alpha) -
\ln\Gamma(j + 1)` (the same values as PyMC's ``pm.NegativeBinomial`` logp, to 1e-12).

Load it anywhere a prior is accepted::

    parse_prior("models/examples/negative_binomial_prior.py:prior")
    dprisk prior models/examples/negative_binomial_prior.py:prior

The log weight is written once, as a PyTensor expression; the exact and Gibbs methods
evaluate it with numpy, the PyMC model uses it as the logp of X2. The file imports
``pytensor.tensor`` only (about a second less than ``import pymc``); ``pm.logp(
pm.NegativeBinomial.dist(mu=MEAN, alpha=ALPHA), k2 - k1)`` would give the same weights.
"""

import numpy as np
import pytensor.tensor as pt

from dprisk.models.priors.library import UserPrior

# np.float64, not bare Python floats: PyTensor builds 5.0 as a float32 constant, which would
# compute the logp in single precision (errors around 1e-8).
#: Prior mean of X2 - X1.
MEAN = np.float64(5.0)
#: Negative-binomial dispersion alpha (variance = mean + mean**2 / alpha).
ALPHA = np.float64(2.0)


def negative_binomial_logp(k2, k1):
    """Log P[X2 - X1 = k2 - k1] for X2 - X1 ~ NegativeBinomial(mu=MEAN, alpha=ALPHA)."""
    j = k2 - k1
    inside = pt.maximum(j, 0)  # keeps gammaln away from the poles where j < 0
    log_pmf = (pt.gammaln(inside + ALPHA) - pt.gammaln(ALPHA) - pt.gammaln(inside + 1)
               + ALPHA * np.log(ALPHA / (ALPHA + MEAN)) + inside * np.log(MEAN / (ALPHA + MEAN)))
    return pt.switch(pt.ge(j, 0), log_pmf, -np.inf)


prior = UserPrior(
    negative_binomial_logp,
    is_proper=True,
    description=f"X2 - X1 ~ NegativeBinomial(mean {MEAN:g}, alpha {ALPHA:g})",
)
