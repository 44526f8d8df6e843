"""Issue 32's findings of parts 3 and 5 that are fixed, one test each (they failed before).

* ``product --rho1 1e-6`` allocated a (2 K0 + 1) x (2 D + 1) table (1.55 GiB, MemoryError
  under a 2 GiB cap): the difference law is now in closed form
  (:func:`dprisk.inference.product.exact.difference_law`, checked here against the direct sum).
* ``product --others`` with 175+ entries: OverflowError; now refused naming ``--others``.
* ``product --rho2 1e-30`` blamed ``--others`` and suggested ``--method mc``; now names
  ``--rho2`` without the suggestion.
* probabilities above 1 (``noisy_p_correct`` 1.0000000000000002): clipped, rounding only.
* ``dprisk help > /dev/full`` exited 0: now exit 1 and one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_cli

from dprisk.inference.product import exact

DPRISK = str(Path(sys.executable).with_name("dprisk"))


@pytest.mark.parametrize(("rho", "d"), [(0.5, 1), (0.5, 2), (0.5, 3), (1e-3, 1), (2.0, 2)])
def test_difference_law_closed_form_matches_the_direct_sum(rho, d):
    q, half, _ = exact.difference_law(rho, d, 1e-13)
    wide = int(exact.support_halfwidth_kernel(rho, 1e-25)) + half + 2

    def phi(x):
        return np.exp(exact.noise_log_pmf(np.asarray(x, dtype=np.int64), rho))

    grids = np.meshgrid(*([np.arange(-half, half + 1)] * d), indexing="ij")
    direct = np.zeros(q.shape)
    for e0 in range(-wide, wide + 1):
        term = phi([e0])[0]
        for grid in grids:
            term = term * phi(e0 + grid)
        direct += term
    # both sums of positive terms in float64: relative rounding ~1e-14 (the largest seen)
    np.testing.assert_allclose(q, direct, rtol=1e-12, atol=1e-300)


def test_noise_tails_match_the_tail_of_each_start():
    for rho in (0.5, 1e-3, 2.0):
        got = exact.noise_tails(0, 40, rho)
        want = exact.noise_tail(np.arange(41), rho)
        keep = want > 1e-290
        np.testing.assert_allclose(got[keep], want[keep], rtol=1e-12)  # rounding of 1e3 terms


def test_product_tiny_rho1_answers_within_the_memory_limit(capsys):
    import tracemalloc

    tracemalloc.start()
    try:
        status, out, err = run_cli(["product", "--rho1", "1e-6", "--rho2", "0.5", "--others",
                                    "3", "--json"], capsys)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status == 0, err
    assert peak < 256 * 2**20  # was 1.55 GiB for one table
    payload = json.loads(out)
    assert 0.5 < payload["accuracy"] <= payload["noisy_accuracy"] + 1e-12


def test_product_many_others_refused_naming_others(capsys):
    status, out, err = run_cli(["product", "--rho1", "0.5", "--rho2", "0.5", "--others",
                                ",".join(["1"] * 300)], capsys)
    assert status == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "--others" in err and "OverflowError" not in err


def test_product_tiny_rho2_names_rho2_not_others(capsys):
    status, out, err = run_cli(["product", "--rho1", "0.5", "--rho2", "1e-30", "--others",
                                "3"], capsys)
    assert status == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "--rho2" in err and "--others" not in err and "--method mc" not in err


def test_product_probabilities_never_above_one(capsys):
    # p = 1 - 1e-16: the noisy side's summed likelihoods rounded to 1.0000000000000002
    status, out, err = run_cli(["product", "--rho1", "0.5", "--rho2", "0.5", "--others", "3",
                                "--p", "0.9999999999999999", "--json"], capsys)
    assert status == 0, err
    payload = json.loads(out)
    assert all(0.0 <= payload[key] <= 1.0 for key in payload if key != "neglected_mass")
    measures = exact.risk_measures(exact.noisy_table(0.5, 0.5, [3]).likelihood, 1 - 1e-16)
    assert max(measures.marginal_posterior, measures.p_correct, measures.accuracy) <= 1.0


@pytest.mark.parametrize("argv", [["help"], ["help", "census"], ["census", "--help"]])
def test_help_to_a_full_disk_fails_with_one_line(argv):
    with open("/dev/full", "w") as full:
        done = subprocess.run([DPRISK, *argv], stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "No space left" in done.stderr


@pytest.mark.parametrize("argv", [["census"], ["census", "--json"], ["census", "--help"],
                                  ["--version"]])
def test_a_closed_stdout_fails_like_a_full_disk(argv, tmp_path):
    """``dprisk census >&-`` wrote nothing and exited 0 (Python sets sys.stdout to None and
    print writes nothing); now status 1 and one line, as ``> /dev/full``. A file the command
    opens never gets descriptor 1 (held on /dev/null)."""
    done = subprocess.run([DPRISK, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=60, preexec_fn=lambda: os.close(1))
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "standard output is closed" in done.stderr


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["census", "--help"],
                                  ["help", "census"], ["census"]])
def test_a_reader_that_left_ends_help_as_any_output_with_status_0(argv):
    """``dprisk census --help | true``: standard output a pipe whose reader is gone. Every
    subcommand's output then ends with status 0 and no message (the reader left, nothing is
    wrong), and so does ``help census``; ``--help`` and ``--version`` failed with status 1
    ('failed: BrokenPipeError: [Errno 32] Broken pipe')."""
    reader, writer = os.pipe()
    os.close(reader)  # every write gets EPIPE
    try:
        done = subprocess.run([DPRISK, *argv], stdout=writer, stderr=subprocess.PIPE,
                              text=True, timeout=60)
    finally:
        os.close(writer)
    assert done.returncode == 0 and done.stderr == "", (done.returncode, done.stderr)
