"""Helpers shared by the reliability tests and the subprocesses they start.

Imported as the top-level module ``reliability_helpers`` both in the test process (see
``conftest.py``) and in subprocesses (``sys.path`` gets this directory), so that the sweep
quantities below have the same ``module:qualname`` -- part of a resumable sweep's manifest --
in both.

Command line (``python -c "import reliability_helpers as h; h.main()" ARGS``):

* ``digests`` -- print the JSON of :func:`digests` (reproducibility across processes);
* ``sweep OUT METHOD`` -- run :func:`resumable_sweep` (resume tests; killed part-way).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time

import numpy as np

#: Grid of the resume tests: 2 x 12 points, one chunk each (chunk_size=1).
RESUME_GRID = {"rho1": 0.1, "rho2": 0.25, "d": [3, 27], "x2": list(range(1, 13))}
#: Monte Carlo budget of the resume tests (per point).
RESUME_MC = {"seed": 20260101, "datasets": 1000, "draws": 50}
#: Seconds each counted call sleeps when the environment sets it (slows the killed run only).
DELAY_ENV = "RELIABILITY_DELAY"
#: When the environment sets it to N, the counted calls after the first N block (for at most
#: :data:`HOLD_SECONDS`): the killed run stops with exactly N points computed, whenever the
#: kill comes (no race, no fixed delay per point).
HOLD_AFTER_ENV = "RELIABILITY_HOLD_AFTER"
HOLD_SECONDS = 600.0

#: ``(d, x2)`` of every call of a counted quantity in this process.
CALLS: list[tuple[int, int]] = []


def _delay() -> None:
    hold_after = os.environ.get(HOLD_AFTER_ENV, "")
    if hold_after and len(CALLS) > int(hold_after):
        time.sleep(HOLD_SECONDS)
    seconds = float(os.environ.get(DELAY_ENV, "0") or 0)
    if seconds > 0:
        time.sleep(seconds)


def counted_mc(**kwargs):
    """``simulate_p_correct`` (no progress bar), recording the call."""
    from dprisk.inference.studies.monte_carlo import simulate_p_correct

    CALLS.append((kwargs["d"], kwargs["x2"]))
    _delay()
    return simulate_p_correct(progress=False, **kwargs)


def counted_exact(**kwargs):
    """:func:`dprisk.inference.studies.p_correct.p_correct_two_level`, recording the call."""
    from dprisk.inference.studies.p_correct import p_correct_two_level

    CALLS.append((kwargs["d"], kwargs["x2"]))
    _delay()
    return p_correct_two_level(**kwargs)


def resumable_sweep(out, method: str):
    """The sweep of the resume tests (``RESUME_GRID``, ``chunk_size=1``) writing ``out``."""
    from dprisk.inference.sweeps.sweep import sweep

    quantity = counted_mc if method == "mc" else counted_exact
    mc_options = dict(RESUME_MC) if method == "mc" else None
    return sweep(**RESUME_GRID, method=method, mc_options=mc_options, out=out, chunk_size=1,
                 progress=False, quantity=quantity)


def flat_index(d: int, x2: int) -> int:
    """Flat (C-order) grid index of the point ``(d, x2)`` of ``RESUME_GRID``."""
    return RESUME_GRID["d"].index(d) * len(RESUME_GRID["x2"]) + RESUME_GRID["x2"].index(x2)


# --------------------------------------------------------------------------- digests
SEED = 20240611
TWO_LEVELS = {"rho1": 0.1, "rho2": 0.25, "d": 3}
STUDY = {"x2": 3, **TWO_LEVELS}
SWEEP = {"rho1": 0.1, "rho2": 0.25, "d": [3, 27], "x2": [1, 2, 4]}
SWEEP_MC = {"seed": SEED, "datasets": 1000, "draws": 50}


def _digest(*arrays) -> str:
    sha = hashlib.sha256()
    for array in arrays:
        array = np.ascontiguousarray(array)
        sha.update(str((array.dtype.str, array.shape)).encode())
        sha.update(array.tobytes())
    return sha.hexdigest()


def gibbs_draws(seed: int = SEED):
    """Draws of the standalone Gibbs sampler for one release."""
    from dprisk.inference.two_level.gibbs import gibbs_sample

    return gibbs_sample(1, 2, 1, **TWO_LEVELS, draws=2000, chains=4, tune=100, random_seed=seed)


def mc_study(seed: int = SEED, sampler: str = "x1_chain") -> dict:
    """A Monte Carlo study (two blocks of releases) as a dict without its run time."""
    from dprisk.inference.studies.monte_carlo import BLOCK, simulate_p_correct

    datasets = BLOCK + 600 if sampler == "x1_chain" else 400
    result = simulate_p_correct(**STUDY, datasets=datasets, draws=100, sampler=sampler,
                                random_seed=seed, progress=False).to_dict()
    result.pop("seconds")
    return result


def mc_sweep(client=None, chunk_size: int = 16, seed: int = SEED):
    """A Monte Carlo sweep (the default quantity), in-process or on ``client``."""
    from dprisk.inference.sweeps.sweep import sweep

    return sweep(**SWEEP, method="mc", mc_options={**SWEEP_MC, "seed": seed}, client=client,
                 chunk_size=chunk_size, progress=False)


def reference_runs() -> dict:
    """The runs :func:`digests` hashes, at the fixed seed: ``gibbs`` (:func:`gibbs_draws`),
    ``mc_study`` and ``mc_study_gibbs`` (:func:`mc_study`), ``mc_sweep`` (:func:`mc_sweep`)."""
    return {"gibbs": gibbs_draws(), "mc_study": mc_study(),
            "mc_study_gibbs": mc_study(sampler="gibbs"), "mc_sweep": mc_sweep()}


def digests(runs: dict | None = None) -> dict:
    """SHA-256 of the Gibbs draws, the MC studies and the MC sweep at the fixed seed (of
    ``runs``, :func:`reference_runs` made in this process, when given)."""
    runs = reference_runs() if runs is None else runs
    draws, sweep_ds = runs["gibbs"], runs["mc_sweep"]
    return {
        "gibbs": _digest(draws.x1, draws.x2),
        "mc_study": json.dumps(runs["mc_study"], sort_keys=True),
        "mc_study_gibbs": json.dumps(runs["mc_study_gibbs"], sort_keys=True),
        "mc_sweep": _digest(*(sweep_ds[name].values for name in sorted(sweep_ds.data_vars))),
    }


def main(argv: list[str] | None = None) -> None:
    """Entry point of the subprocesses (see the module docstring)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[0] == "digests":
        print(json.dumps(digests()))
    elif argv[0] == "sweep":
        resumable_sweep(argv[1], argv[2])
    else:
        raise SystemExit(f"unknown command {argv[0]!r}")
