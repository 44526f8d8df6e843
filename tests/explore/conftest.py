"""The sampling workers of these tests fork from a forkserver that imports the sampler only.

``dprisk explore`` preloads ArviZ and the diagnostics too (:data:`dprisk.explore.jobs.PRELOAD`),
so that a visitor's first check does not wait for their import; a test process would pay that
import (about 10 s of CPU on the 2-core machine) in every xdist worker that starts a job, even
for a job that is cancelled before it diagnoses anything. A job that does diagnose imports
them in its worker (as the test process itself did before jobs had workers). The browser
test serves ``dprisk explore`` itself, with the full preload.
"""

from dprisk.explore import jobs

jobs.PRELOAD = list(jobs.SAMPLER_PRELOAD)
