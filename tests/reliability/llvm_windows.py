"""A stop signal at the worst moment of numba's compiler, for a fork of the process server.

:func:`call_signalled_after_llvm_call` runs ``dprisk`` as its console script does, with the
compiled kernels of :mod:`dprisk.inference.kernels.fused_kernels_jit` compiled afresh (their
on-disk cache not read: a fresh clone's first run) and ``SIGINT`` raised right after the first
llvmlite C call made directly by the llvmlite function ``caller`` (its qualified name) has
returned -- as a signal that arrives during that call is handled: at the first bytecode after
it, before the caller's next line. ``link_modules``: ``LLVMPY_LinkModules`` has destroyed the
linked module and the ``detach()`` that records it is next (without
:mod:`dprisk.cli.compiler_stops` the process died of SIGSEGV; once in five test-suite runs
from a fresh clone). ``OutputString.close``: ``LLVMPY_DisposeString`` has freed the string and
the line forgetting its pointer is next (SIGABRT, a double free). Whether the signal was
raised is printed on stdout (``signalled after <caller>``), so that a test cannot pass by
never reaching the moment.

The signal is raised from llvmlite's public lock callback (``register_lock_callback``: called
as each C call returns, before its lock is released), the call found by frame names.
"""

from __future__ import annotations

import signal
import sys

__all__ = ["WATCHDOG_SECONDS", "call_signalled_after_llvm_call"]

#: The stop watchdog's wait in these runs (:data:`dprisk.cli.stopping.STOP_SECONDS`, 0.75 s in
#: the product): longer than the test waits, so that only the interrupt can stop the run.
WATCHDOG_SECONDS = 600.0


def _caller_of_llvm_call(frame) -> str | None:
    """The qualified name of the function that made the llvmlite C call ``frame`` is in."""
    while frame is not None:
        if frame.f_code.co_qualname == "_lib_fn_wrapper.__call__":
            return frame.f_back.f_code.co_qualname if frame.f_back else None
        frame = frame.f_back
    return None


def call_signalled_after_llvm_call(caller: str, *argv: str) -> int:
    """``dprisk argv`` (the console script's ``main()``), compiling its kernels afresh, with
    SIGINT raised once, right after the first llvmlite C call of ``caller`` returns."""
    from llvmlite.binding import ffi
    from numba.core.caching import NullCache
    from numba.core.dispatcher import Dispatcher

    from dprisk.cli import stopping
    from dprisk.cli.main import main
    from dprisk.inference.kernels import fused_kernels_jit

    # the watchdog's wait far beyond the compilation (seconds): the stop must come from the
    # interrupt itself, raised as the compiler is left, not from the watchdog
    stopping.STOP_SECONDS = WATCHDOG_SECONDS

    for kernel in vars(fused_kernels_jit).values():
        if isinstance(kernel, Dispatcher):  # compiled afresh: no cache read, none written
            kernel._cache = NullCache()
    raised = []

    def after_call() -> None:
        if not raised and _caller_of_llvm_call(sys._getframe(1)) == caller:
            raised.append(caller)
            print(f"signalled after {caller}", flush=True)
            signal.raise_signal(signal.SIGINT)

    ffi.register_lock_callback(lambda: None, after_call)
    sys.argv = ["dprisk", *argv]
    return main()
