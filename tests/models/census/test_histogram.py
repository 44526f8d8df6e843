"""Labelled histograms: the paper's 1940 histogram and the 2020 GVHR query maps."""

import numpy as np
import pytest

from dprisk.models.census.histogram_1940 import ed_28_21, ed_28_21_known, ed_28_21_target
from dprisk.models.census.histogram_2020 import (
    CENRACE_LEVELS,
    HHINST_OF_HHGQ,
    MAJOR_RACES,
    gvhr_2020,
    query_cell_map,
)
from dprisk.models.priors.histogram import restricted_prior


def test_1940_histogram_is_the_papers_table():
    hist = ed_28_21()
    assert hist.shape == (8, 2, 6, 9) and hist.n_cells == 864
    assert sorted(hist.counts[hist.counts > 0].tolist()) == [1, 10, 34]
    target = ed_28_21_target()
    assert hist.counts[target] == 1
    assert hist.cell_labels(target) == {"hhgq": "Household", "votingage": "Of Voting Age",
                                        "hispanic": "Not Hispanic", "cenrace": "Black"}
    known = ed_28_21_known()
    assert known[target] == 0 and known.sum() == 44


def test_structured_prior_from_known_attributes():
    hist = ed_28_21()
    mask = hist.mask(votingage="Of Voting Age", hispanic="Not Hispanic")
    prior = restricted_prior(mask)
    assert mask.sum() == 8 * 9
    assert prior[ed_28_21_target()] == pytest.approx(1 / 72, rel=1e-15)


def test_2020_query_maps_follow_the_labels():
    hist = gvhr_2020()
    assert hist.n_cells == 2016 and len(CENRACE_LEVELS) == 63
    assert CENRACE_LEVELS[6] == "White and Black"
    assert all(race in CENRACE_LEVELS[-1] for race in MAJOR_RACES)
    rng = np.random.default_rng(0)
    cenrace, n_cenrace = query_cell_map("cenrace")
    hhinst, n_hhinst = query_cell_map("hhinstlevels")
    vhc, n_vhc = query_cell_map("votingage * hispanic * cenrace")
    assert (n_cenrace, n_hhinst, n_vhc) == (63, 3, 252)
    for cell in rng.integers(0, 2016, 50):
        labels = hist.cell_labels(cell)
        hhgq = hist.levels[0].index(labels["hhgq"])
        assert cenrace[cell] == CENRACE_LEVELS.index(labels["cenrace"])
        assert hhinst[cell] == HHINST_OF_HHGQ[hhgq]
        va, hi = hist.levels[1].index(labels["votingage"]), hist.levels[2].index(labels["hispanic"])
        assert vhc[cell] == (va * 2 + hi) * 63 + cenrace[cell]
    assert query_cell_map("total")[0].max() == 0
    with pytest.raises(ValueError, match="query"):
        query_cell_map("nonsense")
