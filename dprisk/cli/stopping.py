"""Stop signals: every command ends within 2 s of SIGINT or SIGTERM, with one true line.

:func:`handle_stop_signals` makes the first SIGINT or SIGTERM raise :class:`Interrupted` where
the program is (every ``finally`` on the way out runs: temporaries removed, locks released),
and starts a watchdog thread. The command line catches the interrupt and prints its line
(:func:`report_interrupted`). When the interrupt does not come out within
:data:`STOP_SECONDS` -- a library swallowed it (PyMC returns its draws so far, and a study
calling it in a loop carries on), or the program sits in compiled code, in PyTensor's
compilation, a Dask wait or an interpreter shutdown that hangs -- the watchdog ends the
process itself: it runs the clean-ups registered by the writers
(:data:`dprisk.runtime.output_files.FORCED_EXIT_CLEANUPS`: lock files, temporaries being
filled), prints the same line unless it was printed, and exits with ``128 + signal``
(130 for SIGINT, 143 for SIGTERM) through ``os._exit``. Compiled kernels release the GIL
(numba ``nogil``) so that the watchdog runs meanwhile.

The line says what is on disk: "nothing was written" unless an output was already put in
place (:func:`dprisk.runtime.writers.committed`), and then where it is.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import traceback

__all__ = [
    "INTERRUPT_HINT",
    "STOP_SECONDS",
    "Interrupted",
    "handle_stop_signals",
    "raise_if_interrupted",
    "report_interrupted",
]

#: What an interrupted subcommand adds to its one stderr line (how to carry on).
INTERRUPT_HINT = {
    "sweep": "rerunning the same command resumes from the chunks already computed",
    "reproduce": "nothing was written; the earlier report, if any, is intact",
}
#: Seconds after the first stop signal at which the watchdog ends the process (under the 2 s
#: the command line promises, leaving time for the interpreter to exit).
STOP_SECONDS = 1.0


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived while a subcommand ran (``signum`` says which).

    A ``KeyboardInterrupt``: every ``finally`` and cleanup on the way out runs (temporary
    files removed, locks released), and user code of a prior cannot swallow it.
    """

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def exit_status(self) -> int:
        """``128 + signal number``: 130 for SIGINT, 143 for SIGTERM (the shell's convention)."""
        return 128 + self.signum


#: Stop signals received since :func:`handle_stop_signals` (the first one decides the status).
_RECEIVED: list[int] = []
#: The command being run and whether its line was printed (guarded by ``_LINE``).
_STATE: dict = {"command": None, "printed": False}
_LINE = threading.Lock()


def handle_stop_signals(command: str | None = None) -> None:
    """Make SIGINT and SIGTERM stop the running subcommand ``command`` cleanly and at once.

    The first of them raises :class:`Interrupted` where the program is and starts the
    watchdog (module docstring); later ones are only recorded, so that a second Ctrl-C cannot
    cut a cleanup short. Installed by :func:`dprisk.cli.main.main` for the process's own
    command line only.
    """
    _RECEIVED.clear()
    _STATE.update(command=command, printed=False)

    def stop(signum, frame):
        first = not _RECEIVED
        _RECEIVED.append(signum)
        if first:
            threading.Thread(target=_watchdog, args=(signum,), daemon=True,
                             name="dprisk-stop-watchdog").start()
            raise Interrupted(signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def _watchdog(signum: int) -> None:
    """After :data:`STOP_SECONDS`: clean up, print the line unless printed, ``os._exit``."""
    threading.Event().wait(STOP_SECONDS)
    from dprisk.runtime.output_files import run_forced_exit_cleanups

    with _LINE:
        run_forced_exit_cleanups()
        if not _STATE["printed"]:
            _print_line(_STATE["command"] or "", signum)
        try:
            sys.stderr.flush()
        finally:
            os._exit(128 + signum)


def raise_if_interrupted() -> None:
    """Raise :class:`Interrupted` if a stop signal arrived (a library may have swallowed it).

    PyMC, for one, catches ``KeyboardInterrupt`` and returns the draws made so far; a
    result computed after a stop signal is never printed.
    """
    if _RECEIVED:
        raise Interrupted(_RECEIVED[0])


def _print_line(command: str, signum: int) -> None:
    from dprisk.runtime.writers import committed

    done = committed()  # an output already put in place: say so, not "nothing was written"
    hint = (f"the output was already complete and is in place at {done[-1]}" if done
            else INTERRUPT_HINT.get(command, "nothing was written"))
    try:
        erase = "\r\033[K" if sys.stderr.isatty() else ""
    except (AttributeError, ValueError):
        erase = ""
    print(f"{erase}dprisk {command}: interrupted by {signal.Signals(signum).name}; {hint}",
          file=sys.stderr, flush=True)
    _STATE["printed"] = True


def report_interrupted(command: str, err: KeyboardInterrupt) -> int:
    """Print the one stderr line of a subcommand stopped by ``err``; return the exit status.

    Status ``128 + signal``: 130 for SIGINT (also a ``KeyboardInterrupt`` of other origin),
    143 for SIGTERM. The line names the signal and, from :data:`INTERRUPT_HINT`, how to go on
    (or, when the output was already put in place, where it is). The frames the interrupt
    unwound are cleared first, so that what they held (an open progress bar, a generator) is
    finalised before the line, not after it; on a terminal the line starts by erasing a
    progress bar the interrupt left unfinished. Printed once, whoever comes first: this or the
    watchdog.
    """
    traceback.clear_frames(err.__traceback__)
    signum = err.signum if isinstance(err, Interrupted) else int(signal.SIGINT)
    with _LINE:
        if not _STATE["printed"]:
            _print_line(command, signum)
    return 128 + signum
