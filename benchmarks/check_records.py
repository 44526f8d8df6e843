"""Check that a report's published-vs-computed records match the saved baseline.

The restructure of the package (one ``dprisk`` import package, validate once, one home per
formula) must change no number: every record's ``computed``, ``status`` and ``mcse`` in
``results.json`` must agree with those in ``records_baseline.json`` (saved from
``dprisk reproduce`` before the restructure; the 31 claim records' statuses changed
consciously to holds / does not hold, and the 30 records of the accounting, whole-record
and unknown-others studies were added from a fresh clone's ``make report``; so were the 14
records of the decision summary and the product studies, and 23 records' computed values were
taken from this machine, whose floating point differs in the last bits from the one that
wrote them: the code that wrote them gives the new values here; the 9 ``das_noise/*`` records
of the decision summary, the block's answers at the noise the DAS drew (issue 34), were added
from ``validation.beyond.das_noise.das_noise_records`` on the same machine; issue 32 replaced
the MCSE of the three K-cell ED 28-21 records by the conditional estimator's, a tenth of the
old; the 35 ``population/*`` records of the section "Every person of a population", issue 34
part 5, were added from ``validation.beyond.population.study`` on the same machine; the
6 two-level P[correct] records computed over the d-fold noise sum (``fig5/no_hierarchy`` and
the five ``s4/*``) were taken again when that sum's trims were budgeted by how often each
trimmed power enters it (``models.mechanism.dg_sums``): they moved by 0.6-2.3e-10 relative,
within their 1e-9 neglected mass, each about three times closer to the value at a tail mass
of 1e-15 (the single-level closed form for ``fig5/no_hierarchy``: 3.1e-10 -> 1.0e-10 below
it, by mpmath)).

**Agree** (issue 32: the last bits of exp, log and sums differ between CPUs, e.g. numpy's
AVX-512 kernels, so floats are never compared bit for bit):

* ``status``: equal (a string).
* ``computed``: within :data:`REL_EXACT` (1e-12) relative, a few thousand ulps: an exact
  path's round-off across CPUs is a few ulps per operation over at most a few hundred
  operations; or within :data:`ABS_FLOOR` (1e-14) absolute, for records that are themselves
  round-off (a difference of two O(1) computations, e.g. 5e-16) or below it. A Monte Carlo
  record (``mcse`` given) also agrees within :data:`N_MCSE` (2) of its MCSE: the same seed
  draws the same numbers everywhere, and a decision that a last-bit difference flips moves
  the estimate by far less than one MCSE.
* ``computed`` of a record in :data:`REL_RECORD`: within the relative tolerance stated there,
  measured for that record, whose computation resolves it more coarsely than an exact path.
  ``accounting/epsilon_pld`` (1e-7): the 65 queries' privacy-loss distributions composed by
  ``dp-accounting`` at delta = 1e-10, where the composition's discretised tails (losses rounded
  to the 1e-4 grid, up to 1e-15 of mass truncated per composition) weigh in: moving each
  query's rho by one ulp or none, at random, moved it over 3.4e-8 relative (16 draws,
  16.48280359 to 16.48280416), and an AVX-512 machine gives 1.3e-8 below the baseline's
  (16.482803676 against 16.482803897; 16.482803921 with numpy's CPU features off): the
  tolerance is three times the spread measured. The record's claim (16.4 < epsilon < 16.5)
  and its status do not come near it.
* ``mcse``: both absent, or within :data:`REL_MCSE` (10 %) relative: an MCSE is estimated
  from the same pinned draws, so only flipped decisions change it (by far less), while a
  changed sample size changes it by its square root (2x the releases: 29 %).
* NaN agrees with NaN.

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
#: Relative tolerance of an exact path's ``computed`` (module notes).
REL_EXACT = 1e-12
#: Absolute tolerance of ``computed`` for records at round-off level (module notes).
ABS_FLOOR = 1e-14
#: Relative tolerances of ``computed`` for records resolved more coarsely than an exact path,
#: measured for each (module notes).
REL_RECORD = {"accounting/epsilon_pld": 1e-7}
#: A Monte Carlo record's ``computed`` agrees within this many of its MCSE (module notes).
N_MCSE = 2.0
#: Relative tolerance of ``mcse`` (module notes).
REL_MCSE = 0.1


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same(field: str, a, b, mcse=None, rel: float = REL_EXACT) -> bool:
    """Whether a record's ``field`` agrees (module notes); ``mcse``: the larger MCSE, if any;
    ``rel``: the relative tolerance of ``computed`` (:data:`REL_EXACT` unless the record is in
    :data:`REL_RECORD`)."""
    if not (_number(a) and _number(b)):
        return a == b
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    gap = abs(a - b)
    if field == "mcse":
        return gap <= REL_MCSE * max(abs(a), abs(b))
    if gap <= rel * max(abs(a), abs(b)) or gap <= ABS_FLOOR:
        return True
    return mcse is not None and gap <= N_MCSE * mcse


def compare(results: list[dict], baseline: list[dict]) -> list[str]:
    """Lines describing every record that differs from the baseline (empty when none)."""
    now = {record["id"]: record for record in results}
    before = {record["id"]: record for record in baseline}
    problems = [f"missing record {rid}" for rid in before if rid not in now]
    for rid, old in before.items():
        new = now.get(rid)
        if new is None:
            continue
        errors = [e for e in (old.get("mcse"), new.get("mcse")) if _number(e)]
        mcse = max(errors) if len(errors) == 2 else None
        rel = REL_RECORD.get(rid, REL_EXACT)
        for field in FIELDS:
            if not _same(field, old[field], new[field], mcse, rel):
                problems.append(f"{rid}: {field} {old[field]!r} -> {new[field]!r}")
    return problems


def added(results: list[dict], baseline: list[dict]) -> list[str]:
    """Ids of records that are new since the baseline (new studies add records; listed only)."""
    before = {record["id"] for record in baseline}
    return [record["id"] for record in results if record["id"] not in before]


USAGE = ("usage: python benchmarks/check_records.py [RESULTS_JSON]\n"
         "  compares RESULTS_JSON (a report's results.json) with records_baseline.json;\n"
         "  without it, runs `dprisk reproduce` in a temporary folder first.\n"
         "  exit status 0: every record agrees; 1: some differ; 2: bad usage")


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if len(argv) > 1 or (argv and not Path(argv[0]).is_file()):
        print(f"check_records.py: RESULTS_JSON must be one existing file, got {argv}",
              file=sys.stderr)
        return 2
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
