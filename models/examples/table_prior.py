r"""Worked prior 2: a prior read from a table of counts, ``j = X2 - X1`` in a few bins.

Many adversaries start from a table: a tabulation of a similar area, a survey, a past
census. The pattern: type the table in (with its source), turn counts into probabilities by
dividing by their total (so the prior is proper), spread each bin's probability evenly over
its values, and look the weight up by ``j``:

.. math::

    P[X_2 = k_2 \mid X_1 = k_1] = \frac{c_b}{C\,n_b}, \qquad
    j = k_2 - k_1 \in \text{bin } b,\ C = \textstyle\sum_b c_b,

with ``n_b`` values in bin ``b``; the support is ``k1 <= k2 <= k1 + J`` (``J`` the last
value of the last bin), declared with ``support=``.

The counts below are ILLUSTRATIVE (a made-up tabulation of people with the characteristics
in the other blocks of 1,000 block groups); replace BINS and COUNTS with your published table
and cite it here.
"""

import numpy as np
import pytensor.tensor as pt

from dprisk.models.priors.library import UserPrior

#: Bins of j = X2 - X1 as (first, last) values, inclusive, covering 0..J without gaps.
BINS = ((0, 0), (1, 2), (3, 5), (6, 10), (11, 20), (21, 40))
#: How many of the tabulated block groups fall in each bin (illustrative, see above).
COUNTS = np.array([120, 210, 260, 230, 130, 50], dtype=np.float64)

#: The largest j with positive prior weight.
J = BINS[-1][1]
_WIDTHS = np.array([last - first + 1 for first, last in BINS], dtype=np.float64)
#: log P[j] for j = 0..J: each bin's share of the total, spread evenly over its values.
LOG_TABLE = np.concatenate([np.full(int(n), np.log(c / COUNTS.sum() / n))
                            for c, n in zip(COUNTS, _WIDTHS, strict=True)])


def table_logp(k2, k1):
    """``LOG_TABLE[j]`` for ``j = k2 - k1``, clipped into the table (the support does the rest)."""
    j = pt.clip(k2 - k1, 0, J)
    return pt.as_tensor_variable(LOG_TABLE)[j]


prior = UserPrior(table_logp, support=lambda k1: (k1, k1 + J), is_proper=True,
                  description=f"X2 - X1 from a table of {len(BINS)} bins over 0..{J} "
                  "(illustrative counts)")
