"""``dprisk budget`` findings of issue 32: the two-level search sized up front, the worst-case
crossing below any scan start, refusals naming the option as typed.

Each test failed on the code before the fix (stated per test).
"""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest
from cli_helpers import assert_refused, record_calls, run_cli

from dprisk.inference.privacy.budget import WORST_CASE_RHO_FLOOR, rho_for_target
from dprisk.inference.privacy.budget_levels import census_rho_for_target, rho2_for_target
from dprisk.inference.privacy.worst_case import one_level_accuracy_bound, worst_case_accuracy
from dprisk.runtime.memory_limit import MemoryLimitError
from dprisk.runtime.work_limit import LIMIT_ENV, WorkLimitError

TWO_LEVEL = ["budget", "--measure", "marginal-posterior", "--target", "0.9", "--d", "3",
             "--x2", "5"]


@pytest.fixture
def default_limits(monkeypatch):
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    monkeypatch.delenv("DPRISK_MEMORY_LIMIT", raising=False)


def test_two_level_search_sized_before_it_runs(default_limits):
    """rho1 = 1e-6: the scan sums 2.3e8 releases per prior (hours at the default limit).

    Before: no check on the marginal measures' path (minutes of work before any answer).
    The refusal comes from the estimate alone (well under a second; bound 5 s of wall time,
    generous for a shared machine).
    """
    start = time.perf_counter()
    with pytest.raises(WorkLimitError, match=r"^rho1, d: the two-level search's scan of 151 rho"):
        rho2_for_target(0.9, rho1=1e-6, x2=5, d=3, measure="marginal-posterior")
    assert time.perf_counter() - start < 5.0


def test_census_search_sized_by_d(default_limits):
    """--census with d = 1e5: the first grid needs 57 GiB; before, named 'rho1, rho2'."""
    with pytest.raises(MemoryLimitError, match=r"^d: the release grid"):
        census_rho_for_target("p-correct", 0.9, x2=5, d=100_000)


@pytest.mark.parametrize(("argv", "option"), [
    ([*TWO_LEVEL, "--rho1", "1e-6"], "--rho1, --d: the two-level search's scan"),
    ([*TWO_LEVEL, "--rho1", "1e-9"], "--rho1, --d: the release grid"),
    (["budget", "--census", "--measure", "p-correct", "--target", "0.9", "--d", "100000",
      "--x2", "5"], "--d: the release grid"),
    # one search per prior: 1000 priors at rho1 = 0.1, d = 5 (1.1e10 steps each) were refused
    # naming only '--rho1, --d', the options that size one search
    (["budget", "--measure", "p-correct", "--target", "0.6", "--rho1", "0.1", "--d", "5",
      "--x2", "3", "--p", ",".join(f"{k}/2000" for k in range(1, 1001))],
     "--rho1, --d, --p: the two-level search's scan of 151 rho in [0.001, 1000] x 1000 "
     "prior(s)"),
])
def test_cli_sizing_refusals_name_the_options(argv, option, default_limits, capsys):
    """One stderr line naming the options as typed (before: 'rho1, rho2:', the API's names)."""
    assert_refused(argv, f"error: {option}", capsys)


# --------------------------------------------------------------- worst-case accuracy crossing
def test_worst_case_bound_is_an_increasing_upper_bound():
    """B(rho, p) >= A*(rho, p) and B non-decreasing in rho, on a grid (60 rho x 6 priors).

    Tolerance 4e-15: A* is a sum of ~1e4 terms of order 1 (rounding ~1e-15); at p = 1/2
    B is A* itself.
    """
    rhos = np.geomspace(1e-6, 30.0, 60)
    for p in (0.5, 0.4999, 0.3, 0.2, 1 / 864, 0.9):
        bound = np.array([one_level_accuracy_bound(rho, p) for rho in rhos])
        exact = np.array([worst_case_accuracy(rho, p, method="exact").accuracy for rho in rhos])
        assert np.all(bound >= exact - 4e-15), p
        assert np.all(np.diff(bound) >= 0.0), p


def test_worst_case_crossing_below_the_old_scan_start():
    """Target 0.5002 at p = 1/2 crosses at rho = pi (4e-4)^2 = 5.03e-7, below the old 1e-6.

    Before: "never exceeded ... any rho meets it" (the scan began at 1e-6 where the measure,
    0.50028, is already above). At p = 1/2, A* = (1 + 1/Z(rho))/2 and Z = sqrt(pi/rho) to
    exp(-pi^2/rho) (zero in floats here), so rho* = pi (2 (T - 1/2))^2; tolerance rel 1e-9
    (the measure's rounding, ~1e-16 on a gain of 2e-4, moves the root by ~1e-12).
    """
    answer = rho_for_target("worst-case-accuracy", 0.5002)
    assert answer.rho == pytest.approx(math.pi * 4e-4**2, rel=1e-9)
    assert answer.value_at_rho <= 0.5002 < answer.value_above
    below = np.geomspace(WORST_CASE_RHO_FLOOR, answer.rho, 8)  # the target holds below it
    assert max(worst_case_accuracy(rho, 0.5, method="exact").accuracy for rho in below) <= 0.5002


def test_worst_case_cli_answers_and_names_where_the_search_begins(capsys):
    status, out, err = run_cli(["budget", "--measure", "worst-case-accuracy", "--target",
                                "0.5002", "--json"], capsys)
    assert status == 0 and err == "", err
    assert json.loads(out)["rho"] == pytest.approx(math.pi * 4e-4**2, rel=1e-9)
    # within 2.8e-5 of 1/2 the crossing may lie below the search's floor: refused, naming it
    argv = ["budget", "--measure", "worst-case-accuracy", "--target", "0.50001"]
    err = assert_refused(argv, "--target", capsys)  # its stderr line
    assert f"rho = {WORST_CASE_RHO_FLOOR:g}" in err and "allowed range: 0.50002" in err, err


# --------------------------------------------------------------------------------- messages
@pytest.mark.parametrize(("argv", "named", "says"), [
    # before: "rho = 3.2e-18 with delta = 1e-10: ..." (the API's rho, no option); 3.2e-18 has
    # a CKS epsilon since the CKS bracket was fixed: 0.500000000001 gives rho = 3.2e-22
    (["--census", "--measure", "p-correct", "--target", "0.500000000001"], "--target",
     "rho = "),
    # before: "target > 1" with "must be below 1" (1 - 1e-320 is 1 in floats)
    (["--measure", "worst-case-accuracy", "--target", "0.9", "--p", "1e-320"], "--p",
     "no target for the worst-case-accuracy"),
    (["--census", "--measure", "worst-case-accuracy", "--target", "0.9", "--p", "0.5,1e-320"],
     "--p", "within one float of its supremum 1"),
    (["--measure", "marginal-posterior", "--target", "0.9", "--p", "0.9999999999999999"],
     "--p", "no target for the marginal-posterior"),
    # before: "target > 1" (the floor 0.9999999999999998 printed to 6 digits)
    (["--measure", "marginal-posterior", "--target", "0.9", "--p", "0.9999999999999998"],
     "--target", "allowed range: --target > 0.9999999999999998"),
])
def test_budget_refusals_name_the_option(argv, named, says, capsys):
    err = assert_refused(["budget", *argv], named, capsys)  # its stderr line
    assert says in err and "target > 1)" not in err, err


@pytest.mark.parametrize("p", ["1e-320", "0.9999999999999999", "1e-300"])
@pytest.mark.parametrize("rho", ["0.5", "100"])
def test_product_probabilities_never_above_one(p, rho, capsys):
    """The rows' plain float sums land an ulp above 1 (sum of the rounded likelihoods of
    rho 0.5, others 3: 1.0000000000000002, exactly rounded 1.0); before commit 281e959
    product --p 1e-320 printed noisy_accuracy 1.0000000000000002. Every printed measure is
    in [0, 1] (the clip of exact.risk_measures removes only rounding)."""
    status, out, err = run_cli(["product", "--rho1", rho, "--rho2", rho, "--others", "3",
                                "--p", p, "--json"], capsys)
    assert status == 0 and err == "", err
    payload = json.loads(out)
    for key in ("marginal_posterior", "p_correct", "accuracy", "noisy_marginal_posterior",
                "noisy_p_correct", "noisy_accuracy"):
        assert 0.0 <= payload[key] <= 1.0, (key, payload[key])


@pytest.fixture(scope="module")
def kernel_answers():
    """The single-level marginal kernel's answers by (rho, p), kept for the module's tests."""
    return {}


@pytest.fixture
def kernel_answered_once(kernel_answers, monkeypatch):
    """``marginal_posterior_and_risk`` computed once per (rho, p) in this module.

    Both cases of the test below evaluate it at rho = 1e-12, p = 1/2 (a grid of about 1.3e7
    releases, 0.9 s of CPU): the kernel is a function of its arguments alone (NumPy sums, no
    state), so the second case's search is answered the same columns, bit for bit, and still
    calls it (each call is recorded above this one).
    """
    from dprisk.inference.single_level import closed_form_kernels

    kernel = closed_form_kernels.marginal_posterior_and_risk

    def answered_once(rho, p):
        key = (np.asarray(rho, dtype=float).tobytes(), np.asarray(p, dtype=float).tobytes(),
               np.shape(rho), np.shape(p))
        if key not in kernel_answers:
            kernel_answers[key] = kernel(rho, p)
        return kernel_answers[key]

    monkeypatch.setattr(closed_form_kernels, "marginal_posterior_and_risk", answered_once)


@pytest.mark.parametrize(("measure", "target"), [("marginal-risk", "1.0000000000005"),
                                                  ("marginal-posterior", "0.5000000000001")])
def test_marginal_target_crossed_below_the_search_is_not_called_never_exceeded(
        measure, target, capsys, monkeypatch, kernel_answered_once):
    """A target the marginal measure exceeds already at rho = 1e-12 (the smallest searched).

    Before: "never exceeded ... any rho meets it", the opposite of the truth (the measure
    rises to 1/p resp. 1; at rho = 1 it is 1.6 resp. 0.8). The refusal names --target and
    gives the measure at 1e-12 (R = 1 + 5.0e-13, posterior 1/2 + 2.5e-13 at p = 1/2) as the
    smallest target; the targets lie 1e-14 or more below it, 50 ulps, far above its rounding.

    The measure at 1e-12 is the one the command computed there (recorded, not computed again:
    a grid of about 1.3e7 releases, 0.9 s of CPU), from the kernel that
    :func:`~dprisk.inference.single_level.closed_form.marginal_risk` and ``marginal_posterior``
    return columns of; the search evaluates it there once. Both measures are columns of the
    one kernel call there, which the module computes once (``kernel_answered_once``).
    """
    from dprisk.inference.single_level import closed_form_kernels

    calls = record_calls(monkeypatch, closed_form_kernels, "marginal_posterior_and_risk")
    argv = ["budget", "--measure", measure, "--target", target]
    err = assert_refused(argv, "--target", capsys)  # its stderr line: the command run once
    at_smallest = [answer for arguments, answer in calls
                   if float(arguments.arguments["rho"]) == 1e-12]
    assert len(at_smallest) == 1, [float(arguments.arguments["rho"]) for arguments, _ in calls]
    at_floor = float(at_smallest[0][2 if measure == "marginal-risk" else 1])
    assert float(target) < at_floor
    assert "never exceeded" not in err and "rho = 1e-12" in err, err
    assert f"allowed range: target >= {at_floor!r}" in err, err


def test_a_census_refusal_says_its_rho_is_the_block_s(capsys):
    """With --census the user's rho is the global one, but the refusals quoted the block's
    search ('at rho = 1e-08, where the search begins') as if it were: they now say that rho
    is the block's share and how to get the global rho from it (the share 0.0387603)."""
    from dprisk.inference.privacy.budget_levels import census_fractions

    block = float(census_fractions()[0])
    argv = ["budget", "--measure", "worst-case-accuracy", "--target", "0.5000001", "--census"]
    err = assert_refused(argv, "--target", capsys)
    assert "at rho = 1e-08" in err and f"global rho = block rho / {block:.6g}" in err, err


def test_two_level_scan_start_refusal_states_a_bound_it_accepts(capsys):
    """The two-level search's refusal of a target the measure exceeds at its first scan point.

    Before: the bound was rounded to nearest at 6 digits, 'must exceed ..., which is 2.14613;
    got 2.146130214613' (the typed target does exceed 2.14613; the measure there is
    2.1461345): the message contradicted itself. The bound is now printed in full, the typed
    target lies below it, and the bound itself is accepted (the answer is the scan's start).
    """
    import re

    argv = ["budget", "--measure", "marginal-risk", "--target", "2.146130214613", "--rho1",
            "1", "--d", "1", "--x2", "2", "--p", "0.2"]
    err = assert_refused(argv, "--target", capsys)  # its stderr line
    stated = float(re.search(r"allowed range: at least ([0-9.e+-]+)\)", err).group(1))
    assert stated > 2.146130214613, err
    answer = rho2_for_target(stated, rho1=1.0, x2=2, d=1, p=[0.2], measure="marginal-risk")
    assert answer.rho == pytest.approx(1e-3, rel=1e-12) and answer.value_at_rho <= stated
