"""Generated probes (hypothesis) of ``dprisk product`` and ``dprisk population synth | measure |
risk`` in the default run (issue 32 part 5).

Each example draws a command line: every option present or absent, each value either valid
(from the option's range, kept small so that an answer takes a fraction of a second) or
hostile (malformed numbers, NaN/inf, out of range, unicode, missing or unreadable files). The
command runs in-process in a fresh directory and must keep the command-line contract:

* exit 0: nothing on stderr, one JSON object of finite numbers with its probabilities in
  [0, 1] (:func:`cli_helpers.payload_problems`); or
* exit 2: nothing on stdout, one stderr line naming an option of the subcommand as typed
  (``--x``), no traceback, and nothing written (the directory as it was).

The examples are deterministic (``derandomize``: the same command lines on every run, so a
failure reproduces) and few (:data:`EXAMPLES` per command): the tables of
``test_generated_inputs*.py`` probe one option at a time; these mix them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import payload_problems, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

#: Examples per command (each a fraction of a second in-process, after the first imports;
#: population risk 0.3-2 s, the first with a --scheduler imports dask.distributed).
EXAMPLES = {"product": 12, "synth": 6, "measure": 6, "risk": 6}
PROBE = settings(deadline=None, database=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])

HOSTILE_NUMBER = ["", "abc", "nan", "inf", "-inf", "-1", "0", "1e400", "1e-320", "5e-324",
                  "0x10", "1/0", "٣", "1.5", " ", "9007199254740993"]
HOSTILE_PATH = ["", "missing.parquet", "notes.txt", "dir", "/dev/null", "/dev/zero",
                "bad.csv", "empty.csv", "\u202e.parquet", "x" * 300]


@st.composite
def command(draw, valid: dict, hostile: dict, required=()):
    """Words of a command line: a valid one, then at most one change.

    Every option of ``valid`` (a strategy of valid values each) is present if ``required``,
    else present or absent; then, in half the examples, one option takes a value of
    ``hostile`` (a list per option) or, in a quarter, a required option is dropped.
    """
    chosen = {}
    for option, values in valid.items():
        if option in required or draw(st.booleans()):
            chosen[option] = draw(values)
    change = draw(st.sampled_from(["none", "hostile", "hostile", "drop"]))
    if change == "hostile":
        option = draw(st.sampled_from(sorted(hostile)))
        chosen[option] = draw(st.sampled_from(hostile[option]))
    elif change == "drop" and required:
        chosen.pop(draw(st.sampled_from(sorted(required))), None)
    return [word for option, value in chosen.items() for word in (option, value)]


def _listing(root: Path) -> dict:
    return {str(path.relative_to(root)): (path.stat().st_size if path.is_file() else None)
            for path in sorted(root.rglob("*"))}


def _strict(token):
    raise ValueError(f"non-strict JSON token {token}")


def _check(argv: list[str], workdir: Path, capsys, options: set[str]) -> dict | None:
    """Run ``argv`` in ``workdir``; assert the contract; the payload on exit 0, else None."""
    before = _listing(workdir)
    status, out, err = run_cli([*argv, "--json"], capsys)
    assert status in (0, 2), (argv, status, err[-800:])
    assert "Traceback" not in err, (argv, err[-800:])
    if status == 2:
        lines = err.splitlines()
        assert out == "" and len(lines) == 1, (argv, out[:200], err)
        named = set(re.findall(r"--[a-z][a-z0-9-]*", lines[0]))
        assert named & options, (argv, lines[0])
        assert _listing(workdir) == before, (argv, "written on refusal")
        return None
    assert err == "", (argv, err)
    payload = json.loads(out, parse_constant=_strict)
    assert payload_problems(payload) == [], (argv, payload_problems(payload))
    return payload


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A directory with the user's files of the path probes; the examples run inside it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("the user's notes")
    (tmp_path / "dir").mkdir()
    (tmp_path / "bad.csv").write_text("geoid,hhgq\n1,2,3\nx\n")
    (tmp_path / "empty.csv").write_text("")
    return tmp_path


# ----------------------------------------------------------------------------------- product
RHO = st.one_of(st.sampled_from(["0.5", "2", "1e3", "1/4", "census:block", "census:tract"]),
                st.floats(0.2, 50.0).map(repr))
HOSTILE_RHO = ["census:nope", "1e-20", "1e101", *HOSTILE_NUMBER]
PRODUCT_VALID = {
    "--rho1": RHO, "--rho2": RHO,
    "--others": st.lists(st.integers(0, 30), min_size=1, max_size=2).map(
        lambda values: ",".join(map(str, values))),
    "--m": st.integers(0, 30).map(str),
    "--p": st.one_of(st.floats(0.0, 1.0, exclude_min=True, exclude_max=True).map(repr),
                     st.just("1/864")),
    "--invariant": st.sampled_from(["none", "block-group"]),
    "--method": st.sampled_from(["exact", "mc"]),
}
PRODUCT_HOSTILE = {
    "--rho1": HOSTILE_RHO, "--rho2": HOSTILE_RHO,
    "--others": ["", ",", "3,", "3,-1", "1e20", "3;4", "٣,٤", ",".join(["1"] * 60)],
    "--m": HOSTILE_NUMBER, "--p": ["1", *HOSTILE_NUMBER],
    "--invariant": ["state", "", "NONE"], "--method": ["MC", "gibbs", ""],
    "--block-group-total": ["3", "4", *HOSTILE_NUMBER], "--datasets": ["1", *HOSTILE_NUMBER],
    "--seed": HOSTILE_NUMBER,
}
PRODUCT_OPTIONS = {*PRODUCT_VALID, *PRODUCT_HOSTILE}


@settings(PROBE, max_examples=EXAMPLES["product"])
@given(words=command(PRODUCT_VALID, PRODUCT_HOSTILE, {"--rho1", "--rho2", "--others"}),
       datasets=st.integers(2, 40), seed=st.integers(0, 2**32 - 1))
def test_product_probe(words, datasets, seed, workdir, capsys):
    if "mc" in words:  # the Monte Carlo method with its (valid) size and seed
        words = [*words, "--datasets", str(datasets), "--seed", str(seed)]
    payload = _check(["product", *words], workdir, capsys, PRODUCT_OPTIONS)
    if payload is not None:
        assert {"marginal_posterior", "p_correct", "accuracy", "noisy_accuracy"} <= set(payload)


# -------------------------------------------------------------------------------- population
SYNTH_VALID = {"--persons": st.integers(1, 400).map(str), "--out": st.just("new"),
               "--seed": st.integers(0, 2**32 - 1).map(str),
               "--state": st.sampled_from(["01", "06", "72"])}
SYNTH_HOSTILE = {"--persons": ["10000000000000", *HOSTILE_NUMBER],
                 "--out": ["new/deep", *HOSTILE_PATH], "--seed": HOSTILE_NUMBER,
                 "--state": ["1", "001", "AL", "", "٠١", "\u202e"]}


@settings(PROBE, max_examples=EXAMPLES["synth"])
@given(words=command(SYNTH_VALID, SYNTH_HOSTILE, {"--persons", "--out"}))
def test_population_synth_probe(words, workdir, capsys):
    payload = _check(["population", "synth", *words], workdir, capsys, {*SYNTH_HOSTILE})
    if payload is not None:
        assert Path(payload["out"]).is_file()
        assert payload["persons"] == int(words[words.index("--persons") + 1])


@pytest.fixture(scope="module")
def small_state(tmp_path_factory):
    """A synthetic state of 300 persons and its noisy block table (made by the commands)."""
    from dprisk.cli import main

    root = tmp_path_factory.mktemp("small_state")
    assert main(["population", "synth", "--persons", "300", "--seed", "3", "--out",
                 str(root / "synth"), "--json"]) == 0
    persons = root / "synth" / "persons.parquet"
    assert main(["population", "measure", "--persons", str(persons), "--seed", "4", "--out",
                 str(root / "table"), "--json"]) == 0
    return {"PERSONS": str(persons), "NOISY": str(root / "table" / "noisy.parquet")}


def _files(words: list[str], state: dict) -> list[str]:
    """``PERSONS`` and ``NOISY`` replaced by the small state's files."""
    return [state.get(word, word) for word in words]


MEASURE_VALID = {"--persons": st.just("PERSONS"), "--out": st.just("out"),
                 "--seed": st.integers(0, 2**32 - 1).map(str),
                 "--layout": st.sampled_from(["table", "nmf"])}
MEASURE_HOSTILE = {"--persons": ["NOISY", *HOSTILE_PATH], "--out": ["out/deep", *HOSTILE_PATH],
                   "--seed": HOSTILE_NUMBER, "--layout": ["NMF", "", "tables"]}


@settings(PROBE, max_examples=EXAMPLES["measure"])
@given(words=command(MEASURE_VALID, MEASURE_HOSTILE, {"--persons", "--out"}))
def test_population_measure_probe(words, small_state, workdir, capsys):
    payload = _check(["population", "measure", *_files(words, small_state)], workdir, capsys,
                     {*MEASURE_HOSTILE})
    if payload is not None:
        assert payload["persons"] == 300 and (workdir / "out").is_dir()


RISK_VALID = {"--persons": st.just("PERSONS"), "--noisy": st.just("NOISY"),
              "--adversary": st.sampled_from(["informed", "outsider"]),
              "--prior": st.sampled_from(["tract", "uniform"]),
              "--noise-variance": st.floats(0.5, 50.0).map(repr),
              # one partition (300 persons): more start a local Dask cluster (seconds)
              "--partition-persons": st.integers(300, 10**6).map(str)}
RISK_HOSTILE = {"--persons": ["NOISY", *HOSTILE_PATH], "--noisy": ["PERSONS", *HOSTILE_PATH],
                "--adversary": ["INFORMED", "", "both"],
                "--prior": ["notes.txt", "bad.csv", "missing.json", "", "dir", "x" * 300],
                "--noise-variance": HOSTILE_NUMBER, "--partition-persons": HOSTILE_NUMBER,
                "--state": ["01", "1", ""], "--nmf": ["dir", "missing", "notes.txt", "x" * 300],
                "--scheduler": ["", "tcp://127.0.0.1:1", "nonsense"]}


@settings(PROBE, max_examples=EXAMPLES["risk"])
@given(words=command(RISK_VALID, RISK_HOSTILE, {"--persons", "--noisy", "--adversary"}))
def test_population_risk_probe(words, small_state, workdir, capsys):
    """Without ``--out`` (the figures take seconds): answers on stdout only."""
    payload = _check(["population", "risk", *_files(words, small_state)], workdir, capsys,
                     {*RISK_HOSTILE})
    if payload is not None:
        assert payload["persons"] == 300


@pytest.mark.parametrize("command", [
    ["population", "synth", "--persons", "10"],
    ["population", "measure", "--persons", "PERSONS"],
    ["population", "risk", "--persons", "PERSONS", "--noisy", "NOISY", "--adversary",
     "informed"]])
def test_population_out_name_too_long(command, small_state, workdir, capsys):
    """Found by the probe: a 300-byte --out name ended in OSError (exit 1, 'File name too
    long') from the first look-up of the path; now refused naming --out (exit 2)."""
    _check([*_files(command, small_state), "--out", "x" * 300], workdir, capsys, {"--out"})
    status, _, err = run_cli([*_files(command, small_state), "--out", "x" * 300], capsys)
    assert status == 2 and "--out" in err and "too long" in err, err
