"""A write that fails on a full disk says so, naming the output option and the free bytes.

At 12-16 KiB free (a 200 KiB tmpfs filled by hand), ``sweep --out`` failed with
``PermissionError: [Errno 13] Permission denied: '.../.s.nc.PID.x.tmp'`` or ``RuntimeError:
NetCDF: HDF error`` and ``posterior --save-draws`` with the latter: nothing said the disk was
full. The failures and the file system's free space (``os.statvfs``) are simulated here; the
exit status stays 1 (a failure while computing, docs/cli.md), nothing is written.
"""

from __future__ import annotations

import errno
import os
from types import SimpleNamespace

import pytest
from cli_helpers import run_cli

SWEEP = ["sweep", "--rho1", "0.5", "--rho2", "0.25", "--d", "3", "--x2", "2", "--out", "s.nc"]
POSTERIOR = ["posterior", "--rho1", "0.5", "--rho2", "0.25", "--d", "3", "--x1-star", "1",
             "--x2-star", "3", "--y1-star", "2", "--method", "gibbs", "--seed", "1",
             "--draws", "100", "--chains", "2", "--save-draws", "d.nc"]


def _hdf_error(*args, **kwargs):
    raise RuntimeError("NetCDF: HDF error")


def _permission_denied(self):
    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), ".d.nc.1.x.tmp")


def _no_space(self):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _fail(monkeypatch, argv, failure):
    """Make the write of ``argv``'s output fail with ``failure``."""
    if argv is SWEEP:
        from dprisk.inference.sweeps import store

        monkeypatch.setattr(store, "write_table", _hdf_error)
    else:
        from dprisk.runtime.new_outputs import NewOutput

        monkeypatch.setattr(NewOutput, "temporary", failure)


def _free(monkeypatch, free_bytes):
    """``os.statvfs`` of any path: ``free_bytes`` free to this user (4 KiB blocks)."""
    monkeypatch.setattr(os, "statvfs", lambda path: SimpleNamespace(
        f_bavail=free_bytes // 4096, f_frsize=4096))


@pytest.mark.parametrize(("argv", "option", "failure", "shown"), [
    (SWEEP, "--out", _hdf_error, "RuntimeError: NetCDF: HDF error"),
    (POSTERIOR, "--save-draws", _permission_denied, "PermissionError: [Errno 13]"),
], ids=["sweep", "posterior"])
def test_a_failed_write_on_a_full_disk_names_the_option_and_free_bytes(
        argv, option, failure, shown, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _fail(monkeypatch, argv, failure)
    _free(monkeypatch, 12288)
    status, out, err = run_cli(argv, capsys)
    path = argv[argv.index(option) + 1]
    assert status == 1 and out == ""
    assert err.splitlines() == [err.strip()]  # one line
    assert f": failed: {option} {path!r}: the disk is full (12288 bytes free); {shown}" in err
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".chunks")) == []


def test_a_failure_with_space_left_is_reported_as_before(tmp_path, monkeypatch, capsys):
    """2 GiB free and no ENOSPC: the failure's own message, nothing about the disk."""
    monkeypatch.chdir(tmp_path)
    _fail(monkeypatch, SWEEP, _hdf_error)
    _free(monkeypatch, 2 << 30)
    status, _, err = run_cli(SWEEP, capsys)
    assert status == 1 and err == "dprisk sweep: failed: RuntimeError: NetCDF: HDF error\n"


def test_enospc_is_a_full_disk_whatever_statvfs_says(tmp_path, monkeypatch, capsys):
    """ENOSPC (or EDQUOT) says the disk is full even with space free (a quota, reserved blocks)."""
    monkeypatch.chdir(tmp_path)
    _fail(monkeypatch, POSTERIOR, _no_space)
    _free(monkeypatch, 2 << 30)
    status, _, err = run_cli(POSTERIOR, capsys)
    assert status == 1
    assert f"--save-draws 'd.nc': the disk is full ({2 << 30} bytes free); OSError" in err
