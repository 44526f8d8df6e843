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

import copy
import ipaddress
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from dprisk.models.census.allocation import parse_rho
from dprisk.models.checks import check_count, check_probability
from dprisk.models.priors.base import PRIOR_FORMS
from dprisk.models.priors.library import X2Prior, parse_prior

__all__ = [
    "PriorChoice",
    "PriorPolicy",
    "Sequencer",
    "is_loopback",
    "prior_policy",
    "read_box",
    "read_count",
    "read_integer",
    "read_number",
    "read_prior",
    "read_probability",
    "read_rho",
    "read_scenario",
    "read_slider",
]


def read_number(text, name: str) -> float:
    """A float from ``text`` as the command line reads one.

    :func:`~dprisk.runtime.ascii_numbers.parse_number` with fractions, as
    ``dprisk.cli.common.number``.

    ASCII digits only, a fraction ``a/b`` accepted; a fraction beyond the largest float, or
    one too small for a float (``1/9...9``: read as 0) is refused. ValueError naming ``name``.
    """
    if not isinstance(text, str):
        return float(text)
    from dprisk.runtime.ascii_numbers import parse_number

    try:
        return parse_number(text, fractions=True)
    except (ValueError, OverflowError):
        raise ValueError(f"{name} must be a number (a fraction like 1/4 is accepted), "
                         f"got {_quoted(text)}") from None


def read_integer(text, name: str) -> int:
    """An integer from ``text`` as the command line reads one.

    :func:`~dprisk.runtime.ascii_numbers.parse_integer`, as ``dprisk.cli.common.integer``.

    Exact (``9007199254740993`` stays itself, never the float 2**53); ``3.0`` is 3.
    """
    if not isinstance(text, str):
        value = float(text)
        if not value.is_integer():
            raise ValueError(f"{name} must be an integer, got {text!r}")
        return int(value)
    from dprisk.runtime.ascii_numbers import parse_integer

    try:
        return parse_integer(text)
    except (ValueError, OverflowError):
        raise ValueError(f"{name} must be an integer, got {_quoted(text)}") from None


def read_box(text: str, name: str, integer: bool):
    """The number in a live control's box (``0.05``, ``1/3``, ``-2``); ValueError naming ``name``.

    An integer box reads an integer exactly (:func:`read_integer`, as the command line does):
    through a float, ``9007199254740993`` was ``9007199254740992``, which the view computed
    and showed as current under the box's text. An integer-valued fraction (``6/2``) is 3.
    """
    if integer:
        try:
            return read_integer(text, name)
        except ValueError:  # a fraction, or not a number: read as one below
            pass
    value = read_number(text, name)
    if not integer:
        return value
    if not value.is_integer():
        raise ValueError(f"{name} must be an integer, got {text!r}")
    return int(value)


#: Characters of typed text quoted in a message (the rest is cut: a message is one line).
QUOTE_CHARS = 200


def _quoted(text: str) -> str:
    """``text`` as a message quotes it: ``repr``, cut to :data:`QUOTE_CHARS` characters."""
    if len(text) <= QUOTE_CHARS:
        return repr(text)
    return f"{text[:QUOTE_CHARS]!r}... ({len(text)} characters)"


def read_rho(text, name: str = "rho") -> float:
    """``rho > 0`` from a number, a fraction or ``census:LEVEL`` (as the CLI reads it)."""
    return parse_rho(text, name)


def read_slider(value, name: str, start: float, end: float) -> float:
    """A slider's value, refused outside the slider's range ``start <= value <= end``.

    The page never sends a value outside it, but a client writing its own websocket
    messages can (Bokeh checks a slider's value for a number, not for its range); the
    view's cost was sized by that range (the single-level view computes on the event loop:
    at ``rho1 = 3e-14`` it froze every visitor for 22-44 s).
    """
    number = read_rho(value, name)
    if not start <= number <= end:
        raise ValueError(f"{name} must be in {start:g}..{end:g} (the slider's range), "
                         f"got {number:g}")
    return number


def read_probability(text, name: str = "p") -> float:
    """A probability ``0 < p < 1`` from a number or a fraction."""
    return float(check_probability(read_number(text, name), name))


def read_count(text, name: str, *, minimum: int | None = None) -> int:
    """An integer (``>= minimum`` when given) from text such as ``3`` or ``-2``."""
    value = read_integer(text, name)
    try:
        return int(check_count(value, name, minimum=minimum))
    except ValueError:  # its message quotes the value: all of a 400-digit one
        if len(str(value)) <= QUOTE_CHARS:
            raise
        raise ValueError(f"{name} must have absolute value <= 2**53, got "
                         f"{_quoted(str(text).strip())}") from None


#: The built-in prior forms, which never read a file.
BUILTIN_PRIORS = "improper, truncated:U or point:K"
#: Model-file names a :class:`PriorPolicy` lists (no subfolders deeper than this).
PRIOR_DIR_DEPTH = 4


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback-only listening address (``127.x``, ``::1``, localhost).

    ``0.0.0.0``, ``::``, a LAN address or any other host name count as beyond loopback.
    """
    text = host.strip().strip("[]")
    if text.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class PriorPolicy:
    """Which priors a visitor of the served explorer may use.

    ``typed_files``: ``PATH.py:NAME`` typed into the prior box is loaded (a server on loopback
    only: the visitor is the person who started it). Otherwise only the built-in forms are
    read from the box, and model files come only from ``prior_dir``: the ``.py`` files under
    it (resolved inside it: no symlink or ``..`` leads out), chosen from :meth:`files`, with
    the prior's NAME typed into the box. Every other file is refused with one message that
    says nothing about the file system (:meth:`refusal`), and is never imported.
    """

    typed_files: bool = True
    prior_dir: Path | None = None

    def files(self) -> list[str]:
        """The model files offered: paths relative to ``prior_dir``, sorted ([] without one)."""
        if self.prior_dir is None:
            return []
        root = self.prior_dir.resolve()
        found = []
        # hidden folders and folders deeper than listed are not walked at all (a whole tree
        # walked, then filtered: 5.2 s a call for a project folder with its .venv, on every
        # page load, each request with a model file and each sampling check)
        for folder, subfolders, names in os.walk(root):
            depth = len(Path(folder).relative_to(root).parts)
            subfolders[:] = [sub for sub in subfolders
                             if not sub.startswith(".") and depth + 1 < PRIOR_DIR_DEPTH]
            for name in names:
                rel = (Path(folder) / name).relative_to(root).as_posix()
                if name.endswith(".py") and not name.startswith(".") \
                        and self._inside(root, rel) is not None:
                    found.append(rel)
        return sorted(found, key=lambda rel: rel.split("/"))

    @staticmethod
    def _inside(root: Path, name: str) -> Path | None:
        """``root / name`` resolved, if it is a regular ``.py`` file inside ``root``."""
        if not name or name.startswith("/") or "\\" in name or "\x00" in name:
            return None
        try:
            resolved = (root / name).resolve()
        except (OSError, RuntimeError, ValueError):
            return None
        if not resolved.is_relative_to(root) or resolved.suffix != ".py":
            return None
        return resolved if resolved.is_file() else None

    def refusal(self) -> ValueError:
        """The one message for a prior this server does not load (nothing about files)."""
        offer = (" or NAME with a file chosen from the list" if self.prior_dir is not None
                 else "; this server loads no model files")
        return ValueError(f"prior: not allowed here; use {BUILTIN_PRIORS}{offer}")

    def read(self, text, known: int = 0, prior_file: str | None = None) -> X2Prior:
        """The prior named by the box ``text`` (and the chosen ``prior_file``), checked.

        A refusal quotes at most :data:`QUOTE_CHARS` characters of the text (the library's
        messages quote all of it: a 10 MB box came back as a 10 MB message), and without
        typed files it lists the forms this server reads (:meth:`forms`), not the library's
        ``PATH.py:NAME``, which it refuses.
        """
        text = str(text).strip()
        try:
            return self._read(text, known, prior_file)
        except ValueError as err:
            message = str(err)
            if not self.typed_files:  # the library's forms offer PATH.py:NAME: not here
                message = message.replace(PRIOR_FORMS, self.forms())
            if len(text) > QUOTE_CHARS:
                message = message.replace(repr(text), _quoted(text))
            if message == str(err):
                raise
            raise ValueError(message) from None

    def forms(self) -> str:
        """The prior forms this server reads, as a message lists them."""
        return BUILTIN_PRIORS + (", or NAME with a model file chosen from the list"
                                 if self.prior_dir is not None else "")

    def _read(self, text: str, known: int, prior_file: str | None) -> X2Prior:
        from dprisk.models.priors.library import check_support

        if prior_file:
            return check_support(self._from_dir(prior_file, text), known)
        if self.typed_files:
            return read_prior(text, known)
        if not is_builtin_prior(text):  # never handed to parse_prior: it might load a file
            raise self.refusal()
        return read_prior(text, known)

    def _from_dir(self, prior_file: str, name: str) -> X2Prior:
        if self.prior_dir is None or prior_file not in self.files():
            raise self.refusal()
        if not name.isidentifier():
            raise ValueError(f"prior: with a model file chosen, the box holds the NAME of "
                             f"the prior in it (a Python identifier), got {name!r}")
        path = self._inside(self.prior_dir.resolve(), prior_file)
        if path is None:
            raise self.refusal()
        try:
            prior = parse_prior(f"{path}:{name}")
        except Exception as err:  # the file's own message may quote its code or paths
            raise ValueError(f"prior {prior_file}:{name}: the model file cannot be loaded "
                             f"({type(err).__name__})") from None
        # named as the visitor chose it, never by the server's absolute path (shown in the
        # numbers, the downloads and every message that quotes the prior); a copy: the loaded
        # object is cached under its path
        prior = copy.copy(prior)
        object.__setattr__(prior, "spec", f"{prior_file}:{name}")
        return prior


#: A built-in prior's text, read strictly: ``improper``, ``truncated:U``, ``point:K`` with an
#: integer in ASCII digits (nothing else after the colon).
BUILTIN_PRIOR = re.compile(r"improper|(?:truncated|point):[+-]?[0-9]+")


def is_builtin_prior(text: str) -> bool:
    """Whether ``text`` is a built-in prior, which never reads a file.

    Strict, not by its first word: :func:`dprisk.models.priors.library.parse_prior` loads a
    model file for any text holding ``.py:`` before it looks at the word, so
    ``truncated:/evil.py:prior`` (a folder named ``truncated:`` in the server's working
    directory) names a file.
    """
    return BUILTIN_PRIOR.fullmatch(text.strip()) is not None


@dataclass(frozen=True)
class PriorChoice:
    """The prior a visitor chose, as text: what a sampling worker process reads again.

    A prior loaded from a model file lives in a module with a made-up name
    (:mod:`dprisk.models.priors.files`), which a worker process cannot import, so the prior
    object itself cannot be sent there (pickled). The worker gets this instead and reads the
    same text under the same :class:`PriorPolicy` (:meth:`load`): the same checks, the same
    file, nothing the server would refuse.
    """

    policy: PriorPolicy
    text: str
    prior_file: str | None = None
    known: int = 0

    def load(self) -> X2Prior:
        """The prior, read and checked under :attr:`policy`."""
        return self.policy.read(self.text, self.known, self.prior_file)

    def __str__(self) -> str:
        return f"{self.prior_file}:{self.text}" if self.prior_file else str(self.text).strip()


def prior_policy(host: str, prior_dir: Path | None = None) -> PriorPolicy:
    """The policy of a server listening on ``host``: typed files on loopback only."""
    return PriorPolicy(typed_files=prior_dir is None and is_loopback(host),
                       prior_dir=prior_dir)


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


def read_scenario(values: dict, policy: PriorPolicy | None = None) -> dict:
    """``rho1, rho2, d, p, m, prior`` from the text boxes of a two-level view (by key).

    The prior is read under ``policy`` (default: typed files allowed), with the model file
    chosen in ``values["prior_file"]`` when there is one.
    """
    m = read_count(values["m"], "m", minimum=0)
    policy = policy or PriorPolicy()
    return {"rho1": read_rho(values["rho1"], "rho1"), "rho2": read_rho(values["rho2"], "rho2"),
            "d": read_count(values["d"], "d", minimum=1),
            "p": read_probability(values["p"], "p"), "m": m,
            "prior": policy.read(values["prior"], m, values.get("prior_file"))}


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
