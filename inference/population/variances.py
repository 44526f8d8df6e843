r"""The noise variances :math:`\sigma^2` the population answers are computed for, and their checks.

The pipeline (:func:`dprisk.inference.population.pipeline.check_variances`, every block a
person is in) and the public kernels (:func:`~dprisk.inference.population.fdp.success_bound`,
:func:`~dprisk.inference.population.kernels.informed_logits`,
:func:`~dprisk.inference.population.kernels.outsider_logits`) refuse the same range.
"""

from __future__ import annotations

import numpy as np

__all__ = ["VARIANCE_RANGE", "check_variance_argument", "check_variances",
           "variance_range_text"]

#: The noise variances :math:`\sigma^2` (the DAS's convention) the answers are computed for.
#: Below 1e-4 (a query rho above 1e4; production's block ``detailed`` query has 10.09) the
#: informed and outsider sums lose digits: their exponents :math:`(y - n)^2 / (2\sigma^2)`
#: reach 1e4 per unit of misfit, and on a state measured at 10.09, asked at 1e-10 and 1e-15,
#: the mean posterior of the truth moved by 5e-10 and 2e-3 against its value at 1e-2 to 1e-6
#: (which agree to 1e-12); at 1e-307 the outsider's sums did not finish. Above 1e8 (a noise
#: standard deviation of 10,000 persons in each block cell) the f-DP bound's trade-off curve
#: and the outsider's windows grow with :math:`\sigma` (1.7 GB at 1e12), for answers that
#: are the prior's.
VARIANCE_RANGE = (1e-4, 1e8)


def variance_range_text() -> str:
    r"""The allowed range of :math:`\sigma^2`, as refusals state it."""
    low, high = VARIANCE_RANGE
    return f"allowed range: {low:g} <= sigma^2 <= {high:g}"


def check_variances(geoids, variance, *, source: str = "noise variance") -> None:
    r"""Refuse the first block whose :math:`\sigma^2` is outside :data:`VARIANCE_RANGE`.

    Raises
    ------
    ValueError
        ``"{source} of block G is V; allowed range: ..."`` (NaN and infinities too).
    """
    variance = np.asarray(variance, dtype=np.float64)
    low, high = VARIANCE_RANGE
    bad = ~((variance >= low) & (variance <= high))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{source} of block {str(np.asarray(geoids)[first])!r} is "
                         f"{float(variance[first])!r}; {variance_range_text()}")


def check_variance_argument(variance, name: str = "variance", *, shape=None) -> np.ndarray:
    r"""A public kernel's :math:`\sigma^2` as a float64 array, inside :data:`VARIANCE_RANGE`.

    Parameters
    ----------
    variance : array_like of float
        The variances given.
    name : str
        The parameter's name, for the refusals.
    shape : tuple of int, optional
        The shape it must have (default any).

    Returns
    -------
    ndarray of float64

    Raises
    ------
    TypeError
        Booleans, strings or anything else that is not numbers.
    ValueError
        A shape other than ``shape``, or a value outside :data:`VARIANCE_RANGE` (NaN and
        infinities too), naming ``name`` and the range.
    """
    if isinstance(variance, (str, bytes)) or np.asarray(variance).dtype.kind not in "iuf":
        raise TypeError(f"{name} must be numbers, got {variance!r}")
    values = np.asarray(variance, dtype=np.float64)
    if shape is not None and values.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {values.shape}")
    low, high = VARIANCE_RANGE
    bad = ~((values >= low) & (values <= high))
    if bad.any():
        raise ValueError(f"{name} must be a number in the {variance_range_text()}, got "
                         f"{float(values[bad].flat[0])!r}")
    return values
