r"""The discrete Gaussian DG(mu, 1/(2 rho)) as a PyMC distribution.

The mechanism of the paper (Kazan & Reiter, §2.1, Definition "Discrete Gaussian Mechanism"):

.. math::

    P[X^* = x] = \frac{e^{-\rho (x - \mu)^2}}{Z(\rho)}, \qquad
    Z(\rho) = \sum_{k \in \mathbb{Z}} e^{-\rho k^2}, \qquad x \in \mathbb{Z},

with integer centre ``mu`` and ``rho > 0`` (scale ``1/(2 rho)``). :class:`DiscreteGaussian`
is a :class:`pymc.Discrete` distribution with an int64 :class:`RandomVariable` op, so it works
as an observed likelihood, as a latent variable (PyMC assigns ``Metropolis``), with
``pm.draw``, ``pm.sample_prior_predictive`` and ``pm.logp``.

Forward sampling has two implementations of the same distribution:

* the default (numba) backend draws each element with the Canonne–Kamath–Steinke rejection
  sampler in floating point (:func:`_draw_one`, registered as the op's numba core so
  PyTensor does not fall back to object mode);
* the Python/C backends call :meth:`DiscreteGaussianRV.rng_fn`, which delegates to the
  project's vectorised numpy sampler :func:`dprisk.models.mechanism.dg_sampling.sample` (alias
  table).

Both consume the numpy ``Generator`` PyMC passes in, so ``random_seed`` reproduces draws
within a backend (the two backends give different streams for the same seed).
"""

from __future__ import annotations

import hashlib
import inspect

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Discrete
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.graph.basic import Variable
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.type import integer_dtypes
from pytensor.tensor.variable import TensorConstant

from dprisk.models.checks import check_count, check_rho
from dprisk.models.mechanism.dg_sampling import sample as _sample_numpy
from dprisk.models.numerics import N_SERIES_TERMS

__all__ = [
    "DiscreteGaussian",
    "DiscreteGaussianRV",
    "discrete_gaussian",
    "folded_log_normalizer",
    "log_normalizer_pt",
]

_SERIES_K2 = np.arange(1, N_SERIES_TERMS + 1, dtype=np.float64) ** 2


def log_normalizer_pt(rho):
    r"""Symbolic :math:`\log Z(\rho) = \log \sum_{k \in \mathbb{Z}} e^{-\rho k^2}` in PyTensor.

    Same series as :func:`dprisk.models.mechanism.discrete_gaussian.log_normalizer`, split at ``rho
    = pi``:

    * ``rho > pi``: :math:`\operatorname{log1p}(2 \sum_{k=1}^{6} e^{-\rho k^2})`;
    * ``rho <= pi``: :math:`\tfrac12 \log(\pi/\rho) +
      \operatorname{log1p}(2 \sum_{n=1}^{6} e^{-\pi^2 n^2/\rho})` (Poisson summation).

    Parameters
    ----------
    rho : tensor_like of float (rho > 0)
        Privacy parameter, any shape; not validated here (``NaN`` for ``rho <= 0``).

    A constant ``rho`` (a number, as every model of the project gives it) gives a constant,
    :func:`folded_log_normalizer` of its value: the number PyTensor's rewrites and constant
    folding make of the series, computed once by numpy, so that compiling a model's log
    density does not rewrite and fold the series again (the two-level model's has three of
    them: about a third of its compilation's CPU, 0.06-0.08 s a model).

    Returns
    -------
    TensorVariable
        float64 tensor of the shape of ``rho``.
    """
    rho = pt.cast(pt.as_tensor_variable(rho), "float64")
    if isinstance(rho, TensorConstant):
        return pt.constant(folded_log_normalizer(rho.data))
    rho_k = pt.shape_padright(rho)
    k2 = pt.constant(_SERIES_K2)
    direct = pt.log1p(2.0 * pt.sum(pt.exp(-rho_k * k2), axis=-1))
    poisson = 0.5 * pt.log(np.float64(np.pi) / rho) + pt.log1p(
        2.0 * pt.sum(pt.exp(-np.float64(np.pi**2) * k2 / rho_k), axis=-1)
    )
    return pt.switch(pt.gt(rho, np.float64(np.pi)), direct, poisson)


def folded_log_normalizer(rho) -> np.ndarray:
    r"""The value of :func:`log_normalizer_pt`'s series at constant ``rho``, as PyTensor folds it.

    The series in the form PyTensor's canonicalisation leaves it before folding the constants
    (``log(pi / rho)`` rewritten as :math:`\log\pi - \log\rho`), with numpy's operations,
    which constant folding runs: the same float64 value bit for bit
    (``tests/models/mechanism/test_pymc_dist.py`` compares them over 400 ``rho`` from 1e-7 to
    1e5 and at ``pi``). Not validated (``rho <= 0`` gives NaN, as the series does).

    Parameters
    ----------
    rho : array_like of float

    Returns
    -------
    ndarray
        float64, of the shape of ``rho``.
    """
    rho = np.asarray(rho, dtype=np.float64)
    rho_k = rho[..., None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        direct = np.log1p(2.0 * np.sum(np.exp(-rho_k * _SERIES_K2), axis=-1))
        poisson = 0.5 * (np.log(np.float64(np.pi)) - np.log(rho)) + np.log1p(
            2.0 * np.sum(np.exp(-np.float64(np.pi**2) * _SERIES_K2 / rho_k), axis=-1))
    return np.where(rho > np.float64(np.pi), direct, poisson)


def _draw_one(rng, mu, rho):
    r"""One draw of DG(mu, 1/(2 rho)) by rejection from a discrete Laplace (numba core).

    Canonne, Kamath & Steinke (2020), Algorithm 3, in floating point: with
    :math:`\sigma^2 = 1/(2\rho)` and :math:`t = \lfloor\sigma\rfloor + 1`, propose
    :math:`Y = G_1 - G_2` (``G_i`` iid geometric on {0, 1, ...} with ratio
    :math:`q = e^{-1/t}`, so :math:`P[Y=y] \propto e^{-|y|/t}`) and accept with probability
    :math:`\exp(-(|Y| - \sigma^2/t)^2 / (2\sigma^2))`. The accepted ``Y`` has pmf
    :math:`\propto e^{-\rho y^2}`; the acceptance rate is 0.45-0.76 (measured over
    ``rho`` in [1e-6, 1e4]).
    """
    if not (rho > 0.0 and rho < np.inf):
        raise ValueError("discrete_gaussian: rho must be a finite number > 0")
    sigma2 = 0.5 / rho
    t = np.floor(np.sqrt(sigma2)) + 1.0
    p_success = -np.expm1(-1.0 / t)
    centre = sigma2 / t
    while True:
        y = rng.geometric(p_success) - rng.geometric(p_success)
        gap = abs(y) - centre
        if rng.random() < np.exp(-gap * gap / (2.0 * sigma2)):
            return mu + y


class DiscreteGaussianRV(RandomVariable):
    """PyTensor random variable op for DG(mu, 1/(2 rho)); int64 draws, ``(),()->()``."""

    name = "discrete_gaussian"
    signature = "(),()->()"
    dtype = "int64"
    _print_name = ("DiscreteGaussian", "\\operatorname{DiscreteGaussian}")

    @classmethod
    def rng_fn(cls, rng, mu, rho, size):
        """Draw with a numpy ``Generator`` (Python/C backends) via ``dg_sampling.sample``.

        ``mu`` and ``rho`` broadcast against each other and against ``size``.
        """
        return _sample_numpy(mu, rho, size=size, random_seed=rng)


discrete_gaussian = DiscreteGaussianRV()


class DiscreteGaussian(Discrete):
    r"""Discrete Gaussian distribution DG(mu, 1/(2 rho)) on the integers.

    .. math::

        f(x \mid \mu, \rho) = \frac{e^{-\rho (x - \mu)^2}}{Z(\rho)}, \qquad
        Z(\rho) = \sum_{k \in \mathbb{Z}} e^{-\rho k^2}

    ========  ==========================================================
    Support   :math:`x \in \mathbb{Z}`
    Mean      :math:`\mu`
    Variance  :math:`-\mathrm{d}\log Z/\mathrm{d}\rho < 1/(2\rho)`
              (:func:`dprisk.models.mechanism.discrete_gaussian.variance`)
    ========  ==========================================================

    Parameters
    ----------
    mu : tensor_like of int
        Centre (the true count). Must have an integer dtype; numeric constants are checked
        to be integer-valued and converted to int64.
    rho : tensor_like of float (rho > 0)
        zCDP privacy parameter. Numeric constants are validated at construction; symbolic
        values are checked in ``logp`` (``check_parameters``, message ``"rho > 0"``).

    Notes
    -----
    The initial value (support point) is the mode ``mu`` (an integer, so ``round(mu)``).
    The log normaliser is :func:`log_normalizer_pt`.

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model():
    ...     x1_star = DiscreteGaussian("x1_star", mu=3, rho=0.5, observed=4)
    """

    rv_op = discrete_gaussian

    @classmethod
    def dist(cls, mu, rho, *args, **kwargs):
        """Create the unnamed random variable (see the class docstring for parameters)."""
        if not isinstance(mu, Variable):
            mu = check_count(mu, "mu")
        mu = pt.as_tensor_variable(mu)
        if mu.dtype not in integer_dtypes:
            raise TypeError(f"mu must have an integer dtype (a count), got {mu.dtype}")
        mu = pt.cast(mu, "int64")
        if not isinstance(rho, Variable):
            rho = check_rho(rho, "rho")
        rho = pt.cast(pt.as_tensor_variable(rho), "float64")
        return super().dist([mu, rho], *args, **kwargs)

    def support_point(rv, size, mu, rho):
        """Mode ``mu`` (an integer), broadcast to ``size`` and to the shape of ``rho``."""
        point, _ = pt.broadcast_arrays(mu, rho)
        if not rv_size_is_none(size):
            point = pt.full(size, point)
        return point

    def logp(value, mu, rho):
        r"""``-rho (value - mu)^2 - log Z(rho)``; raises/``-inf`` unless ``rho > 0``."""
        diff = pt.cast(value, "float64") - pt.cast(mu, "float64")
        res = -rho * pt.square(diff) - log_normalizer_pt(rho)
        return check_parameters(res, pt.gt(rho, 0.0), msg="rho > 0")


def _numba_cache_key() -> int:
    """Version key of the numba core: changes whenever :func:`_draw_one`'s source changes."""
    digest = hashlib.sha256(inspect.getsource(_draw_one).encode()).hexdigest()
    return int(digest[:15], 16)


def _register_numba_core() -> None:
    """Give the op a compiled numba core so the default backend does not use object mode."""
    try:
        from pytensor.link.numba.dispatch.basic import numba_njit
        from pytensor.link.numba.dispatch.random import numba_core_rv_funcify
    except ImportError:  # numba backend unavailable: the Python/C backends use rng_fn
        return

    @numba_core_rv_funcify.register(DiscreteGaussianRV)
    def _numba_core_discrete_gaussian(op, node):
        return numba_njit(_draw_one), _numba_cache_key()


_register_numba_core()
