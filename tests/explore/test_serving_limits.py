"""Limits per visitor (issue 33, findings "one visitor kills the server" and the temp folders).

A sampling request is sized as a whole (chains x draws x variables, and its work) before
anything runs, and refused at once with one message; a job's temporary folder is removed
when it ends; the slow views compute in the server-wide pool, never in the callback of a
served page.
"""

import tempfile
import time
from pathlib import Path

import pytest

from dprisk.explore import app
from dprisk.explore.jobs import SamplingJob
from dprisk.explore.sampling_view import SamplingPanel

TWO = {"rho1": 0.0992, "rho2": 0.2465, "d": 27, "p": 0.5, "known": 0, "prior": "improper"}


def _temp_folders() -> set:
    return set(Path(tempfile.gettempdir()).glob("dprisk-explore-*"))


def test_oversize_sampling_is_refused_at_once():
    before = _temp_folders()
    start = time.perf_counter()
    with pytest.raises(ValueError, match="draws, chains"):
        SamplingJob((2, 1, -1), TWO, draws=100_000, chains=1_000_000)
    # each chain alone is small (the old per-chain check passed it); the whole is 6.4 TB
    assert time.perf_counter() - start < 1.0  # nothing allocated or run (margin: 2 cores)
    assert _temp_folders() == before


def test_sampling_panel_shows_the_refusal_and_starts_nothing():
    panel = SamplingPanel()
    panel.attach(app.two_level_view())
    panel.draws.value, panel.chains.value = "100000", "1000000"
    panel._start()
    assert panel.job is None and "draws, chains" in panel.status.object


def test_a_finished_or_cancelled_job_leaves_no_folder():
    job = SamplingJob((2, 1, -1), TWO, draws=50, chains=2, tune=10, random_seed=1)
    job.cancel()
    job.start().join(60)
    assert job.status == "cancelled" and not job.plot_dir.exists()


def test_slow_views_leave_the_event_loop():
    for make in (app.two_level_view, app.p_correct_view):
        assert make().slow  # computed in the pool when served (views.WhatIfView._changed)
