"""``dprisk posterior --save-draws FILE.nc --plots DIR``: the draws and their plots, written safely.

Both options apply to the sampling methods of the two-level and nested forms. Their targets
are checked before anything is sampled, with the rules of every new output
(:class:`dprisk.runtime.new_outputs.NewOutput`):

* ``--save-draws`` must end in ``.nc``, must not exist (an existing file, directory or device
  is never replaced: delete it or choose another path), and its nearest existing ancestor
  must be a writable directory (missing parents are created);
* ``--plots`` must be a new directory or an existing empty one (not the current or home
  directory, nor a mount point, which it would replace), under a writable directory;
* the two must be different paths, neither inside the other
  (:func:`dprisk.runtime.new_outputs.check_distinct`).

A refused target is bad input: exit status 2 and one stderr line naming the option, before
any sampling. While the posterior is sampled each target is locked (``.NAME.lock`` beside
it) and the temporaries a killed earlier run left for it are removed. The netCDF file is
written to a temporary ``.NAME.PID.XXXXXXXX.tmp`` beside it and the plots into a temporary
directory of the same pattern; both are put in place together at the end by an exclusive
create (:func:`dprisk.runtime.new_outputs.publish`): a file or directory that appeared at either
path during the run is never replaced -- the run is refused (exit status 2 naming the
option) and writes nothing. A failure or a stop signal (also one that forces the exit) leaves
neither a partial file nor a partial directory.

The file holds :func:`dprisk.inference.mcmc.arviz_groups.arviz_tree` (ArviZ's groups:
``posterior``, ``sample_stats``, ``observed_data``, ``constant_data``, ``log_likelihood``,
``posterior_predictive`` and, for proper priors of finite support (fewer than
:data:`~dprisk.inference.mcmc.arviz_groups.MAX_PRIOR_SUPPORT` values a level), ``prior`` and
``prior_predictive``), readable with ``xr.open_datatree(FILE)`` or ``az.from_netcdf``. The
plots are ``trace.png`` (trace with distribution) and ``rank.png`` (randomised ranks) of
:mod:`dprisk.validation.crosschecks.trace_rank_plots`.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from dprisk.cli import common

__all__ = ["OPTIONS", "add_options", "check_targets", "holding", "targets", "write"]

#: Destinations of the options of this module.
OPTIONS = frozenset({"save_draws", "plots"})


def add_options(group) -> None:
    """``--save-draws FILE.nc`` and ``--plots DIR`` (sampling methods only)."""
    group.add_argument("--save-draws", default=None, metavar="FILE.nc",
                       help="write the draws as an ArviZ DataTree (netCDF; posterior, "
                       "sample_stats, observed/constant data, log likelihood, predictive and, "
                       "for proper priors of finite support (under 1e6 values), prior groups); "
                       "a new file only (gibbs/pymc only)")
    group.add_argument("--plots", default=None, metavar="DIR",
                       help="write trace.png and rank.png (randomised ranks) to DIR, a new or "
                       "empty directory (gibbs/pymc only)")


def targets(args) -> list:
    """The checked :class:`~dprisk.runtime.new_outputs.NewOutput` of each option given.

    Raises ValueError (naming the option) for a refused target, or for two that collide.
    """
    from dprisk.runtime.new_outputs import NewOutput, check_distinct

    outputs = []
    if common.given(args, "save_draws"):
        if Path(args.save_draws).suffix != ".nc":
            raise ValueError(f"--save-draws must be a netCDF path ending in .nc, got "
                             f"{args.save_draws!r}")
        outputs.append(NewOutput(args.save_draws, "--save-draws"))
    if common.given(args, "plots"):
        outputs.append(NewOutput(args.plots, "--plots", directory=True))
    for output in outputs:
        output.check()
    check_distinct({output.option: output.given for output in outputs})
    return outputs


def check_targets(args) -> None:
    """Refuse (ValueError naming the option) a ``--save-draws`` or ``--plots`` target."""
    targets(args)


@contextlib.contextmanager
def holding(args):
    """Check the targets, then hold them (locked, stale temporaries removed) for the block.

    Yields the list of :class:`~dprisk.runtime.new_outputs.NewOutput` to pass to :func:`write`.
    """
    outputs = targets(args)
    with contextlib.ExitStack() as stack:
        for output in outputs:
            stack.enter_context(output)
        yield outputs


def _posterior_arrays(tree) -> dict:
    from dprisk.inference.mcmc.convergence import unknown_names

    posterior = tree["posterior"]
    return {name: posterior[name].transpose("chain", "draw").values
            for name in unknown_names(posterior)}


def write(args, summary, seed: int | None, outputs: list) -> dict:
    """Write the requested draws file and plots of ``summary`` (a sampled result).

    ``outputs``: those :func:`holding` yields. Both are filled in temporaries, then put in
    place together (:func:`dprisk.runtime.new_outputs.publish`).

    Returns
    -------
    dict
        ``{"saved_draws": path}`` and/or ``{"plots": [trace.png, rank.png]}`` as written.
    """
    from dprisk.runtime.new_outputs import publish

    written: dict = {}
    if not outputs:
        return written
    from dprisk.inference.mcmc.arviz_groups import arviz_tree

    common.raise_if_interrupted()
    tree = arviz_tree(summary.result, summary.scenario, summary.release, random_seed=seed)
    filled = []
    for output in outputs:
        tmp = output.temporary()
        if output.option == "--save-draws":
            tree.to_netcdf(tmp, engine="h5netcdf" if _has("h5netcdf") else None)
            written["saved_draws"] = str(Path(args.save_draws).absolute())
        else:
            _plots(tree, summary, seed, tmp)
            shown = Path(args.plots).absolute()
            written["plots"] = [str(shown / "trace.png"), str(shown / "rank.png")]
        filled.append((output, tmp))
        common.raise_if_interrupted()
    publish(*filled)  # refused (exit 2 naming the option) if a path appeared meanwhile
    return written


def _plots(tree, summary, seed, directory: Path) -> None:
    from dprisk.validation.crosschecks.trace_rank_plots import save_rank_plot, save_trace_plot

    arrays = _posterior_arrays(tree)
    save_trace_plot(arrays, directory / "trace.png", known=summary.scenario.known)
    save_rank_plot(arrays, directory / "rank.png", random_seed=seed)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
