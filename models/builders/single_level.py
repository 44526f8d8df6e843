r"""The adversary's single-level model (paper §3.1) declared in PyMC.

The adversary knows ``known`` = :math:`x_{1,-t}`, the count of the other people in block
:math:`g_1` with characteristics ``c``, and is unsure only whether the target has ``c``:

.. math::

    T \sim \mathrm{Bernoulli}(p), \qquad X_1 = x_{1,-t} + T, \qquad
    X_1^* \mid X_1 \sim \mathrm{DG}(X_1, 1/(2\rho_1)),

with the released noisy count :math:`x_1^*` observed. The posterior of the target indicator is
the paper's equation (3.1); in log-odds form

.. math::

    \operatorname{logit} P[X_1 = x_{1,-t} + 1 \mid x_1^*]
        = \operatorname{logit}(p) + \rho_1 \bigl(2 (x_1^* - x_{1,-t}) - 1\bigr).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dprisk.models.checks import check_count, check_probability, check_rho
from dprisk.models.scenario import scalar_value

if TYPE_CHECKING:
    import pymc as pm

__all__ = [
    "TARGET_VAR",
    "X1_STAR_VAR",
    "X1_VAR",
    "build_single_level_model",
]

#: Name of the latent indicator ``T = 1[target has characteristics c]`` (Bernoulli(p)).
TARGET_VAR = "target_has_c"
#: Name of the deterministic block count ``X1 = known + T``.
X1_VAR = "X1"
#: Name of the observed noisy block count ``x1*``.
X1_STAR_VAR = "x1_star"


def build_single_level_model(x1_star, rho, p=0.5, known=0) -> pm.Model:
    r"""Build the adversary's single-level model for one released block count.

    .. math::

        T \sim \mathrm{Bernoulli}(p), \quad X_1 = \mathrm{known} + T, \quad
        x_1^* \sim \mathrm{DG}(X_1, 1/(2\rho))

    Parameters
    ----------
    x1_star : int
        Released noisy count :math:`x_1^*` of block :math:`g_1` (any integer, may be negative).
    rho : float (rho > 0)
        zCDP parameter of the block-level release (census block: about 0.0992).
    p : float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = \mathrm{known} + 1]` that the target has ``c``.
    known : int (known >= 0), default 0
        The adversary's count :math:`x_{1,-t}` of the others in the block with ``c``.

    Returns
    -------
    pymc.Model
        Free variable ``"target_has_c"`` (:data:`TARGET_VAR`, Bernoulli), deterministic
        ``"X1"`` (:data:`X1_VAR`, int64) and observed ``"x1_star"`` (:data:`X1_STAR_VAR`,
        :class:`dprisk.models.mechanism.pymc_dist.DiscreteGaussian`). ``pm.sample`` assigns
        ``BinaryGibbsMetropolis`` to the indicator.

    Raises
    ------
    ValueError
        If an input is outside its allowed range or not a single number (the message names
        the parameter).
    """
    import pymc as pm

    from dprisk.models.mechanism.pymc_dist import DiscreteGaussian

    x1_star = scalar_value(check_count(x1_star, "x1_star"), "x1_star")
    rho = scalar_value(check_rho(rho, "rho"), "rho")
    p = scalar_value(check_probability(p, "p"), "p")
    known = scalar_value(check_count(known, "known", minimum=0), "known")

    with pm.Model() as model:
        target_has_c = pm.Bernoulli(TARGET_VAR, p=np.float64(p))  # float() may become float32
        x1 = pm.Deterministic(X1_VAR, int(known) + target_has_c)
        DiscreteGaussian(X1_STAR_VAR, mu=x1, rho=float(rho), observed=int(x1_star))
    return model
