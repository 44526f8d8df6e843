"""Validation of user-facing parameters, shared by the Python API and the command line.

Every check raises ``ValueError`` (or ``TypeError`` for a value that is not a number at all)
with a one-line message that names the parameter and states the allowed range, so the CLI
can print it verbatim and exit with status 2.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "RHO_MAX",
    "check_closed_probability",
    "check_count",
    "check_flag",
    "check_levels",
    "check_positive_int",
    "check_probability",
    "check_rho",
]


#: Largest rho (and epsilon) accepted: with counts up to 2**53, ``rho * x**2`` stays below
#: 1e132, far from overflow in every formula (log-odds, log pmfs, tail bounds).
RHO_MAX = 1e100


#: Scalar types the checks take without converting them to arrays first (the exact types: a
#: bool, a subclass of int, is not one of them). Their result is the array the general path
#: returns (0-d float64 for rho and p, 0-d int64 for a count), a few microseconds instead of
#: 15-25 (the checks run for every scenario and sampler call, thousands of times a report).
_PLAIN_NUMBERS = (float, int, np.float64)
_PLAIN_INTEGERS = (int, np.int64)


def _bool_sequence(value) -> bool:
    """Whether ``value`` is a list or tuple that numpy reads as booleans (``[True, False]``)."""
    if not isinstance(value, (list, tuple)):
        return False
    try:
        return np.asarray(value).dtype == bool
    except (TypeError, ValueError):  # ragged: refused or converted by the caller's own path
        return False


def _as_float_array(value, name: str, *, nonempty: bool = False) -> np.ndarray:
    """``value`` as a float array, naming ``name`` when refused.

    Refused: booleans (lists of them too), strings, object, complex and date/time arrays, and
    (with ``nonempty``) empty arrays.
    """
    if isinstance(value, (str, bytes, bool, np.bool_)) or value is None:
        raise TypeError(f"{name} must be a number, got {value!r}")
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "bOSUVcmM":
        # complex, datetime and timedelta too: a float cast drops the imaginary part (with a
        # ComplexWarning) or reads a date as its count of days
        raise TypeError(f"{name} must be numbers, got an array of dtype {value.dtype}")
    if _bool_sequence(value):
        raise TypeError(f"{name} must be numbers, got booleans {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {value!r}") from None
    if nonempty and arr.size == 0:
        raise ValueError(f"{name} must not be empty, got an array of shape {arr.shape}")
    return arr


def _describe(arr: np.ndarray, mask: np.ndarray) -> str:
    bad = arr[mask] if arr.ndim else arr
    return repr(float(np.ravel(bad)[0]))


def check_rho(rho, name: str = "rho", *, nonempty: bool = False) -> np.ndarray:
    """Return ``rho`` as a float array after checking ``0 < rho <= RHO_MAX`` elementwise.

    Parameters
    ----------
    rho : array_like of float (0 < rho <= RHO_MAX = 1e100)
        zCDP privacy-loss parameter(s).
    name : str
        Parameter name used in the error message.
    nonempty : bool
        Refuse an empty array (``ValueError``).

    Raises
    ------
    TypeError
        For a boolean, a string, an object array or anything that is not a number.
    ValueError
        If any value is not finite, not strictly positive or above :data:`RHO_MAX`.
    """
    if type(rho) in _PLAIN_NUMBERS and 0 < rho <= RHO_MAX:  # a plain number: no array checks
        return np.array(float(rho))
    arr = _as_float_array(rho, name, nonempty=nonempty)
    bad = ~(arr > 0) | ~(arr <= RHO_MAX)
    if np.any(bad):
        raise ValueError(
            f"{name} must be a finite number > 0 and <= {RHO_MAX:g} (allowed range: "
            f"0 < {name} <= {RHO_MAX:g}), got {_describe(arr, bad)}"
        )
    return arr


def check_probability(p, name: str = "p", *, nonempty: bool = False) -> np.ndarray:
    """Return ``p`` as a float array after checking ``0 < p < 1`` elementwise.

    Raises
    ------
    TypeError
        For a boolean, a string, an object array or anything that is not a number.
    ValueError
        If any value lies outside the open interval (0, 1) or is NaN (or, with
        ``nonempty``, the array is empty).
    """
    if type(p) in _PLAIN_NUMBERS and 0 < p < 1:  # a plain number: no array checks
        return np.array(float(p))
    arr = _as_float_array(p, name, nonempty=nonempty)
    bad = ~(np.isfinite(arr) & (arr > 0) & (arr < 1))
    if np.any(bad):
        raise ValueError(
            f"{name} must be a probability strictly between 0 and 1 "
            f"(allowed range: 0 < {name} < 1), got {_describe(arr, bad)}"
        )
    return arr


def _show_integer(value: int) -> str:
    """An integer as written, shortened to 6 digits in scientific form beyond 17 digits.

    ``--x1-star 1e308`` is the 309-digit integer ``int(1e308)``: shown ``1e+308``.
    """
    digits = str(abs(value))
    if len(digits) <= 17:
        return str(value)
    mantissa = (digits[0] + "." + digits[1:6]).rstrip("0").rstrip(".")
    return f"{'-' if value < 0 else ''}{mantissa}e+{len(digits) - 1}"


def _describe_count(arr: np.ndarray, mask: np.ndarray) -> str:
    """The first refused count: an integer-valued one as an integer (-1, not -1.0)."""
    bad = float(np.ravel(arr[mask] if arr.ndim else arr)[0])
    return _show_integer(int(bad)) if math.isfinite(bad) and bad == int(bad) else repr(bad)


def _count_range(name: str, minimum: int | None) -> str:
    """``name must be an integer in ... (allowed range: ...)``: both ends, 2**53 above."""
    low = "-2**53" if minimum is None else str(minimum)
    return (f"{name} must be an integer >= {low} and <= 2**53 (allowed range: "
            f"{low} <= {name} <= 2**53)")


def _check_exact_integers(value, name: str, minimum: int | None = None) -> None:
    """Refuse integers beyond 2**53 before the float conversion rounds them to 2**53.

    A scalar, an integer array, or a list or tuple of them (each item checked: ``[2**53 +
    1, 2]`` would otherwise become the floats ``[2**53, 2]``, silently).
    """
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_exact_integers(item, name, minimum)
    elif isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        if abs(int(value)) > 2**53:
            raise ValueError(f"{_count_range(name, minimum)}, got {_show_integer(int(value))}")
    elif isinstance(value, np.ndarray) and value.dtype.kind in "iu" and value.size:
        too_big = np.abs(value.astype(np.int64, copy=False)) > 2**53
        if np.any(too_big):  # (int64's most negative value wraps: caught by its float form)
            raise ValueError(f"{_count_range(name, minimum)}, got "
                             f"{_show_integer(int(value[too_big].ravel()[0]))}")


def check_count(value, name: str, *, minimum: int | None = None,
                nonempty: bool = False) -> np.ndarray:
    """Return an integer-valued ``value`` as an int64 array.

    Parameters
    ----------
    value : array_like of int
        Count(s) or noisy count(s); floats are accepted only when integer-valued.
    name, nonempty
        As in :func:`check_rho`.
    minimum : int, optional
        Smallest allowed value (``0`` for a true count, ``None`` for a noisy count,
        which may be negative).

    Raises
    ------
    TypeError
        As in :func:`check_rho` (the same conversion to numbers).
    ValueError
        If a value is not finite, not an integer, or below ``minimum``.
    """
    if type(value) in _PLAIN_INTEGERS and -(2**53) <= value <= 2**53 and (
            minimum is None or value >= minimum):  # a plain integer in range: no array checks
        return np.array(int(value), dtype=np.int64)
    if isinstance(value, (bool, np.bool_)) or (
        isinstance(value, np.ndarray) and value.dtype == bool
    ) or _bool_sequence(value):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if (isinstance(value, np.ndarray) and value.dtype.kind in "iu" and value.size
            and value.dtype.itemsize <= 8 - (value.dtype.kind == "u")):
        # integer array (uint64 excluded: it may not fit int64): only the range to check, on
        # the min and max (two passes, no float copy); anything refused takes the path below,
        # which words the message
        low, high = int(value.min()), int(value.max())
        if -(2**53) <= low and high <= 2**53 and (minimum is None or low >= minimum):
            return value.astype(np.int64)
    _check_exact_integers(value, name, minimum)
    arr = _as_float_array(value, name, nonempty=nonempty)
    bad = ~np.isfinite(arr) | (arr != np.round(arr))
    if np.any(bad):
        raise ValueError(f"{name} must be an integer, got {_describe(arr, bad)}")
    if np.any(np.abs(arr) > 2**53):
        too_big = np.abs(arr) > 2**53
        raise ValueError(f"{_count_range(name, minimum)}, got {_describe_count(arr, too_big)}")
    if minimum is not None and np.any(arr < minimum):
        raise ValueError(f"{_count_range(name, minimum)}, got "
                         f"{_describe_count(arr, arr < minimum)}")
    return arr.astype(np.int64)


def check_positive_int(value, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` as a Python int after checking it is an integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, float, np.floating)):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    allowed = f"{name} must be an integer >= {minimum} and <= 2**53"
    if isinstance(value, numbers.Integral):  # exact, also beyond int64 (np.isfinite can't)
        if not minimum <= value <= 2**53:
            raise ValueError(f"{allowed}, got {value!r}")
        return int(value)
    if not np.isfinite(value) or value != int(value) or not minimum <= value <= 2**53:
        raise ValueError(f"{allowed}, got {value!r}")
    return int(value)


def check_flag(value, name: str) -> bool:
    """Return ``value`` as a Python bool after checking it is ``True`` or ``False``.

    Raises
    ------
    TypeError
        For anything but a bool (``numpy.bool_`` too): a truthy string such as ``"no"``, a
        number, ``None``, which ``bool()`` would silently read as a flag.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_closed_probability(value, name: str) -> float:
    """Return a single probability ``0 <= value <= 1`` (both ends allowed) as a float.

    Raises
    ------
    TypeError
        For a boolean, a string, ``None`` or anything that is not a number.
    ValueError
        If the value is not a single number, is NaN or lies outside the closed interval [0, 1].
    """
    arr = _as_float_array(value, name)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a single number, got an array of shape {arr.shape}")
    if not 0.0 <= float(arr) <= 1.0:
        raise ValueError(f"{name} must be a probability between 0 and 1 "
                         f"(allowed range: 0 <= {name} <= 1), got {float(arr)!r}")
    return float(arr)


def check_levels(x_stars, rhos, p, known, name="x_stars"):
    """Validate releases at several levels (level/release on the last axis), each once.

    Returns
    -------
    tuple
        ``(x, rhos, p, m)``: int64 releases, float rhos, float p, int64 known.

    Raises
    ------
    ValueError
        Naming the parameter: a bad value, no last axis, or different numbers of levels.
    """
    x = check_count(x_stars, name)
    rhos = check_rho(rhos, "rhos")
    p = check_probability(p, "p")
    m = check_count(known, "known", minimum=0)
    if x.ndim == 0 or rhos.ndim == 0:
        raise ValueError(f"{name} and rhos must have a last axis (one entry per level/release)")
    if x.shape[-1] != rhos.shape[-1] or x.shape[-1] < 1:
        raise ValueError(
            f"{name} and rhos must have the same number of levels (>= 1) on their last axis, "
            f"got {x.shape[-1]} and {rhos.shape[-1]}"
        )
    return x, rhos, p, m
