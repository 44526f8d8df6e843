"""Lazy public namespaces: a name is imported from its room on first use (Scientific Python SPEC 1).

:func:`attach` gives a namespace module its ``__getattr__``, ``__dir__`` and ``__all__`` from a
table ``{public name: (module below dprisk, attribute)}``, so ``import dprisk`` and
``dprisk.two_level`` cost nothing until a name is used.
"""

from __future__ import annotations

import importlib


def attach(namespace: str, table: dict[str, tuple[str, str]]):
    """Return ``(__getattr__, __dir__, __all__)`` for the namespace module ``namespace``.

    Parameters
    ----------
    namespace : str
        The namespace module's full name (``"dprisk.two_level"``), for error messages.
    table : dict
        Public name -> (module below ``dprisk``, attribute of that module).
    """
    names = sorted(table)

    def __getattr__(name: str):
        if name not in table:
            raise AttributeError(f"module {namespace!r} has no attribute {name!r}")
        module, attribute = table[name]
        value = getattr(importlib.import_module(f"dprisk.{module}"), attribute)
        importlib.import_module(namespace).__dict__[name] = value
        return value

    def __dir__() -> list[str]:
        return names

    return __getattr__, __dir__, names


def resolve(dotted: str):
    """The object a dotted public name (``"dprisk.two_level.p_correct"``) stands for."""
    module, _, attribute = dotted.rpartition(".")
    return getattr(importlib.import_module(module), attribute)
