"""The ``dprisk`` command line: the parser of every subcommand and the dispatch.

Subcommands print a human-readable summary, or exactly one JSON object with ``--json``.
Bad input exits with status 2 and one line on stderr naming the parameter and its allowed
range (no traceback); the same checks raise ``ValueError`` in the Python API. An option that
does not apply to the requested computation is bad input too. A random result reports its
seed (JSON key ``seed``), drawn when ``--seed`` is not given.

Exit statuses: 0 success, 2 bad input (also a missing command), 1 an unexpected failure
while computing, 130 / 143 stopped by SIGINT / SIGTERM (one stderr line, nothing half-written).

Help: ``dprisk help COMMAND`` prints a subcommand's help (``dprisk help``, the top-level
help); a mistyped option is reported with the subcommand's usage and the nearest option
(``did you mean --x1-star?``), a mistyped subcommand with the nearest subcommand
(:mod:`dprisk.cli.parsers`).

Start-up: a subcommand's module (and through it the libraries it computes with) is imported
only when that subcommand runs; the other subcommands are listed with their one-line help
only, so ``dprisk census`` loads no xarray and ``dprisk posterior`` no netCDF.
"""

from __future__ import annotations

import argparse
import errno
import functools
import io
import os
import re
import sys

from dprisk.cli.commands import SUBCOMMAND_HELP, load
from dprisk.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    EXIT_OK,
    Parser,
    TopParser,
    handle_stop_signals,
    report_interrupted,
)
from dprisk.cli.conventions import RHO_CONVENTION, state_rho_convention
from dprisk.cli.parsers import subparser
from dprisk.cli.stopping import (
    command_done,
    end_process,
    freeze_heap_at_exit,
    stop_received,
)
from dprisk.runtime.settings import check_environment

__all__ = ["build_parser", "main"]


def _requested(argv: list[str]) -> str | None:
    """The subcommand named on the command line: the first argument not an option."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in SUBCOMMAND_HELP else None
    return None


class _VersionAction(argparse.Action):
    """``--version``: print ``dprisk VERSION`` and exit; the package metadata is read only then."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show program's version number and exit", **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from dprisk import __version__

        print(f"dprisk {__version__}")
        parser.exit()


def build_parser(commands=None) -> argparse.ArgumentParser:
    """Return the ``dprisk`` parser: every subcommand of the registry, ``SUBCOMMAND_HELP``.

    Only the subcommands named in ``commands`` (default: all) are imported (module
    ``dprisk.cli.commands.NAME``) and given their full parser; the others are registered by
    name and one-line help (:data:`dprisk.cli.commands.SUBCOMMAND_HELP`), enough for
    ``dprisk --help`` and for the usage line of a command-line error.
    """
    parser = TopParser(
        prog="dprisk",
        description="Bayesian disclosure risk of discrete-Gaussian (zCDP) count releases.",
        epilog=f"Every rho: {RHO_CONVENTION.strip('[]')} (dprisk summary gives the answers "
        "both ways). Wherever a rho is asked for, a Census level is accepted too: census:block, "
        "census:block-group, census:tract, census:county, census:state, census:us. "
        "Probabilities accept fractions (1/864). An option that does not apply to the "
        "requested computation is refused. Requests above the memory or work limit are "
        "refused before they start; raise them with the environment variables "
        "DPRISK_MEMORY_LIMIT (e.g. 16GiB, default 2GiB) and DPRISK_WORK_LIMIT (steps, e.g. "
        "1e13, default 1e12, roughly an hour); their old names DPRISK_MEMORY_BUDGET and "
        "DPRISK_WORK_BUDGET are accepted. Every DPRISK_* variable is checked at start-up, "
        "before any help: a malformed value or an unknown name is exit status 2. "
        "Exit status: 0 ok, 2 bad input (also when no "
        "command is given), 1 failure, 130/143 stopped by SIGINT/SIGTERM.",
    )
    parser.add_argument("--version", action=_VersionAction)
    subs = parser.add_subparsers(dest="command", required=True, parser_class=Parser,
                                 title="commands")
    for name, help_line in SUBCOMMAND_HELP.items():
        if commands is None or name in commands:
            load(name).add_parser(subs)
            state_rho_convention(subs.choices[name])
        else:
            subs.add_parser(name, help=help_line)
    return parser


@functools.lru_cache(maxsize=32)
def _parser_for(requested: str | None) -> argparse.ArgumentParser:
    """:func:`build_parser` for the subcommand ``requested`` (None: none named), built once.

    Building the parsers costs about 4 ms (argparse looks up its message translations for
    every one of the 13 subcommand parsers); parsing does not change a parser, so a process
    that calls :func:`main` more than once (a script, the tests) builds each only once.
    """
    return build_parser([requested] if requested else [])


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status (also used by the console script).

    On the process's own command line a stop signal ends the process right after its one
    line (:func:`dprisk.cli.stopping.end_process`: the interpreter's shutdown, seconds with
    PyMC loaded, is skipped), wherever it arrived: also while the subcommand's libraries are
    imported or its options parsed. A command that ends has the interpreter's shutdown skip its
    garbage collections (:func:`dprisk.cli.stopping.freeze_heap_at_exit`).
    """
    own = argv is None
    if own:  # the process's own command line
        argv = sys.argv[1:]
        _refuse_writes_to_closed_stdout()
    requested = _requested(argv)
    if not own:
        return _run(argv, requested, own=False)
    handle_stop_signals(requested)
    try:
        status = _run(argv, requested, own=True)
        command_done()  # a stop in the interpreter's shutdown: the line, then 128 + signal
    except (Exception, KeyboardInterrupt) as err:  # before the subcommand ran or after it
        # a failure after a stop is the stop: ``threading`` turns an interrupt that lands in
        # ``Condition.wait``'s re-acquire into "RuntimeError: release unlocked lock"
        stop = err if isinstance(err, KeyboardInterrupt) else stop_received()
        if stop is None:
            raise
        end_process(report_interrupted(requested or "", stop))
    freeze_heap_at_exit()  # the command is done: the shutdown skips walking its heap
    return status


class _ClosedOutput(io.TextIOBase):
    """Standard output when the process started with it closed: every write fails (EBADF)."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "Bad file descriptor (standard output is closed)")


def _refuse_writes_to_closed_stdout() -> None:
    """Make output to a closed standard output fail as it does on a full disk (status 1).

    Started with file descriptor 1 closed (``dprisk census >&-``), Python sets ``sys.stdout``
    to None and ``print`` writes nothing, silently: the command exited 0 having written
    nothing, where ``> /dev/full`` fails with status 1. ``sys.stdout`` becomes
    :class:`_ClosedOutput`, so the command's output fails the same way; descriptor 1 is held
    on ``/dev/null`` so that no file the command opens gets it (a library writing to fd 1
    would otherwise write into that file).
    """
    if sys.stdout is not None:
        return
    try:
        os.fstat(1)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
        if fd != 1:
            os.dup2(fd, 1)
            os.close(fd)
    sys.stdout = _ClosedOutput()


def _option_spellings(command, name: str) -> list[str]:
    """The ``--`` spellings of ``command``'s option whose ``dest`` is ``name`` ([] if none)."""
    for action in command._actions:
        if action.dest in (name, name.replace("-", "_")):
            return [option for option in action.option_strings if option.startswith("--")]
    return []


def _typed(spellings: list[str], words: list[str]) -> str | None:
    """The first of ``spellings`` among the command-line ``words`` (``--x=1`` counts)."""
    typed = [word.split("=")[0] for word in words if word.split("=")[0] in spellings]
    return typed[0] if typed else None


def naming_given_option(message: str, command, words: list[str]) -> str:
    """``message`` with its leading API parameter name(s) replaced by the options.

    The API names its parameters (``rho1 must be ...``, ``prior 'x': ...``, ``rhos: ...``);
    a refusal starting with the name of an option of ``command`` (the subcommand's parser)
    that was given among ``words`` (its command-line words) starts with the option instead:
    ``--rho1 must be ...``. A refusal of several parameters together (``draws, chains, tune:
    ... work ...``) names all their options when one of them was given (``--draws, --chains,
    --tune:``), each as typed or else in its long spelling. Other messages are returned
    unchanged.
    """
    if command is None:
        return message
    named = _naming_expression(message, command, words) or _naming_rho_value(message, command,
                                                                             words)
    if named:
        return named
    several = re.match(r"([A-Za-z][\w-]*(?:(?:, | and )[A-Za-z][\w-]*)+)(?=:)", message)
    if several:
        parts = re.split(r"(, | and )", several.group(1))   # names, with their separators
        names, separators = parts[::2], parts[1::2]
        spellings = [_option_spellings(command, name) for name in names]
        typed = [_typed(options, words) for options in spellings]
        if all(spellings) and any(typed):
            options = [given or options[0] for given, options in zip(typed, spellings)]
            joined = options[0] + "".join(sep + option for sep, option
                                          in zip(separators, options[1:]))
            return joined + message[len(several.group(1)):]
        return message
    match = re.match(r"([A-Za-z][\w-]*)(?=[\s:=])", message)
    if match is None:
        return message
    name = match.group(1)
    typed_option = _typed(_option_spellings(command, name), words)
    if typed_option:
        return _naming_in_range(typed_option + message[len(name):], name, typed_option)
    return message


def _naming_in_range(message: str, name: str, option: str) -> str:
    """The API's ``name`` in the message's ``allowed range: ...`` replaced by ``option``.

    ``x1_star must be ... (allowed range: -2**53 <= x1_star <= 2**53)`` names the option in
    both places, not only at the head.
    """
    word = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
    return re.sub(r"allowed range: [^)]*", lambda found: word.sub(option, found.group(0)),
                  message)


#: An expression of parameters at the head of a refusal: ``rho2 + rho1/d = 1e+100 ...``.
_EXPRESSION = re.compile(r"([A-Za-z]\w*(?:\s*[-+*/]\s*[A-Za-z]\w*)+)(?= = )")
#: A refusal of one rho by its value: ``rho = 1e-320 is too small ...``.
_RHO_VALUE = re.compile(r"rho = ([^\s,;:]+)")
#: The rho options of any subcommand (``--rho``, ``--rho1``, ``--rhos``, ...).
_RHO_OPTION = re.compile(r"--rho(\d*|s)$")


def _naming_expression(message: str, command, words: list[str]) -> str | None:
    """``rho2 + rho1/d = ...`` with each name given as an option replaced by it (else None)."""
    match = _EXPRESSION.match(message)
    if match is None:
        return None
    head = match.group(1)

    def option(name: re.Match) -> str:
        return _typed(_option_spellings(command, name.group(0)), words) or name.group(0)

    named = re.sub(r"[A-Za-z]\w*", option, head)
    return named + message[len(head):] if named != head else None


def _typed_values(words: list[str], option: str) -> list[str]:
    """The values typed for ``option`` among ``words`` (``--x 1`` and ``--x=1``)."""
    values = []
    for i, word in enumerate(words):
        if word == option and i + 1 < len(words):
            values.append(words[i + 1])
        elif word.startswith(option + "="):
            values.append(word.split("=", 1)[1])
    return values


def _same_number(text: str, value: float) -> bool:
    try:
        return float(text) == value
    except ValueError:
        return False


def _holds_number(text: str, value: float) -> bool:
    """Whether the typed ``text`` gives ``value``.

    A comma list's element counts, and so does a point of a sweep range ``A:B:N[:log]``
    (``value`` between its ends A and B).
    """
    for item in text.split(","):
        ends = item.split(":")
        if len(ends) >= 3:
            try:
                low, high = sorted((float(ends[0]), float(ends[1])))
            except ValueError:
                continue
            if low <= value <= high:
                return True
        elif _same_number(item, value):
            return True
    return False


def _naming_rho_value(message: str, command, words: list[str]) -> str | None:
    """``rho = V ...`` prefixed with the rho option(s) typed with the value V (else None).

    A refusal deep in the numerics names the rho by its value only; the option is the one
    given that value (an element of a comma list or a point of a sweep range counts), or the
    only rho option given.
    """
    match = _RHO_VALUE.match(message)
    if match is None:
        return None
    try:
        value = float(match.group(1))
    except ValueError:
        return None
    options = [option for action in command._actions for option in action.option_strings
               if _RHO_OPTION.match(option) and _typed_values(words, option)]
    holding = [option for option in options
               if any(_holds_number(text, value) for text in _typed_values(words, option))]
    chosen = holding or (options if len(options) == 1 else [])
    return f"{', '.join(chosen)}: {message}" if chosen else None


def _run(argv: list[str], requested: str | None, *, own: bool) -> int:
    """Parse ``argv`` and run the subcommand ``requested``; return its exit status.

    ``own``: the process's own command line (a stop signal then ends the process).
    """
    try:  # every DPRISK_* variable, for every subcommand: before --help and --version too
        check_environment()
    except ValueError as err:
        print(f"dprisk{f' {requested}' if requested else ''}: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    parser = _parser_for(requested)
    command = subparser(parser, requested) if requested else None
    after = argv[argv.index(requested) + 1:] if requested else []  # the subcommand's words
    if command is not None and (unknown := command.unknown_options(after)):
        command.unrecognized(unknown)  # before parsing: even with a required option missing
    try:
        args, extras = parser.parse_known_args(argv)
    except BrokenPipeError:  # --help or --version piped to a reader that left: status 0,
        sys.stdout = open(os.devnull, "w")  # as every subcommand's output (_report_failure)
        return EXIT_OK
    except OSError as err:  # --help or --version written to a full disk: one line, status 1
        where = f"dprisk {requested}" if requested else "dprisk"
        print(f"{where}: failed: {type(err).__name__}: {err}", file=sys.stderr)
        return EXIT_FAILURE
    if extras:  # a mistyped option: the subcommand's usage and its nearest option
        (subparser(parser, args.command) or parser).unrecognized(extras)
    try:
        if getattr(args, "seed", None) is not None and args.seed < 0:
            raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")
        status = args.func(args)
    except (Exception, KeyboardInterrupt) as err:
        # SIGINT or SIGTERM (common.handle_stop_signals), or a failure after a stop a library
        # swallowed (PyMC's "Not enough samples" when stopped before its first draw)
        stop = err if isinstance(err, KeyboardInterrupt) else stop_received()
        if stop is None:
            return _report_failure(err, args.command, command, after)
        status = report_interrupted(args.command, stop)
        if own:
            end_process(status)
        return status
    return status


def _report_failure(err: Exception, requested: str, command, after) -> int:
    """Print the one line of a failed subcommand; return its exit status.

    ``ValueError``/``TypeError``: bad input, status 2 (the message names the option as
    typed); ``BrokenPipeError``: the reader left, status 0; anything else: status 1.
    """
    if isinstance(err, (ValueError, TypeError)):
        message = naming_given_option(str(err), command, after)
        print(f"dprisk {requested}: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if isinstance(err, BrokenPipeError):  # e.g. `dprisk sweep ... | head`: the reader left
        sys.stdout = open(os.devnull, "w")  # silence the interpreter's final flush
        return EXIT_OK
    # a failure while computing: one line, non-zero (naming a full disk where an output goes)
    full = _full_outputs(err, command, after)
    print(f"dprisk {requested}: failed: {full}{type(err).__name__}: {err}", file=sys.stderr)
    return EXIT_FAILURE


#: The options naming a path a command writes (an output's file system may be full).
OUTPUT_OPTIONS = ("--out", "--save-draws", "--plots", "--plot")
#: Free bytes at or below which a failed command's output file system is reported full: a
#: small netCDF file or figure needs more (HDF5 and the temporary's create fail there with
#: ``NetCDF: HDF error`` or ``EACCES``, not ``ENOSPC``: measured at 12 and 16 KiB free).
FULL_DISK_BYTES = 1 << 20


def _free_bytes(path: str) -> int | None:
    """Bytes free to this user (``f_bavail * f_frsize``) on the file system of ``path``.

    The nearest existing ancestor of ``path`` is asked (the output may not exist); None when
    none can be.
    """
    where = os.path.abspath(path)
    while True:
        try:
            info = os.statvfs(where)
        except FileNotFoundError:
            parent = os.path.dirname(where)
            if parent == where:
                return None
            where = parent
        except (OSError, ValueError):
            return None
        else:
            return info.f_bavail * info.f_frsize


def _full_outputs(err: BaseException, command, words: list[str]) -> str:
    """``"--out 'X': the disk is full (N bytes free); "`` for each output on a full disk.

    A failure is reported as a full disk for each output option among :data:`OUTPUT_OPTIONS`
    typed in ``words`` whose file system has at most :data:`FULL_DISK_BYTES` free, or (the
    ``ENOSPC``/``EDQUOT`` of ``err`` or of its causes) any free space at all. Empty when
    none is: the failure's own message then stands alone.
    """
    if command is None:
        return ""
    no_space = False
    cause = err
    while cause is not None and not no_space:
        no_space = getattr(cause, "errno", None) in (errno.ENOSPC, errno.EDQUOT)
        cause = cause.__cause__ or cause.__context__
    options = {option for action in command._actions for option in action.option_strings
               if option in OUTPUT_OPTIONS}
    full = []
    for option in sorted(options):
        for value in _typed_values(words, option):
            free = _free_bytes(value)
            if free is not None and (no_space or free <= FULL_DISK_BYTES):
                full.append(f"{option} {value!r}: the disk is full ({free} bytes free); ")
    return "".join(full)

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
