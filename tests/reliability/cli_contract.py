"""The contract every generated command line must keep (shared by the generated-input tables).

Exit status 0 or 2; no traceback; on refusal nothing on stdout and one stderr line; on
success nothing on stderr and, with ``--json``, one JSON object whose numbers are finite,
whose probabilities lie in [0, 1] and whose X2 posteriors sum to 1. The tables' command lines
come from :func:`generated_cases`.
"""

from __future__ import annotations

import json
import math

from tests.cli_helpers import run_cli


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


PROBABILITY_KEYS = {"posterior", "marginal_posterior", "p_correct", "p_correct_no_hierarchy"}


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


def assert_cli_contract(argv: list[str], as_json: bool, capsys) -> None:
    """Run ``dprisk argv`` (plus ``--json``) in-process and assert the contract above."""
    status, out, err = run_cli(argv + (["--json"] if as_json else []), capsys)
    assert status in (0, 2), (status, err)
    assert "Traceback" not in err
    if status == 2:
        assert out == "" and len(err.splitlines()) == 1, (out[:200], err)
        return
    assert err == "", err
    if as_json:
        assert out.count("\n") == 1
        assert payload_problems(json.loads(out)) == []
