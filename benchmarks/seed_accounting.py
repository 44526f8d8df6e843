"""Write the accounting seed shipped with the package (inference/privacy/data/accounting_seed.json).

The 2020 strategy's accounting at the fine discretisation of the epsilon bracket and of the worst
case takes about a minute of CPU from an empty cache. This script computes every entry that
``dprisk census`` asks for, in a fresh cache directory with the seed switched off, and writes
them as the seed. Run it after changing the accounting or upgrading dp-accounting:

    .venv/bin/python benchmarks/seed_accounting.py

``tests/inference/privacy/test_accounting_seed.py`` (slow, run by ``make bench``) recomputes
every seeded entry and compares each within the tolerance stated for its function.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

SEED = (Path(__file__).resolve().parents[1] / "inference" / "privacy" / "data"
        / "accounting_seed.json")


def compute_entries() -> dict:
    """Every cache entry of ``dprisk census --json``, computed from scratch."""
    with tempfile.TemporaryDirectory() as cache:
        os.environ["DPRISK_CACHE_DIR"] = cache
        from dprisk.inference.privacy import accounting_cache
        from dprisk.inference.privacy.accounting import (
            census_epsilon_pld,
            census_epsilon_pld_bracket,
            epsilon_cks,
        )
        from dprisk.inference.privacy.worst_case import census_worst_case
        from dprisk.models.census.allocation import CENSUS_DELTA, CENSUS_RHO_TOTAL

        accounting_cache.USE_SEED = False
        epsilon_cks(CENSUS_RHO_TOTAL, CENSUS_DELTA)
        census_epsilon_pld(CENSUS_RHO_TOTAL, CENSUS_DELTA)
        census_epsilon_pld_bracket(CENSUS_RHO_TOTAL, CENSUS_DELTA)
        census_worst_case(CENSUS_RHO_TOTAL, p=0.5)
        folder = Path(cache) / "accounting"
        return {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))}


def main() -> int:
    entries = compute_entries()
    SEED.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(entries)} entries to {SEED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
