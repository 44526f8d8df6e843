"""numba's CPU target made ready on import, once, for every process a fork server forks.

numba registers its CPU target's typing and lowering extensions lazily, at a process's first
compiled call (a kernel loaded from numba's cache included; ``BaseContext.refresh``): about
0.3 s of CPU, which every forked worker that runs a kernel, a sampler or PyMC's numba-linked
functions paid again. A fork server imports this module after numba (the report's,
:data:`dprisk.validation.report.fork_server.PRELOAD`; the test suite's command-line server):
its workers inherit the registration. Only the registration: no kernel is loaded or compiled
here, so each worker still loads its own kernels from the cache. Measured 2026-11-30, three
forked workers (the risk studies, the population study, the cross-check's other priors) from
a server with the report's imports, three rounds: 13.1 / 11.7 / 13.6 s of CPU -> 11.6 / 10.6
/ 12.8 s in the workers, and 0.23-0.30 s in the server; the test suite's process server's
forks over its six modules, 29 Nov: 9.2 -> 7.1 s, the server +0.3 s.
"""

from numba.core.registry import cpu_target

cpu_target.target_context.refresh()
