r"""The adversary who does not know everyone, declared in PyMC.

The adversary knows the block except the target and ``n`` others
(:mod:`dprisk.models.unknown_others`):

.. math::

    B_t \sim \mathrm{Bernoulli}(p), \quad K \sim \mathrm{Binomial}(n, q), \quad
    X_1 = m + B_t + K, \quad x_1^* \mid X_1 \sim \mathrm{DG}(X_1, 1/(2\rho)),

with the released noisy count :math:`x_1^*` observed. Its posterior of :math:`B_t` is the
exact sum over the binomial of :func:`dprisk.inference.unknown_others.closed_form.posterior`; with
``n = 0`` (no ``K``) this is the model of :mod:`dprisk.models.builders.single_level`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dprisk.models.builders.single_level import TARGET_VAR, X1_STAR_VAR, X1_VAR
from dprisk.models.checks import check_count, check_probability, check_rho
from dprisk.models.scenario import scalar_value
from dprisk.models.unknown_others import UnknownOthers

if TYPE_CHECKING:
    import pymc as pm

__all__ = [
    "DATA_X1_STAR",
    "OTHERS_VAR",
    "TARGET_VAR",
    "X1_STAR_VAR",
    "X1_VAR",
    "build_unknown_others_model",
    "checked_values",
    "declare_unknown_others_model",
]

#: Name of the data container holding the observed release (``pm.set_data`` swaps it).
DATA_X1_STAR = "x1_star_value"
#: Name of ``K``, how many of the ``n`` unknown others have ``c`` (Binomial(n, q)).
OTHERS_VAR = "others_with_c"


def build_unknown_others_model(x1_star, rho, p=0.5, known=0, *, unknown_others=0,
                               q=None) -> pm.Model:
    r"""Build the model of an adversary who does not know ``n`` others, for one release.

    .. math::

        B_t \sim \mathrm{Bernoulli}(p), \quad K \sim \mathrm{Binomial}(n, q), \quad
        x_1^* \sim \mathrm{DG}(m + B_t + K, 1/(2\rho))

    Parameters
    ----------
    x1_star : int
        Released noisy count of the block (any integer).
    rho : float (rho > 0)
        zCDP parameter of the block-level release.
    p : float (0 < p < 1), default 0.5
        Prior probability that the target has ``c``.
    known : int (known >= 0), default 0
        ``m``, the count with ``c`` among the people the adversary knows.
    unknown_others : int (0 <= n <= 10000), default 0
        ``n``, the people besides the target whom the adversary does not know.
    q : float (0 <= q <= 1), optional when ``unknown_others = 0``
        Probability that one unknown other has ``c``.

    Returns
    -------
    pymc.Model
        Free ``"target_has_c"`` (Bernoulli; PyMC assigns ``BinaryGibbsMetropolis``) and, when
        ``n > 0``, ``"others_with_c"`` (:data:`OTHERS_VAR`, Binomial; ``Metropolis``);
        deterministic ``"X1"`` (int64) and observed ``"x1_star"``
        (:class:`dprisk.models.mechanism.pymc_dist.DiscreteGaussian`). The numbers are data
        containers
        ``"x1_star_value"`` (:data:`DATA_X1_STAR`), ``"rho"``, ``"p"``, ``"known"``, ``"n"``,
        ``"q"``: ``pm.set_data`` changes them (``n`` only between positive values) without
        rebuilding the graph, so sampling several releases compiles once.

    Raises
    ------
    ValueError
        If an input is outside its allowed range or not a single number (the message names
        the parameter).
    """
    return declare_unknown_others_model(checked_values(x1_star, rho, p, known,
                                                       unknown_others=unknown_others, q=q))


def checked_values(x1_star, rho, p=0.5, known=0, *, unknown_others=0, q=None) -> dict:
    """The model's numbers, each checked once: the data of :func:`declare_unknown_others_model`.

    Returns
    -------
    dict
        ``{"x1_star_value", "rho", "p", "known", "n", "q"}`` as numpy scalars (the names of
        the model's data containers).

    Raises
    ------
    ValueError
        Naming the parameter (as :func:`build_unknown_others_model`).
    """
    others = UnknownOthers.checked(unknown_others, q)
    return {
        DATA_X1_STAR: np.int64(scalar_value(check_count(x1_star, "x1_star"), "x1_star")),
        "rho": np.float64(scalar_value(check_rho(rho, "rho"), "rho")),
        "p": np.float64(scalar_value(check_probability(p, "p"), "p")),
        "known": np.int64(scalar_value(check_count(known, "known", minimum=0), "known")),
        "n": np.int64(others.n),
        "q": np.float64(others.q),
    }


def declare_unknown_others_model(values: dict) -> pm.Model:
    """Declare the model for numbers already checked by :func:`checked_values` (no checks).

    ``pm.set_data`` with another :func:`checked_values` result (``n > 0`` in both, or
    ``n = 0`` in both) then samples another release with the same compiled graph.
    """
    import pymc as pm

    from dprisk.models.mechanism.pymc_dist import DiscreteGaussian

    with pm.Model() as model:
        # the numbers are pm.Data, so pm.set_data swaps them without a new graph (a battery
        # of releases then compiles once); float64 throughout (a Python float may give float32)
        data = {name: pm.Data(name, value) for name, value in values.items()}
        target_has_c = pm.Bernoulli(TARGET_VAR, p=data["p"])
        count = data["known"] + target_has_c
        if values["n"] > 0:
            count = count + pm.Binomial(OTHERS_VAR, n=data["n"], p=data["q"])
        x1 = pm.Deterministic(X1_VAR, count)
        DiscreteGaussian(X1_STAR_VAR, mu=x1, rho=data["rho"], observed=data[DATA_X1_STAR])
    return model
