"""Command-line parsing of the ``h``-level lists (kept here while ``dprisk.cli`` takes it over).

TODO(merge): the command line parses these lists itself; delete this module then. Its
functions are re-exported by :mod:`dprisk.inference.multilevel`.
"""

from __future__ import annotations

from dprisk.models.census import census_rhos, parse_rho
from dprisk.models.checks import check_positive_int

__all__ = ["parse_multilevel_args"]


def _split(text, name: str, form: str) -> list[str]:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{name} must be a comma-separated list ({form}), got {text!r}")
    parts = [part.strip() for part in text.split(",")]
    if any(not part for part in parts):
        raise ValueError(f"{name} must be a comma-separated list ({form}) with no empty entry, "
                         f"got {text!r}")
    return parts


def _parse_integer(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {text!r}") from None


def parse_multilevel_args(rhos_text: str, siblings_text: str, stars_text: str) -> dict:
    """Parse the command-line lists of the ``h``-level model.

    Parameters
    ----------
    rhos_text : str
        ``"R1,...,Rh"`` with each entry a number > 0 or ``census:LEVEL``, or ``"census:N"``
        (the bottom ``N`` Census levels, 2 <= N <= 6); h >= 2.
    siblings_text : str
        ``"d2,...,dh"``: ``h - 1`` integers >= 1.
    stars_text : str
        ``"x1*,...,xh*,y1*,...,y(h-1)*"``: ``2h - 1`` integers (may be negative).

    Returns
    -------
    dict
        ``{"rhos": [...], "siblings": [...], "x_stars": [...], "y_stars": [...]}``, the
        keyword arguments of :func:`posterior_summary` (and of :func:`exact_posterior`).

    Raises
    ------
    ValueError
        One line naming ``rhos``, ``siblings`` or ``stars`` and the expected form.
    """
    rho_form = "R1,...,Rh with numbers > 0 or census:LEVEL, or census:N"
    parts = _split(rhos_text, "rhos", rho_form)
    if len(parts) == 1 and parts[0].startswith("census:") and parts[0][7:].isdigit():
        n_levels = int(parts[0][7:])
        if not 2 <= n_levels <= 6:
            raise ValueError(f"rhos: census:N needs 2 <= N <= 6, got {parts[0]!r}")
        rhos = census_rhos(n_levels)
    else:
        rhos = [parse_rho(part, f"rhos: rho_{i + 1}") for i, part in enumerate(parts)]
    h = len(rhos)
    if h < 2:
        raise ValueError(f"rhos must have at least 2 entries (h >= 2 levels; {rho_form}), "
                         f"got {rhos_text!r}")
    d_parts = _split(siblings_text, "siblings", f"d2,...,dh: h - 1 = {h - 1} integers >= 1")
    if len(d_parts) != h - 1:
        raise ValueError(f"siblings must have h - 1 = {h - 1} entries d2,...,dh, "
                         f"got {len(d_parts)} ({siblings_text!r})")
    siblings = []
    for i, part in enumerate(d_parts):
        value = _parse_integer(part, f"siblings: d_{i + 2}")
        siblings.append(check_positive_int(value, f"siblings: d_{i + 2}"))
    star_form = f"x1*,...,x{h}*,y1*,...,y{h - 1}*: 2h - 1 = {2 * h - 1} integers"
    s_parts = _split(stars_text, "stars", star_form)
    if len(s_parts) != 2 * h - 1:
        raise ValueError(f"stars must have 2h - 1 = {2 * h - 1} entries ({star_form}), "
                         f"got {len(s_parts)} ({stars_text!r})")
    names = [f"x{i + 1}*" for i in range(h)] + [f"y{i + 1}*" for i in range(h - 1)]
    stars = [_parse_integer(part, f"stars: {nm}") for part, nm in zip(s_parts, names, strict=True)]
    return {"rhos": rhos, "siblings": siblings, "x_stars": stars[:h], "y_stars": stars[h:]}
