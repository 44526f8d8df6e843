"""The tests' sampling workers fork from a forkserver that imports what ``dprisk explore``'s does.

That is :data:`dprisk.explore.jobs.PRELOAD`: the sampler, and ArviZ and the diagnostics, so that
a job that diagnoses its draws does not import them in its worker. Every test module that
starts a job is one of ``tests/conftest.py``'s ``PANEL_MODULES``, which run on one xdist
worker: the forkserver (one per test process) imports them once there. Before, it imported the
sampler only, and each diagnosing job's worker imported ArviZ, Matplotlib and the diagnostics
again (about 2 s of CPU a job, in processes the per-test CPU records do not see). The browser
test serves ``dprisk explore`` itself, with its own forkserver.
"""

import gc

import pytest


@pytest.fixture(autouse=True, scope="module")
def _collect_at_module_end():
    """Collect this module's garbage before the next module starts.

    A client socket a module's test left unclosed then fails that module's teardown (a
    ResourceWarning is an error here), not some later test on the same xdist worker.

    The objects that existed before the module are frozen (``gc.freeze``) meanwhile, so the
    collection walks only what the module made, not the worker's million objects of PyMC,
    Panel and SciPy again (a full collection: 0.7-1.0 s of CPU per module in a run of
    ``make test``, 2026-11-28 records); they are unfrozen after it, and the older garbage
    among them is collected as before, by the worker's next full collection.
    """
    gc.freeze()
    try:
        yield
    finally:
        try:
            gc.collect()
        finally:
            gc.unfreeze()
