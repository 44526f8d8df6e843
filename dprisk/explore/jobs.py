"""The explorer's "check by sampling": exact Gibbs in a background thread, with progress.

A :class:`SamplingJob` runs the exact Gibbs sampler
(:func:`dprisk.inference.two_level.gibbs.gibbs_sample`) for one two-level release, one chain
at a time, in a daemon thread: the page's event loop keeps serving, ``progress`` (0 to 1) is
the share of chains done, and :meth:`SamplingJob.cancel` stops the run before the next chain
(``status == "cancelled"``, no result). Chain ``c`` is seeded with the ``c``-th child of
``np.random.SeedSequence(random_seed)``, so a seed reproduces the whole run.

When the chains are done the job builds an ArviZ ``DataTree``
(:func:`dprisk.inference.two_level.gibbs.to_datatree`), its ``az.summary`` table and the
convergence report with trace and rank plots
(:func:`dprisk.validation.crosschecks.diagnostics.convergence_report`). Nothing here imports
Panel.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

import numpy as np

from dprisk.runtime.memory_limit import check_memory
from dprisk.runtime.work_limit import GIBBS_DRAW_STEPS, check_work

__all__ = ["JOB_BYTES_PER_DRAW", "SamplingJob", "import_diagnostics"]

#: Bytes a job holds per draw of one chain: X1 and X2 (int64), held about four times at once
#: (the draws, the DataTree, ArviZ's ranks and summary), so 2 x 8 x 4.
JOB_BYTES_PER_DRAW = 64


def import_diagnostics():
    """``(arviz, convergence_report)``: what a job diagnoses its draws with.

    ArviZ takes seconds to import; ``dprisk explore`` calls this in a background thread at
    start (:func:`dprisk.explore.app.serve`), so the first check does not wait for it.
    """
    import arviz

    from dprisk.validation.crosschecks.diagnostics import convergence_report

    return arviz, convergence_report


class SamplingJob:
    """Gibbs draws for one release, run off the event loop.

    Parameters
    ----------
    release : tuple of int
        ``(x1_star, x2_star, y1_star)``.
    params : dict
        ``rho1, rho2, d, p, known, prior`` as for
        :func:`dprisk.inference.two_level.exact.exact_posterior`.
    draws : int (>= 1)
        Draws per chain (after ``tune`` discarded sweeps).
    chains : int (>= 2)
        Number of chains (R-hat needs two).
    tune : int (>= 0)
    random_seed : int or None
    ticket : int
        The view's request number when the job started (see
        :class:`dprisk.explore.inputs.Sequencer`).
    """

    def __init__(self, release, params: dict, *, draws: int = 5000, chains: int = 4,
                 tune: int = 500, random_seed=None, ticket: int = 0) -> None:
        if chains < 2:
            raise ValueError(f"chains must be an integer >= 2, got {chains}")
        if draws < 1:
            raise ValueError(f"draws must be an integer >= 1, got {draws}")
        # sized as a whole before it starts: chains x draws x variables, and the work
        check_memory(float(JOB_BYTES_PER_DRAW) * chains * draws, parameter="draws, chains",
                     what=f"{chains} chains x {draws} draws of X1 and X2 with diagnostics")
        check_work(float(chains) * (tune + draws) * GIBBS_DRAW_STEPS,
                   parameter="draws, chains", what=f"{chains} chains x {tune + draws} sweeps")
        self.release = tuple(int(v) for v in release)
        self.params = dict(params)
        self.draws, self.chains, self.tune = int(draws), int(chains), int(tune)
        self.random_seed = random_seed
        self.ticket = ticket
        self.progress = 0.0
        self.status = "pending"  # pending, running, done, cancelled, failed
        self.error: str | None = None
        self.idata = None
        self.summary = None
        self.report = None
        self.figures: dict[str, bytes] = {}  # the report's PNGs, read before plot_dir goes
        self.plot_dir = Path(tempfile.mkdtemp(prefix="dprisk-explore-"))
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dprisk-sampling", daemon=True)

    def start(self) -> SamplingJob:
        """Start the background thread; return ``self``."""
        self.status = "running"
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Ask the job to stop before its next chain."""
        self._cancel.set()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread (tests and the command line)."""
        self._thread.join(timeout)

    @property
    def finished(self) -> bool:
        """True once the job is done, cancelled or failed."""
        return self.status in ("done", "cancelled", "failed")

    def _run(self) -> None:
        try:
            self._sample()
        except Exception as err:  # shown in the page; the server keeps serving
            self.error = f"{type(err).__name__}: {err}"
            self.status = "failed"
        finally:  # the temporary folder goes when the job ends, however it ends
            shutil.rmtree(self.plot_dir, ignore_errors=True)

    def _sample(self) -> None:
        from dprisk.inference.two_level.gibbs import GibbsDraws, gibbs_sample, to_datatree

        seeds = np.random.SeedSequence(self.random_seed).spawn(self.chains)
        x1, x2 = [], []
        for chain, seed in enumerate(seeds):
            if self._cancel.is_set():
                self.status = "cancelled"
                return
            one = gibbs_sample(*self.release, draws=self.draws, chains=1, tune=self.tune,
                               random_seed=np.random.default_rng(seed), **self.params)
            x1.append(one.x1[0])
            x2.append(one.x2[0])
            self.progress = 0.9 * (chain + 1) / self.chains
        if self._cancel.is_set():
            self.status = "cancelled"
            return
        attrs = {k: (str(v) if k == "prior" else v) for k, v in self.params.items()}
        self.idata = to_datatree(GibbsDraws(np.stack(x1), np.stack(x2)), attrs=attrs)
        self._diagnose()
        self.progress = 1.0
        self.status = "done"

    def _diagnose(self) -> None:
        import matplotlib

        az, convergence_report = import_diagnostics()
        matplotlib.use("Agg")
        self.summary = az.summary(self.idata, var_names=["X1", "X2"], round_to="none")
        self.report = convergence_report(self.idata, known=self.params.get("known", 0),
                                         out_dir=self.plot_dir)
        self.figures = {name: Path(path).read_bytes()
                        for name, path in self.report.figures.items()}
