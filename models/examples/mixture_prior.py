r"""Worked prior 3: "X2 is probably K", a point mass mixed with a uniform.

The adversary has a guess ``K`` for the block-group count (an old tabulation, say) and
trusts it with probability ``TRUST``; otherwise any value from ``k1`` to ``U`` is as likely:

.. math::

    w(k_2 \mid k_1) = \begin{cases}
        \text{TRUST}\,1[k_2 = K] + \frac{1 - \text{TRUST}}{U - k_1 + 1} & K \ge k_1,\\
        \frac{1}{U - k_1 + 1} & K < k_1,
    \end{cases} \qquad k_1 \le k_2 \le U.

When ``K < k1`` the guess is impossible, and the uniform part takes all the mass so that every
branch still sums to 1 (``dprisk prior`` checks it: a prior labelled proper must). Compare
with the built-in ``point:K`` (TRUST = 1) and ``truncated:U`` (TRUST = 0).
"""

import numpy as np
import pytensor.tensor as pt

from dprisk.models.priors.library import UserPrior

#: The adversary's guess of X2.
K = 12
#: The largest X2 the adversary considers possible.
U = 60
#: Probability that the guess is right.
TRUST = np.float64(0.7)


def mixture_logp(k2, k1):
    """``log w(k2 | k1)`` of the mixture above (plain elementwise PyTensor)."""
    uniform = 1.0 / pt.cast(U - k1 + 1, "float64")
    guess_possible = pt.ge(K, k1)
    weight = pt.switch(guess_possible,
                       TRUST * pt.eq(k2, K) + (1 - TRUST) * uniform,
                       uniform)
    return pt.log(weight)


prior = UserPrior(mixture_logp, support=lambda k1: (k1, U), is_proper=True,
                  description=f"X2 = {K} with probability {TRUST:g}, else uniform on "
                  f"{{k1, ..., {U}}}")
