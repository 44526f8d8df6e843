"""Module-level stand-in studies for the report runner's tests (picklable by name)."""

import gc
import os
import time

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from dprisk.validation.paper.records import StudyResult
from dprisk.validation.registry import report_study


def _seeded_study(name: str, seed: int) -> StudyResult:
    draws = np.random.default_rng(seed).normal(size=1000)
    # laid out as the report's figures are (constrained): png_bytes draws it once, where a
    # figure without a layout engine takes savefig's tight path, drawn three times (0.29 ->
    # 0.16 s of CPU a figure, measured 1 Dec; that path: tests/validation/figures/test_png.py)
    fig = Figure(layout="constrained")
    ax = fig.add_subplot()
    ax.hist(draws, bins=20, label="draws")
    ax.set(title=f"{name} draws", xlabel="value", ylabel="count")
    ax.legend()
    record = {"id": f"{name}/mean", "source": "Table 0", "published": 0.0,
              "computed": float(draws.mean()), "mcse": float(draws.std() / 1000**0.5),
              "status": "match", "explanation": ""}
    return StudyResult(name=name, title=f"Study {name}", records=[record],
                       datasets={"draws": xr.Dataset({"x": ("i", draws)})},
                       figures={f"{name}_figure": fig}, seeds={"mc": seed})


def study_a(*, paper_scale):
    """A seeded stand-in study."""
    return _seeded_study("a", 11)


def study_b(*, paper_scale):
    """Another, registered as the slowest (listed second, taken first by a pool)."""
    return _seeded_study("b", 12)


def failing_study(*, paper_scale):
    """A study that raises."""
    raise RuntimeError("boom in a worker")


def unpicklable_study(*, paper_scale):
    """A study whose figure and dataset hold local functions (they cannot leave its process).

    The figure does not leave it anyway (a worker sends its caption and alt text); the
    dataset would.
    """
    result = _seeded_study("c", 13)
    (fig,) = result.figures.values()
    fig.axes[0].secondary_yaxis("right", functions=(lambda v: 2 * v, lambda v: v / 2))
    result.datasets["draws"].attrs["scale"] = lambda v: 2 * v
    return result


def pid_study(*, paper_scale):
    """A stand-in study that records the process it ran in (``datasets["where"].attrs``):
    its id, the objects frozen there and the collector's thresholds while it ran."""
    result = _seeded_study("p", 14)
    result.datasets["where"] = xr.Dataset(attrs={"pid": os.getpid(),
                                                 "frozen": gc.get_freeze_count(),
                                                 "gc_thresholds": list(gc.get_threshold())})
    return result


class UnpickledIn:
    """``pids``: the process that made it, then each process that unpickled it, in turn."""

    def __init__(self, earlier=()):
        self.pids = (*earlier, os.getpid())

    def __reduce__(self):
        return UnpickledIn, (self.pids,)


def split_study_part(name, *, paper_scale):
    """One part of :func:`split_study`: seeded draws, the process it ran in, and a value that
    records the process that unpickles it."""
    return {"draws": np.random.default_rng(len(name)).normal(size=100), "pid": os.getpid(),
            "unpickled": UnpickledIn()}


@report_study(order=1, title="split", cost=3.0, parts={"short": 0.5, "long": 2.0})
def split_study(*, paper_scale, parts=None):
    """A study in two parts (computed here in turn when ``parts`` is None) and their join."""
    if parts is None:
        parts = {name: split_study_part(name, paper_scale=paper_scale)
                 for name in ("short", "long")}
    result = _seeded_study("s", 15)
    result.datasets["parts"] = xr.Dataset({name: ("i", parts[name]["draws"])
                                           for name in ("short", "long")})
    result.diagnostics = [f"{name} {parts[name]['pid']}" for name in ("short", "long")]
    result.diagnostics += [f"{name}-value {','.join(map(str, parts[name]['unpickled'].pids))}"
                           for name in ("short", "long")]
    result.diagnostics.append(f"join {os.getpid()}")
    return result


def slow_preload(name: str, folder, monkeypatch):
    """A preload module ``name`` in ``folder`` (a fork server amid its imports), its pid file.

    Importing it writes the importing process's id to ``folder/server.pid`` (whole: written
    beside it and renamed, so that the file never exists empty, as one killed between creating
    and writing it left it once) and then sleeps 20 s. ``folder`` is put on ``PYTHONPATH``
    with ``monkeypatch``: the fork server (Python 3.12) imports its preload on
    ``PYTHONPATH``, not on ``sys.path``. Returns the pid file's path (:func:`wait_for` it: the
    server has begun its imports).
    """
    began = folder / "server.pid"
    (folder / f"{name}.py").write_text(
        "import os\nimport pathlib\nimport time\n\n"
        f"pathlib.Path({str(began) + '.part'!r}).write_text(str(os.getpid()))\n"
        f"os.replace({str(began) + '.part'!r}, {str(began)!r})\n"
        "time.sleep(20)\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(folder), os.environ.get("PYTHONPATH")) if p))
    return began


def wait_for(path, seconds: float = 30.0) -> None:
    """Return once ``path`` exists, or after ``seconds`` (the caller's assertions then fail)."""
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
