"""Reference X2-prior weights typed in from their definitions, shared by the prior tests.

Independent of ``dprisk.models.priors.library`` on purpose: the tests compare the library against
these.
"""

import numpy as np
from scipy import stats

NB_SPEC = "models/examples/negative_binomial_prior.py:prior"


def reference_log_weight(spec, k2, k1):
    """Each prior's weight typed in from its definition (paper §3.2, supplement S4)."""
    k2, k1 = np.broadcast_arrays(np.asarray(k2), np.asarray(k1))
    if spec == "improper":
        return np.where(k2 >= k1, 0.0, -np.inf)
    if spec.startswith("truncated:"):
        upper = int(spec.split(":")[1])
        count = np.maximum(upper - k1 + 1, 1)
        return np.where((k2 >= k1) & (k2 <= upper), -np.log(count), -np.inf)
    if spec.startswith("point:"):
        k = int(spec.split(":")[1])
        return np.where((k2 == k) & (k >= k1), 0.0, -np.inf)
    if spec == NB_SPEC:  # X2 - X1 ~ NegBin(mean 5, alpha 2): scipy n = 2, p = 2 / 7
        with np.errstate(divide="ignore"):
            return np.where(k2 >= k1, stats.nbinom.logpmf(k2 - k1, 2, 2 / 7), -np.inf)
    raise AssertionError(spec)
