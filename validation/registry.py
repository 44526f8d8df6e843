"""The report's studies: each study module registers its study, with its cost hint beside it.

A report section is one module under :mod:`dprisk.validation` whose study function carries
the decorator::

    from dprisk.validation.registry import report_study

    @report_study(order=80, title="beyond the paper: the whole record", cost=7.8)
    def study(*, paper_scale: bool = False) -> StudyResult:
        ...

``order`` places the section on the page (ascending), ``title`` is the progress bar's label,
``cost`` the study's CPU seconds on one core, figures included (a pool takes the longest
first, :mod:`dprisk.validation.report.runner`; only the order of the costs matters). The
function is called as ``study(paper_scale=...)`` and returns a
:class:`~dprisk.validation.paper.records.StudyResult`.

:func:`registered` finds the studies *without importing them* (the report imports no study,
and the process that starts the workers loads none of their libraries): it reads the
modules' source under this package, keeps those with a line starting ``@report_study(``, and
takes the decorator's arguments from the syntax tree (so they must be literals). Each is a
:class:`RegisteredStudy`, a picklable reference (module and function name) that imports its
module when called, in the process that runs it. The decorator itself records the same
:class:`RegisteredStudy` on the function (``study.report_study``), which the tests compare
with what :func:`registered` read.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RegisteredStudy", "registered", "report_study"]

#: The decorator's name, as written in a study module.
DECORATOR = "report_study"
_MARK = re.compile(rf"^@{DECORATOR}\(", re.MULTILINE)
_FIELDS = ("order", "title", "cost")


@dataclass(frozen=True)
class RegisteredStudy:
    """One registered report study: a reference to ``module.function`` and its entry.

    Calling it (``study(paper_scale=...)``) imports ``module`` and calls the function.
    """

    module: str
    function: str
    order: int
    title: str
    cost: float

    @property
    def cost_hint(self) -> float:
        """CPU seconds on one core (the runner's ordering key)."""
        return self.cost

    def __call__(self, *, paper_scale: bool):
        """Import the study's module and run the study."""
        return getattr(importlib.import_module(self.module), self.function)(
            paper_scale=paper_scale)


def _checked(module: str, function: str, order, title, cost) -> RegisteredStudy:
    where = f"{module}.{function}"
    if not isinstance(order, int) or isinstance(order, bool):
        raise TypeError(f"{where}: report_study order must be an int, got {order!r}")
    if not isinstance(title, str) or not title:
        raise TypeError(f"{where}: report_study title must be a non-empty str, got {title!r}")
    if not isinstance(cost, int | float) or isinstance(cost, bool) or not cost >= 0:
        raise TypeError(f"{where}: report_study cost must be a number >= 0, got {cost!r}")
    return RegisteredStudy(module, function, order, title, float(cost))


def report_study(*, order: int, title: str, cost: float):
    """Register the decorated module-level function as a report study (module notes).

    Parameters
    ----------
    order : int
        Place of the section on the page and in the registry (ascending, unique).
    title : str
        Label shown while the report runs.
    cost : float (>= 0)
        CPU seconds of the study on one core, figures included (the runner's ordering key).

    Returns
    -------
    callable
        A decorator returning the function unchanged, with ``report_study`` set to its
        :class:`RegisteredStudy`.
    """
    def mark(func):
        func.report_study = _checked(func.__module__, func.__qualname__, order, title, cost)
        return func
    return mark


def _entries(path: Path, module: str) -> list[RegisteredStudy]:
    """The ``@report_study(...)`` entries of one module's source (literal arguments only)."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name)
                    and deco.func.id == DECORATOR):
                if deco.args or {k.arg for k in deco.keywords} != set(_FIELDS):
                    raise TypeError(f"{module}.{node.name}: report_study takes exactly the "
                                    f"keywords {', '.join(_FIELDS)}")
                try:
                    args = {k.arg: ast.literal_eval(k.value) for k in deco.keywords}
                except ValueError as exc:
                    raise TypeError(f"{module}.{node.name}: report_study's arguments must be "
                                    "literals (they are read without importing the module)"
                                    ) from exc
                found.append(_checked(module, node.name, **args))
    return found


def registered(package: str = "dprisk.validation") -> list[RegisteredStudy]:
    """Every study registered under ``package``, in page order (module notes).

    Raises
    ------
    ValueError
        If two studies share an ``order``.
    """
    spec = importlib.util.find_spec(package)
    studies = []
    for root in spec.submodule_search_locations or ():
        root = Path(root)
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" in path.parts or not _MARK.search(path.read_text("utf-8")):
                continue
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            studies += _entries(path, ".".join((package, *parts)))
    orders = [s.order for s in studies]
    if len(set(orders)) != len(orders):
        clash = sorted({o for o in orders if orders.count(o) > 1})
        raise ValueError(f"report studies share an order: {clash}")
    return sorted(studies, key=lambda s: s.order)
