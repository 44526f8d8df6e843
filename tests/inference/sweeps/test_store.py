"""Tests of inference.sweep_store: chunk files, manifests, the finished file."""

import numpy as np
import pytest

from dprisk.inference.sweeps.plan import VARIABLES, plan_sweep
from dprisk.inference.sweeps.store import (
    MANIFEST,
    ChunkStore,
    check_out,
    chunk_dir,
    load_finished,
    stored_manifest,
)
from dprisk.inference.sweeps.sweep import sweep


def standin(*, rho1, rho2, d, x2, p=0.5, known=0, prior="improper"):
    """A cheap deterministic quantity."""
    return {"p_correct": rho1, "p_correct_no_hierarchy": rho2, "gain": d / 100, "loss": x2 / 100}


GRID = {"rho1": 0.1, "rho2": [0.25, 1.0], "d": 3, "x2": [1, 2, 3], "chunk_size": 4}


def _plan(**changes):
    return plan_sweep(**{**GRID, **changes}, quantity=standin)[0]


def test_chunks_round_trip_and_a_different_sweep_is_refused(tmp_path):
    out = tmp_path / "s.nc"
    store = ChunkStore(out, _plan())
    store.open()
    assert (chunk_dir(out) / MANIFEST).exists()
    values = np.arange(len(VARIABLES) * 4, dtype=float).reshape(len(VARIABLES), 4)
    store.save(0, values)
    np.testing.assert_array_equal(store.load(0), values)
    assert store.load(1) is None  # not yet computed
    store.save(1, values)  # wrong shape for the last chunk (2 points): treated as missing
    assert store.load(1) is None
    with pytest.raises(ValueError, match="different sweep"):
        ChunkStore(out, _plan(rho1=0.2)).open()


def test_stored_manifest_of_interrupted_finished_and_absent_sweeps(tmp_path):
    out = tmp_path / "s.nc"
    assert stored_manifest(out) is None
    plan = _plan()
    ChunkStore(out, plan).open()
    assert stored_manifest(out) == plan.manifest()  # interrupted: the sidecar's manifest
    ChunkStore(out, plan).remove()
    sweep(**GRID, quantity=standin, out=out, progress=False)
    assert stored_manifest(out) == plan.identity()  # finished: the file's sweep_manifest
    assert load_finished(out, plan).sizes == {"rho2": 2, "x2": 3}
    with pytest.raises(ValueError, match="different sweep"):
        load_finished(out, _plan(d=4))


def test_check_out_names_out(tmp_path):
    assert check_out(tmp_path / "a" / "s.nc") == (tmp_path / "a" / "s.nc").resolve()
    with pytest.raises(ValueError, match=r"out must be a path ending in \.nc"):
        check_out(tmp_path / "s.txt")
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="cannot be created"):
        check_out(tmp_path / "file" / "s.nc")
    with pytest.raises(TypeError, match="out"):
        check_out(3)


def test_check_out_refuses_a_symbolic_link_and_resolves_only_its_directory(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "via").symlink_to("real")
    assert check_out(tmp_path / "via" / "s.nc") == tmp_path.resolve() / "real" / "s.nc"
    (tmp_path / "dangling.nc").symlink_to(tmp_path / "elsewhere" / "target.nc")
    with pytest.raises(ValueError, match="is a symbolic link; refusing to replace it"):
        check_out(tmp_path / "dangling.nc")
    assert not (tmp_path / "elsewhere").exists()


def _stopping(**point):
    raise KeyboardInterrupt("stopped before any chunk finished")


def test_a_run_stopped_before_any_chunk_leaves_no_directory_it_made(tmp_path):
    """``dprisk sweep --out a/b/s.nc`` stopped before its first chunk removed ``s.nc.chunks``
    but left ``a/b`` (made for it) behind, empty; a finished chunk keeps them for the rerun."""
    out = tmp_path / "a" / "b" / "s.nc"
    with pytest.raises(KeyboardInterrupt):
        sweep(**GRID, quantity=_stopping, out=out, progress=False)
    assert list(tmp_path.iterdir()) == []
    calls = []

    def second_chunk_stops(**point):
        calls.append(point)
        if len(calls) > GRID["chunk_size"]:
            raise KeyboardInterrupt("stopped after the first chunk")
        return standin(**point)

    with pytest.raises(KeyboardInterrupt):
        sweep(**GRID, quantity=second_chunk_stops, out=out, progress=False)
    assert [p.name for p in chunk_dir(out).glob("chunk_*.npy")] == ["chunk_0000000.npy"]


def test_a_full_disk_at_the_lock_leaves_no_chunk_store(tmp_path, monkeypatch):
    """``sweep --out full/s.nc`` on a full tmpfs left ``s.nc.chunks/`` (made for its lock)."""
    from full_disk import fail_lock_pid_write

    fail_lock_pid_write(monkeypatch)
    with pytest.raises(OSError, match="No space"):
        sweep(**GRID, quantity=standin, out=tmp_path / "a" / "s.nc", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_a_linked_lock_in_the_chunk_store_is_refused_untouched(tmp_path):
    from dprisk.runtime.output_files import OutputError

    mine = tmp_path / "mine.txt"
    mine.write_text("the user's file")
    out = tmp_path / "s.nc"
    chunk_dir(out).mkdir()
    (chunk_dir(out) / "lock").symlink_to(mine)
    with pytest.raises(OutputError, match="lock file"):
        sweep(**GRID, quantity=standin, out=out, progress=False)
    assert mine.read_text() == "the user's file" and not out.exists()


def test_a_fifo_at_the_manifest_is_refused_not_read(tmp_path):
    """A FIFO at ``OUT.chunks/manifest.json`` beside a finished chunk: ``dprisk sweep`` blocked
    for ever opening it (killed by a 20 s timeout). Now ``stored_manifest`` is None and
    ``open`` refuses it (an OutputError naming out), without opening it."""
    import os
    import threading

    from dprisk.runtime.output_files import OutputError

    out = tmp_path / "s.nc"
    chunk_dir(out).mkdir()
    (chunk_dir(out) / "chunk_0000.npy").touch()
    os.mkfifo(chunk_dir(out) / MANIFEST)
    answers = []

    def both():
        answers.append(stored_manifest(out))
        try:
            ChunkStore(out, _plan()).open()
        except OutputError as err:
            answers.append(str(err))

    reader = threading.Thread(target=both, daemon=True)
    reader.start()
    reader.join(10)  # well above the milliseconds a refusal takes; a blocked open never returns
    assert len(answers) == 2 and answers[0] is None
    assert answers[1].startswith("out: ") and "not a regular file" in answers[1]
    assert sorted(p.name for p in chunk_dir(out).iterdir()) == ["chunk_0000.npy", MANIFEST]
