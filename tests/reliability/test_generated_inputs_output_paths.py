"""Generated table for the commands of the latest wave: ``explore``, ``prior``, ``--save-draws``,
``--plots`` and ``posterior --tune`` (``product`` has its own table).

As in ``test_generated_inputs_files.py``: one valid base command line per command, one option at
a time replaced by a hostile value -- malformed numbers, NaN/inf, huge values, unicode, control
characters, and paths: missing, a directory, a symlink (to a file, to a directory, dangling,
to ``/dev/zero``), ``/dev/zero`` and ``/dev/null``, under an unwritable directory, an existing
user file. Each case runs in-process with and without ``--json`` and must keep the
command-line contract (:func:`cli_helpers.check_contract`): exit 0 or 2, never 1, no
traceback; status 2: one stderr line naming the option (as spelled), nothing on stdout.
Afterwards every file of the user's is unchanged and nothing else was left beside them except
a requested output.

``explore`` serves until stopped: only its argument checks are probed. Its ``serve`` is
replaced by one that returns at once, and the probes of ``--host`` use a port held by the test
(a host that can be listened on is then refused as "in use").

``N_CASES`` is the number of command lines run.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from cli_helpers import assert_cli_contract

#: Files of "the user's" in the working directory; checked byte for byte after every case.
USER_FILES = {"notes.txt": "the user's notes", "plot.png": "not really a png",
              "old.nc": "the user's draws", "prior_ok.py": (
                  "from dprisk.models.priors.library import TruncatedUniform\n"
                  "PRIOR = TruncatedUniform(40)\n"),
              "prior_bad.py": "this is not python(\n", "prior_raises.py": "raise SystemExit(3)\n",
              "prior_binary.py": b"\xff\xfe\x00\x01" * 64, "full/keep.txt": "keep"}
#: Paths made by :func:`workspace` besides the files: directories and symlinks.
LINKS = {"link_prior.py": "prior_ok.py", "zero.py": "/dev/zero", "dangling.py": "nowhere.py",
         "link_dir": "full", "zero_link.nc": "/dev/zero", "link.png": "plot.png"}
UNICODE = ["é", "\u202e", "日本", "\U0001F600", "a\tb", " "]
NUMBER = ["", "abc", "nan", "inf", "-inf", "-1", "0", "1e400", "1e20", "9007199254740993",
          "1.5", "0x10", "1/2", "６"]
PATHS_DIR = ["full", "link_dir", "missing/deep/dir", "plot.png", "notes.txt", "/dev/zero",
             "/dev/null", "/proc/nope", "locked/sub", "dangling.py", "\u202e", "", ".", "..",
             "x" * 300]
PATHS_NC = ["old.nc", "new.nc", "full", "zero_link.nc", "/dev/zero", "/dev/null", "x.NC",
            "locked/d.nc", "notes.txt", "\u202e.nc", "", ".nc",
            ("x" * 300) + ".nc", "link_dir/d.nc"]
PATHS_PNG = ["new.png", "plot.png", "link.png", "full", "full/keep.txt", "/dev/zero",
             "/dev/null", "locked/p.png", "missing/deep/p.png", "é.png", "", ".png",
             ("x" * 300) + ".png", "x.PNG", "link_dir"]
SPECS = ["improper", "truncated:", "truncated:-1", "truncated:1e400", "truncated:nan",
         "truncated:99999999999999999999", "point:", "point:-1", "point:inf", "weird", "",
         "prior_ok.py:PRIOR", "prior_ok.py:NOPE", "prior_ok.py:1x", "prior_bad.py:PRIOR",
         "prior_raises.py:PRIOR", "prior_binary.py:PRIOR", "link_prior.py:PRIOR",
         "zero.py:PRIOR", "dangling.py:PRIOR", "full:PRIOR", "missing.py:PRIOR",
         "/dev/zero:PRIOR", "notes.txt:PRIOR", *UNICODE, "é.py:PRIOR", "prior_ok.py:"]

POST_2 = ["posterior", "--rho1", "0.5", "--rho2", "0.5", "--d", "3", "--x1-star", "1",
          "--x2-star", "5", "--y1-star", "4", "--method", "gibbs", "--draws", "20", "--chains",
          "1", "--seed", "1"]
POST_2_PYMC = [*POST_2[:13], "--method", "pymc", "--draws", "20", "--chains", "1", "--seed",
               "1"]
#: Values of NUMBER that are valid tunes (``６`` is 6): they would sample; run by
#: tests/cli/test_posterior_tune.py (tune 0) instead.
TUNE_VALID = {"0", "６"}
#: name -> (valid base argv, {option: values}); values of explore are checked only (no server).
BASES = {
    "explore": (["explore", "--no-browser", "--port", "PORT"], {
        "port": [*NUMBER, "65536", "70000", *UNICODE],
        "host": ["", " ", *UNICODE, "x" * 300, "a\x00b", "256.1.1.1", "-1", "nan",
                 "bogus.invalid", "::1x", "[::1]", "127.0.0.1"]}),
    "prior": (["prior", "improper"], {"SPEC": SPECS, "plot": PATHS_PNG}),
    "posterior --save-draws": ([*POST_2, "--save-draws", "new.nc"], {"save-draws": PATHS_NC}),
    "posterior --plots": ([*POST_2, "--plots", "plots"], {"plots": PATHS_DIR}),
    "posterior --tune": (POST_2_PYMC, {"tune": [v for v in NUMBER if v not in TUNE_VALID]}),
}
#: Options whose valid values write something (their cases run once: the target then exists).
WRITES = {"save-draws", "plots", "plot"}
#: The values of those that are written (sampling and drawing take seconds: run by
#: ``make bench``; the default run keeps the refusals, and tests/cli covers a written one).
WRITTEN = {("save-draws", "new.nc"), ("plots", "\u202e"), ("plots", "missing/deep/dir"),
           ("plots", "locked/sub"), ("plot", "new.png"), ("plot", "missing/deep/p.png"),
           ("plot", "x.PNG"), ("plot", "locked/p.png"), ("plot", "é.png"),
           ("save-draws", "locked/d.nc")}  # root writes into a read-only directory


def _cases():
    for name, (base, options) in BASES.items():
        for option, values in options.items():
            for value in values:
                argv = list(base)
                if option == "SPEC":
                    argv[1] = value
                else:
                    flag = f"--{option}"
                    if flag in argv:
                        argv[argv.index(flag) + 1] = value
                    else:
                        argv += [flag, value]
                yield f"{name} {option} {value!r}"[:120], (option, argv)


CASES = dict(_cases())
N_CASES = sum(1 if option in WRITES or argv[0] == "explore" else 2
              for option, argv in CASES.values())


def _make(folder: Path) -> None:
    for name, content in USER_FILES.items():
        path = folder / name
        path.parent.mkdir(exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, "utf-8")
    for name, target in LINKS.items():
        (folder / name).symlink_to(target)
    (folder / "locked").mkdir()
    (folder / "locked").chmod(0o555)


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() and not p.is_symlink()
                                         else os.readlink(p) if p.is_symlink() else None)
            for p in folder.rglob("*")}


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A working directory holding the user's files; afterwards they are checked unchanged."""
    _make(tmp_path)
    monkeypatch.chdir(tmp_path)
    before = _snapshot(tmp_path)
    yield tmp_path
    (tmp_path / "locked").chmod(0o755)
    after = _snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before  # nothing changed/lost
    added = set(after) - set(before)
    if os.geteuid() == 0:  # root writes into the read-only directory all the same
        added = {k for k in added if not k.startswith("locked")}
    # only requested outputs (a new .nc, a .png, a plots directory and its two images)
    assert all(Path(k).suffix.lower() in (".nc", ".png") or Path(k).name in ("plots",) or
               k.startswith(("missing", "é", "x", "\u202e", "日本", "\U0001F600", "a\tb", " "))
               for k in added), added
    assert not [k for k in added if Path(k).name.startswith(".")], added  # no temporaries


@pytest.fixture
def held_port():
    """A port this test listens on: explore's check must refuse it rather than serve."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.fixture(autouse=True)
def no_server(monkeypatch):
    """``explore`` never starts serving in these probes (a valid port, e.g. ``６`` = 6, would)."""
    import dprisk.explore.app as app

    monkeypatch.setattr(app, "serve", lambda **kwargs: None)  # checks passed: would serve


@pytest.mark.parametrize("case", [
    pytest.param(case, marks=pytest.mark.slow) if (option, argv[-1]) in WRITTEN else case
    for case, (option, argv) in CASES.items()])
def test_generated_input_of_the_new_commands(case, workspace, held_port, capsys):
    option, argv = CASES[case]
    argv = [str(held_port) if word == "PORT" else word for word in argv]
    if argv[0] == "explore":  # no --json
        modes = [False]
    else:
        modes = [True] if option in WRITES else [False, True]
    for as_json in modes:
        named = ("prior", "SPEC") if option == "SPEC" else (f"--{option}",)
        assert_cli_contract(argv, as_json, capsys, names=named)
