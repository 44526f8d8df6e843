"""The SBC study split into parts (the report runs them in separate workers) and joined is the
study in one piece: the same datasets (wall-clock ``seconds`` aside), notes and seeds.

A tiny budget (a few simulations each): the check is of the bookkeeping, not of calibration.
"""

import pickle

from dprisk.validation.sbc.ranks import BROKEN_PRIOR
from dprisk.validation.sbc.study import STUDY_PARTS, SBCBudget, SBCRun, study, study_part

TINY = SBCBudget(
    runs=(SBCRun("gibbs", "truncated:10", 40), SBCRun("broken-gibbs", BROKEN_PRIOR, 40),
          SBCRun("pymc", "truncated:10", 2, n_draws=9, bins=5)),
    detection_releases=200,
)


def test_the_study_joined_from_parts_run_apart_is_the_one_piece_study():
    whole = study(budget=TINY)
    parts = {name: pickle.loads(pickle.dumps(study_part(name, budget=TINY)))
             for name in reversed(STUDY_PARTS)}
    assert sorted(parts["pymc"]) == [2] and sorted(parts["samplers"]) == [0, 1]
    joined = study(budget=TINY, parts=parts)
    assert joined.seeds == whole.seeds and joined.notes == whole.notes
    assert joined.figures.keys() == whole.figures.keys()
    assert list(joined.datasets) == list(whole.datasets)
    for key, ds in whole.datasets.items():
        other = joined.datasets[key]
        ds, other = (d.drop_vars("seconds", errors="ignore") for d in (ds, other))
        for d in (ds, other):  # a run's wall-clock time
            d.attrs.pop("seconds", None)
        assert other.identical(ds), key
