"""``dprisk posterior --save-draws FILE.nc --plots DIR``: the draws and their plots, written safely.

Both options apply to the sampling methods of the two-level and nested forms. Their targets
are checked before anything is sampled, with the rules of every other writer
(:mod:`dprisk.runtime.output_files`):

* ``--save-draws`` must end in ``.nc``, must not exist (an existing file, directory or device
  is never replaced: delete it or choose another path), and its nearest existing ancestor
  must be a writable directory (missing parents are created);
* ``--plots`` must be a new directory or an existing empty one, under a writable directory.

A refused target is bad input: exit status 2 and one stderr line naming the option, before
any sampling. The netCDF file is written under a temporary name beside it and moved into
place when complete (:func:`~dprisk.runtime.output_files.atomic_path`); the plots are drawn
into a temporary directory beside ``DIR`` that is renamed onto ``DIR`` when both are
complete. A failure or a stop signal leaves neither a partial file nor a partial directory.

The file holds :func:`dprisk.inference.mcmc.arviz_tree` (ArviZ's groups: ``posterior``,
``sample_stats``, ``observed_data``, ``constant_data``, ``log_likelihood``,
``posterior_predictive`` and, for proper priors of finite support, ``prior`` and
``prior_predictive``), readable with ``xr.open_datatree(FILE)`` or ``az.from_netcdf``. The
plots are ``trace.png`` (trace with distribution) and ``rank.png`` (randomised ranks) of
:mod:`dprisk.validation.crosschecks.trace_rank_plots`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from dprisk.cli import common

__all__ = ["OPTIONS", "add_options", "check_targets", "write"]

#: Destinations of the options of this module.
OPTIONS = frozenset({"save_draws", "plots"})


def add_options(group) -> None:
    """``--save-draws FILE.nc`` and ``--plots DIR`` (sampling methods only)."""
    group.add_argument("--save-draws", default=None, metavar="FILE.nc",
                       help="write the draws as an ArviZ DataTree (netCDF; posterior, "
                       "sample_stats, observed/constant data, log likelihood, predictive and, "
                       "for proper priors, prior groups); a new file only (gibbs/pymc only)")
    group.add_argument("--plots", default=None, metavar="DIR",
                       help="write trace.png and rank.png (randomised ranks) to DIR, a new or "
                       "empty directory (gibbs/pymc only)")


def _refuse_existing(path: Path, option: str, what: str) -> None:
    if path.is_symlink() or (path.exists() and what == "file"):
        raise ValueError(f"{option} {str(path)!r} exists; refusing to replace it (delete it or "
                         "choose another path)")
    if what == "dir" and path.exists():
        if not path.is_dir():
            raise ValueError(f"{option} {str(path)!r} exists and is not a directory")
        if any(path.iterdir()):
            raise ValueError(f"{option} {str(path)!r} is a non-empty directory; refusing to "
                             "write into it (name a new or empty directory)")


def check_targets(args) -> None:
    """Refuse (ValueError naming the option) a ``--save-draws`` or ``--plots`` target."""
    if common.given(args, "save_draws"):
        path = Path(args.save_draws)
        if path.suffix != ".nc":
            raise ValueError(f"--save-draws must be a netCDF path ending in .nc, got "
                             f"{args.save_draws!r}")
        common.check_writable_dir(path.absolute(), "--save-draws")  # first: a name too long
        _refuse_existing(path, "--save-draws", "file")
    if common.given(args, "plots"):
        path = Path(args.plots)
        common.check_writable_dir(path.absolute(), "--plots")
        _refuse_existing(path, "--plots", "dir")


def _posterior_arrays(tree) -> dict:
    from dprisk.inference.mcmc.convergence import unknown_names

    posterior = tree["posterior"]
    return {name: posterior[name].transpose("chain", "draw").values
            for name in unknown_names(posterior)}


def write(args, summary, seed: int | None) -> dict:
    """Write the requested draws file and plots of ``summary`` (a sampled result).

    Returns
    -------
    dict
        ``{"saved_draws": path}`` and/or ``{"plots": [trace.png, rank.png]}`` as written.
    """
    from dprisk.inference.mcmc.arviz_groups import arviz_tree
    from dprisk.runtime.output_files import atomic_path, make_temporary_dir

    written: dict = {}
    if not (common.given(args, "save_draws") or common.given(args, "plots")):
        return written
    common.raise_if_interrupted()
    tree = arviz_tree(summary.result, summary.scenario, summary.release, random_seed=seed)
    with contextlib.ExitStack() as stack:
        if common.given(args, "save_draws"):
            target = Path(args.save_draws).absolute()
            target.parent.mkdir(parents=True, exist_ok=True)
            _refuse_existing(target, "--save-draws", "file")  # again: it may have appeared
            tmp = stack.enter_context(atomic_path(target))
            tree.to_netcdf(tmp, engine="h5netcdf" if _has("h5netcdf") else None)
            written["saved_draws"] = str(target)
        if common.given(args, "plots"):
            written["plots"] = _plots(args, tree, summary, seed, make_temporary_dir)
        common.raise_if_interrupted()
    return written


def _plots(args, tree, summary, seed, make_temporary_dir) -> list[str]:
    from dprisk.validation.crosschecks.trace_rank_plots import save_rank_plot, save_trace_plot

    target = Path(args.plots).absolute()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temporary_dir(target.parent, f".{target.name}.")
    try:
        arrays = _posterior_arrays(tree)
        save_trace_plot(arrays, tmp / "trace.png", known=summary.scenario.known)
        save_rank_plot(arrays, tmp / "rank.png", random_seed=seed)
        common.raise_if_interrupted()
        _refuse_existing(target, "--plots", "dir")  # again: it may have been filled meanwhile
        os.replace(tmp, target)  # onto a missing or empty directory: atomic
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [str(target / "trace.png"), str(target / "rank.png")]


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
