"""The numbers of cases ``docs/validation.md`` quotes for the reliability tests are the tests'.

The page names each module with its number of cases (``(`tests/reliability/X.py`, N cases)``
or ``N cases (`tests/reliability/X.py`)``): the module's ``N_CASES`` where it defines one
(the command lines or table rows it runs, which its docstring defines), else the number of
tests pytest collects from it, slow ones included. Each session's new cases made them drift
(after the merges of 2026-12-01: the work limit 36 cases against the page's 28, the
extremes 73 against 68, the option named 297 against 290), found by hand each time; now the
page fails here instead. The tests are counted from this session's own collection, which
holds every test of the quoted modules when the whole suite (or whole modules) is collected
(``collected_items``, ``tests/conftest.py``: as collected, before the ``slow`` ones are
deselected); otherwise (``-k``, node ids, a subset of the modules) from one ``pytest
--collect-only`` of the quoted modules in a process of its own (2-4.7 s of CPU: collection
imports them as the suite does). Either way N_CASES is read from the collected modules.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "validation.md"
#: A quoted module with its number, either way round (the page's whitespace collapsed).
QUOTED = (re.compile(r"\(`(tests/[\w/]+\.py)`, ([\d,]+) cases\)"),
          re.compile(r"([\d,]+) (?:`--out` )?cases \(`(tests/[\w/]+\.py)`\)"))
#: A pytest plugin that prints {module path: N_CASES or the number of its collected tests}.
COUNTER = '''
import json
def pytest_collection_finish(session):
    counts = {}
    for item in session.items:
        path = str(item.path.relative_to(session.config.rootpath))
        counts[path] = counts.get(path, 0) + 1
        n_cases = getattr(item.module, "N_CASES", None)
        if n_cases is not None:
            counts[path] = -n_cases  # negative: stated, not counted
    print("COUNTS " + json.dumps({p: abs(n) for p, n in counts.items()}))
'''


def quoted_counts() -> dict[str, int]:
    text = " ".join(PAGE.read_text().split())
    found = {path: int(number.replace(",", "")) for path, number in QUOTED[0].findall(text)}
    found |= {path: int(number.replace(",", "")) for number, path in QUOTED[1].findall(text)}
    return found


def counts_of(items, rootpath: Path) -> dict[str, int]:
    """{module path: N_CASES or the number of its tests} of collected ``items`` (as
    :data:`COUNTER` prints them)."""
    counts: dict[str, int] = {}
    for item in items:
        path = str(item.path.relative_to(rootpath))
        counts[path] = counts.get(path, 0) + 1
        n_cases = getattr(item.module, "N_CASES", None)
        if n_cases is not None:
            counts[path] = -n_cases  # negative: stated, not counted
    return {path: abs(number) for path, number in counts.items()}


def collected_counts(quoted, tmp_path: Path) -> dict[str, int]:
    """The counts of the quoted modules' tests, by one ``pytest --collect-only`` of them in a
    process of its own."""
    (tmp_path / "count_cases.py").write_text(COUNTER)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "-m", "",
         "-p", "count_cases", *sorted(quoted)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**{name: value for name, value in os.environ.items()  # not this run's worker
                if not name.startswith("PYTEST_") and name != "DPRISK_TEST_CPU_DIR"},
             "PYTHONPATH": os.pathsep.join(
                 filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))})
    line = next((line for line in done.stdout.splitlines() if line.startswith("COUNTS ")), None)
    assert done.returncode == 0 and line, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(line.removeprefix("COUNTS "))


def test_the_quoted_numbers_of_cases_are_the_tests(tmp_path, collected_items, pytestconfig):
    quoted = quoted_counts()
    assert len(quoted) >= 15 and "tests/reliability/test_bad_input.py" in quoted
    here = None if collected_items is None else counts_of(collected_items,
                                                           pytestconfig.rootpath)
    counts = here if here is not None and set(quoted) <= set(here) else collected_counts(
        quoted, tmp_path)
    wrong = {path: (number, counts.get(path)) for path, number in quoted.items()
             if counts.get(path) != number}
    assert not wrong, f"validation.md quotes (page, tests): {wrong}"
