"""The paper's five adversaries (§4.2) as a labelled prior coordinate of the figures' data."""

import numpy as np

__all__ = ["PAPER_PRIORS", "prior_coords"]

#: The five adversaries of §4.2: (label, prior probability p).
PAPER_PRIORS: tuple[tuple[str, float], ...] = (
    ("1/2", 1 / 2), ("1/5", 1 / 5), ("1/10", 1 / 10), ("1/50", 1 / 50), ("1/864", 1 / 864),
)


def prior_coords(priors=PAPER_PRIORS) -> dict:
    """Coordinates for a prior dimension ``p``: float values and a ``p_label`` string."""
    return {
        "p": ("p", np.array([v for _, v in priors]), {"long_name": "prior P[X1 = m+1]",
                                                       "units": "probability"}),
        "p_label": ("p", np.array([lab for lab, _ in priors], dtype=str)),
    }
