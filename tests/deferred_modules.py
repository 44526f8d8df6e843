"""A test module's library imported by its first test that uses it, not at collection (issue 36).

Every xdist worker imports every test module when it collects, so a module-level
``import panel`` costs each worker Panel's import (Bokeh, Param, Tornado: about 1.5-3 s of CPU)
even when the modules that use it all run on the other one. A global made by
:func:`deferred_module` stands for the module and imports it on the first public name read
from it (``app.two_level_view``), then reads and writes through to it (``monkeypatch``
included).

Names that start with ``_`` are refused at once (``AttributeError``) without importing: pytest
probes every global of a test module at collection (``__test__``, ``_mock_name``,
``__wrapped__``, ...) and the answer is "no such attribute" either way; a test reads public
names only.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class DeferredModule:
    """The module named ``name``, imported when a public name is first read from it."""

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_module", None)

    def _load(self) -> ModuleType:
        if self._module is None:
            object.__setattr__(self, "_module", importlib.import_module(self._name))
        return self._module

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(f"deferred module {self._name!r}: {name!r} is not read "
                                 "through (a private name)")
        return getattr(self._load(), name)

    def __setattr__(self, name: str, value) -> None:
        """Set on the module itself (``monkeypatch.setattr(app, "serve", ...)``)."""
        setattr(self._load(), name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self._load(), name)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<deferred module {self._name!r} ({state})>"


def deferred_module(name: str) -> DeferredModule:
    """A stand-in for ``importlib.import_module(name)`` that imports it on first use."""
    return DeferredModule(name)
