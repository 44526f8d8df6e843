"""A fork server's first import: its garbage collector paused, one-frame placeholders.

The fork servers dprisk starts (the report's, :mod:`dprisk.validation.report.fork_server`; the
explorer's sampling workers', :mod:`dprisk.explore.jobs`) name this module first among the
modules they import before forking, so it runs before the libraries and the studies' modules:

* Python's cyclic garbage collector is paused (``gc.disable``) for the rest of the server's
  life. Its imports make some 500,000 objects and nearly no garbage; with the collector's
  default thresholds they set off some 680 collections, the later ones walking everything
  imported so far. The server itself only forks; each worker it forks ends the pause at its
  start (:func:`dprisk.runtime.collector.resume_collector_in_fork`: what it inherited
  frozen, then the collector running again).
* ``lazy_loader`` makes a missing module's placeholder from its caller's frame alone
  (:func:`dprisk.runtime.import_costs.lazy_loader_reads_one_frame`: ArviZ asks it for two
  modules that are not installed, each of which read the whole stack).

* Each worker's BLAS and OpenMP libraries start one thread, not one per core
  (:func:`dprisk.runtime.worker_threads.one_thread_per_worker`, before anything imports
  NumPy; a value the user set is kept): the workers already run one per core.
* SciPy's and matplotlib's docstrings are left as written, not rewritten at their import
  (:func:`dprisk.runtime.import_costs.library_docstrings_left_out`: SciPy's Array API notes,
  matplotlib's property tables; both servers import both libraries, and no worker reads
  their help). This imports NumPy, SciPy's ``_lib`` and matplotlib's ``artist``, after the
  line above.

The report's server's imports, in one process (three rounds each, 2026-11-30): 6.4 s of CPU
with neither, 5.6 s with the collector paused, 5.1 s with both.
"""

import gc

from dprisk.runtime.import_costs import lazy_loader_reads_one_frame, library_docstrings_left_out
from dprisk.runtime.worker_threads import one_thread_per_worker

gc.disable()
lazy_loader_reads_one_frame()
one_thread_per_worker()
library_docstrings_left_out()
