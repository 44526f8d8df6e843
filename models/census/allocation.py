r"""The 2020 U.S. Census privacy-loss allocation for the GVHR query (paper Table 2).

The global budget rho = 2.56 (delta = 1e-10) is split across six geographic levels
(``geolevel_share``) and, within a level, across queries; the GVHR query's share is
``query_share``. The GVHR rho of a level is

.. math:: \rho_{\text{level}} = 2.56 \times \text{geolevel share} \times \text{query share},

kept here as exact fractions (Abowd et al. 2022, Section 8.2; the paper's Table 2).
Levels are ordered from the bottom of the hierarchy (``block``) to the top (``us``).

This module is also the one parser of the ``census:`` forms: :func:`parse_rho` (one rho, a
number or ``census:LEVEL``) and :func:`parse_rhos` (a comma list of those, or ``census:N`` for
the bottom ``N`` levels).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from fractions import Fraction

from dprisk.models.checks import check_rho
from dprisk.runtime.ascii_numbers import ascii_digits, parse_number

__all__ = [
    "CENSUS_DELTA",
    "CENSUS_LEVELS",
    "CENSUS_RHO_TOTAL",
    "CensusLevel",
    "census_level",
    "census_rhos",
    "parse_rho",
    "parse_rhos",
]

#: Global zCDP budget of the 2020 redistricting (PL 94-171) release.
CENSUS_RHO_TOTAL = Fraction(256, 100)
#: The delta the Census Bureau used to state its (epsilon, delta)-DP guarantee.
CENSUS_DELTA = 1e-10


@dataclass(frozen=True)
class CensusLevel:
    """One geographic level of the 2020 Census hierarchy and its GVHR privacy budget.

    Attributes
    ----------
    name : str
        One of ``block``, ``block-group``, ``tract``, ``county``, ``state``, ``us``.
    geolevel_share : Fraction
        Share of the global rho given to this level (Table 2, second column).
    query_share : Fraction
        Share of the level's rho given to the GVHR query (Table 2, third column).
    """

    name: str
    geolevel_share: Fraction
    query_share: Fraction

    @property
    def rho_exact(self) -> Fraction:
        """The level's GVHR rho as an exact fraction: 2.56 x geolevel share x query share."""
        return CENSUS_RHO_TOTAL * self.geolevel_share * self.query_share

    @property
    def rho(self) -> float:
        """The level's GVHR rho as a float."""
        return float(self.rho_exact)


#: Table 2, bottom of the hierarchy first.
CENSUS_LEVELS: tuple[CensusLevel, ...] = (
    CensusLevel("block", Fraction(165, 4099), Fraction(3945, 4097)),
    CensusLevel("block-group", Fraction(1256, 4099), Fraction(1288, 4099)),
    CensusLevel("tract", Fraction(687, 4099), Fraction(241, 2051)),
    CensusLevel("county", Fraction(447, 4099), Fraction(754, 4097)),
    CensusLevel("state", Fraction(1440, 4099), Fraction(230, 4097)),
    CensusLevel("us", Fraction(104, 4099), Fraction(189, 241)),
)

_BY_NAME = {level.name: level for level in CENSUS_LEVELS}


def census_level(name: str) -> CensusLevel:
    """Return the Census level called ``name`` (``block`` ... ``us``).

    Parameters
    ----------
    name : {"block", "block-group", "tract", "county", "state", "us"}
        The level's name.

    Returns
    -------
    CensusLevel
        Its shares of the global rho; ``.rho`` is its GVHR rho (block: 0.0992, block-group:
        0.2465).

    Raises
    ------
    ValueError
        If ``name`` is not a known level; the message lists the known names.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        known = ", ".join(_BY_NAME)
        raise ValueError(f"unknown Census level {name!r}; known levels: {known}") from None


def census_rhos(n_levels: int) -> list[float]:
    """The GVHR rho of the bottom ``n_levels`` Census levels, block first (1 <= n <= 6).

    Parameters
    ----------
    n_levels : int (1 <= n_levels <= 6)
        How many levels, counted from the block up.

    Returns
    -------
    list of float
        ``n_levels`` rhos, ``[census_level("block").rho, census_level("block-group").rho,
        ...]``.

    Raises
    ------
    ValueError
        Naming ``n_levels`` unless it is an integer (not a bool) from 1 to 6.
    """
    top = len(CENSUS_LEVELS)
    if isinstance(n_levels, bool) or not isinstance(n_levels, numbers.Integral) \
            or not 1 <= n_levels <= top:
        raise ValueError(
            f"n_levels (the number of Census levels) must be an integer from 1 to {top} "
            f"(allowed range: 1 <= n_levels <= {top}), got {n_levels!r}"
        )
    return [level.rho for level in CENSUS_LEVELS[:n_levels]]


def parse_rho(value, name: str = "rho") -> float:
    """Parse a rho given as a number, a fraction (``1/4``) or ``census:LEVEL`` (``census:block``).

    Parameters
    ----------
    value : float or str
        A positive number, a numeric string, or ``census:LEVEL``.
    name : str, default "rho"
        Parameter name used in error messages.

    Returns
    -------
    float
        The rho (``0 < rho <= 1e100``); a level's GVHR rho for ``census:LEVEL``.

    Raises
    ------
    ValueError
        If the value is not a finite positive number or names an unknown level.
    """
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("census:"):
            level = text.split(":", 1)[1]
            if level not in _BY_NAME:
                known = ", ".join(_BY_NAME)
                raise ValueError(
                    f"{name}: unknown Census level {level!r} (allowed: census:LEVEL with "
                    f"LEVEL one of {known})"
                )
            return _BY_NAME[level].rho
        try:
            value = parse_number(text, fractions=True)  # ASCII digits only: not "\u0663"
        except ValueError:
            raise ValueError(
                f"{name} must be a finite number > 0 (a fraction like 1/4 is accepted) "
                f"or census:LEVEL, got {value!r}"
            ) from None
    arr = check_rho(value, name)
    if arr.ndim:
        raise ValueError(f"{name} must be a single number > 0 or census:LEVEL, got {value!r}")
    return float(arr)


def parse_rhos(text, name: str = "rhos", *, min_levels: int = 1) -> list[float]:
    """Parse one rho per level: a comma list of numbers / ``census:LEVEL``, or ``census:N``.

    ``census:N`` is the GVHR rho of the bottom ``N`` Census levels, block first
    (:func:`census_rhos`), with ``min_levels <= N <= 6`` (the number of Census levels);
    otherwise each comma-separated item is parsed by :func:`parse_rho` and named
    ``"{name}: rho_i"`` in its error message.

    Parameters
    ----------
    text : str
        ``"R1,...,Rh"`` (each a number > 0 or ``census:LEVEL``) or ``"census:N"``.
    name : str
        Parameter name used in error messages.
    min_levels : int (min_levels >= 1)
        Fewest levels the caller accepts: 1 for a target unique at ``ell`` levels, 2 for a
        nested hierarchy.

    Returns
    -------
    list of float
        One rho per level, bottom level first.

    Raises
    ------
    ValueError
        One line naming ``name`` and the allowed forms.
    """
    n_census = len(CENSUS_LEVELS)
    form = (f"a comma list of at least {min_levels} items rho > 0 or census:LEVEL, "
            f"or census:N with {min_levels} <= N <= {n_census}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{name} must be {form}, got {text!r}")
    stripped = text.strip()
    if _is_census_count(stripped):
        count = int(stripped[7:])
        if not min_levels <= count <= n_census:
            raise ValueError(f"{name}: census:N needs {min_levels} <= N <= {n_census}, "
                             f"got {text!r}")
        return census_rhos(count)
    items = [item.strip() for item in stripped.split(",")]
    rhos = []
    for i, item in enumerate(items):
        if not item:
            raise ValueError(f"{name} must be {form} with no empty entry, got {text!r}")
        if _is_census_count(item):
            raise ValueError(f"{name}: census:N stands alone (the bottom N levels); inside a "
                             f"list use census:LEVEL, got {item!r} in {text!r}")
        try:
            rhos.append(parse_rho(item, f"{name}: rho_{i + 1}"))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{err} (in {text!r}; allowed: {form})") from None
    if len(rhos) < min_levels:
        raise ValueError(f"{name} must have at least {min_levels} entries ({form}), "
                         f"got {text!r}")
    return rhos


def _is_census_count(text: str) -> bool:
    """Whether ``text`` is the ``census:N`` form (``N`` digits)."""
    return text.startswith("census:") and ascii_digits(text[7:].strip())
