"""``dprisk population synth | risk``: the command-line contract (issue 34).

Inputs are made by the commands themselves (``synth``, then pop-io's ``measure`` in both
layouts) on a small state; every run is in-process.
"""

import json

import numpy as np
import pandas as pd
import pytest
from cli_helpers import assert_refused, run_cli, run_json

from dprisk.inference.population.categories import BAND_LABELS
from dprisk.inference.population.metrics import COUNTS

PERSONS = 5000
BAND_KEYS = {"band", "persons", "nonmodal_persons", "map_correct", "map_correct_nonmodal",
             "mean_posterior_true", "posterior_true_ge_half", "mdg_correct_nonmodal",
             "prg_correct_nonmodal"}


def _main(argv):
    from dprisk.cli import main

    status = main(list(argv))
    assert status == 0, argv


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    """A synthetic state, its noisy table and its released layout."""
    root = tmp_path_factory.mktemp("state")
    _main(["population", "synth", "--persons", str(PERSONS), "--seed", "5", "--out",
           str(root / "synth"), "--json"])
    persons = root / "synth" / "persons.parquet"
    _main(["population", "measure", "--persons", str(persons), "--seed", "6", "--out",
           str(root / "table"), "--json"])
    _main(["population", "measure", "--persons", str(persons), "--seed", "6", "--out",
           str(root / "nmf"), "--layout", "nmf", "--json"])
    return {"persons": persons, "noisy": root / "table" / "noisy.parquet",
            "nmf": root / "nmf", "root": root}


def _risk(state, *extra):
    return ["population", "risk", "--persons", str(state["persons"]), "--noisy",
            str(state["noisy"]), *extra]


def test_synth_is_reproducible_and_follows_the_bands(tmp_path, capsys):
    one = run_json(["population", "synth", "--persons", "3000", "--seed", "9", "--out",
                    str(tmp_path / "a"), "--json"], capsys)
    run_json(["population", "synth", "--persons", "3000", "--seed", "9", "--out",
              str(tmp_path / "b"), "--json"], capsys)
    a = pd.read_parquet(tmp_path / "a" / "persons.parquet")
    b = pd.read_parquet(tmp_path / "b" / "persons.parquet")
    pd.testing.assert_frame_equal(a, b)
    assert one["persons"] == len(a) == 3000 and one["seed"] == 9
    assert list(a.columns) == ["geoid", "hhgq", "votingage", "hispanic", "cenrace"]
    assert a.geoid.str.len().eq(15).all() and a.geoid.str[:2].eq("01").all()
    assert a.cenrace.between(1, 63).all() and a.hhgq.between(0, 7).all()


def test_synth_refuses_bad_input_and_writes_nothing(tmp_path, capsys):
    assert_refused(["population", "synth", "--persons", "0", "--out", str(tmp_path / "x")],
                   "--persons", capsys)
    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("keep")
    assert_refused(["population", "synth", "--persons", "10", "--out", str(user)], "--out",
                   capsys)
    assert not (tmp_path / "x").exists() and sorted(p.name for p in user.iterdir()) == [
        "notes.txt"]
    assert_refused(["population", "synth", "--persons", "10", "--sed", "1", "--out",
                    str(tmp_path / "x")], "--seed", capsys)


@pytest.mark.parametrize("adversary", ["informed", "outsider"])
def test_risk_json_keys_and_both_layouts_agree(state, adversary, capsys):
    table = run_json([*_risk(state, "--adversary", adversary, "--json")], capsys)
    assert table["persons"] == PERSONS
    assert [row["band"] for row in table["by_block_size"]] == list(BAND_LABELS)
    for row in [*table["by_block_size"], {"band": "all", **table["all"]}]:
        assert BAND_KEYS <= set(row)
        for key in BAND_KEYS - {"band", "persons", "nonmodal_persons"}:
            assert row[key] is None or 0 <= row[key] <= 1
    assert sum(row["persons"] for row in table["by_block_size"]) == PERSONS
    assert table["noise_variance"]["min"] == pytest.approx(10.0928484900, rel=1e-9)
    nmf = run_json(["population", "risk", "--persons", str(state["persons"]), "--nmf",
                    str(state["nmf"]), "--state", "01", "--adversary", adversary, "--json"],
                   capsys)
    assert nmf["all"] == table["all"] and nmf["by_block_size"] == table["by_block_size"]


def test_risk_out_files_keep_the_input_order(state, tmp_path, capsys):
    persons = pd.read_parquet(state["persons"])
    perm = np.random.default_rng(3).permutation(len(persons))
    shuffled = persons.iloc[perm].reset_index(drop=True)
    shuffled_path = tmp_path / "shuffled.csv"
    shuffled.to_csv(shuffled_path, index=False)
    out = tmp_path / "out"
    payload = run_json(["population", "risk", "--persons", str(shuffled_path), "--noisy",
                        str(state["noisy"]), "--adversary", "outsider", "--out", str(out),
                        "--json"], capsys)
    assert sorted(p.name for p in out.iterdir()) == [
        ".dprisk-population-risk", "figures", "persons.parquet", "summary.json", "summary.nc"]
    assert sorted(p.name for p in (out / "figures").iterdir()) == [
        "by_band.png", "calibration.png"]
    written = pd.read_parquet(out / "persons.parquet")
    pd.testing.assert_frame_equal(written[list(persons.columns)].astype({"geoid": str}),
                                  shuffled.astype({"geoid": str}), check_dtype=False)
    from dprisk.inference.population.measurements import read_noisy_table
    from dprisk.inference.population.persons import read_persons
    from dprisk.inference.population.risk import population_risk

    in_order = population_risk(read_persons(state["persons"]),
                               read_noisy_table(state["noisy"]), adversary="outsider")
    assert in_order.summary()["all"] == payload["all"]  # row order changes no bit of it
    for name in ("posterior_true", "map", "map_posterior", "fdp_bound"):
        np.testing.assert_array_equal(written[name], getattr(in_order, name)[perm])
    assert json.loads((out / "summary.json").read_text())["all"] == payload["all"]
    import xarray as xr

    with xr.open_dataset(out / "summary.nc", engine="netcdf4") as ds:
        assert list(ds.band.values) == [*BAND_LABELS, "all"]
        assert ds.persons.sel(band="all").item() == PERSONS
        assert ds.map_correct.sel(band="all").item() == payload["all"]["map_correct"]
    assert not (tmp_path / "out.parts").exists()  # the partition store is removed once done


@pytest.mark.parametrize("case, option", [
    ("unknown_geoid", "019990000000000"), ("cenrace_out_of_range", "cenrace"),
    ("not_parquet", "--persons"),
    ("negative_variance", "--noise-variance"), ("absent_state", "--nmf"),
    ("both_sources", "--noisy"), ("bad_prior_file", "--prior"),
    ("prior_file_not_utf8", "prior.json"), ("noisy_geoid_of_no_person", "noisy.parquet"),
])
def test_risk_refuses_bad_input_and_writes_nothing(state, tmp_path, case, option, capsys):
    persons = pd.read_parquet(state["persons"])
    path = tmp_path / "persons.parquet"
    extra = ["--noisy", str(state["noisy"])]
    if case == "unknown_geoid":
        persons.loc[7, "geoid"] = "019990000000000"
    if case == "cenrace_out_of_range":
        persons.loc[3, "cenrace"] = 64
    persons.to_parquet(path)
    if case == "not_parquet":
        path = tmp_path / "persons.txt"
        path.write_text("geoid\n")
    if case == "negative_variance":
        extra += ["--noise-variance", "-1"]
    if case == "absent_state":
        extra = ["--nmf", str(state["nmf"]), "--state", "02"]
    if case == "both_sources":
        extra += ["--nmf", str(state["nmf"]), "--state", "01"]
    if case == "bad_prior_file":
        prior = tmp_path / "prior.json"
        prior.write_text(json.dumps({"probabilities": [0.5] * 126}))
        extra += ["--prior", str(prior)]
    if case == "prior_file_not_utf8":  # the line names --prior and the file
        prior = tmp_path / "prior.json"
        prior.write_bytes('{"probabilities": [], "note": "é"}'.encode("latin-1"))
        extra += ["--prior", str(prior)]
    if case == "noisy_geoid_of_no_person":  # a 14-character GEOID no person uses
        noisy = pd.read_parquet(state["noisy"]).astype({"geoid": str})
        bad = noisy[noisy.geoid == noisy.geoid.iloc[0]].assign(geoid="01999000000000")
        pd.concat([noisy, bad]).to_parquet(tmp_path / "noisy.parquet", index=False)
        extra = ["--noisy", str(tmp_path / "noisy.parquet")]
    out = tmp_path / "out"
    line = assert_refused(["population", "risk", "--persons", str(path), *extra,
                           "--adversary", "informed", "--out", str(out)], option, capsys)
    assert case != "prior_file_not_utf8" or "--prior" in line
    assert case != "noisy_geoid_of_no_person" or (
        "--noisy" in line and f"geoid '01999000000000' at row {len(noisy) + 1} is not" in line)
    assert not out.exists() and not (tmp_path / "out.parts").exists()


def test_risk_prior_file_uniform_equals_uniform(state, tmp_path, capsys):
    prior = tmp_path / "prior.csv"
    prior.write_text("category,probability\n" + "".join(f"{c},{1 / 126!r}\n"
                                                        for c in range(126)))
    by_file = run_json([*_risk(state, "--adversary", "informed", "--prior", str(prior),
                               "--json")], capsys)
    named = run_json([*_risk(state, "--adversary", "informed", "--prior", "uniform",
                             "--json")], capsys)
    assert by_file["all"] == named["all"]


def test_risk_resumes_finished_partitions(state, tmp_path, monkeypatch):
    """A store holding finished partitions: a rerun computes none of them again."""
    from dprisk.inference.population import partitions, pipeline, risk
    from dprisk.inference.population.measurements import read_noisy_table
    from dprisk.inference.population.persons import read_persons

    persons = read_persons(state["persons"])
    meas = read_noisy_table(state["noisy"])
    store = tmp_path / "store"
    first = risk.population_risk(persons, meas, adversary="outsider", partition_persons=1,
                                 store=store)
    assert first.partitions > 1 and len(list(store.glob("part-*.npz"))) == first.partitions
    calls = []
    monkeypatch.setattr(pipeline, "partition_risk", lambda *a, **k: calls.append(1))
    again = risk.population_risk(persons, meas, adversary="outsider", partition_persons=1,
                                 store=store)
    assert calls == [] and again.summary() == first.summary()
    assert np.array_equal(again.posterior_true, first.posterior_true)
    assert partitions.STORE_PATTERN == "part-*.npz"
    assert set(COUNTS) >= {"persons", "nonmodal_persons"}


def test_risk_on_a_scheduler_address_equals_in_process(state, capsys):
    from distributed import LocalCluster

    alone = run_json([*_risk(state, "--adversary", "outsider", "--json")], capsys)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster:
        on_dask = run_json([*_risk(state, "--adversary", "outsider", "--partition-persons",
                                   "1", "--scheduler", cluster.scheduler_address, "--json")],
                           capsys)
    assert on_dask["partitions"] > 1
    assert on_dask["all"] == alone["all"] and on_dask["by_block_size"] == alone["by_block_size"]


def test_population_without_command_is_bad_input(capsys):
    status, out, err = run_cli(["population"], capsys)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1


# A process cluster costs 10-20 s to start on the 2-core machine: with `make bench`.
@pytest.mark.slow
def test_risk_on_a_two_worker_process_cluster_equals_in_process(state, tmp_path, capsys):
    from dprisk.inference.sweeps.sweep import local_cluster

    alone = run_json([*_risk(state, "--adversary", "informed", "--json")], capsys)
    with local_cluster(2) as cluster:
        on_dask = run_json([*_risk(state, "--adversary", "informed", "--partition-persons",
                                   "1", "--scheduler", cluster.scheduler_address, "--out",
                                   str(tmp_path / "out"), "--json")], capsys)
    assert on_dask["partitions"] > 1
    assert on_dask["all"] == alone["all"] and on_dask["by_block_size"] == alone["by_block_size"]


def test_risk_removes_a_killed_runs_working_directory_only(state, tmp_path, capsys):
    """A ``kill -9`` left ``.out-work-*`` beside ``--out`` (the finding); the next run removes
    it -- only a directory naming this host and a process that is gone, nothing else."""
    import os
    import socket
    import subprocess
    import sys

    from dprisk.cli.commands.population_risk import WORK_OWNER

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(gone.stdout)  # exited and reaped: no such process now
    host = socket.gethostname()
    made = {}
    for label, owner in [("dead", {"host": host, "pid": dead_pid}),
                         ("live", {"host": host, "pid": os.getpid()}),
                         ("elsewhere", {"host": host + "-other", "pid": dead_pid}),
                         ("unmarked", None)]:
        work = tmp_path / f".out-work-{label}"
        work.mkdir()
        (work / "spilled.parquet").write_bytes(b"x")
        if owner is not None:
            (work / WORK_OWNER).write_text(json.dumps(owner))
        made[label] = work
    run_json(_risk(state, "--adversary", "outsider", "--out", str(tmp_path / "out"), "--json"),
             capsys)
    assert not made["dead"].exists()
    assert all(made[label].exists() for label in ("live", "elsewhere", "unmarked"))
    left = sorted(p.name for p in tmp_path.glob(".out-work-*"))
    assert left == [".out-work-elsewhere", ".out-work-live", ".out-work-unmarked"], left
