"""Output paths that are not valid UTF-8 are refused before any work, naming the option.

A file name given as bytes such as ``b'\\xff.nc'`` (a shell on a Latin-1 file system, a script
calling ``dprisk`` with ``os.fsencode``) reaches Python as a lone surrogate
(``os.fsdecode``: ``'\\udcff.nc'``). The netCDF, Parquet and figure writers and the printed
answers take UTF-8 only: before, ``sweep --out`` failed after its work with a codec message
naming no option and left ``\\xff.nc.chunks/`` behind, ``reproduce --out`` ran its whole
report. Every output option (``--plot``, ``--save-draws``, ``--plots``, ``--out``) now goes
through :func:`dprisk.runtime.output_files.check_creatable`, which refuses it with exit 2, one
stderr line naming the option (and showing the bytes), nothing on stdout, nothing written.
Run in-process (the refusal comes before any work: a few milliseconds each).
"""

from __future__ import annotations

import os

import pytest
from cli_helpers import assert_refused

#: A name that is not UTF-8, as Python receives it from the command line.
NOT_UTF8 = os.fsdecode(b"\xff")
POSTERIOR = ["posterior", "--rho1", "0.5", "--rho2", "0.5", "--d", "3", "--x1-star", "1",
             "--x2-star", "5", "--y1-star", "4", "--method", "gibbs", "--draws", "20",
             "--chains", "1", "--seed", "1"]
CASES = {
    "prior --plot": (["prior", "improper", "--plot", f"{NOT_UTF8}.png"], "--plot"),
    "posterior --save-draws": ([*POSTERIOR, "--save-draws", f"{NOT_UTF8}.nc"], "--save-draws"),
    "posterior --plots": ([*POSTERIOR, "--plots", f"{NOT_UTF8}dir"], "--plots"),
    "posterior --plots (a folder on the way)": (
        [*POSTERIOR, "--plots", f"{NOT_UTF8}/plots"], "--plots"),
    "sweep --out": (["sweep", "--rho1", "0.5", "--rho2", "0.25", "--d", "3", "--x2", "2",
                     "--out", f"{NOT_UTF8}.nc"], "--out"),
    "reproduce --out": (["reproduce", "--out", f"{NOT_UTF8}report"], "--out"),
    "population synth --out": (["population", "synth", "--persons", "10", "--seed", "1",
                                "--out", f"{NOT_UTF8}pop"], "--out"),
    "population measure --out": (["population", "measure", "--persons", "missing.parquet",
                                  "--seed", "1", "--out", f"{NOT_UTF8}noisy"], "--out"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_non_utf8_output_refused_before_any_work(case, json_flag, tmp_path, monkeypatch,
                                                  capsys):
    argv, option = CASES[case]
    monkeypatch.chdir(tmp_path)
    assert_refused([*argv, *json_flag], option, capsys)
    assert os.listdir(tmp_path) == []  # no lock, temporary, chunk folder or output


def test_the_refusal_shows_the_bytes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert_refused(["prior", "improper", "--plot", f"{NOT_UTF8}.png"], r"b'\xff.png'", capsys)
