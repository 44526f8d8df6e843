"""A stop signal inside numba's compiler: its interrupt waits until the compiler is left.

The first SIGINT or SIGTERM raises :class:`dprisk.cli.stopping.Interrupted` where the main
thread is, at the next bytecode. Inside numba's compiler that can be between an LLVM call
that hands an object over and llvmlite's Python line that records it: ``LLVMPY_LinkModules``
destroys the module it links in, and the ``detach()`` that follows it in
``llvmlite.binding.linker.link_modules`` tells the module's Python object so; interrupted
between the two, the object later disposes of the freed module (its ``__del__``, when the
interrupt's frames are cleared) and the process dies of SIGSEGV in
``llvm::LLVMContext::removeModule`` instead of exiting 130 (seen once in five test-suite
runs from a fresh clone, whose kernels are compiled by the run the test interrupts;
``OutputString.close`` has the same kind of window: SIGABRT, a double free). A signal that
arrives during a C call is handled right after it returns, exactly there.

So while the main thread holds numba's compiler lock
(``numba.core.compiler_lock.global_compiler_lock``, held through every compilation, every
load from numba's cache and the linking of the compiled code), the stop handler keeps its
interrupt (:func:`raise_once_compiled`), and a listener of numba's ``numba:compiler_lock``
event raises it in the main thread as it releases the lock's outermost hold: numba's state is
complete there, and the interrupt comes out of the compiling call as from any Python call.
The stop watchdog (:mod:`dprisk.cli.stopping`), started by the same signal, still ends the
process within its :data:`~dprisk.cli.stopping.STOP_SECONDS` when the compilation lasts
longer: ``os._exit`` runs no destructor, so it cannot dispose of anything twice.

Measured 29 Nov (forks of the tests' process server running the exact study at rho1 = 1e-7,
numba's cache emptied before each run so that its kernels compile, SIGINT 1-3.5 s after the
study starts as the test sends it, which was inside the compiler in 60 of 60 probed runs; two
such loops at once on the 2 shared cores): before, 3 of 580 runs died of SIGSEGV; with this
module, 0 of 1,233 (all exit 130 with the line). Raising the signal right after a given LLVM
call of the compilation: after ``LLVMPY_LinkModules`` 5 of 5 SIGSEGV before, after
``LLVMPY_DisposeString`` a SIGABRT; with this module 130 after each of the 48 LLVM functions
the compilation calls.

numba is never imported here: with numba not loaded, nothing can be compiling.
"""

from __future__ import annotations

import sys
import threading

__all__ = ["forget_kept_interrupt", "inside_compiler", "raise_once_compiled"]

#: The interrupt kept until the main thread leaves numba's compiler (at most one).
_KEPT: list[BaseException] = []
#: The listener registered with numba's events (once a process), see :func:`_listen`.
_LISTENER: list = []


def inside_compiler() -> bool:
    """Whether the calling thread holds numba's compiler lock (False if numba is not loaded)."""
    lock_module = sys.modules.get("numba.core.compiler_lock")
    if lock_module is None:
        return False
    try:
        return bool(lock_module.global_compiler_lock.is_locked())
    except Exception:  # another numba: interrupt at once, as before
        return False


def raise_once_compiled(interrupt: BaseException) -> bool:
    """Keep ``interrupt`` if the main thread is in numba's compiler; raise it as it leaves.

    Called by the stop signal's handler, which runs in the main thread. Returns whether the
    interrupt was kept (False: not compiling, raise it now).
    """
    if threading.current_thread() is not threading.main_thread() or not inside_compiler():
        return False
    if not _listen():
        return False
    _KEPT[:] = [interrupt]
    return True


def forget_kept_interrupt() -> None:
    """Drop a kept interrupt (a new command line in the same process starts afresh)."""
    _KEPT.clear()


def _listen() -> bool:
    """Register (once) the listener that raises the kept interrupt; False if it cannot be."""
    if _LISTENER:
        return True
    try:
        from numba.core import event
    except ImportError:  # pragma: no cover - numba half loaded
        return False

    class RaiseOnceCompiled(event.Listener):
        """Raise the kept interrupt as the main thread releases the compiler lock's last hold.

        numba broadcasts the lock's end event right after releasing it.
        """

        def on_start(self, evt) -> None:
            pass

        def on_end(self, evt) -> None:
            if (_KEPT and threading.current_thread() is threading.main_thread()
                    and not inside_compiler()):
                raise _KEPT.pop()

    listener = RaiseOnceCompiled()
    event.register("numba:compiler_lock", listener)
    _LISTENER.append(listener)
    return True
