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

A study longer than the report's target on its own may be split into independent parts that
workers run side by side: ``@report_study(..., parts={"tables": 13.0, "crosscheck": 6.0})``
(part name to its CPU seconds). The module then defines ``<function>_part(name, *,
paper_scale)``, which computes one part and returns a picklable value, and the study takes
``parts=`` (the parts' values by name) and only joins them::

    def study_part(name, *, paper_scale=False):
        check_part(name, PARTS)  # ValueError naming the parts
        ...

    def study(*, paper_scale=False, parts=None):
        # one piece when ``parts`` is None: every part here, in turn
        parts = joined_parts(study_part, PARTS, parts, paper_scale=paper_scale)
        ...  # the StudyResult, from ``parts`` only

so the page and the records are the same however the parts were run (each part seeds itself).
The runner (:mod:`dprisk.validation.report.runner`) runs each :meth:`RegisteredStudy.part`
as a task, and :meth:`RegisteredStudy.joined` once all of a study's parts are back.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "JoinedStudy", "RegisteredStudy", "StudyPart", "check_part", "chosen_budget", "joined_parts",
    "registered", "report_study",
]

#: The decorator's name, as written in a study module.
DECORATOR = "report_study"
_MARK = re.compile(rf"^@{DECORATOR}\(", re.MULTILINE)
_FIELDS = ("order", "title", "cost")
_OPTIONAL = ("parts",)


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
    parts: tuple[tuple[str, float], ...] = ()

    @property
    def cost_hint(self) -> float:
        """CPU seconds on one core (the runner's ordering key)."""
        return self.cost

    def part(self, name: str) -> StudyPart:
        """The part ``name`` of a study registered with ``parts`` (module notes)."""
        return StudyPart(self.module, self.function, name, dict(self.parts)[name])

    def joined(self, values: dict) -> JoinedStudy:
        """The study called with its parts' ``values`` (by part name): only their join."""
        rest = max(0.0, self.cost - sum(cost for _, cost in self.parts))
        return JoinedStudy(self, values, rest)

    def __call__(self, *, paper_scale: bool):
        """Import the study's module and run the study."""
        return getattr(importlib.import_module(self.module), self.function)(
            paper_scale=paper_scale)


@dataclass(frozen=True)
class StudyPart:
    """One part of a split study: calling it runs ``module.<function>_part(name, ...)``."""

    module: str
    function: str
    name: str
    cost: float

    @property
    def cost_hint(self) -> float:
        """CPU seconds on one core (the runner's ordering key)."""
        return self.cost

    def __call__(self, *, paper_scale: bool):
        """Import the study's module and compute this part (a picklable value)."""
        return getattr(importlib.import_module(self.module), f"{self.function}_part")(
            self.name, paper_scale=paper_scale)


@dataclass(frozen=True, eq=False)
class JoinedStudy:
    """A split study called with its parts' values: ``study(paper_scale=..., parts=values)``."""

    study: RegisteredStudy
    values: dict
    cost_hint: float

    def __call__(self, *, paper_scale: bool):
        """Import the study's module and join the parts into its StudyResult."""
        return getattr(importlib.import_module(self.study.module), self.study.function)(
            paper_scale=paper_scale, parts=self.values)


def _checked(module: str, function: str, order, title, cost, parts=None) -> RegisteredStudy:
    where = f"{module}.{function}"
    if not isinstance(order, int) or isinstance(order, bool):
        raise TypeError(f"{where}: report_study order must be an int, got {order!r}")
    if not isinstance(title, str) or not title:
        raise TypeError(f"{where}: report_study title must be a non-empty str, got {title!r}")
    if not isinstance(cost, int | float) or isinstance(cost, bool) or not cost >= 0:
        raise TypeError(f"{where}: report_study cost must be a number >= 0, got {cost!r}")
    if parts is None:
        parts = {}
    if not isinstance(parts, dict) or not all(
            isinstance(k, str) and k and isinstance(v, int | float) and not isinstance(v, bool)
            and v >= 0 for k, v in parts.items()):
        raise TypeError(f"{where}: report_study parts must be a dict of part name to cost "
                        f"(a number >= 0), got {parts!r}")
    return RegisteredStudy(module, function, order, title, float(cost),
                           tuple((k, float(v)) for k, v in parts.items()))


def report_study(*, order: int, title: str, cost: float, parts: dict | None = None):
    """Register the decorated module-level function as a report study (module notes).

    Parameters
    ----------
    order : int
        Place of the section on the page and in the registry (ascending, unique).
    title : str
        Label shown while the report runs.
    cost : float (>= 0)
        CPU seconds of the study on one core, figures included (the runner's ordering key).
    parts : dict of str to float, optional
        The study's independent parts and their CPU seconds (module notes); the module
        defines ``<function>_part(name, *, paper_scale)`` and the study takes ``parts=``.

    Returns
    -------
    callable
        A decorator returning the function unchanged, with ``report_study`` set to its
        :class:`RegisteredStudy`.
    """
    def mark(func):
        func.report_study = _checked(func.__module__, func.__qualname__, order, title, cost,
                                     parts)
        return func
    return mark


def check_part(name: str, names) -> str:
    """``name`` if it is one of a split study's part ``names``; else a one-line ValueError."""
    if name not in names:
        raise ValueError(f"part must be one of {', '.join(names)}; got {name!r}")
    return name


def joined_parts(part_function, names, parts: dict | None = None, **arguments) -> dict:
    """A split study's part values by name, for its join (module notes).

    Parameters
    ----------
    part_function : callable
        The module's ``study_part(name, **arguments)``.
    names : sequence of str
        The study's part names.
    parts : dict, optional
        The values computed elsewhere (the report's workers, with the same ``arguments``);
        when None, each part is computed here in turn, so one call gives the study whole.
    **arguments
        Passed to ``part_function`` (``paper_scale``, a budget).

    Raises
    ------
    ValueError
        When ``parts`` lacks one of ``names``.
    """
    if parts is None:
        return {name: part_function(name, **arguments) for name in names}
    missing = [name for name in names if name not in parts]
    if missing:
        raise ValueError(f"parts must hold every part ({', '.join(names)}); missing "
                         f"{', '.join(missing)}")
    return parts


def chosen_budget(budget, paper_scale: bool, *, default, paper_scale_budget):
    """``budget`` when given (tests), else ``paper_scale_budget`` or ``default``."""
    if budget is not None:
        return budget
    return paper_scale_budget if paper_scale else default


def _entries(path: Path, module: str) -> list[RegisteredStudy]:
    """The ``@report_study(...)`` entries of one module's source (literal arguments only)."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name)
                    and deco.func.id == DECORATOR):
                keywords = {k.arg for k in deco.keywords}
                if deco.args or not set(_FIELDS) <= keywords <= {*_FIELDS, *_OPTIONAL}:
                    raise TypeError(f"{module}.{node.name}: report_study takes exactly the "
                                    f"keywords {', '.join(_FIELDS)} (and optionally "
                                    f"{', '.join(_OPTIONAL)})")
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
