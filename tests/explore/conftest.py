"""The sampling workers of these tests fork from a forkserver that imports the sampler only.

``dprisk explore`` preloads ArviZ and the diagnostics too (:data:`dprisk.explore.jobs.PRELOAD`),
so that a visitor's first check does not wait for their import; a test process would pay that
import (about 10 s of CPU on the 2-core machine) in every xdist worker that starts a job, even
for a job that is cancelled before it diagnoses anything. A job that does diagnose imports
them in its worker (as the test process itself did before jobs had workers). The browser
test serves ``dprisk explore`` itself, with the full preload.
"""

import gc

import pytest

from dprisk.explore import jobs

jobs.PRELOAD = list(jobs.SAMPLER_PRELOAD)


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
