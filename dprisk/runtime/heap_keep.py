"""A report worker's C heap keeps the memory NumPy frees, instead of handing it back at once.

glibc's ``malloc`` gives a freed block of 128 KiB or more back to the kernel (``munmap``, or
``brk`` trimming the heap's top once 2 x that much is free at the top); the next array of
that size then gets fresh pages, and the kernel zeroes each 4 KiB page at its first touch (a
page fault). The report's studies make and free many arrays of 0.1-30 MB: on the 2-core
machine (the report's eleven studies, each in a child forked after the fork server's imports,
2026-12-01, load 10-16) 419k page faults and 4.0 s of system CPU, against 230k and 2.5 s with
the settings below. A microbenchmark of the alias-table noise (65,536 words, three
temporaries of 512 KiB a call): 38 ns a word, 7.9 ns with them.

:func:`keep_freed_memory` sets, with ``mallopt``, the mmap threshold to 32 MiB (glibc's
largest: smaller blocks come from the heap and are reused), the trim threshold to 256 MiB
(free memory at the heap's top kept up to that) and the top pad to 64 MiB (each growth of
the heap asks for that much more, address space whose pages are touched only when used).
The results do not depend on it (where memory comes from, not what is computed); a worker's
peak memory is the same, it keeps it until it exits. Only the report's own processes call
it: its pool workers (:func:`dprisk.validation.report.runner.start_worker`) and ``dprisk
reproduce``'s process, which runs the cheapest studies itself
(:mod:`dprisk.cli.commands.reproduce`); a process that calls the report from Python keeps
its own settings. Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["HEAP_SETTINGS", "keep_freed_memory"]

# mallopt's parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3

#: ``mallopt`` parameter -> value set by :func:`keep_freed_memory` (bytes).
HEAP_SETTINGS = {_M_MMAP_THRESHOLD: 32 << 20, _M_TRIM_THRESHOLD: 256 << 20,
                 _M_TOP_PAD: 64 << 20}


def keep_freed_memory() -> bool:
    """Set :data:`HEAP_SETTINGS` in this process's C heap (glibc); return whether it did.

    False, and nothing changed, where the C library has no ``mallopt`` or refuses a value.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return all(mallopt(parameter, value) == 1 for parameter, value in HEAP_SETTINGS.items())
