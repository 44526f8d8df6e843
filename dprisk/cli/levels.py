"""The comma lists of the nested-levels forms: ``--rhos``, ``--siblings``, ``--stars``.

``--rhos`` is ``R1,...,Rh`` (each a number > 0, fractions accepted, or ``census:LEVEL``) or
``census:N``, the bottom ``N`` Census levels, block first
(:func:`dprisk.models.census.allocation.census_rhos`);
``--siblings`` is ``d2,...,dh`` and ``--stars`` is ``x1*,...,xh*,y1*,...,y(h-1)*``.
"""

from __future__ import annotations

from dprisk.models.census.allocation import parse_rhos as census_parse_rhos
from dprisk.models.checks import check_positive_int
from dprisk.runtime.ascii_numbers import ascii_number, parse_number

__all__ = ["RHOS_FORM", "check_two_levels", "parse_rhos", "parse_siblings", "parse_stars"]

#: The accepted forms of ``--rhos``, as shown in messages and help.
RHOS_FORM = "R1,...,Rh with numbers > 0 or census:LEVEL, or census:N (the bottom N levels)"


def _items(text, name: str, form: str) -> list[str]:
    """The stripped comma-separated items of ``text``; ValueError on an empty item."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{name} must be a comma-separated list ({form}), got {text!r}")
    items = [item.strip() for item in text.split(",")]
    if any(not item for item in items):
        raise ValueError(f"{name} must be a comma-separated list ({form}) with no empty entry, "
                         f"got {text!r}")
    return items


def parse_rhos(text, *, min_levels: int = 1, max_rho: float | None = None,
               limit: str = "") -> list[float]:
    """Parse ``--rhos`` with the one ``census:`` parser.

    The parser is :func:`dprisk.models.census.allocation.parse_rhos`.

    ``min_levels`` is 2 for the nested-levels form of ``posterior`` and 1 for a target unique
    at ``ell`` levels (``marginal``). With ``max_rho``, an entry above it is refused first
    (also one above the parser's own 1e100), the message stating ``limit``, the form's range.

    Raises
    ------
    ValueError
        Naming ``rhos`` (and ``rho_i`` for a bad entry) and the allowed forms.
    """
    if max_rho is not None and isinstance(text, str):
        for i, item in enumerate(text.split(",")):
            try:
                value = parse_number(item.strip(), fractions=True)
            except (ValueError, ZeroDivisionError):
                continue  # census:LEVEL or bad: the parser's message
            if value > max_rho:  # inf too; nan compares False: the parser's message
                raise ValueError(f"rhos: rho_{i + 1} = {item.strip()} is above {max_rho:g} "
                                 f"(allowed range: {limit})")
    return census_parse_rhos(text, "rhos", min_levels=min_levels)


def check_two_levels(rhos: list[float], siblings: list[int], max_precision: float,
                     limit: str) -> None:
    """Refuse ``rho_2 + rho_1/d_2`` above ``max_precision`` (``h = 2``: the two-level tables).

    The message names ``rhos`` and ``siblings`` and states ``limit``, the form's range.
    """
    if len(rhos) == 2 and (precision := rhos[1] + rhos[0] / siblings[0]) > max_precision:
        raise ValueError(f"rhos, siblings: with two levels rho_2 + rho_1/d_2 = {precision:.6g} "
                         f"is above {max_precision:g}, where the two-level tables lose "
                         f"accuracy (allowed range: {limit})")


def parse_siblings(text, n_levels: int) -> list[int]:
    """Parse ``--siblings``: ``d2,...,dh``, ``h - 1`` integers >= 1 for ``h = n_levels``."""
    h = n_levels
    items = _items(text, "siblings", f"d2,...,dh: h - 1 = {h - 1} integers >= 1")
    if len(items) != h - 1:
        raise ValueError(f"siblings must have h - 1 = {h - 1} entries d2,...,dh, "
                         f"got {len(items)} ({text!r})")
    return [check_positive_int(_integer(item, f"siblings: d_{i + 2}"), f"siblings: d_{i + 2}")
            for i, item in enumerate(items)]


def parse_stars(text, n_levels: int) -> tuple[list[int], list[int]]:
    """Parse ``--stars``: ``x1*,...,xh*,y1*,...,y(h-1)*``; returns ``(x_stars, y_stars)``."""
    h = n_levels
    form = f"x1*,...,x{h}*,y1*,...,y{h - 1}*: 2h - 1 = {2 * h - 1} integers"
    items = _items(text, "stars", form)
    if len(items) != 2 * h - 1:
        raise ValueError(f"stars must have 2h - 1 = {2 * h - 1} entries ({form}), "
                         f"got {len(items)} ({text!r})")
    names = [f"x{i + 1}*" for i in range(h)] + [f"y{i + 1}*" for i in range(h - 1)]
    stars = [_integer(item, f"stars: {name}") for item, name in zip(items, names, strict=True)]
    for star, name in zip(stars, names, strict=True):
        if abs(star) > 2**53:  # named here: the model's check names x_stars / y_stars
            raise ValueError(f"stars: {name} must be an integer >= -2**53 and <= 2**53 "
                             f"(allowed range: -2**53 <= {name} <= 2**53), got {star}")
    return stars[:h], stars[h:]


def _integer(text: str, name: str) -> int:
    try:
        return int(ascii_number(text))
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {text!r}") from None
