r"""Numbers typed by the user, read in ASCII digits only: the one parser under every layer.

Python's ``int`` and ``float`` also read other scripts' digits (``int("\u0663")`` is 3,
``float("\u0661.\u0665")`` is 1.5), which no option or environment variable of this tool
means: ``--seed \u0663`` once ran with seed 3. :func:`ascii_number` refuses text that is not
ASCII, and :func:`parse_number` reads a number (optionally a fraction ``p/q``) from it.
Used by the command line's argument types (:mod:`dprisk.cli.common` and the list options
built on it), by the ``DPRISK_*`` settings (:mod:`dprisk.runtime.settings`) and by
:func:`dprisk.models.census.allocation.parse_rho`; each turns the ``ValueError`` into its own
refusal (the option's or variable's one line), so the messages stay theirs.
:func:`ascii_digits` is the check of a code typed or read as digits (a FIPS state code, a
GEOID, a port): ``str.isdigit`` also takes ``"０１"``, ``"٣"`` and ``"²³"``.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

__all__ = ["ascii_digits", "ascii_number", "parse_integer", "parse_number"]


def ascii_number(text: str) -> str:
    """``text`` if it is ASCII, else a ``ValueError``.

    Python's ``int`` and ``float`` also read other scripts' digits (``int("\u0663")`` is 3),
    which no option of this tool means.

    Raises
    ------
    ValueError
        When ``text`` holds a character outside ASCII.
    """
    if not text.isascii():
        raise ValueError(f"not written in ASCII digits: {text!r}")
    return text


def ascii_digits(text, length: int | None = None) -> bool:
    """Whether ``text`` is a str of ASCII digits 0-9 only (exactly ``length`` when given).

    ``str.isdigit`` (and ``isdecimal``) also take other scripts' digits (``"０１"``, ``"٣"``),
    which ``int`` reads as 1 and 3, and superscripts (``"²³"``), which ``int`` refuses with
    its own message; no code this tool reads means them.
    """
    return (isinstance(text, str) and text.isascii() and text.isdigit()
            and (length is None or len(text) == length))


def parse_number(text: str, *, fractions: bool = False) -> float:
    """The float written in ``text`` in ASCII; with ``fractions``, also ``p/q`` (``1/864``).

    ``float(text)`` (surrounding blanks, ``1e9``, ``inf`` and ``nan`` as Python reads them;
    the caller checks the range), or with ``fractions`` and a ``/`` in the text
    ``float(Fraction(text.strip()))``.

    Raises
    ------
    ValueError
        When ``text`` is not ASCII (:func:`ascii_number`), is not a number, or is a fraction
        with denominator 0, beyond the largest float or non-zero and below the smallest one.
    """
    ascii_number(text)
    if fractions and "/" in text:
        try:
            exact = Fraction(text.strip())
            value = float(exact)
        except ZeroDivisionError:
            raise ValueError(f"a fraction with denominator 0: {text!r}") from None
        except OverflowError:  # float() of a fraction beyond 1.8e308 (float("1e400") is inf)
            raise ValueError(f"a fraction too large for a float: {text!r}") from None
        if value == 0 and exact != 0:  # 1/9...9 (400 nines) is not 0
            raise ValueError(f"a fraction too small for a float: {text!r}")
        return value
    return float(text)


def parse_integer(text: str) -> int:
    """The integer written in ``text`` in ASCII, exactly.

    Integer-valued decimals (``3.0``, ``1e3``) are accepted, read exactly as decimals
    (``1e23`` is 10**23, not ``int(float("1e23"))`` = 99999999999999991611392, and
    ``9007199254740993.0`` is 2**53 + 1, not 2**53), up to the largest float; ValueError for
    anything else (a fraction, inf, nan, ``٣``, ``1e400``).
    """
    try:
        return int(ascii_number(text))
    except ValueError:
        pass
    try:
        exact = Decimal(ascii_number(text))  # Decimal also reads "\u0663"
        valid = exact.is_finite() and math.isfinite(float(exact))  # 1e400: refused, as ever
    except (ArithmeticError, ValueError):
        valid = False
    if not valid or exact != exact.to_integral_value():
        raise ValueError(f"not an integer: {text!r}")
    return int(exact)
