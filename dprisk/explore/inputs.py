"""Reading the explorer's controls: text boxes to validated numbers, or one message.

Every number box of the explorer is a text box, so a person may type ``1/864``,
``census:block`` or a typo. The helpers here turn the text into a value with the same
parsers and checks the command line uses (:func:`dprisk.models.census.allocation.parse_rho`,
:mod:`dprisk.models.checks`, :func:`dprisk.models.priors.library.parse_prior`); a bad value
raises ``ValueError`` with one line naming the control, which the page shows instead of a
result. Nothing here imports Panel, so the rules are tested without a browser.

A :class:`Sequencer` numbers the requests of one view: a result is shown only if its ticket
is still the newest, so a slow answer to an old request never replaces the answer to a newer
one (and is never shown as current).
"""

from __future__ import annotations

import threading
from fractions import Fraction

from dprisk.models.census.allocation import parse_rho
from dprisk.models.checks import check_count, check_probability
from dprisk.models.priors.library import X2Prior, parse_prior

__all__ = [
    "Sequencer",
    "read_count",
    "read_number",
    "read_prior",
    "read_probability",
    "read_rho",
    "read_scenario",
]


def read_number(text, name: str) -> float:
    """A float from ``text`` (a number or a fraction ``a/b``); ValueError naming ``name``."""
    if not isinstance(text, str):
        return float(text)
    stripped = text.strip()
    try:
        return float(Fraction(stripped)) if "/" in stripped else float(stripped)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{name} must be a number (a fraction like 1/4 is accepted), "
                         f"got {text!r}") from None


def read_rho(text, name: str = "rho") -> float:
    """``rho > 0`` from a number, a fraction or ``census:LEVEL`` (as the CLI reads it)."""
    return parse_rho(text, name)


def read_probability(text, name: str = "p") -> float:
    """A probability ``0 < p < 1`` from a number or a fraction."""
    return float(check_probability(read_number(text, name), name))


def read_count(text, name: str, *, minimum: int | None = None) -> int:
    """An integer (``>= minimum`` when given) from text such as ``3`` or ``-2``."""
    value = read_number(text, name)
    if not value.is_integer():
        raise ValueError(f"{name} must be an integer, got {text!r}")
    return int(check_count(int(value), name, minimum=minimum))


def read_prior(text, known: int = 0) -> X2Prior:
    """The prior of X2 given X1, loaded and checked against ``known``.

    ``text`` is ``improper``, ``truncated:U``, ``point:K`` or ``PATH.py:NAME``; a file that
    does not load (missing, a syntax error, a missing name) is a one-line ValueError.
    """
    from dprisk.models.priors.library import check_support

    try:
        prior = parse_prior(text)
    except (OSError, SyntaxError, ImportError, AttributeError, TypeError, NameError) as err:
        raise ValueError(f"prior {text!r}: the model file cannot be loaded: "
                         f"{type(err).__name__}: {err}") from None
    return check_support(prior, known)


def read_scenario(values: dict) -> dict:
    """``rho1, rho2, d, p, m, prior`` from the text boxes of a two-level view (by key)."""
    m = read_count(values["m"], "m", minimum=0)
    return {"rho1": read_rho(values["rho1"], "rho1"), "rho2": read_rho(values["rho2"], "rho2"),
            "d": read_count(values["d"], "d", minimum=1),
            "p": read_probability(values["p"], "p"), "m": m,
            "prior": read_prior(values["prior"], m)}


class Sequencer:
    """Tickets for the requests of one view; only the newest ticket's result is current.

    ``ticket = seq.next()`` before computing, ``seq.is_current(ticket)`` before showing.
    Thread-safe: background work checks its ticket from a worker thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest = 0

    def next(self) -> int:
        """A new ticket, newer than every ticket handed out before."""
        with self._lock:
            self._latest += 1
            return self._latest

    def is_current(self, ticket: int) -> bool:
        """True if no newer ticket has been handed out since ``ticket``."""
        with self._lock:
            return ticket == self._latest

    @property
    def latest(self) -> int:
        """The newest ticket handed out (0 before the first)."""
        with self._lock:
            return self._latest
