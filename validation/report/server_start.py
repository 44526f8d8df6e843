"""The report's fork server's first import: its collector paused, one-frame placeholders.

:func:`dprisk.validation.report.fork_server.server_preload` names this module first, so the
fork server imports it before the libraries and the studies' modules:

* Python's cyclic garbage collector is paused (``gc.disable``) for the rest of the server's
  life. Its imports make some 500,000 objects and nearly no garbage; with the collector's
  default thresholds they set off some 680 collections, the later ones walking everything
  imported so far. The pool's workers inherit the pause and end it at their start
  (:func:`dprisk.validation.report.runner.start_worker`: what they inherited frozen, then
  :data:`~dprisk.validation.report.runner.STUDY_GC_THRESHOLDS`); the server itself only forks.
* ``lazy_loader`` makes a missing module's placeholder from its caller's frame alone
  (:func:`dprisk.runtime.import_costs.lazy_loader_reads_one_frame`: ArviZ asks it for two
  modules that are not installed, each of which read the whole stack).

The server's imports, in one process (three rounds each, 2026-11-30): 6.4 s of CPU with
neither, 5.6 s with the collector paused, 5.1 s with both.
"""

import gc

from dprisk.runtime.import_costs import lazy_loader_reads_one_frame

gc.disable()
lazy_loader_reads_one_frame()
