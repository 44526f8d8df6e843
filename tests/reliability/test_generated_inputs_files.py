"""Generated table for the commands added after the first table: ``attribute`` (cell files,
the strategy design), ``--unknown-others N --q Q`` and the ``budget`` forms.

As in ``test_generated_inputs.py``, each base command line is valid and one option at a time
is replaced by a bad or extreme value; here the values include files: empty, malformed JSON,
binary, a directory, a missing path, a character device (``/dev/zero``, which never ends),
non-finite entries, wrong lengths, a prior that does not sum to 1. Each case runs in-process
with and without ``--json`` and must keep the command-line contract: exit 0 or 2 (never 1,
no traceback); status 2: one stderr line, stdout empty; status 0: stderr
empty and with ``--json`` exactly one JSON object whose numbers are finite. Huge sizes
(``--cells``, ``--releases``, ``--d``) must be refused up front by the memory or work limit.

``N_CASES`` is the number of command lines run (quoted in the README). Cases that take
seconds (two-level budget searches, ``--unknown-others 10000``) are left out.
"""

from __future__ import annotations

import pytest
from cli_helpers import assert_cli_contract, generated_cases

NUM = ["0", "-1", "nan", "inf", "-inf", "1e308", "1e-320", "abc", "", "1/3", "0x10", "5e-324",
       "1e100"]
INT = ["-1", "0", "1.5", "nan", "abc", "1e20", "9007199254740993", "100000000", "3.0", ""]
PROB = ["0", "1", "-0.1", "1.5", "nan", "inf", "1e-320", "1/3", "abc"]
#: name -> file content (str or bytes); "dir" is a directory, "missing" is not created.
FILES = {
    "empty.csv": "", "p2.csv": "0.5,0.5", "p3.csv": "0.2,0.3,0.5", "p3bad.csv": "0.2,0.3,0.6",
    "p3neg.csv": "-0.2,0.7,0.5", "p3nan.csv": "nan,0.5,0.5", "p3inf.csv": "inf,0,0",
    "p3zero.csv": "0,0,0", "p3.json": "[0.2,0.3,0.5]", "obj.json": '{"a":1}',
    "nested.json": "[[0.5],[0.5]]", "str.json": '["a","b"]', "bad.json": "[0.5,",
    "bool.json": "[true,false]", "null.json": "[null,1]", "huge.json": "1e400",
    "text.csv": "a,b,c", "bin.csv": b"\x00\xff\xfe\x01" * 100, "bom.csv": "\ufeff0.5,0.5",
    "sub1.csv": "0.9999999,0.0000001", "p1e.csv": "1e-320,1", "k3.csv": "3,4,5",
    "k3neg.csv": "-1,4,5", "k3frac.csv": "3.5,4,5", "k3huge.csv": "1e30,4,5",
    "k3big.csv": "9007199254740993,4,5", "r3.csv": "4,4,5", "r3huge.csv": "1e300,4,5",
    "r3neg.csv": "-100000000,4,5", "r2.csv": "4,4", "k1.csv": "3",
    "p2016.csv": "\n".join([repr(1 / 2016)] * 2016),
}
BAD_FILES = ["empty.csv", "p2.csv", "p3bad.csv", "p3neg.csv", "p3nan.csv", "p3inf.csv",
             "p3zero.csv", "p3.json", "obj.json", "nested.json", "str.json", "bad.json",
             "bool.json", "null.json", "huge.json", "text.csv", "bin.csv", "bom.csv", "dir",
             "missing.csv", "sub1.csv", "p1e.csv", "k3frac.csv", "k3huge.csv", "r3huge.csv",
             "/dev/null", "/dev/zero"]
STRATEGY = ["attribute", "--rho1", "0.5", "--cells", "2016", "--strategy", "census-2020",
            "--releases", "10", "--seed", "1"]

#: name -> (valid base argv, {option: values}); a value None means a flag without a value.
BASES = {
    "attribute design": (["attribute", "--rho1", "0.5", "--cells", "3"], {
        "rho1": [*NUM, "census:block"],
        "cells": [*INT, "1", "2", "1000000000", "100000000000"],
        "prior": BAD_FILES, "true-cell": [*INT, "3", "2"], "releases": ["10"], "seed": ["1"],
        "rho2": ["0.5"], "d": ["3"], "x2-prior": ["improper"],
        "strategy": ["nope", "census-2020", ""], "release": ["r3.csv"], "known": ["k3.csv"],
        "unknown-others": ["3"]}),
    "attribute strategy": (STRATEGY, {
        "rho1": NUM, "releases": [*INT, "1", "2", "1000000000000"],
        "seed": [*INT, "4294967296", "-5"], "cells": ["2015", "3"],
        "prior": ["p3.csv", "p2016.csv", "dir"], "true-cell": ["2016", "2015", "-1"],
        "rho2": NUM, "d": ["0", *INT]}),
    "attribute block group": ([*STRATEGY, "--rho2", "0.5", "--d", "3"], {
        "rho2": NUM, "d": [*INT, "1000000000"],
        "x2-prior": ["truncated:0", "truncated:-1", "point:nan", "weird", "truncated:1e20",
                     "point:99999999999"]}),
    "attribute release": (["attribute", "--rho1", "0.5", "--release", "r3.csv", "--known",
                           "k3.csv"], {
        "rho1": NUM, "release": [*BAD_FILES, "r2.csv", "r3neg.csv"],
        "known": [*BAD_FILES, "k3neg.csv", "k3big.csv", "k1.csv"],
        "prior": ["p2.csv", "p3bad.csv", "dir", "p3.csv"], "true-cell": ["3", "-1", "2"],
        "cells": ["3"], "releases": ["10"], "strategy": ["census-2020"]}),
    "posterior unknown others": (["posterior", "--rho1", "0.5", "--x1-star", "1",
                                  "--unknown-others", "3", "--q", "0.3"], {
        "unknown-others": [*INT, "10001", "1000000"], "q": PROB, "rho1": NUM,
        "x1-star": INT, "known": INT, "p": PROB, "rho2": ["0.5"]}),
    "marginal unknown others": (["marginal", "--rho1", "0.5", "--unknown-others", "3", "--q",
                                 "0.3"], {
        "unknown-others": [*INT, "10001"], "q": PROB, "rho1": NUM, "known": INT, "p": PROB,
        "rhos": ["0.5,0.5"], "method": ["mc"], "datasets": ["10"]}),
    "budget measure": (["budget", "--measure", "p-correct", "--target", "0.9"], {
        "measure": ["x", "", "tail"], "target": NUM,
        "p": ["0.5,", "nan", "0", "1", "1e-320", "1/3", "abc"], "known": INT,
        "tail-tolerance": ["0.1"], "max-ratio": ["3"], "max-posterior": ["0.5"], "d": ["3"],
        "x2": ["5"], "q": ["0.5"], "pure-dp": None}),
    "budget tail": (["budget", "--measure", "tail", "--tail-tolerance", "0.1", "--max-ratio",
                     "3", "--p", "0.1"], {
        "tail-tolerance": [*NUM, "1", "0.999999"], "max-ratio": [*NUM, "1", "1.0000001"],
        "max-posterior": PROB, "target": ["0.5"], "p": ["0.5", "0.0001", "1e-300", "0.1,0.2"],
        "known": INT}),
    "budget census": (["budget", "--measure", "marginal-risk", "--target", "1.5", "--census"], {
        "target": NUM, "measure": ["tail", "x"], "p": ["0.5,0.9", "1e-300"], "known": INT,
        "tail-tolerance": ["0.1"], "rho1": ["0.5"], "pure-dp": None, "q": ["0.5"]}),
    "budget pure-dp": (["budget", "--pure-dp", "--max-ratio", "3", "--max-posterior", "0.5"], {
        "max-ratio": NUM, "max-posterior": NUM, "q": [*PROB, "any", "anyx"],
        "target": ["0.5"], "measure": ["p-correct"], "census": None}),
}


CASES = generated_cases(BASES)
N_CASES = 2 * len(CASES)


@pytest.fixture(scope="module")
def cell_files(tmp_path_factory):
    """The directory holding :data:`FILES` (and an empty sub-directory ``dir``)."""
    folder = tmp_path_factory.mktemp("cells")
    for name, content in FILES.items():
        if isinstance(content, bytes):
            (folder / name).write_bytes(content)
        else:
            (folder / name).write_text(content, "utf-8")
    (folder / "dir").mkdir()
    return folder


@pytest.mark.parametrize("case", list(CASES))
def test_generated_input_keeps_the_contract(case, capsys, cell_files, monkeypatch):
    """The command line without, then with ``--json`` (one test: half the tests' overhead)."""
    monkeypatch.chdir(cell_files)
    for as_json in (False, True):
        assert_cli_contract(CASES[case], as_json, capsys)
