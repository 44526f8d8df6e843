"""The variant's thresholds taken from the exact model's where the two laws are equal.

``decision_offsets(..., "variant")`` takes a release's threshold and tie from the exact
model's log-odds where its k2 window leaves out ``k2 = m`` (improper prior) and the log-odds
is clear of the decision's boundaries (inference.studies.thresholds): those must be the
thresholds and ties of the variant's own stationary log-odds, found here by scanning every
offset j in [-80, 80] on its tables (integers and flags: compared exactly), on grids holding
both kinds of releases; the exact model's thresholds computed on the way and kept for it are
those of the exact model computed alone.
"""

import numpy as np
import pytest
from census_values import RHO_BLOCK, RHO_BLOCK_GROUP
from study_checks import assert_thresholds_are_the_scanned_ones

from dprisk.inference.studies import thresholds
from dprisk.inference.studies import variant as variant_module
from dprisk.inference.studies.variant import VariantTables
from dprisk.models.scenario import Scenario
from dprisk.runtime.bounded_cache import BoundedCache


@pytest.mark.parametrize(("rho1", "rho2", "d", "p", "known"), [
    (RHO_BLOCK, RHO_BLOCK_GROUP, 27, 0.5, 0),
    (RHO_BLOCK, 0.03, 27, 0.5, 0),
    (RHO_BLOCK, 100.0, 27, 0.5, 2),  # X2 nearly known, odd d: exact ties among releases
    (0.5, 1.0, 3, 0.3, 2),
])
def test_shared_thresholds_are_the_variants(monkeypatch, rho1, rho2, d, p, known):
    monkeypatch.setattr(thresholds, "_offsets_cache",
                        BoundedCache(thresholds.OFFSETS_CACHE_CELLS))
    bisected = []
    original = variant_module._bisection

    def counted(tables):
        bisected.append(tables.g.shape[0])
        return original(tables)

    monkeypatch.setattr(variant_module, "_bisection", counted)
    params = Scenario.two_level(rho1=rho1, rho2=rho2, d=d, p=p, known=known, prior="improper")
    x2s, y1s = (a.ravel() for a in np.meshgrid(np.arange(-4, 70, 5) + known,
                                               np.arange(-40, 81, 4), indexing="ij"))
    threshold, tie = thresholds.decision_offsets(x2s, y1s, params, "variant")
    assert 0 < sum(bisected) < x2s.size  # both kinds of releases
    tables = VariantTables(x2s, y1s, params)
    assert_thresholds_are_the_scanned_ones(threshold, tie, tables,
                                           np.arange(-80, 81, dtype=float))
    if rho2 == 100.0:
        assert tie.any()
    kept = thresholds.decision_offsets(x2s, y1s, params, "exact")
    alone = thresholds._decision_offsets(x2s, y1s, params, "exact")
    np.testing.assert_array_equal(kept[0], alone[0])
    np.testing.assert_array_equal(kept[1], alone[1])
