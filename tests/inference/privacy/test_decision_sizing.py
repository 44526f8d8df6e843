"""Tests of inference/privacy/decision_sizing.py: the summary's and the one-level marginal's sizing.

The limits the sizing states are checked against the refusals of the computations themselves
(an independent reading: the replace-one lattice and the exact atoms refuse on their own just
below the stated rho and not just above it); the command line names the option as typed.
"""

import pytest
from cli_helpers import assert_refused, run_json

from dprisk.inference.nested.unique_levels_kernels import MAX_ATOMS, TAIL_ABSOLUTE, level_atoms
from dprisk.inference.privacy.decision_sizing import (
    check_one_level_size,
    check_summary_size,
    smallest_rho,
)
from dprisk.inference.privacy.decision_summary import PAPER_PRIORS, decision_summary
from dprisk.inference.privacy.worst_case import EXACT_TAIL
from dprisk.inference.single_level.replace_one import MAX_HALFWIDTH, difference_pmf
from dprisk.models.mechanism.discrete_gaussian import DEFAULT_TAIL_MASS

#: smallest_rho is found to a relative 1e-3 by bisection: 1 % either side is decided.
MARGIN = 1.01


@pytest.fixture
def no_work_limit(monkeypatch):
    """Only the ranges and the memory limit decide (the work limit set far above)."""
    monkeypatch.setenv("DPRISK_WORK_LIMIT", "1e18")


def test_das_noise_bound_is_the_lattice_sums_own(no_work_limit):
    cell = smallest_rho(MAX_HALFWIDTH, DEFAULT_TAIL_MASS)  # one cell's rho: rho1 / 2
    with pytest.raises(ValueError, match="too small for the exact lattice sum"):
        difference_pmf(cell / MARGIN)
    with pytest.raises(ValueError, match=r"^rho1: .*DAS's noise.*rho1 >= 2.27e-07"):
        check_summary_size(2 * cell / MARGIN, delta=1e-10, priors=PAPER_PRIORS)


@pytest.mark.slow
def test_das_noise_bound_admits_the_largest_lattice(no_work_limit):
    """Just above the stated rho the lattice sum runs (seconds: the largest lattice)."""
    cell = smallest_rho(MAX_HALFWIDTH, DEFAULT_TAIL_MASS)
    k, _ = difference_pmf(cell * MARGIN)
    assert k.size <= 4 * MAX_HALFWIDTH + 1
    check_summary_size(2 * cell * MARGIN, delta=1e-10, priors=PAPER_PRIORS)


def test_atom_bound_is_the_enumerations_own(no_work_limit):
    """The two-level accuracies enumerate rho2's window at TAIL_ABSOLUTE / 2 (the widest)."""
    tail = TAIL_ABSOLUTE / 2
    least = smallest_rho((MAX_ATOMS - 1) // 2, tail)
    with pytest.raises(ValueError, match="MAX_ATOMS"):
        level_atoms([least / MARGIN], tail)   # refused before the window is enumerated
    with pytest.raises(ValueError, match=r"^rho2: .*exact accuracy sums.*rho2 >= \d"):
        check_summary_size(0.5, least / MARGIN, delta=1e-10, priors=PAPER_PRIORS)
    # one level: the worst case's own tail
    one = smallest_rho((MAX_ATOMS - 1) // 2, EXACT_TAIL)
    with pytest.raises(ValueError, match="MAX_ATOMS"):
        level_atoms([one / MARGIN], EXACT_TAIL)
    with pytest.raises(ValueError, match=r"^--rho1: .*--rho1 >= 1.42e-11"):
        check_one_level_size(one / MARGIN, 0.5, name="--rho1")
    check_one_level_size(one * MARGIN, 0.5, name="--rho1")  # sized only: nothing built


@pytest.mark.parametrize(("rho1", "rho2", "named"), [
    (1e-320, None, "rho1"), (1e-13, None, "rho1"), (1e100, None, "rho1"),
    (0.5, 1e-320, "rho2"), (0.5, 1e-13, "rho2"), (0.5, 1e100, "rho2"), (1e100, 0.5, "rho1"),
])
def test_api_refusals_name_the_rho(rho1, rho2, named):
    """The sizing step refuses in the API too, naming the rho (no OverflowError, no
    MemoryError, no dp-accounting TypeError part-way)."""
    with pytest.raises(ValueError, match=rf"^{named}: "):
        decision_summary(rho1=rho1, rho2=rho2)


def test_contour_memory_named_when_the_rule_takes_it(no_work_limit):
    """rho2 inside the atom bound but with a 50 GiB contour integral: refused, named."""
    with pytest.raises(ValueError, match=r"^rho2: the marginal posterior's contour .* memory"):
        check_summary_size(0.5, 2e-11, delta=1e-10, priors=PAPER_PRIORS)


def test_work_limit_named(monkeypatch):
    monkeypatch.setenv("DPRISK_WORK_LIMIT", "1e6")
    with pytest.raises(ValueError, match=r"^rho2: .*work limit"):
        check_summary_size(0.5, 1e-6, delta=1e-10, priors=PAPER_PRIORS)


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.5, 10.0, 1e4])
def test_pld_model_bounds_dp_accountings_own_pmfs(rho):
    """The stored losses and the loss range (buckets when dense) the sizing counts bound those
    of the PLDs ``dp-accounting`` builds for the bracket (both ends), within a factor 3."""
    import math

    import numpy as np
    from dp_accounting.pld import privacy_loss_distribution

    from dprisk.inference.privacy.accounting import PLD_BRACKET_INTERVAL
    from dprisk.inference.privacy.decision_sizing import _pld_points

    values, buckets = _pld_points(rho)
    for pessimistic in (False, True):
        with np.errstate(over="ignore"):
            pld = privacy_loss_distribution.from_discrete_gaussian_mechanism(
                math.sqrt(1 / (2 * rho)), sensitivity=1, pessimistic_estimate=pessimistic,
                value_discretization_interval=PLD_BRACKET_INTERVAL,
                use_connect_dots=pessimistic)
        pmf = pld._pmf_remove  # the add side is the same pair mirrored
        if hasattr(pmf, "_loss_probs"):  # sparse
            losses = sorted(pmf._loss_probs)
            stored, width = len(losses), losses[-1] - losses[0] + 1
        else:
            stored, width = int(np.count_nonzero(pmf._probs)), pmf._probs.size
        assert stored <= 2 * values + 2
        assert width <= buckets <= 3 * width + 2


@pytest.mark.parametrize(("argv", "option"), [
    (["summary", "--rho1", "6.1e-05", "--rho2", "1e4"], "--rho2"),  # was 20 GB of dense PLD
    (["summary", "--rho1", "1e-320"], "--rho1"),          # was OverflowError (exit 1)
    (["summary", "--rho1", "0.5", "--rho2", "1e100"], "--rho2"),   # was a ufunc TypeError
    (["summary", "--rho1", "0.5", "--rho2", "1e-11"], "--rho2"),   # was 17 s, then 'rhos'
    (["marginal", "--rho1", "1e-11"], "--rho1"),          # was "method='contour'"
])
def test_command_line_refusals_name_the_option(argv, option, capsys):
    assert_refused([*argv, "--json"], option, capsys)


@pytest.mark.parametrize("argv", [["epsilon", "--rho", "357"], ["summary", "--rho1", "355"]])
def test_large_rho_answers_without_a_warning(argv, capsys, tmp_path, monkeypatch):
    """dp-accounting's connect-the-dots pmf overflowed ``expm1`` at rho of about 350 and above:
    a RuntimeWarning on stderr beside the answer (exit 1 where warnings are errors, as here).
    The PLD epsilon of one such query is rho itself to 1e-9 relative (the loss of the likely
    release; the discretisation interval is 2e-5)."""
    monkeypatch.setenv("DPRISK_CACHE_DIR", str(tmp_path))  # computed, not read from a cache
    payload = run_json([*argv, "--json"], capsys)
    rho = float(argv[-1])
    assert payload["epsilon_pld_upper"] == pytest.approx(rho, rel=1e-9)
    assert payload["epsilon_pld_lower"] <= payload["epsilon_pld_upper"]


@pytest.mark.parametrize("rho2", [None, 0.2])
def test_a_delta_without_cks_epsilon_is_named_delta(rho2, monkeypatch):
    """delta = 0.999 has no CKS epsilon for any rho (allowed: delta < about 0.9896).

    Before: decision_summary(rho1=1e-3, delta=0.999) was refused 'rho1: delta = 0.999: ...',
    blaming rho1 (no rho1 helps); now the accountant's refusal of delta, unchanged, as with
    census=True. With census=True it is refused before the strategy's PLD bracket at that
    delta is composed (65 queries at the grid 2e-5: 17 s of CPU with an empty cache, before).
    """
    from dprisk.inference.privacy import accounting

    with pytest.raises(ValueError, match=r"^delta = 0\.999: .*allowed range.*delta"):
        decision_summary(rho1=1e-3, rho2=rho2, delta=0.999)

    def never(*args, **kwargs):
        raise AssertionError("the PLD bracket was composed before the refusal")

    monkeypatch.setattr(accounting, "census_epsilon_pld_bracket", never)
    with pytest.raises(ValueError, match=r"^delta = 0\.999: "):
        decision_summary(census=True, delta=0.999)
