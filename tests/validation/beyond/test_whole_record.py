"""The "beyond the paper: the whole record" study at a tiny budget: records and figures."""

import numpy as np
from study_checks import numbers_without_units

from dprisk.validation.beyond.whole_record import study
from dprisk.validation.paper.records import validate_records

TINY = {"rhos": np.array([0.05, 0.5]), "mc": 300, "strategy": 40, "block_group": 10,
        "sbc": 20, "gibbs_draws": 300}


def test_study_records_and_figures():
    result = study(budget=TINY)
    validate_records(result.records)
    by_id = {r["id"]: r for r in result.records}
    # the paper's one-cell numbers reproduced by the K-cell code reading one cell
    assert by_id["whole_record/ed28_21/one_cell/posterior"]["status"] == "match"
    assert by_id["whole_record/ed28_21/one_cell/risk"]["status"] == "match"
    assert all(r["status"] != "differs" for r in result.records), [
        r["id"] for r in result.records if r["status"] == "differs"]
    assert set(result.figures) == {"whole_record_k_cells", "whole_record_ed28_21",
                                   "whole_record_strategy"}
    assert result.seeds and result.diagnostics
    # the exact two-level design has P[MAP] only: its E[posterior] (NaN in the data) was
    # printed on the page as "E[posterior] nan ± nan"
    assert not any("nan" in note for note in result.notes)
    assert "(exact P[MAP]): P[MAP] 0.00414 ± 0, E[posterior] not computed" in result.notes[2]
    # results.nc's whole_record groups had no units on any of their 17 numeric variables
    assert not numbers_without_units(result.datasets)
    # and 7 (ED 28-21's three curves, the four strategy columns) did not say what they are
    assert not numbers_without_units(result.datasets, attribute="long_name")
    strategy = result.datasets["strategy"]
    # the detailed query alone is exact; the eleven queries can only add information
    assert strategy["p_map_correct_mcse"].values[0] == 0.0


def test_sampler_records_read_every_cell(monkeypatch):
    """The two-level Gibbs record's verdict reads every cell, not only cell 0's share.

    A sampler that relabels cells 1 and 2 (cell 0's draws untouched) gives cell 1 about 0.271
    where the exact posterior is 0.0969 in the first battery case: at 1,000 draws in 4 chains
    that gap is above 20 MCSE, where the verdict's limit is N_MCSE = 4; before, the record
    compared cell 0 only and said within-mc-error.
    """
    from dprisk.validation.beyond import whole_record

    real = whole_record.two_level_cell_gibbs

    def swapped(*args, **kwargs):
        draws = real(*args, **kwargs)
        cells = draws.cell.copy()
        draws.cell[cells == 1], draws.cell[cells == 2] = 2, 1
        return draws

    budget = {**whole_record._budget(False), "gibbs_draws": 1000, "pymc": False, "sbc": 20}
    records, _ = whole_record._sampler_records(budget, whole_record.SEED + 10)
    by_id = {r["id"]: r for r in records}
    assert by_id["whole_record/two_level_gibbs/case0"]["status"] == "within-mc-error"
    assert "largest gap" in by_id["whole_record/two_level_gibbs/case0"]["explanation"]
    monkeypatch.setattr(whole_record, "two_level_cell_gibbs", swapped)
    records, _ = whole_record._sampler_records(budget, whole_record.SEED + 10)
    by_id = {r["id"]: r for r in records}
    assert by_id["whole_record/two_level_gibbs/case0"]["status"] == "differs"
    assert by_id["whole_record/two_level_gibbs/case1"]["status"] == "differs"
