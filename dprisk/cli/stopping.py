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
(130 for SIGINT, 143 for SIGTERM) through ``os._exit``.

The watchdog must not wait for the main thread: Python runs a signal's handler only when the
main thread is back in bytecode, which a numba kernel delays by as long as it runs (19 s in
one test run). So the C-level handler also writes the signal's number to a pipe
(:func:`signal.set_wakeup_fd`), and a daemon thread blocked on the pipe's other end starts the
watchdog at once; it needs only the GIL, which compiled kernels release (numba ``nogil``),
PyTensor's compilation releases while its C compiler runs, and numba's compilation between
its LLVM calls. After the line the process ends through :func:`end_process`, skipping the
interpreter's shutdown (1.7-2.0 s with PyMC loaded, under load). Signals held back by
:func:`dprisk.runtime.writers.hold_stop_signals` (the swap of a report) are never cut short:
the watchdog waits for the held block to end.

The line says what is on disk: "nothing was written" unless an output was already put in
place (:func:`dprisk.runtime.writers.committed`), and then where it is.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import signal
import sys
import threading
import traceback
from typing import NoReturn

from dprisk.cli.compiler_stops import forget_kept_interrupt, raise_once_compiled

__all__ = [
    "INTERRUPT_HINT",
    "STOP_SECONDS",
    "Interrupted",
    "command_done",
    "end_process",
    "freeze_heap_at_exit",
    "handle_stop_signals",
    "raise_if_interrupted",
    "report_interrupted",
]

#: What :func:`freeze_heap_at_exit` registered with :mod:`atexit` (once a process).
_FREEZE_AT_EXIT: list = []

#: What an interrupted subcommand adds to its one stderr line (how to carry on).
INTERRUPT_HINT = {
    "sweep": "rerunning the same command resumes from the chunks already computed",
    "reproduce": "nothing was written; the earlier report, if any, is intact",
}
#: Seconds after the first stop signal at which the watchdog ends the process (under the 2 s
#: the command line promises, leaving time for the interpreter to exit).
STOP_SECONDS = 0.75


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
_STATE: dict = {"command": None, "printed": False, "watchdog": False}
_LINE = threading.Lock()
#: Guards the start of the watchdog (by the wakeup thread or the Python-level handler).
_START = threading.Lock()
#: The wakeup pipe's read and write ends, once set up (:func:`_wake_on_signals`).
_PIPE: list[int] = []


def handle_stop_signals(command: str | None = None) -> None:
    """Make SIGINT and SIGTERM stop the running subcommand ``command`` cleanly and at once.

    The first of them raises :class:`Interrupted` where the program is and starts the
    watchdog (module docstring); later ones are only recorded, so that a second Ctrl-C cannot
    cut a cleanup short. Inside numba's compiler the interrupt is raised as the compiler is
    left, not in llvmlite's bookkeeping (:mod:`dprisk.cli.compiler_stops`: a crash otherwise).
    Installed by :func:`dprisk.cli.main.main` for the process's own command line only (it must
    run in the main thread).

    The watchdog is started by a thread woken through :func:`signal.set_wakeup_fd`: the C-level
    handler writes the signal's number to a pipe at once, even while the main thread is in
    compiled code and cannot run the Python-level handler; the thread blocked on the pipe's
    other end needs no help from the main thread (only the GIL, which compiled kernels
    release). The Python-level handler starts it too, for when the pipe cannot be set up.
    """
    _RECEIVED.clear()
    forget_kept_interrupt()
    _STATE.update(command=command, printed=False, watchdog=False, done=False)

    def stop(signum, frame):
        from dprisk.runtime.writers import defer_stop  # not at start-up: it loads ctypes

        _start_watchdog(signum)  # it waits for a held block (writers.STOPS_HELD) to end
        if defer_stop(signum):  # inside a held block: raised again at its end
            return
        first = not _RECEIVED
        _RECEIVED.append(signum)
        if first:
            interrupt = Interrupted(signum)
            if raise_once_compiled(interrupt):  # in numba's compiler: raised as it is left
                return
            raise interrupt

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    _quiet_unraisable_interrupts()
    _wake_on_signals()
    if not _IGNORE_AT_EXIT:  # registered before the libraries' own: it runs after theirs
        atexit.register(_ignore_stops_after_done)
        _IGNORE_AT_EXIT.append(_ignore_stops_after_done)


def _quiet_unraisable_interrupts() -> None:
    """Keep an interrupt raised where Python cannot propagate it off stderr.

    A signal that arrives while Python runs a callback whose exceptions it only reports (a
    weak reference's callback, ``__del__``, the import lock's clean-up) makes the handler's
    :class:`Interrupted` "unraisable": Python prints "Exception ignored in ..." and a traceback
    and carries on. The watchdog, started by the same signal, still ends the process within
    :data:`STOP_SECONDS` with the command's one line and ``128 + signal``; the traceback
    would break the one-line promise (seen under load: SIGTERM during an import). Once a stop
    signal has arrived, any unraisable exception is kept off stderr too: it is a side effect of
    the stop (seen in CI: SIGINT while numba's llvmlite closed an object in its ``__del__``,
    whose clean-up then failed) and the process is ending with the one line. Before a stop,
    any other unraisable exception goes to the hook that was in place.
    """
    previous = sys.unraisablehook
    if getattr(previous, "_dprisk_quiet_interrupts", False):
        return  # installed already (a second command line in the same process)

    def hook(unraisable):
        if isinstance(unraisable.exc_value, Interrupted) or _STATE.get("watchdog"):
            return  # the watchdog stops the process and prints the line
        previous(unraisable)

    hook._dprisk_quiet_interrupts = True
    sys.unraisablehook = hook


def _start_watchdog(signum: int) -> None:
    """Start the watchdog of the first stop signal (once per process; thread-safe)."""
    with _START:
        if _STATE.get("watchdog"):
            return
        _STATE["watchdog"] = True
    threading.Thread(target=_watchdog, args=(signum,), daemon=True,
                     name="dprisk-stop-watchdog").start()


def _wake_on_signals() -> None:
    """Route every signal's number through a pipe to a thread that starts the watchdog.

    The write end (non-blocking, as :func:`signal.set_wakeup_fd` requires) receives one byte
    per signal from the C-level handler; the daemon thread reading the other end starts the
    watchdog for the first SIGINT or SIGTERM. A child forked later (a sampler's worker) gets
    no wakeup pipe: its own signals must not stop this process.
    """
    if _PIPE:
        return  # already routed (a second call in the same process)
    try:
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    except (OSError, ValueError):  # not the main thread, or no pipe: the handler starts it
        return
    _PIPE.extend([read_end, write_end])
    os.register_at_fork(after_in_child=_forget_pipe_in_child)
    threading.Thread(target=_wait_for_signal, args=(read_end,), daemon=True,
                     name="dprisk-stop-signals").start()


def _wait_for_signal(read_end: int) -> None:
    """Block on the wakeup pipe; start the watchdog at the first SIGINT or SIGTERM byte.

    Once the command is done (:func:`command_done`) the stop ends the process from here at
    once: no new thread can be started in the interpreter's shutdown.
    """
    _block_stop_signals()
    stops = {int(signal.SIGINT), int(signal.SIGTERM)}
    while True:
        try:
            data = os.read(read_end, 64)
        except OSError:
            return
        if not data:
            return
        for signum in data:
            if signum in stops and _STATE.get("done"):
                _end_after_done(signum)
            elif signum in stops:
                _start_watchdog(signum)


def command_done() -> None:
    """The command has returned: a stop signal from now on ends the process at once.

    What follows is the interpreter's shutdown (about 20 ms after a light command, 200 ms
    after PyMC). A stop there raised :class:`Interrupted` in an exit handler or a module's
    teardown, where Python only reports it (kept off stderr), and the wakeup pipe's thread
    failed to start the watchdog ("can't create new thread at interpreter shutdown", a
    traceback on stderr), or it killed the process once Python had reset its handlers: after
    the command's whole output the process ended with status 0 and a traceback, or by the
    signal with no line. Now, until the exit handlers have run, the stop prints the one line
    (an output already in place is named: :func:`_print_line`) and ends the process with
    ``128 + signal``; after them it is ignored (:func:`_ignore_stops_after_done`) and the
    process ends with the command's status. Called by :func:`dprisk.cli.main.main` on the
    process's own command line.
    """
    _STATE["done"] = True

    def stop(signum, frame):
        _end_after_done(signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


#: What :func:`handle_stop_signals` registered with :mod:`atexit` (once a process).
_IGNORE_AT_EXIT: list = []


def _ignore_stops_after_done() -> None:
    """At the end of the exit handlers of a command that is done: ignore stop signals.

    Python then resets a Python-level handler to the default action (``_PySignal_Fini``) and
    spends the rest of its shutdown (collections, modules' teardown: most of the 200 ms after
    PyMC) where a stop killed the process by the signal, silently, after its whole output.
    An ignored signal is left ignored: the process ends with the command's status.
    """
    if _STATE.get("done"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _end_after_done(signum: int) -> NoReturn:
    """The line of a stop that arrived after the command was done, then ``128 + signal``."""
    with _LINE:
        if not _STATE["printed"]:
            _print_line(_STATE["command"] or "", signum)
        end_process(128 + signum)


def _block_stop_signals() -> None:
    """Keep SIGINT and SIGTERM off the calling helper thread (they go to the main thread)."""
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    except (AttributeError, ValueError, OSError):
        pass


def _forget_pipe_in_child() -> None:
    """In a forked child: no wakeup pipe of the parent's (its signals are its own)."""
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:
        pass
    for fd in _PIPE:
        try:
            os.close(fd)
        except OSError:
            pass
    _PIPE.clear()


def _watchdog(signum: int) -> None:
    """After :data:`STOP_SECONDS`: clean up, print the line unless printed, ``os._exit``."""
    _block_stop_signals()
    threading.Event().wait(STOP_SECONDS)
    from dprisk.runtime.output_files import run_forced_exit_cleanups
    from dprisk.runtime.writers import STOPS_HELD

    with STOPS_HELD, _LINE:  # never inside an exchange that holds the signals back
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


def stop_received() -> Interrupted | None:
    """The stop as an :class:`Interrupted` if a stop signal arrived, else None.

    For a failure that follows a swallowed stop: PyMC catches the ``KeyboardInterrupt`` of a
    stop that arrives before its first draw is recorded and then raises ``ValueError("Not
    enough samples to build a trace.")``; that is reported as the stop, not as an error.
    """
    return Interrupted(_RECEIVED[0]) if _RECEIVED else None


def _print_line(command: str, signum: int) -> None:
    from dprisk.runtime.writers import committed, kept

    done = committed()  # an output already put in place: say so, not "nothing was written"
    # finished work kept for a rerun (population risk's DIR.parts), if still on disk
    resumable = [path for path in kept() if path.is_dir() and any(path.iterdir())]
    if done:
        hint = f"the output was already complete and is in place at {done[-1]}"
    elif resumable and command not in INTERRUPT_HINT:
        hint = (f"the finished work is kept in {resumable[-1]}; rerunning the same command "
                "reuses it")
    else:
        hint = INTERRUPT_HINT.get(command, "nothing was written")
    try:
        erase = "\r\033[K" if sys.stderr.isatty() else ""
    except (AttributeError, ValueError):
        erase = ""
    print(f"{erase}dprisk {command}: interrupted by {signal.Signals(signum).name}; {hint}",
          file=sys.stderr, flush=True)
    _STATE["printed"] = True


def end_process(status: int) -> NoReturn:
    """End the process with ``status`` at once, once the interrupted command's line is printed.

    Standard output and error are flushed, then :func:`os._exit`: the interpreter's shutdown
    (garbage collection of PyMC, PyTensor and numba, their exit handlers) is skipped -- it
    took 1.7-2.0 s of the 2 s promise under load (measured after the line of an interrupted
    ``pm.sample``). Every ``finally`` on the interrupt's way out has run by then: locks
    released, temporaries removed.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def freeze_heap_at_exit() -> None:
    """Have the interpreter's shutdown skip its full garbage collections (``gc.freeze``).

    Registered (once a process) with :mod:`atexit` when a command has finished (the command
    line, :func:`dprisk.cli.main.main`, on the process's own arguments; ``dprisk reproduce``
    once its report is written): at exit the handler moves every object into the collector's
    permanent generation, so the collections of the interpreter's shutdown do not walk the
    heap the command's libraries left. Measured after the command's last line (process CPU,
    two rounds each): a two-level ``posterior --method pymc`` 1.67-1.72 s -> 0.13 s, the
    exact ``posterior`` and ``census`` about 0.08 s -> 0.01 s, ``reproduce`` 0.5-0.7 s ->
    0.05 s. The command's outputs are complete and closed by then; the other exit handlers
    and the modules' teardown still run (only cyclic garbage is not collected, which the
    process's end frees anyway).
    """
    if not _FREEZE_AT_EXIT:
        atexit.register(gc.freeze)
        _FREEZE_AT_EXIT.append(gc.freeze)


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
