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
    # 200 B a person beyond the doubles: refused by the memory limit, not an OverflowError
    assert_refused(["population", "synth", "--persons", "1e308", "--out",
                    str(tmp_path / "x")], "--persons", capsys, root=tmp_path)
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


def _work_directories_of_other_runs(folder) -> dict:
    """``.out-work-*`` directories beside an ``--out`` in ``folder``, as runs leave them.

    A ``kill -9`` left ``.out-work-*`` beside ``--out`` (the finding); the next run removes
    it -- only a directory naming this host and a process that is gone, nothing else. Returns
    the directories by label: dead (this host, a process that exited), live (this process),
    elsewhere (another host), unmarked (no owner file).
    """
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
        work = folder / f".out-work-{label}"
        work.mkdir()
        (work / "spilled.parquet").write_bytes(b"x")
        if owner is not None:
            (work / WORK_OWNER).write_text(json.dumps(owner))
        made[label] = work
    return made


def test_risk_out_files_keep_the_input_order(state, tmp_path, capsys):
    """The files of ``--out`` keep the persons' input order; the run also removes a killed
    run's working directory beside ``--out`` and only it (:func:`_work_directories_of_other_
    runs`: one run of the command for both checks, each a full run with its figures)."""
    made = _work_directories_of_other_runs(tmp_path)
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
    # a killed run's working directory is removed, the other runs' are left
    assert not made["dead"].exists()
    assert all(made[label].exists() for label in ("live", "elsewhere", "unmarked"))
    left = sorted(p.name for p in tmp_path.glob(".out-work-*"))
    assert left == [".out-work-elsewhere", ".out-work-live", ".out-work-unmarked"], left


@pytest.mark.parametrize("case, option", [
    ("unknown_geoid", "019990000000000"), ("cenrace_out_of_range", "cenrace"),
    ("not_parquet", "--persons"),
    ("negative_variance", "--noise-variance"), ("absent_state", "--nmf"),
    ("both_sources", "--noisy"), ("bad_prior_file", "--prior"),
    # sigma^2 outside 1e-4..1e8 (pipeline.VARIANCE_RANGE): given, or in the file's column
    ("huge_variance", "--noise-variance"), ("tiny_variance", "--noise-variance"),
    ("file_variance", "--noisy"), ("full_width_state", "--state"),
    ("unreachable_scheduler", "--scheduler"), ("parts_is_a_file", "--out"),
    ("prior_file_not_utf8", "prior.json"), ("noisy_geoid_of_no_person", "noisy.parquet"),
])
def test_risk_refuses_bad_input_and_writes_nothing(state, tmp_path, case, option, capsys,
                                                    monkeypatch):
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
    if case in ("huge_variance", "tiny_variance"):  # 1e14: a 1.6 GiB f-DP curve before
        extra += ["--noise-variance", "1e14" if case == "huge_variance" else "1e-320"]
    if case == "file_variance":
        noisy = pd.read_parquet(state["noisy"])
        noisy["variance"] = np.where(noisy["geoid"] == noisy["geoid"].iloc[-1], 1e14, 10.09)
        noisy.to_parquet(tmp_path / "noisy.parquet")
        extra = ["--noisy", str(tmp_path / "noisy.parquet")]
    if case == "full_width_state":
        extra = ["--nmf", str(state["nmf"]), "--state", "\uff10\uff11"]
    if case == "unreachable_scheduler":  # its working directory was left behind
        monkeypatch.setenv("DPRISK_SCHEDULER_TIMEOUT", "1")
        extra += ["--scheduler", "tcp://127.0.0.1:1"]
    if case == "parts_is_a_file":
        (tmp_path / "out.parts").write_text("the user's\n")
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
    before = sorted(path.name for path in tmp_path.iterdir())
    line = assert_refused(["population", "risk", "--persons", str(path), *extra,
                           "--adversary", "informed", "--out", str(out)], option, capsys)
    assert sorted(path.name for path in tmp_path.iterdir()) == before  # no work dir either
    assert case != "prior_file_not_utf8" or "--prior" in line
    assert case != "noisy_geoid_of_no_person" or (
        "--noisy" in line and f"geoid '01999000000000' at row {len(noisy) + 1} is not" in line)
    if case == "parts_is_a_file":
        assert (tmp_path / "out.parts").read_text() == "the user's\n"
    else:
        assert not out.exists() and not (tmp_path / "out.parts").exists()


def test_a_later_partitions_refusal_is_one_line_without_a_worker_traceback(state, tmp_path):
    """A block refused by the partition that reads it, on a process cluster's worker: one
    line on stderr (the variance's file, block and range), no Dask log of a failed task."""
    import os
    import subprocess
    import sys

    noisy = pd.read_parquet(state["noisy"])
    noisy["variance"] = np.where(noisy["geoid"] == noisy["geoid"].iloc[-1], 1e14, 10.09)
    noisy.to_parquet(tmp_path / "noisy.parquet")
    # The workers forked from one forkserver that imported Dask once, not two spawned
    # interpreters importing it each (7.0 -> 5.1 s of CPU): each is still a process of its own
    # writing to the command's stderr, and the refusal still reaches the command by pickle.
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD": "forkserver"}
    done = subprocess.run(
        [sys.executable, "-m", "dprisk", "population", "risk", "--persons",
         str(state["persons"]), "--noisy", str(tmp_path / "noisy.parquet"),
         "--partition-persons", "1000", "--adversary", "informed", "--out",
         str(tmp_path / "out")], capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"dprisk population risk: error: --noisy: {tmp_path / 'noisy.parquet'}: the variance "
        f"column of block '{noisy['geoid'].iloc[-1]}' is 100000000000000.0; allowed range: "
        "0.0001 <= sigma^2 <= 1e+08"], done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["noisy.parquet"]


def _measured_persons(tmp_path, rows, capsys) -> list[str]:
    """Write ``rows`` (geoid, hhgq, votingage, hispanic, cenrace) as a persons file, measure
    it (seed 1) and return ``population risk``'s ``--persons`` and ``--noisy`` arguments."""
    persons = tmp_path / "persons.parquet"
    pd.DataFrame(rows, columns=["geoid", "hhgq", "votingage", "hispanic", "cenrace"]).to_parquet(
        persons, index=False)
    _main(["population", "measure", "--persons", str(persons), "--seed", "1", "--out",
           str(tmp_path / "m")])
    capsys.readouterr()
    return ["population", "risk", "--persons", str(persons), "--noisy",
            str(tmp_path / "m" / "noisy.parquet")]


def test_risk_memory_check_counts_the_partitions_blocks(tmp_path, capsys, monkeypatch):
    """Persons alone in their blocks: the measurements of each block (about 100 KB while a
    partition computes) set the memory, not the persons (400 bytes each): 2,000 one-person
    blocks need about 230 MiB, refused under a 150 MiB limit (before: 0.8 MB estimated,
    and 951 MB used by 8,000)."""
    rows = [(f"01001{tract:06d}{1000 + block:04d}", 0, 1, 0, 1)
            for tract in range(20) for block in range(100)]
    argv = [*_measured_persons(tmp_path, rows, capsys), "--adversary", "informed"]
    monkeypatch.setenv("DPRISK_MEMORY_LIMIT", "150MiB")
    status, out, err = run_cli(argv, capsys)
    assert status == 2 and out == ""
    assert "the measurements of 2000 blocks held at once" in err and "DPRISK_MEMORY_LIMIT" in err


def test_risk_memory_check_holds_a_tract_larger_than_a_partition(tmp_path, capsys,
                                                                   monkeypatch):
    """A tract is never split: one tract (one block) of 50,000 persons is one partition of
    50,000 persons however small --partition-persons, 20 MB at 400 B a person (1.2M persons
    in one tract peaked at 444 MB, 1.1M persons spread over tracts at 231 MB). The check
    counted 2 x --partition-persons + --batch-rows = 5,200 persons (3.3 MB with the blocks),
    passed under 10 MiB; now 50,000 persons (21 MB), refused naming the largest tract."""
    rows = [("010010001001000", 0, 1, 0, 1)] * 50_000
    argv = [*_measured_persons(tmp_path, rows, capsys), "--adversary", "informed",
            "--partition-persons", "100", "--batch-rows", "5000"]
    monkeypatch.setenv("DPRISK_MEMORY_LIMIT", "10MiB")
    status, out, err = run_cli(argv, capsys)
    assert status == 2 and out == ""
    assert "50000 persons and the measurements of" in err, err
    assert "the largest tract holds 50000 persons" in err and "--partition-persons" in err


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


def test_the_measurement_loader_reads_a_relative_path_from_any_worker_directory(
        state, tmp_path, monkeypatch):
    """The loader sent to --scheduler's workers kept --noisy/--nmf as typed: a worker started
    in another directory refused a relative path, '--noisy: noisy.parquet: no such file'
    (seen with a dask worker started in another directory), or would read another file of
    that name. The loader now holds absolute paths, read the same from any directory."""
    import argparse
    import pickle

    from dprisk.cli.commands.population_risk import MeasurementLoader

    monkeypatch.chdir(state["root"])
    args = argparse.Namespace(noisy="table/noisy.parquet", nmf=None, state=None,
                              noise_variance=None)
    nmf_args = argparse.Namespace(noisy=None, nmf="nmf", state="01", noise_variance=None)
    loaders = [pickle.loads(pickle.dumps(MeasurementLoader(a))) for a in (args, nmf_args)]
    monkeypatch.chdir(tmp_path)  # a worker elsewhere
    geoids = sorted(pd.read_parquet(state["persons"]).geoid.unique())[:3]
    table, released = (loader(geoids) for loader in loaders)
    assert list(table.geoids) == list(released.geoids) == geoids
    np.testing.assert_array_equal(table.noisy, released.noisy)


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


def test_a_second_risk_run_on_the_same_out_is_refused_before_computing(state, tmp_path,
                                                                        monkeypatch, capsys):
    """The output's lock was taken only to write, at the end: a second run on the same --out
    computed every partition alongside the first and shared its DIR.parts (a bad-input run's
    clean-up deletes the partitions stored since it began, the other run's too), and only
    then wrote. Now the lock is held for the whole run: refused at once."""
    import os

    from dprisk.inference.population import stream
    from dprisk.runtime.output_lock import OutputLock

    def never(*args, **kwargs):
        raise AssertionError("computed although another run holds --out")

    monkeypatch.setattr(stream, "file_risk", never)
    out = tmp_path / "risk"
    with OutputLock(tmp_path / ".risk.lock", out, "--out"):  # the first run, still computing
        line = assert_refused(_risk(state, "--adversary", "informed", "--out", str(out)),
                              "--out", capsys)
    assert f"pid {os.getpid()}" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_full_disk_at_the_working_directory_leaves_nothing(state, tmp_path, monkeypatch,
                                                              capsys):
    """With 4 KB free, ``--out r/risk`` failed writing the working directory's owner file and
    left ``r/.risk-work-*/`` holding it empty: unreadable, so no later run removes it."""
    import errno
    import os
    from pathlib import Path

    from dprisk.cli.commands import population_risk

    write_text = Path.write_text

    def full(self, *args, **kwargs):
        if self.name == population_risk.WORK_OWNER:
            self.touch()  # made, then the write fails
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    status, _, err = run_cli(_risk(state, "--adversary", "informed", "--out",
                                   str(tmp_path / "r" / "risk")), capsys)
    assert status == 1 and "No space left" in err
    assert list(tmp_path.iterdir()) == []


def test_a_fifo_at_a_working_directorys_owner_file_is_left_not_read(tmp_path):
    """A FIFO at ``.out-work-*/.dprisk-population-work``: ``population risk --out out`` blocked
    for ever opening it while looking for a killed run's working directories (killed by a 20 s
    timeout). Now it is not opened: that directory is not one of ours, and is left alone."""
    import os
    import threading

    from dprisk.cli.commands.population_risk import WORK_OWNER, _remove_dead_work_dirs

    work = tmp_path / ".out-work-fifo"
    work.mkdir()
    os.mkfifo(work / WORK_OWNER)
    answers = []
    reader = threading.Thread(target=lambda: answers.append(
        _remove_dead_work_dirs(tmp_path, "out")), daemon=True)
    reader.start()
    reader.join(10)  # well above the milliseconds a scan takes; a blocked open never returns
    assert answers == [[]]
    assert sorted(p.name for p in work.iterdir()) == [WORK_OWNER]


@pytest.mark.parametrize("option", ["--batch-rows", "--partition-persons"])
@pytest.mark.parametrize("value", ["1e308", "9007199254740993", "0"])
def test_a_row_count_beyond_2_53_is_refused_naming_its_option(state, tmp_path, option, value,
                                                              capsys):
    """``--batch-rows 1e308`` was refused blaming the (good) persons file ('--persons ...: not
    a readable parquet file (OverflowError: Python int too large to convert to C long)'), and
    ``--partition-persons 1e308`` was accepted; both are integers in 1..2**53."""
    err = assert_refused(_risk(state, "--adversary", "informed", option, value), option,
                         capsys, root=tmp_path)
    assert "<= 2**53" in err and "--persons" not in err, err
