r"""Worked prior 1: a geometric belief about the other blocks' count ``j = X2 - X1``.

The adversary thinks that each further person in the other ``d`` blocks is less likely than
the last, by a constant factor ``1 - q``:

.. math::

    P[X_2 = k_2 \mid X_1 = k_1] = q\,(1 - q)^{j}, \qquad j = k_2 - k_1 \ge 0,

a proper prior (it sums to 1 over ``j = 0, 1, ...``) with mean ``(1 - q)/q`` = 4 for
``q = 0.2``. Check it, then use it::

    dprisk prior models/examples/geometric_prior.py:prior
    dprisk posterior --rho1 census:block --rho2 census:block-group --d 27 \
        --x1-star 1 --x2-star 3 --y1-star 2 --prior models/examples/geometric_prior.py:prior
"""

import numpy as np
import pytensor.tensor as pt

from dprisk.models.priors.library import UserPrior

#: Success probability q of the geometric distribution (0 < q <= 1); float64, not a bare 0.2.
Q = np.float64(0.2)


def geometric_logp(k2, k1):
    """``log q + j log(1 - q)`` for ``j = k2 - k1`` (k2 >= k1 is enforced for us)."""
    return np.log(Q) + pt.cast(k2 - k1, "float64") * np.log1p(-Q)


prior = UserPrior(geometric_logp, is_proper=True,
                  description=f"X2 - X1 ~ Geometric(q = {Q:g}), mean {(1 - Q) / Q:g}")
