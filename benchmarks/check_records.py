"""Check that a report's published-vs-computed records match the saved baseline exactly.

The restructure of the package (one ``dprisk`` import package, validate once, one home per
formula) must change no number: every record's ``computed``, ``status`` and ``mcse`` in
``results.json`` must equal those in ``records_baseline.json`` (saved from
``dprisk reproduce`` before the restructure; the 31 claim records' statuses changed
consciously to holds / does not hold, and the 30 records of the accounting, whole-record
and unknown-others studies were added from a fresh clone's ``make report``; so were the 14
records of the decision summary and the product studies, and 23 records' computed values were
taken from this machine, whose floating point differs in the last bits from the one that
wrote them: the code that wrote them gives the new values here; the 9 ``das_noise/*`` records
of the decision summary, the block's answers at the noise the DAS drew (issue 34), were added
from ``validation.beyond.das_noise.das_noise_records`` on the same machine).

Usage::

    python benchmarks/check_records.py                 # runs `dprisk reproduce` into a temp dir
    python benchmarks/check_records.py report/results.json

Exit status 0 when every baseline record is present and unchanged, 1 otherwise (each
difference is printed). Records that are not in the baseline (a new study's) are listed, not
counted as differences.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "records_baseline.json"
FIELDS = ("computed", "status", "mcse")


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def compare(results: list[dict], baseline: list[dict]) -> list[str]:
    """Lines describing every record that differs from the baseline (empty when none)."""
    now = {record["id"]: record for record in results}
    before = {record["id"]: record for record in baseline}
    problems = [f"missing record {rid}" for rid in before if rid not in now]
    for rid, old in before.items():
        new = now.get(rid)
        if new is None:
            continue
        for field in FIELDS:
            if not _same(old[field], new[field]):
                problems.append(f"{rid}: {field} {old[field]!r} -> {new[field]!r}")
    return problems


def added(results: list[dict], baseline: list[dict]) -> list[str]:
    """Ids of records that are new since the baseline (new studies add records; listed only)."""
    before = {record["id"] for record in baseline}
    return [record["id"] for record in results if record["id"] not in before]


def main(argv: list[str]) -> int:
    if argv:
        results = json.loads(Path(argv[0]).read_text())
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report"
            subprocess.run(
                [sys.executable, "-m", "dprisk.cli", "reproduce", "--out", str(out), "--quiet"],
                check=True,
            )
            results = json.loads((out / "results.json").read_text())
    baseline = json.loads(BASELINE.read_text())
    problems = compare(results, baseline)
    for line in problems:
        print(line)
    new = added(results, baseline)
    if new:
        print(f"{len(new)} new records (not in the baseline): " + ", ".join(new))
    changed = len({line.split(":")[0] for line in problems})
    print(f"{len(baseline) - changed} of {len(baseline)} records unchanged")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
