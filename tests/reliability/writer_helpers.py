"""Stand-ins and the subprocess side of the new-output tests (``test_new_outputs.py``).

``dprisk posterior --save-draws/--plots`` and ``dprisk prior --plot`` are run for real through
the command line, with their costly parts replaced (milliseconds instead of seconds): the
sampler returns a stub summary (:func:`install_posterior_stubs`), the ArviZ tree is a tiny
DataTree of two chains (its netCDF file is really written), the trace and rank plots are
small files. Hooks run at the moments the tests need: while the plots are drawn (after the
netCDF temporary is complete, before anything is put in place).

Run as ``python -c "import writer_helpers as h; h.main()" SIGNAL_FILE rank ARGV...``: the
stubs are installed with a hook that creates ``SIGNAL_FILE`` and then swallows every
interrupt (a library that catches ``KeyboardInterrupt`` and carries on, as h5py or a long
compiled write keep the interrupt from surfacing), and ``dprisk ARGV`` is run as the
process's own command line (its stop signals handled: the watchdog forces the exit). The hook
runs in the rank plot: the netCDF temporary is complete and the plots' temporary directory
holds ``trace.png``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

#: A two-level release and a sampling method (the sampler itself is replaced).
POSTERIOR = ["posterior", "--rho1", "0.5", "--rho2", "0.5", "--d", "3", "--x1-star", "1",
             "--x2-star", "2", "--y1-star", "1", "--method", "gibbs", "--draws", "20",
             "--chains", "2", "--seed", "3"]


def tiny_tree():
    """A DataTree with a posterior of X1 and X2 (2 chains x 20 draws), as ``arviz_tree`` makes."""
    import xarray as xr

    rng = np.random.default_rng(0)
    posterior = xr.Dataset({"X1": (("chain", "draw"), rng.integers(0, 2, (2, 20))),
                            "X2": (("chain", "draw"), rng.integers(1, 5, (2, 20)))})
    return xr.DataTree.from_dict({"posterior": posterior})


class _Array:
    """A ``(chain, draw)`` array as ``_posterior_arrays`` reads it (no xarray: fast start)."""

    def __init__(self, values):
        self.values = values

    def transpose(self, *dims):
        return self


class LightTree:
    """A tree whose netCDF file is a few bytes: the subprocesses need not import xarray."""

    def __getitem__(self, group):
        return {"X1": _Array(np.zeros((2, 20), dtype=int)),
                "X2": _Array(np.ones((2, 20), dtype=int))}

    def to_netcdf(self, path, engine=None):
        Path(path).write_bytes(b"CDF draws")


def stub_summary():
    """What ``summarize_posterior`` returns, as far as the command line uses it."""
    return SimpleNamespace(result=None, release=(1, 2, 1), scenario=SimpleNamespace(known=0),
                           two_level_json=lambda: {"posterior": 0.5, "method": "gibbs"})


def install_posterior_stubs(setattr, *, on_rank=None, tree=tiny_tree) -> None:
    """Replace the sampler, the tree and the plots; ``on_rank(path)`` runs in the rank plot.

    ``setattr(obj, name, value)``: ``monkeypatch.setattr`` in a test, ``setattr`` here;
    ``tree()`` makes the tree written with ``--save-draws``.
    """
    from dprisk.inference.mcmc import arviz_groups
    from dprisk.inference.two_level import sampling
    from dprisk.validation.crosschecks import trace_rank_plots

    def trace(arrays, path, **kwargs):
        Path(path).write_bytes(b"trace")

    def rank(arrays, path, **kwargs):
        Path(path).write_bytes(b"rank")
        if on_rank is not None:
            on_rank(Path(path))

    setattr(sampling, "summarize_posterior", lambda *args, **kwargs: stub_summary())
    setattr(arviz_groups, "arviz_tree", lambda *args, **kwargs: tree())
    setattr(trace_rank_plots, "save_trace_plot", trace)
    setattr(trace_rank_plots, "save_rank_plot", rank)


def _signal_and_swallow(signal_file: str) -> None:
    """Create ``signal_file``, then carry on whatever interrupt arrives (until killed)."""
    Path(signal_file).write_text(str(os.getpid()))
    while True:
        try:
            time.sleep(0.02)
        except KeyboardInterrupt:
            pass


def main(argv: list[str] | None = None) -> None:
    """Entry point of the subprocesses (see the module docstring)."""
    argv = sys.argv[1:] if argv is None else argv
    signal_file, hold_in, command = argv[0], argv[1], argv[2:]
    if hold_in != "rank":
        raise SystemExit(f"unknown hold {hold_in!r}")
    install_posterior_stubs(setattr, on_rank=lambda path: _signal_and_swallow(signal_file),
                            tree=LightTree)
    from dprisk.cli.main import main as dprisk

    sys.argv = ["dprisk", *command]
    dprisk()
