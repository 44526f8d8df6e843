"""Generated probes of ``dprisk summary`` and ``dprisk prior`` (issue 32 part 5), in-process.

Hypothesis draws whole command lines -- each option absent, valid or hostile (rho as any
float from 5e-324 to 1e308, printed in several ways, and strings such as ``nan``, ``census:``,
``1/0``, full-width digits; prior specifications of every form with good and bad numbers; output
paths that exist, are directories, are not UTF-8 or lie under a file) -- and each run must
keep the command-line contract: exit 0 with nothing on stderr (with ``--json``: one JSON
object of finite numbers, probabilities in [0, 1]), or exit 2 with nothing on stdout and one
stderr line naming one of the options given (as typed; a bad SPEC names ``prior``). Never a
traceback, exit 1, MemoryError or a message naming an API argument (``rhos``,
``method='contour'``).

Cheap by construction: the work limit is 2e8 steps (about a second) so that a valid but
costly rho is refused at once by the sizing step, and ``--plot`` is only drawn among paths
that are refused before any drawing (a written figure is tests/cli/test_prior.py's). The
examples are derandomised (the same on every run, as tests/properties' ``ci`` profile).
"""

from __future__ import annotations

import json
import os
import re

import pytest
from cli_helpers import payload_problems, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

#: Each probe: few examples, the same ones every run, no deadline (a shared machine).
PROBE_SETTINGS = settings(max_examples=25, derandomize=True, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture])
#: A refusal never starts with an API argument's name (``rhos: …``, ``rho1: …``) nor shows
#: these (an API's parameter, a constant's name).
API_START = re.compile(r"dprisk \w+: error: (rhos|rho1|rho2|rho|method|p|spec)\b")
API_NAMES = ("rhos", "method=", "MAX_ATOMS")
HOSTILE_NUMBERS = ["", " ", "nan", "inf", "-inf", "-1", "0", "-0", "1e400", "5e-324", "1/0",
                   "1/3", "abc", "0x10", "\uff10.\uff15", "0.5\u200b", "1e-320", "1e100",
                   "1e101", "census:block", "census:block-group", "census:", "census:nope",
                   "census:BLOCK", "--rho1"]


def _float_text(value: float, form: int) -> str:
    return (repr(value), f"{value:g}", f"{value:.3e}", f"{value:.17f}")[form]


RHO = st.one_of(
    st.builds(_float_text, st.floats(min_value=5e-324, max_value=1e308),
              st.integers(0, 3)),
    st.builds(_float_text, st.floats(min_value=1e-4, max_value=1e4), st.integers(0, 3)),
    st.sampled_from(HOSTILE_NUMBERS))


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A working directory with a user's file and a directory; the work limit about 1 s; a
    cache of the epsilons of its own (outside the directory: its listing is checked)."""
    (tmp_path / "user.png").write_text("the user's file")
    (tmp_path / "folder").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPRISK_WORK_LIMIT", "2e8")
    cache = tmp_path.parent / f"{tmp_path.name}-cache"  # epsilons computed, not read
    monkeypatch.setenv("DPRISK_CACHE_DIR", str(cache))
    return tmp_path


def _check(argv: list[str], given_options: list[str], capsys) -> int:
    """The contract (module docstring); returns the exit status."""
    status, out, err = run_cli(argv, capsys)
    assert status in (0, 2), (argv, status, err[-800:])
    assert "Traceback" not in err, err[-800:]
    if status == 2:
        lines = err.splitlines()
        assert out == "" and len(lines) == 1, (argv, out[:200], err)
        assert any(option in lines[0] for option in given_options), (argv, err)
        assert not API_START.match(lines[0]), (argv, err)
        assert not any(name in lines[0] for name in API_NAMES), (argv, err)
        return status
    assert err == "", (argv, err)
    if "--json" in argv:
        assert out.count("\n") == 1, out[:200]
        assert payload_problems(json.loads(out)) == [], argv
    return status


@PROBE_SETTINGS
@given(census=st.integers(0, 3).map(lambda k: k == 0),   # --census one time in four
       rho1=st.one_of(RHO, RHO, RHO, st.none()), rho2=st.none() | RHO, as_json=st.booleans())
def test_summary_probe(census, rho1, rho2, as_json, workspace, capsys):
    argv, given_options = ["summary"], []
    if census:
        argv.append("--census")
        given_options.append("--census")
    for option, value in (("--rho1", rho1), ("--rho2", rho2)):
        if value is not None:
            argv += [option, value]
            given_options.append(option)
    if as_json:
        argv.append("--json")
    status = _check(argv, given_options, capsys)
    if not given_options:  # ``dprisk summary`` alone: the 2020 allocation
        assert status == 0


COUNT = st.one_of(st.integers(-5, 10**6).map(str), st.sampled_from(
    ["", "1.5", "nan", "inf", "1e20", "9007199254740993", "\u0663", "-0", "0x3"]))
SPEC = st.one_of(
    st.just("improper"),
    st.builds("truncated:{}".format, COUNT),
    st.builds("point:{}".format, COUNT),
    st.sampled_from(["", "flat", "truncated", "point", "truncated:", "IMPROPER", "missing.py:P",
                     "user.png:PRIOR", "folder:PRIOR", "/dev/zero:PRIOR", ":PRIOR", "a:b:c"]))
#: ``--plot`` paths refused before any drawing: existing, a directory, under a file, not
#: UTF-8, unwritable, empty.
REFUSED_PLOTS = ["user.png", "folder", "user.png/x.png", os.fsdecode(b"\xff.png"), "/proc/x.png",
                 "", "/dev/null", "."]


@PROBE_SETTINGS
@given(spec=SPEC, plot=st.none() | st.sampled_from(REFUSED_PLOTS), as_json=st.booleans())
def test_prior_probe(spec, plot, as_json, workspace, capsys):
    argv, given_options = ["prior", spec], ["prior", "SPEC"]
    if plot is not None:
        argv += ["--plot", plot]
        given_options = ["--plot"] if spec in ("improper", "truncated:40") else [
            "--plot", "prior", "SPEC"]
    if as_json:
        argv.append("--json")
    status = _check(argv, given_options, capsys)
    if plot is not None:
        assert status == 2  # never drawn over the user's file, into /proc, ...
    assert (workspace / "user.png").read_text() == "the user's file"
    assert sorted(p.name for p in workspace.iterdir()) == ["folder", "user.png"]
