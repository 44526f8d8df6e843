"""Old module-level names kept importable after a rename: one shared module ``__getattr__``.

``two_level`` names two levels (block and block group) and ``nested`` names h nested levels
(issue 35); the older names of functions and classes still work from the module that defines
the new name, and warn once with a ``FutureWarning`` naming it.
"""

from __future__ import annotations

import sys
import warnings

_WARNED: set[tuple[str, str]] = set()

#: Every module (below ``dprisk``) that keeps old names, for the docs' table of renames.
MODULES = (
    "models.builders.two_level",
    "models.builders.nested",
    "inference.studies.p_correct",
    "inference.two_level.exact",
    "inference.two_level.level_form",
    "inference.nested.gibbs",
    "inference.privacy.worst_case",
    "inference.privacy.two_level_marginal",
)
#: Full module name -> {old name: new name}, filled as each of those modules is imported.
TABLES: dict[str, dict[str, str]] = {}


def renamed_attributes(module: str, renames: dict[str, str]):
    """Return a module ``__getattr__`` that serves each old name of ``renames`` as its new one.

    Parameters
    ----------
    module : str
        The defining module's ``__name__``; the new names are looked up in it at call time.
    renames : dict
        Old name -> new name, both attributes of ``module``.

    Returns
    -------
    callable
        ``__getattr__(name)``: for an old name, warns ``FutureWarning`` (once per module and name)
        ``"module.old is deprecated; use module.new"`` and returns the new object; any other name
        raises ``AttributeError`` as a module without ``__getattr__`` would.
    """
    TABLES[module] = dict(renames)

    def __getattr__(name: str):
        new = renames.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        if (module, name) not in _WARNED:
            _WARNED.add((module, name))
            warnings.warn(f"{module}.{name} is deprecated; use {module}.{new}",
                          FutureWarning, stacklevel=2)
        return getattr(sys.modules[module], new)

    return __getattr__
