"""The scripts of ``benchmarks/`` loaded as modules, for the tests of ``make bench``'s rows.

``benchmarks/`` is not a package: a script is loaded from its file, under the name
``NAME_under_test`` (registered in ``sys.modules``, so that its dataclasses resolve their
module), each call a fresh module.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["BENCHMARKS", "load_benchmark"]

#: The folder of the benchmark scripts.
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/NAME.py`` executed as the module ``NAME_under_test``."""
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
