"""Brute-force references for releases at several levels (imported as ``level_references``).

Direct Bayes with the discrete Gaussian pmf, independent of the log-odds form the package
uses: the likelihood of all releases is the product of the per-level pmfs.
"""

import numpy as np

from dprisk.models.mechanism import discrete_gaussian as dg


def brute_joint_posterior(x_stars, rhos, p, m):
    """``P[X1 = m+1 | all releases]`` by direct Bayes (level on the first axis of x_stars)."""
    like_1 = np.prod([dg.pmf(x, m + 1, r) for x, r in zip(x_stars, rhos, strict=True)], axis=0)
    like_0 = np.prod([dg.pmf(x, m, r) for x, r in zip(x_stars, rhos, strict=True)], axis=0)
    return p * like_1 / (p * like_1 + (1 - p) * like_0)
