"""The command-line tests' one helper module: run ``dprisk`` in-process, check its contract.

As xarray's ``tests/__init__.py``, the helpers every test of the command line shares; import
them as ``from cli_helpers import ...`` (``tests/`` is on the test path). The contract
(docs/cli.md) is checked by one function, :func:`check_contract`, on a finished run:

* exit status 0 or 2, never 1, and no traceback;
* status 2 (bad input): nothing on stdout, exactly one stderr line, naming the option as typed
  (one of ``names``, as a whole word), and nothing written: the tree under ``root`` is as it
  was (names, modes, contents, link targets);
* status 0: nothing on stderr and, with ``--json``, exactly one line holding one strict JSON
  object whose numbers are finite, whose probabilities lie in [0, 1] and whose X2 posteriors
  sum to 1.

:func:`run_json` runs a call that must succeed and returns its payload;
:func:`assert_refused` runs one that must be refused. The generated-input tables build their
command lines with :func:`generated_cases`.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat

from dprisk.cli import main

__all__ = [
    "PROBABILITY_KEYS",
    "assert_cli_contract",
    "assert_refused",
    "check_contract",
    "generated_cases",
    "generated_cases_with_flags",
    "names_option",
    "payload_problems",
    "record_calls",
    "run_cli",
    "run_json",
    "tree",
]

#: JSON keys whose values are probabilities (besides every ``x2_posterior`` entry).
PROBABILITY_KEYS = {"posterior", "marginal_posterior", "p_correct", "p_correct_no_hierarchy",
                    "accuracy", "noisy_accuracy"}


# --------------------------------------------------------------------------- running
def run_cli(argv, capsys):
    """Run ``dprisk`` in-process; return (exit status, stdout, stderr)."""
    try:
        status = main(list(argv))
    except SystemExit as exc:  # argparse errors
        status = exc.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def run_json(argv, capsys, *, keys=None) -> dict:
    """Run ``dprisk ARGV --json`` (``--json`` added when missing); return the payload.

    The run must keep the contract and succeed (exit 0, nothing on stderr, one JSON object).
    With ``keys``, the payload's keys must be exactly these.
    """
    argv = list(argv) if "--json" in argv else [*argv, "--json"]
    status, out, err = run_cli(argv, capsys)
    assert status == 0, err
    check_contract(status, out, err, as_json=True)
    payload = json.loads(out)
    if keys is not None:
        assert set(payload) == set(keys)
    return payload


def assert_refused(argv, parameter, capsys, *, root=None) -> str:
    """Bad input: exit status 2 and the refusal's contract (:func:`check_contract`).

    ``parameter`` (a string, or a tuple of which one must be named) is what the one stderr
    line names; with ``root``, nothing under it changed. Returns the stderr line.
    """
    before = None if root is None else tree(root)
    status, out, err = run_cli(argv, capsys)
    assert status == 2, (status, err)
    names = (parameter,) if isinstance(parameter, str) else tuple(parameter)
    check_contract(status, out, err, names=names, root=root, before=before)
    return err.strip()


def assert_cli_contract(argv, as_json: bool, capsys, *, names=(), root=None) -> int:
    """Run ``dprisk argv`` (plus ``--json``) in-process, check the contract; return the status.

    ``names``: a refusal must name one of them (none given: any option); ``root``: a refusal
    leaves the tree under it as it was.
    """
    before = None if root is None else tree(root)
    status, out, err = run_cli(list(argv) + (["--json"] if as_json else []), capsys)
    check_contract(status, out, err, as_json=as_json, names=names, root=root, before=before)
    return status


def record_calls(monkeypatch, module, name: str) -> list:
    """Spy on ``module.name``: each call still runs; ``(arguments, answer)`` is recorded.

    ``arguments`` is the call bound to the function's signature
    (:class:`inspect.BoundArguments`), so a test can compare what the command line passed
    with an API call's arguments, defaults applied, without computing the answer twice.
    Returns the list the calls are appended to.
    """
    import inspect

    function = getattr(module, name)
    signature = inspect.signature(function)
    calls = []

    def spy(*args, **kwargs):
        answer = function(*args, **kwargs)
        calls.append((signature.bind(*args, **kwargs), answer))
        return answer

    monkeypatch.setattr(module, name, spy)
    return calls


# --------------------------------------------------------------------------- the contract
def check_contract(status, out: str, err: str, *, as_json: bool = False, names=(),
                   root=None, before=None) -> None:
    """The command-line contract on one finished run (module docstring).

    Parameters
    ----------
    status, out, err
        The run's exit status, stdout and stderr.
    as_json : bool
        The run was given ``--json``: a success prints one strict JSON object.
    names : sequence of str
        A refusal's stderr line names one of these (as a whole word); empty: not checked.
    root, before
        A refusal leaves the tree under ``root`` equal to ``before`` (:func:`tree`).
    """
    assert status in (0, 2), (status, err)
    assert "Traceback" not in err, err
    if status == 2:
        assert out == "", out[:200]
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        if names:
            assert any(names_option(name, lines[0]) for name in names), (names, lines[0])
        if root is not None:
            assert tree(root) == before, "a refused run wrote or changed something"
        return
    assert err == "", err
    if as_json:
        assert out.count("\n") == 1, out[:200]
        assert payload_problems(json.loads(out, parse_constant=_strict)) == []


def names_option(name: str, message: str) -> bool:
    """Whether ``message`` names ``name`` as a word (``--d`` is not named by ``--datasets``,
    ``--x1`` not by ``--x1-star``)."""
    return re.search(rf"(?<!\w){re.escape(name)}(?![\w-])", message) is not None


def _strict(token):
    raise ValueError(f"non-strict JSON token {token}")


def payload_problems(payload, path="") -> list[str]:
    """Non-finite numbers, probabilities outside [0, 1] and X2 posteriors not summing to 1."""
    found = []
    if isinstance(payload, dict):
        for key, value in payload.items():
            found += payload_problems(value, f"{path}.{key}")
        if path.endswith("x2_posterior") and payload:
            total = sum(payload.values())
            if not 1 - 1e-9 <= total <= 1 + 1e-12:
                found.append(f"{path} sums to {total!r}")
    elif isinstance(payload, list):
        for i, value in enumerate(payload):
            found += payload_problems(value, f"{path}[{i}]")
    elif isinstance(payload, float):
        key = path.rsplit(".", 1)[-1]
        if not math.isfinite(payload):
            found.append(f"{path} = {payload!r}")
        elif (key in PROBABILITY_KEYS or ".x2_posterior." in path) and not 0 <= payload <= 1:
            found.append(f"{path} = {payload!r} is not a probability")
    return found


def tree(root) -> dict:
    """Every path under ``root``: its mode and its contents (a file) or target (a link).

    Walked with :func:`os.scandir` (directories entered, symbolic links to them not, as
    ``Path.rglob`` does), keyed by the path relative to ``root``: about a tenth of the CPU of
    ``rglob`` and ``relative_to`` per path, which some 1,500 refusal tests paid twice each.
    """
    found = {}

    def walk(folder: str, prefix: str) -> None:
        with os.scandir(folder) as entries:
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                name = prefix + entry.name
                if stat.S_ISLNK(info.st_mode):
                    content = os.readlink(entry.path)
                elif stat.S_ISREG(info.st_mode):
                    with open(entry.path, "rb") as file:
                        content = file.read()
                else:
                    content = None
                found[name] = (stat.S_IMODE(info.st_mode), content)
                if stat.S_ISDIR(info.st_mode):
                    walk(entry.path, name + os.sep)

    if os.path.isdir(root):  # none under a missing path or a file, as rglob finds
        walk(os.fspath(root), "")
    return found


# --------------------------------------------------------------------------- generated tables
def generated_cases(bases: dict) -> dict[str, list[str]]:
    """Every command line of a table ``{name: (base argv, {option: values})}``, by case name.

    Each base as it is, then the base with one option set to each of its values (replacing
    the base's value of that option, else appended); values ``None`` add the on/off flag alone.
    """
    return {name: argv for name, (argv, _flag) in generated_cases_with_flags(bases).items()}


def generated_cases_with_flags(bases: dict) -> dict[str, tuple[list[str], str | None]]:
    """:func:`generated_cases` with the option each case sets (``None`` for a base as it is)."""
    cases = {}
    for name, (base, options) in bases.items():
        cases[name] = (base, None)
        for option, values in options.items():
            flag = f"--{option}"
            if values is None:
                cases[f"{name} {flag}"] = ([*base, flag], flag)
                continue
            for value in values:
                argv = list(base)
                if flag in argv:
                    argv[argv.index(flag) + 1] = value
                else:
                    argv += [flag, value]
                cases[f"{name} {flag} {value!r}"] = (argv, flag)
    return cases
