"""Priors in a user's Python file, ``PATH.py:NAME`` (:mod:`~dprisk.models.priors.library`).

The file is imported once per modification time; ``NAME`` is an :class:`X2Prior` or a
zero-argument function returning one. Relative paths of the shipped examples
(``models/examples/...``) resolve to the installed copies, so they load from any working
directory.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import inspect
from pathlib import Path

from dprisk.models.priors.base import (
    PRIOR_FORMS,
    PriorRefused,
    X2Prior,
    one_line,
    running_user_code,
)

__all__ = ["bad_prior_spec", "bare_logp", "file_spec_parts", "load_prior_file", "prior_file_digest",
           "resolved_prior_spec", "wrap_hint"]


def bad_prior_spec(spec: str, why: str) -> ValueError:
    """The one-line error for a prior specification: what is wrong and the allowed forms."""
    return PriorRefused(f"prior {spec!r}: {one_line(why, 300)}; allowed forms: {PRIOR_FORMS}")


def bare_logp(obj) -> bool:
    """Whether ``obj`` looks like a bare ``logp(k2, k1)``: a function of two or more arguments."""
    if isinstance(obj, X2Prior) or isinstance(obj, type) or not callable(obj):
        return False
    try:
        parameters = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in parameters if p.kind in positional and p.default is p.empty]
    return len(required) >= 2


def wrap_hint(name: str, obj) -> str:
    """The refusal of a bare logp function: the rule and the fix (wrap it as a UserPrior)."""
    params = ", ".join(inspect.signature(obj).parameters)
    return (f"{name!r} is a bare function {name}({params}), not a prior; wrap it as "
            f"UserPrior({name}, is_proper=...) (from dprisk.models.priors.library import "
            f"UserPrior; is_proper=True only if its weights sum to 1 for every k1)")


#: Priors loaded from files, keyed by (resolved path, SHA-256 of the file's bytes, name): an
#: edit is seen even when it keeps the modification time (``cp -p``, ``touch -r``, file systems
#: with coarse timestamps), which the cache once keyed on.
_LOADED: dict[tuple[str, str, str], X2Prior] = {}


def _shipped_example(path: Path) -> Path | None:
    """The installed copy of a ``models/examples/NAME.py`` prior file, if ``path`` names one."""
    parts = path.parts
    if len(parts) != 3 or parts[:2] != ("models", "examples"):
        return None
    candidate = importlib.resources.files("dprisk.models.examples").joinpath(parts[2])
    return Path(str(candidate)) if candidate.is_file() else None


def _prior_path(spec: str, path_text: str) -> Path:
    """The resolved file of a ``PATH.py:NAME`` prior (a shipped example's installed copy)."""
    path = Path(path_text).expanduser()
    if not path.is_file() and not path.is_absolute():
        # The shipped ``models/examples/...`` priors load from any working directory.
        shipped = _shipped_example(path)
        if shipped is not None:
            path = shipped
    if not path.is_file():
        raise bad_prior_spec(spec, f"file {path_text!r} not found")
    return path.resolve()


def file_spec_parts(text: str) -> tuple[str, str] | None:
    """``(PATH, NAME)`` of a stripped ``PATH.py:NAME`` spec; None for a spec of another form.

    Split at the last colon (a Windows drive's colon stays in PATH).
    """
    if ".py:" not in text:
        return None
    path_text, name = text.rsplit(":", 1)
    return path_text, name


def _resolved_file_spec(spec: str) -> tuple[Path, str] | None:
    """The resolved file and the NAME of a ``PATH.py:NAME`` prior; None for other specs.

    Raises ``ValueError`` (one line naming the prior) when the file does not exist.
    """
    text = spec.strip()
    parts = file_spec_parts(text)
    return None if parts is None else (_prior_path(text, parts[0]), parts[1])


def prior_file_digest(spec: str) -> str | None:
    """The SHA-256 (hex) of the Python file of a ``PATH.py:NAME`` prior; None for other specs.

    What a result computed with such a prior depends on beyond the spec itself: the same spec
    names another prior once the file is edited (or, for a relative PATH, in another working
    directory). A sweep's manifest records it.

    Raises
    ------
    ValueError
        One line naming the prior when its file does not exist.
    """
    found = _resolved_file_spec(spec)
    return None if found is None else hashlib.sha256(found[0].read_bytes()).hexdigest()


def resolved_prior_spec(spec: str) -> str:
    """``spec`` with the PATH of a ``PATH.py:NAME`` prior resolved (absolute); others as given.

    What another process (a Dask worker, whose working directory may differ) must load to
    read the same file: a relative PATH there names another file, or none.

    Raises
    ------
    ValueError
        One line naming the prior when its file does not exist.
    """
    found = _resolved_file_spec(spec)
    return spec if found is None else f"{found[0]}:{found[1]}"


def load_prior_file(spec: str, path_text: str, name: str) -> X2Prior:
    """Load the prior bound to ``name`` in the Python file ``path_text`` (cached by content).

    A relative path that does not exist in the working directory but names a shipped
    ``models/examples/NAME.py`` file loads the installed copy. ``name`` may be bound to an
    :class:`X2Prior` or to a zero-argument function returning one. The prior's ``spec`` is set
    to ``spec``.

    The file is untrusted code: importing it and calling the factory run under
    :func:`dprisk.models.priors.base.running_user_code` (output captured, any exception --
    ``SystemExit`` too -- refused in one line).

    Raises
    ------
    ValueError
        One line naming the prior and the allowed forms (missing file, failed import, missing
        name, wrong type), or the problem with the file's code (raised, exited, printed).
    """
    resolved = _prior_path(spec, path_text)
    source = resolved.read_bytes()  # hashed, and run: the very bytes the key names
    key = (str(resolved), hashlib.sha256(source).hexdigest(), name)
    if key in _LOADED:
        return _LOADED[key]
    module_name = f"_dprisk_prior_{abs(hash(key[:2]))}"
    module_spec = importlib.util.spec_from_file_location(module_name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise bad_prior_spec(spec, f"cannot import {path_text!r} as a Python file")
    module = importlib.util.module_from_spec(module_spec)
    with running_user_code(spec, f"importing {path_text!r}"):
        exec(compile(source, str(resolved), "exec", dont_inherit=True), vars(module))
    if not hasattr(module, name):
        raise bad_prior_spec(spec, f"{path_text!r} defines no name {name!r}")
    obj = getattr(module, name)
    if bare_logp(obj):
        raise bad_prior_spec(spec, wrap_hint(name, obj))
    if not isinstance(obj, X2Prior) and callable(obj) and not isinstance(obj, type):
        with running_user_code(spec, f"calling {name}()"):
            try:
                obj = obj()
            except TypeError as err:
                raise bad_prior_spec(
                    spec, f"{name!r} is not a zero-argument factory: {err}") from err
    if not isinstance(obj, X2Prior):
        raise bad_prior_spec(
            spec,
            f"{name!r} must be an X2Prior instance or a zero-argument function returning one, "
            f"got {type(obj).__name__}",
        )
    object.__setattr__(obj, "spec", spec)
    _LOADED[key] = obj
    return obj
