"""The functions named in the reliability tests' API tables, and the tables' test ids.

A table row starts with its target, ``"module:name"`` (e.g.
``"dprisk.models.mechanism.discrete_gaussian:variance"``).
"""

from __future__ import annotations

import importlib


def resolve(target: str):
    """The function ``name`` of ``module`` in ``target = "module:name"``."""
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def target_ids(cases, *columns: int) -> list[str]:
    """Test ids ``INDEX-NAME[-COLUMN...]`` of table rows: row number, function name, ``columns``."""
    return ["-".join([str(i), case[0].rsplit(":", 1)[1], *(str(case[c]) for c in columns)])
            for i, case in enumerate(cases)]
