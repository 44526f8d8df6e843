"""The tick copies checked on import, once, for every process a fork server forks.

:func:`dprisk.validation.figures.tick_copies.ticks_copied` copies an axis's new ticks from its
first only where :func:`~dprisk.validation.figures.tick_copies.tick_copies_agree` found, once
per process, that ticks made both ways are equal: a sample figure's ticks made both ways and
compared (0.07-0.12 s of CPU after the report's imports), and in a new process also the first
``Figure`` and ``Axes`` it makes (matplotlib's first-use costs). The report's fork server
imports this module last (:data:`dprisk.validation.report.fork_server.PRELOAD`): its workers
inherit the answer and those first uses. Measured 2026-11-30, a study forked from a server
with the report's imports, four rounds each: the post-processed product 1.92 / 2.49 / 2.51 /
1.91 -> 1.71 / 1.84 / 1.70 / 1.79 s of CPU, the whole record 1.90 / 1.97 / 2.00 / 1.91 ->
1.75 / 1.79 / 1.69 / 2.47 s, the server 0.07-0.12 s more.
"""

from dprisk.validation.figures.tick_copies import tick_copies_agree

tick_copies_agree()
