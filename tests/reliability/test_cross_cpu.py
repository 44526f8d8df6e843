"""The same answers on every machine (issue 32, part 1).

numpy dispatches exp, log and friends to CPU-specific kernels (AVX2, AVX-512) that differ in
the last bits, so floats computed by ufuncs are never compared bit for bit with a number
written down on one machine: tests compare them within tolerances stated beside them, and
``benchmarks/check_records.py`` compares the report's records within relative tolerances
stated in its module. ``.ci/run`` runs the inference and model tests a second time with
numpy's optional CPU features off. These tests check those three rules (text and unit
checks only: cheap).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
#: A float literal of 12 or more decimals compared with == or != (either side).
EXACT_FLOAT = re.compile(r"(==|!=)\s*-?\d+\.\d{12,}|-?\d+\.\d{12,}\s*(==|!=)")


@pytest.fixture(scope="module")
def check_records():
    return load_benchmark("check_records")


def test_no_test_compares_a_long_float_literal_exactly():
    """No ``x == <a float of 12+ decimals>``: such a test encodes one CPU's last bits."""
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in sorted((ROOT / "tests").rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if EXACT_FLOAT.search(line.split("#")[0])]
    assert not found, "\n".join(found)


def _record(computed, mcse=None, status="match"):
    return {"id": "r", "computed": computed, "status": status, "mcse": mcse}


@pytest.mark.parametrize(("old", "new", "agree"), [
    (_record(0.12566370614359162), _record(0.12566370614359135), True),  # 2 ulps (AVX-512)
    (_record(1.0495725100807445), _record(1.0495725100807445 * (1 + 5e-13)), True),
    (_record(1.0495725100807445), _record(1.0495725100807445 * (1 + 1e-9)), False),
    (_record(5.204170427930421e-16), _record(4.440892098500626e-16), True),  # round-off
    (_record(2.7e-10), _record(2.8e-10), False),
    (_record(float("nan")), _record(float("nan")), True),
    (_record(0.5, status="match"), _record(0.5, status="differs"), False),
    (_record(0.4967, 0.0058, "differs"), _record(0.4967 + 0.0058, 0.0058, "differs"), True),
    (_record(0.4967, 0.0058, "differs"), _record(0.4967 + 0.03, 0.0058, "differs"), False),
    (_record(0.4967, 0.0058, "differs"), _record(0.4967, 0.0058 / 2 ** 0.5, "differs"), False),
    (_record(0.4967, 0.0058, "differs"), _record(0.4967, 0.0058 * (1 + 1e-6), "differs"), True),
    (_record(0.4967, None), _record(0.4967, 0.001), False),
])
def test_check_records_compares_within_stated_tolerances(check_records, old, new, agree):
    """Last-bit differences agree (a few ulps, round-off-level records, MC within 2 MCSE);
    real changes (1e-9 relative on an exact path, 5 MCSE, a new sample size, a status) do
    not. Before issue 32 every float was compared with ``==``."""
    problems = check_records.compare([new], [old])
    assert (problems == []) == agree, problems


@pytest.mark.parametrize(("computed", "agree"), [
    (16.482803676244266, True),  # an AVX-512 machine's value: 1.3e-8 relative below
    (16.482803896621416 * (1 + 9e-8), True),
    (16.482803896621416 * (1 + 2e-7), False),
    (16.4838, False),
])
def test_the_pld_epsilon_record_agrees_within_its_measured_tolerance(check_records, computed,
                                                                     agree):
    """``accounting/epsilon_pld`` is compared within ``REL_RECORD``'s 1e-7 (moving its queries'
    rhos by an ulp moved it by 3.4e-8 relative), every other record within ``REL_EXACT``."""
    baseline = {"id": "accounting/epsilon_pld", "computed": 16.482803896621416,
                "status": "match", "mcse": None}
    problems = check_records.compare([{**baseline, "computed": computed}], [baseline])
    assert (problems == []) == agree, problems
    other = {**baseline, "id": "accounting/epsilon_census"}
    assert check_records.compare([{**other, "computed": 16.482803676244266}], [other])


def test_ci_runs_the_numeric_tests_with_cpu_features_off():
    script = (ROOT / ".ci" / "run").read_text().replace("\\\n", " ")  # continued lines
    assert "set -euo pipefail" in script
    assert re.search(r"^make test$", script, re.M)
    assert re.search(r'^NPY_DISABLE_CPU_FEATURES="\$\w+" [^\n]*pytest[^\n]*'
                     r"tests/inference tests/models", script, re.M)
    assert "__cpu_dispatch__" in script


def test_check_records_usage_is_answered_and_bad_paths_refused(check_records, capsys, tmp_path):
    """``--help`` prints the usage (it was read as a file's path: a traceback); a missing
    file or a second argument is refused with exit status 2, before any report runs."""
    assert check_records.main(["--help"]) == 0
    assert "RESULTS_JSON" in capsys.readouterr().out
    assert check_records.main([str(tmp_path / "missing.json")]) == 2
    assert check_records.main(["a.json", "b.json"]) == 2
    assert "RESULTS_JSON must be one existing file" in capsys.readouterr().err
