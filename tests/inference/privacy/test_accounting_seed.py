"""The accounting seed shipped with the package: used on a miss, and true (recomputed, slow)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dprisk.inference.privacy import accounting_cache
from dprisk.inference.privacy.accounting import census_epsilon_pld_bracket

REPO = Path(__file__).resolve().parents[3]
SEED = REPO / "inference" / "privacy" / "data" / "accounting_seed.json"


def _seed() -> dict:
    return json.loads(SEED.read_text())


def test_seed_keys_are_the_cache_keys_of_the_installed_dp_accounting():
    versions = {json.loads(entry["key"])["dp_accounting"] for entry in _seed().values()}
    if versions != {accounting_cache.library_version()}:
        pytest.skip(f"seed computed with dp-accounting {versions}, installed "
                    f"{accounting_cache.library_version()}: the census accounting is computed "
                    "(about a minute); rerun benchmarks/seed_accounting.py")
    assert len(_seed()) >= 6


def test_a_miss_reads_the_seed_not_the_computation(tmp_path, monkeypatch):
    monkeypatch.setenv("DPRISK_CACHE_DIR", str(tmp_path))

    def refuse():
        raise AssertionError("computed although the seed holds the entry")

    key = {"queries": "not in the seed"}
    with pytest.raises(AssertionError, match="computed although"):
        accounting_cache.cached_float("epsilon_pld_bracket", key, refuse)
    if set(json.loads(e["key"])["dp_accounting"] for e in _seed().values()) != {
            accounting_cache.library_version()}:
        pytest.skip("seed from another dp-accounting version")
    lower, upper = census_epsilon_pld_bracket()
    assert lower < 16.4795 < upper and upper - lower <= 1e-3
    # the seeded entries now sit in the user's cache, under the same file names
    assert {p.stem for p in (tmp_path / "accounting").glob("*.json")} <= set(_seed())


@pytest.mark.slow
def test_every_seeded_entry_recomputes_bit_for_bit():
    """benchmarks/seed_accounting.py from scratch (seed off, empty cache) gives the shipped seed."""
    code = ("import json, sys; sys.path.insert(0, 'benchmarks'); import seed_accounting as s;"
            "print(json.dumps(s.compute_entries()))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == _seed()
