"""The one parser of typed numbers (dprisk.runtime.ascii_numbers) and its three users.

ASCII text is read as Python reads it (``float``, ``Fraction`` for ``p/q``); any other
script's digits are refused, by the parser and by each layer that uses it: the command
line's argument types, the ``DPRISK_*`` settings and the census rho parser (each with its
own message, checked in tests/cli/test_ascii_numbers.py and tests/reliability).
"""

import argparse
import math

import pytest

from dprisk.cli.common import integer, number
from dprisk.models.census.allocation import parse_rho
from dprisk.runtime.ascii_numbers import (
    ascii_digits,
    ascii_number,
    parse_integer,
    parse_number,
)
from dprisk.runtime.settings import SETTINGS

ARABIC_INDIC_THREE = "\u0663"
OTHER_SCRIPTS = [ARABIC_INDIC_THREE, "\u0661.\u0665", "1\u0660", "\uff13", "1/\u0663"]


@pytest.mark.parametrize(("text", "fractions", "expected"), [
    ("3", False, 3.0), (" 2.5 ", False, 2.5), ("1e9", False, 1e9), ("1_000", False, 1000.0),
    ("1/4", True, 0.25), (" 1/864 ", True, 1 / 864), ("3", True, 3.0), ("-1/2", True, -0.5),
])
def test_ascii_numbers_are_read_as_python_reads_them(text, fractions, expected):
    assert parse_number(text, fractions=fractions) == expected


@pytest.mark.parametrize("text", ["1/4", "abc", "", "1/0", "1//2"])
def test_malformed_numbers_raise_value_error(text):
    with pytest.raises(ValueError):
        parse_number(text, fractions=text != "1/4")


@pytest.mark.parametrize("text", OTHER_SCRIPTS)
def test_other_scripts_digits_are_refused_at_every_layer(text):
    with pytest.raises(ValueError, match="ASCII"):
        ascii_number(text)
    for fractions in (False, True):
        with pytest.raises(ValueError, match="ASCII"):
            parse_number(text, fractions=fractions)
    for parse in (number, integer):  # the command line's argument types
        with pytest.raises(argparse.ArgumentTypeError, match="must be"):
            parse(text)
    for name in ("DPRISK_WORK_LIMIT", "DPRISK_SCHEDULER_TIMEOUT"):  # the settings: malformed
        assert SETTINGS[name].parse(text) is None
    with pytest.raises(ValueError, match="rho2 must be a finite number > 0"):
        parse_rho(text, "rho2")


def test_a_fraction_beyond_the_largest_float_is_refused_not_a_traceback(capsys):
    """``1e400/1`` is not a fraction Python reads, but 1 followed by 400 zeros over 1 is, and
    ``float()`` of it raised OverflowError: a traceback on the command line. Now the
    option's usual refusal (exit 2, one line naming it)."""
    from cli_helpers import assert_refused

    huge = "1" + "0" * 400 + "/1"
    with pytest.raises(ValueError, match="too large"):
        parse_number(huge, fractions=True)
    with pytest.raises(argparse.ArgumentTypeError, match="must be a number"):
        number(huge)
    with pytest.raises(ValueError, match="rho must be a finite number > 0"):
        parse_rho(huge)
    assert_refused(["budget", "--max-ratio", huge], "--max-ratio", capsys)


def test_the_same_numbers_in_ascii_are_accepted_at_every_layer():
    assert number("1/4") == 0.25 and integer("3") == 3 and integer("3.0") == 3
    assert SETTINGS["DPRISK_WORK_LIMIT"].parse("1e13") == 1e13
    assert SETTINGS["DPRISK_SCHEDULER_TIMEOUT"].parse("30") == 30.0
    assert parse_rho(" 1/4 ") == 0.25
    assert math.isnan(parse_number("nan"))  # the range is the caller's to check


@pytest.mark.parametrize(("text", "expected"), [
    ("3.0", 3), (" 1e3 ", 1000), ("-0.0", 0), ("1_000", 1000), ("2.5e1", 25),
    # read through float() these were 99999999999999991611392 and 2**53 (then accepted as a
    # count <= 2**53 though 2**53 + 1 was typed)
    ("1e23", 10**23), ("9007199254740993.0", 2**53 + 1), ("1e308", 10**308),
])
def test_integer_valued_decimals_are_read_exactly(text, expected):
    assert parse_integer(text) == expected and type(parse_integer(text)) is int


@pytest.mark.parametrize("text", ["1.5", "1.00000000000000001", "1e400", "1e999999999", "inf",
                                  "nan", "Infinity", "sNaN", "0x10", "", "1/2", "1e-320",
                                  ARABIC_INDIC_THREE, "\u0663.0"])
def test_anything_but_an_integer_within_the_floats_is_not_an_integer(text):
    with pytest.raises(ValueError, match=r"^not an integer: "):
        parse_integer(text)


def test_a_count_written_as_a_decimal_beyond_2_53_is_refused(capsys):
    """``--known 9007199254740993.0`` ran as 2**53 (exit 0): float() rounded it first."""
    from cli_helpers import assert_refused

    assert_refused(["marginal", "--rho1", "0.5", "--known", "9007199254740993.0"], "--known",
                   capsys)


@pytest.mark.parametrize(("text", "length", "expected"), [
    ("01", 2, True), ("0123", None, True), ("01", 3, False), ("", None, False),
    ("\uff10\uff11", 2, False), ("\u00b2\u00b3", 2, False), ("\u0660\u0661", 2, False),
    ("0 1", None, False), ("-1", None, False), ("1\n", None, False), (1, None, False),
])
def test_ascii_digits_takes_ascii_digits_only(text, length, expected):
    """str.isdigit is True for "０１", "²³" and "٠١"; a code of digits means none of them."""
    assert ascii_digits(text, length) is expected
