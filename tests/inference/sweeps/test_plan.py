"""Tests of inference.sweep_plan: validated grids, chunking and the Dataset layout."""

import json

import numpy as np
import pytest
from census_values import RHO_BLOCK

from dprisk.inference.single_level.closed_form import p_correct
from dprisk.inference.sweeps.plan import (
    DIMS,
    MANIFEST_FORMAT,
    UNITS,
    VARIABLES,
    canonical_json,
    check_grid,
    plan_sweep,
)

GRID_2D = {"rho1": RHO_BLOCK, "d": 27, "rho2": [0.1, 0.25, 1.0], "x2": [1, 2, 3, 7, 20],
           "chunk_size": 2}


def standin(*, rho1, rho2, d, x2, p=0.5, known=0, prior="improper"):
    """A deterministic quantity of every swept argument."""
    return {"p_correct": float(p_correct(rho1 + rho2 / (d + x2), p, known)),
            "p_correct_no_hierarchy": float(p_correct(rho1, p, known)),
            "gain": 0.0, "loss": 0.0}


def test_plan_exposes_the_chunking():
    plan, quantity = plan_sweep(**GRID_2D, quantity=standin)
    assert quantity is standin
    assert plan.dims == ("rho2", "x2") and plan.shape == (3, 5)
    assert plan.n_chunks == 8 and list(plan.chunk_indices(7)) == [14]
    assert plan.point(14) == {"rho1": RHO_BLOCK, "d": 27, "p": 0.5, "known": 0,
                              "prior": "improper", "rho2": 1.0, "x2": 20}


def test_to_dataset_labels_dims_units_and_fixed_parameters():
    plan, _ = plan_sweep(**GRID_2D, quantity=standin)
    values = np.arange(len(VARIABLES) * plan.n_points, dtype=float).reshape(len(VARIABLES), -1)
    ds = plan.to_dataset(values)
    assert ds.sizes == {"rho2": 3, "x2": 5}
    assert list(ds.data_vars) == list(VARIABLES)
    assert ds["x2"].attrs["units"] == UNITS["x2"]
    assert ds.attrs["rho1"] == RHO_BLOCK and ds.attrs["rho1_units"] == UNITS["rho1"]
    assert ds.attrs["method"] == "exact"
    np.testing.assert_array_equal(ds["gain"].values.ravel(), values[2])  # C order
    manifest = json.loads(ds.attrs["sweep_manifest"])
    assert manifest == json.loads(canonical_json(plan.identity()))
    assert manifest["format"] == MANIFEST_FORMAT


def test_manifest_adds_the_chunking_to_the_identity():
    plan, _ = plan_sweep(**GRID_2D, quantity=standin)
    assert plan.manifest() == {**plan.identity(), "chunk_size": 2, "n_chunks": 8}


def test_canonical_json_sorts_keys_without_spaces():
    assert canonical_json({"b": [1, 2], "a": 0.5}) == '{"a":0.5,"b":[1,2]}'


@pytest.mark.parametrize(
    ("values", "name", "expected"),
    [([0.5, "census:block"], "rho1", [0.5, RHO_BLOCK]), ([1, 27], "d", [1, 27]),
     ([0, 3], "x2", [0, 3]), ([0.25], "p", [0.25]), (["improper", "point:1"], "prior",
                                                      ["improper", "point:1"])],
)
def test_check_grid_returns_the_checked_values(values, name, expected):
    assert check_grid(values, name) == expected


@pytest.mark.parametrize(
    ("values", "name", "match"),
    [([0.0], "rho1", "rho1"), ([0], "d", "d must be an integer >= 1"), ([1.0], "p", "p must"),
     ([1, 1], "x2", "x2: the grid holds 1 more than once"), ([1], "rho3", "name must be one of")],
)
def test_check_grid_refuses_naming_the_parameter(values, name, match):
    with pytest.raises(ValueError, match=match):
        check_grid(values, name)


def test_every_dim_has_a_checker():
    for name in DIMS:
        assert check_grid([{"rho1": 1.0, "rho2": 1.0, "d": 1, "x2": 1, "p": 0.5, "known": 0,
                            "prior": "improper"}[name]], name)


def test_duplicate_search_is_linear_in_the_grid(monkeypatch):
    """A duplicate at the end of a long grid is found in time linear in its length.

    ``list.count`` per value compared every pair: 80 s for 60000 counts with the last value
    repeated (a 600000-point float range whose two last values round to the same double
    hung for hours). Counted here as equality tests between distinct values: about n^2 / 2
    = 2e6 before; hashing compares only values whose hashes collide (here the repeat, 1).
    """
    from dprisk.inference.sweeps import plan

    comparisons = 0

    class Value:
        def __init__(self, number):
            self.number = number

        def __hash__(self):
            return hash(self.number)

        def __eq__(self, other):
            nonlocal comparisons
            comparisons += 1
            return self.number == other.number

        def __repr__(self):
            return f"Value({self.number})"

    monkeypatch.setitem(plan._CHECKERS, "x2", lambda value, name: value)
    n = 2000
    values = [Value(k) for k in range(n)] + [Value(n - 1)]
    with pytest.raises(ValueError, match=r"x2: the grid holds Value\(1999\) more than once"):
        check_grid(values, "x2")
    assert comparisons <= 10, comparisons


GEOMETRIC_PRIOR = ("import numpy as np\nimport pytensor.tensor as pt\n"
                   "from dprisk import UserPrior\n"
                   "prior = UserPrior(lambda k2, k1: np.log({q}) + pt.cast(k2 - k1, 'float64')"
                   " * np.log1p(-{q}))\n")


def test_points_sent_to_workers_name_a_prior_file_by_its_absolute_path(tmp_path, monkeypatch):
    """A Dask worker read a relative PATH.py:NAME in its own working directory: with the
    workers in another folder holding another geo.py (q = 0.05, here q = 0.9) a sweep at
    x2 = 3, 10 returned P[correct] 0.556, 0.630 instead of 0.938, 1.000, labelled with this
    spec and this file's digest. The points sent keep the label's spec but an absolute PATH."""
    from dprisk.models.priors.library import parse_prior

    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    for folder, q in ((here, 0.9), (elsewhere, 0.05)):
        folder.mkdir()
        (folder / "geo.py").write_text(GEOMETRIC_PRIOR.format(q=q))
    monkeypatch.chdir(here)
    plan, _ = plan_sweep(rho1=0.1, rho2=0.25, d=27, x2=[3, 10], prior=["geo.py:prior",
                                                                        "improper"])
    assert list(plan.grids["prior"]) == ["geo.py:prior", "improper"]  # the labels as given
    sent = [point for chunk in range(plan.n_chunks) for point in plan.worker_points(chunk)]
    assert [point["prior"] for point in sent] == [f"{here / 'geo.py'}:prior", "improper"] * 2
    assert [{k: v for k, v in p.items() if k != "prior"} for p in sent] == [
        {k: v for k, v in p.items() if k != "prior"}
        for chunk in range(plan.n_chunks) for p in plan.chunk_points(chunk)]
    monkeypatch.chdir(elsewhere)  # a worker's folder: the absolute PATH reads this run's file
    weights = parse_prior(sent[0]["prior"]).log_weight(np.arange(3), 0)
    np.testing.assert_allclose(np.exp(weights), 0.9 * 0.1 ** np.arange(3), rtol=1e-14)
