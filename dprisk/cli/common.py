"""What every subcommand shares: argument types, option checks, seeds and printed output.

The option checks make sure nothing on a command line is silently ignored. Options that
apply only to some computations are declared with ``default=None`` so that "given" can be
told from "not given"; each subcommand describes its computations as :class:`Form` objects,
:func:`check_form` refuses an option given to a form it does not belong to (one line naming
the option and the form it belongs to), and only then :func:`apply_defaults` fills in the
real defaults.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from dprisk.cli.commands import SUBCOMMAND_HELP  # the registry, for the subcommands' help
from dprisk.cli.parsers import Parser, TopParser
from dprisk.cli.stopping import (  # re-exported: the stop signals of every subcommand
    INTERRUPT_HINT,
    Interrupted,
    handle_stop_signals,
    raise_if_interrupted,
    report_interrupted,
)
from dprisk.runtime.ascii_numbers import parse_integer, parse_number

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILURE",
    "EXIT_OK",
    "INTERRUPT_HINT",
    "SEED_HELP",
    "SUBCOMMAND_HELP",
    "SWITCH",
    "WORK_HELP",
    "Form",
    "Interrupted",
    "Parser",
    "TopParser",
    "add_json",
    "add_model",
    "add_options",
    "add_scenario",
    "add_subcommand",
    "add_two_level",
    "apply_defaults",
    "check_form",
    "check_writable_dir",
    "choose_form",
    "describe",
    "draw_seed",
    "elapsed_progress",
    "emit",
    "flag",
    "fmt",
    "given",
    "handle_stop_signals",
    "integer",
    "naming_option",
    "naming_out",
    "number",
    "payload_lines",
    "raise_if_interrupted",
    "report_interrupted",
    "require",
    "run_form",
    "sampling_seed",
    "scenario_rhos",
    "seed_line",
    "show_progress",
    "with_default",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
#: Help of the options that set how long a run takes (draws, chains, datasets, grids).
WORK_HELP = ("datasets x (draws + 1000) + (d - 1) x (12 datasets + 20000) steps per Monte Carlo "
             "study, at most DPRISK_WORK_LIMIT = 1e12 steps by default")
#: Help text of every ``--seed`` option.
SEED_HELP = "random seed, an integer >= 0 (default: a random seed, reported)"


# --------------------------------------------------------------------------- argument types
def number(text: str) -> float:
    """Parse a float or a fraction such as ``1/864``, written in ASCII.

    :func:`dprisk.runtime.ascii_numbers.parse_number` with fractions.
    """
    try:
        return parse_number(text, fractions=True)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None


def integer(text: str) -> int:
    """Parse an integer written in ASCII; integer-valued decimals such as ``3.0`` are accepted.

    ASCII only (:func:`dprisk.runtime.ascii_numbers.parse_integer`).
    """
    try:
        return parse_integer(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None


def with_default(text: str, default) -> str:
    """Help text that states the default applied when the option is not given."""
    return f"{text} (default: {default})"


def add_json(sub: argparse.ArgumentParser) -> None:
    """The ``--json`` flag of every subcommand."""
    sub.add_argument("--json", action="store_true", help="print one JSON object on stdout")


#: ``kind`` of an on/off option in :func:`add_options`: ``True`` when given, else ``None``.
SWITCH = "switch"


def add_options(sub, options: dict[str, tuple]) -> None:
    """Add each option ``FLAG: (kind, help)`` of a table, in order, unset (``None``) by default.

    ``kind`` converts the option's text (:func:`number`, :func:`integer` or a parser of the
    command; ``None`` keeps the text) or is :data:`SWITCH`, an on/off option. Every option
    defaults to ``None`` so that the form checks see which were given (:func:`given`) before
    :func:`apply_defaults` fills in the rest.
    """
    for flag_, (kind, text) in options.items():
        if kind == SWITCH:
            sub.add_argument(flag_, action="store_const", const=True, default=None, help=text)
        else:
            sub.add_argument(flag_, type=kind, default=None, help=text)


def add_subcommand(subs, name: str, func, flags: dict[str, str] | None = None
                   ) -> argparse.ArgumentParser:
    """Register subcommand ``name``, run by ``func``, with its one-line help and its flags.

    The help is ``SUBCOMMAND_HELP[name]``; ``flags`` maps each on/off option
    (``action="store_true"``) to its help, added first and in order. The caller adds the
    other options, then :func:`add_json`.
    """
    sub = subs.add_parser(name, help=SUBCOMMAND_HELP[name])
    for flag_, text in (flags or {}).items():
        sub.add_argument(flag_, action="store_true", help=text)
    sub.set_defaults(func=func)
    return sub


#: The smallest single-level ``--rho1`` whose exact sums over releases (``marginal``: Bayes
#: rule and worst case) fit the window cap, to three digits rounded up (so that it is
#: accepted itself): ``rounded_up(smallest_rho((MAX_ATOMS - 1) // 2, EXACT_TAIL))`` of
#: :mod:`dprisk.inference.privacy.decision_sizing` (a test keeps the two equal).
RHO1_SUMS_MIN = "1.42e-11"


def add_scenario(sub: argparse.ArgumentParser, *, p: float, known: int,
                 sums_over_releases: bool = False) -> None:
    """``--rho1``, ``--p`` and ``--known`` (every form of posterior and marginal).

    ``sums_over_releases``: the command sums over releases (``marginal``), so ``--rho1``'s help
    states the smallest rho those sums take (:data:`RHO1_SUMS_MIN`).
    """
    sub.add_argument("--rho1", default=None,
                     help="block-level rho, 0 < rho <= 1e100, or census:LEVEL" + (
                         f" (the exact sums over releases need rho >= {RHO1_SUMS_MIN})"
                         if sums_over_releases else ""))
    sub.add_argument("--p", type=number, default=None, help=with_default(
        "adversary's prior P[X1 = m+1], 0 < p < 1, p >= 1e-300 with --rho2 or --rhos and "
        "for every form of posterior (fractions like 1/864 accepted)", p))
    sub.add_argument("--known", type=integer, default=None, help=with_default(
        "m, the adversary's known count of the others in the block (integer, "
        "0 <= m <= 2**53; counts beyond 2**53 are refused)", known))


def add_two_level(group) -> None:
    """``--rho2`` and ``--d``, the options that select and describe the two-level form."""
    group.add_argument("--rho2", default=None,
                       help="block-group rho, 0 < rho <= 1e100, or census:LEVEL; selects this "
                       "form (exact, Gibbs and mc need rho2 + rho1/d <= 1e6; above, exit "
                       "status 2)")
    group.add_argument("--d", type=integer, default=None,
                       help="number of other blocks in the block group (>= 1)")


def add_model(sub, *, methods: str, prior: str, draws: int, sampled: str) -> None:
    """``--prior``, ``--method``, ``--draws`` and ``--seed`` of the forms that take them."""
    sub.add_argument("--prior", default=None, help=with_default(
        "X2 prior SPEC: improper | truncated:U | point:K | PATH.py:NAME", prior))
    sub.add_argument("--method", default=None, help=with_default(methods, "exact"))
    sub.add_argument("--draws", type=integer, default=None,
                     help=with_default(f"draws per chain ({sampled} only; chains x draws "
                                       "within the memory and work limits, DPRISK_MEMORY_LIMIT "
                                       "and DPRISK_WORK_LIMIT)", draws))
    sub.add_argument("--seed", type=integer, default=None, help=f"{SEED_HELP}; {sampled} only")


# --------------------------------------------------------------------------- option checks
def flag(dest: str) -> str:
    """The command-line spelling of an option: ``x1_star`` -> ``--x1-star``."""
    return "--" + dest.replace("_", "-")


def given(args, dest: str) -> bool:
    """Whether option ``dest`` was given (options that may not apply default to None)."""
    return getattr(args, dest, None) is not None


@dataclass(frozen=True)
class Form:
    """One computation a subcommand can run, and the options that apply to it.

    Attributes
    ----------
    name : str
        Shown in messages, e.g. ``"two-level"``.
    selector : str
        How the form is chosen, e.g. ``"--rho2 given"``.
    selected_by : str, optional
        The option whose presence chooses this form (None: the form used otherwise).
    options : frozenset of str
        Destinations of the options that apply (``method`` included when the form takes one).
    usage : str
        The form's options as shown in the help, e.g. ``"--rho1 --x1-star [--p]"``.
    methods : tuple of str
        Accepted ``--method`` values; the first is the default.
    sampling : tuple of str
        The methods that draw random numbers.
    sampled : frozenset of str
        Options that apply only with a method of ``sampling`` (``draws``, ``seed``, ...).
    method_options : tuple of (str, tuple of str)
        Options that apply only with some methods, as ``(option, methods)`` pairs (e.g.
        ``("tune", ("pymc",))``: PyMC's tuning steps).
    """

    name: str
    selector: str
    options: frozenset
    usage: str = ""
    selected_by: str | None = None
    methods: tuple = ("exact",)
    sampling: tuple = ()
    sampled: frozenset = field(default_factory=frozenset)
    method_options: tuple = ()

    @property
    def taken(self) -> frozenset:
        """Every option that applies to this form (with some method at least)."""
        return self.options | self.sampled | {option for option, _ in self.method_options}

    def method(self, args) -> str:
        """The requested method (the form's default when ``--method`` is not given)."""
        return args.method if given(args, "method") else self.methods[0]

    def samples(self, args) -> bool:
        """Whether the requested method draws random numbers."""
        return self.method(args) in self.sampling


def describe(forms: list[Form], note: str) -> str:
    """A subcommand's help description: each form with its usage, then ``note``."""
    shown = "; ".join(f"{f.name} ({f.selector}): {f.usage}" for f in forms)
    return (f"Forms: {shown}. {note.strip()} An option that does not apply to the chosen form is "
            "refused (exit status 2).")


def _owners(dest: str, command: str, forms: list[Form]) -> str:
    names = [f"the {f.name} form ({f.selector})" for f in forms if dest in f.taken]
    if not names:
        return f"no form of dprisk {command} takes it"
    return "it belongs to " + " and ".join(names)


def check_form(args, command: str, form: Form, forms: list[Form], *,
               never: tuple = ()) -> None:
    """Refuse every option given that does not apply to ``form``.

    The options checked are those of any of ``forms`` and those of ``never`` (accepted by
    the parser, applying to no form), in the order of the parser.

    Raises
    ------
    ValueError
        One line naming the first such option, the form it was given to and the form(s) it
        belongs to; or a ``--method`` the form does not accept; or an option of some methods
        only (``method_options``) given with another method, naming the methods it belongs to.
    """
    known = set(never).union(*(f.taken for f in forms))
    checked = [dest for dest in vars(args) if dest in known]
    where = (f"the {form.name} form of dprisk {command} ({form.selector})" if len(forms) > 1
             else f"dprisk {command}")
    for dest in checked:
        if not given(args, dest) or dest in form.taken:
            continue
        raise ValueError(f"{flag(dest)} does not apply to {where}; "
                         f"{_owners(dest, command, forms)}")
    method = form.method(args)
    if method not in form.methods:
        others = [f"the {f.name} form" for f in forms if method in f.methods]
        belongs = f"; {method} belongs to {' and '.join(others)}" if others else ""
        allowed = (f"one of {', '.join(form.methods)}" if len(form.methods) > 1
                   else form.methods[0])
        raise ValueError(f"--method must be {allowed} for {where}, got {method!r}{belongs}")
    for dest, methods in form.method_options:
        if given(args, dest) and method not in methods:
            raise ValueError(f"{flag(dest)} does not apply to --method {method} of {where}; "
                             f"it belongs to --method {'|'.join(methods)}")
    if form.samples(args):
        return
    for dest in checked:
        if given(args, dest) and dest in form.sampled:
            raise ValueError(
                f"{flag(dest)} does not apply to --method {method} of {where}: nothing is "
                f"sampled; it belongs to --method {'|'.join(form.sampling)}"
            )


def sampling_seed(args, form: Form) -> tuple[int | None, bool]:
    """``(seed, drawn)``: ``--seed``, a drawn seed when not given, or None if nothing is sampled."""
    if not form.samples(args):
        return None, False
    if given(args, "seed"):
        return args.seed, False
    return draw_seed(), True


def choose_form(args, forms: list[Form]) -> Form:
    """The first form whose ``selected_by`` option was given, else the default form.

    Raises
    ------
    ValueError
        No form's option was given and no form is the default: naming the options that
        choose one.
    """
    for form in forms:
        if form.selected_by is not None and given(args, form.selected_by):
            return form
    for form in forms:
        if form.selected_by is None:
            return form
    choices = " or ".join(f"{flag(f.selected_by)} (the {f.name} form)" for f in forms)
    raise ValueError(f"one of {choices} is required")


def run_form(args, command: str, forms: list[Form], defaults: dict, computes: dict, *,
             never: tuple = ()) -> int:
    """Run the form the options choose: check, fill defaults, seed, compute, print.

    ``computes`` maps each form to ``compute(args, method, seed) -> (payload, lines)``;
    ``seed`` is None unless the method samples. A sampled answer gets the JSON key ``seed``
    and a summary line saying how the seed was chosen.
    """
    form = choose_form(args, forms)
    check_form(args, command, form, forms, never=never)
    apply_defaults(args, defaults)
    seed, drawn = sampling_seed(args, form)
    payload, lines = computes[form](args, form.method(args), seed)
    if seed is not None:
        payload["seed"] = seed
        lines.append(seed_line(seed, drawn))
    emit(args, payload, lines)
    return EXIT_OK


def scenario_rhos(args, form: str, **needed: str) -> list[float]:
    """Check that a form's options are given; return its rhos (``--rho1`` [, ``--rho2``])."""
    from dprisk.models.census.allocation import parse_rho

    require(args, form, **needed)
    return [parse_rho(getattr(args, name), name) for name in ("rho1", "rho2")
            if getattr(args, name) is not None]


def apply_defaults(args, defaults: dict) -> None:
    """Set every option of ``defaults`` that was not given to its default value."""
    for dest, value in defaults.items():
        if not given(args, dest):
            setattr(args, dest, value)


def require(args, form: str, **needed: str) -> None:
    """Raise ValueError unless every option a form needs was given."""
    for dest, description in needed.items():
        if getattr(args, dest) is None:
            raise ValueError(f"{flag(dest)} is required for the {form} form ({description})")


# --------------------------------------------------------------------------- seeds
def draw_seed() -> int:
    """A fresh seed in ``[0, 2**32)`` from the operating system's entropy."""
    from dprisk.models.mechanism.dg_sampling import resolve_random_seed

    return resolve_random_seed(None)


def seed_line(seed: int, drawn: bool, how: str = "from --seed") -> str:
    """The summary line that reports the seed of a random result (``how`` it was chosen)."""
    if drawn:
        how = f"drawn at random; --seed {seed} reproduces this run"
    return f"  {'seed':<24} {seed} ({how})"


def show_progress(args) -> bool:
    """Whether to draw a progress bar: stderr is a terminal, no ``--json``, no ``--quiet``."""
    if getattr(args, "json", False) or getattr(args, "quiet", False):
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


#: Seconds before :func:`elapsed_progress` shows its line (shorter runs show nothing).
PROGRESS_DELAY = 10.0


@contextlib.contextmanager
def elapsed_progress(args, what: str):
    """On a terminal, a line ``what: 0:12 elapsed`` for a computation that runs long.

    For computations with no natural steps to count (an exact grid sum in one compiled pass,
    a root search): the line appears after :data:`PROGRESS_DELAY` seconds and is refreshed
    every second by a daemon thread until the block ends (normally or by a stop signal, whose
    line then erases it). Nothing is drawn with ``--json`` or when stderr is not a terminal.
    """
    if not show_progress(args):
        yield
        return
    import threading

    from tqdm.auto import tqdm

    done = threading.Event()
    bar = tqdm(total=None, desc=what, delay=PROGRESS_DELAY, leave=False,
               bar_format="{desc}: {elapsed} elapsed |")

    def tick() -> None:
        waited = 0.0
        while not done.wait(1.0):
            waited += 1.0
            if waited >= PROGRESS_DELAY:
                bar.refresh()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        bar.close()


# --------------------------------------------------------------------------- output
def emit(args, payload: dict, lines: list[str]) -> None:
    """Print ``payload`` as one JSON object with ``--json``, else the readable ``lines``.

    Nothing is printed once a stop signal arrived (:func:`raise_if_interrupted`).
    """
    raise_if_interrupted()
    if args.json:  # strict JSON: an undefined number is None (null), never NaN or Infinity
        print(json.dumps(payload, allow_nan=False))
    else:
        print("\n".join(lines))


def fmt(value: float) -> str:
    """A number to 6 significant digits."""
    return f"{value:.6g}"


def _show(value) -> str:
    """Compact human rendering of a JSON value (nested dicts inline, floats to 6 digits)."""
    if isinstance(value, dict):
        items = list(value.items())
        shown = ", ".join(f"{k}: {_show(v)}" for k, v in items[:12])
        return "{" + shown + (", …" if len(items) > 12 else "") + "}"
    if isinstance(value, float):
        return fmt(value)
    return str(value)


def payload_lines(title: str, payload: dict) -> list[str]:
    """A title line and one line per payload entry (``seed`` is reported by seed_line)."""
    return [title] + [f"  {key:<24} {_show(value)}" for key, value in payload.items()
                      if key != "seed"]


@contextlib.contextmanager
def naming_out():
    """Turn a refused output path of the API (message naming ``out``) into one naming ``--out``."""
    from dprisk.runtime.output_files import OutputError

    try:
        yield
    except OutputError as err:
        message = str(err)
        raise ValueError(f"--{message}" if message.startswith("out") else message) from None


@contextlib.contextmanager
def naming_option(name: str, option: str):
    """Name the command-line ``option`` in an API refusal that names its parameter ``name``.

    ``"rho = … is too small …"`` becomes ``"--rho1: rho = … is too small …"``.
    """
    try:
        yield
    except ValueError as err:
        message = str(err)
        if message.startswith(f"{name} = "):
            raise ValueError(f"{option}: {message}") from None
        raise


def check_writable_dir(path: Path, option: str) -> None:
    """Raise ValueError unless ``path``'s nearest existing ancestor is a writable directory."""
    from dprisk.runtime.output_files import check_creatable

    check_creatable(path, option)
