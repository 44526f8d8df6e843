"""Numbers at the edges (issue 24): a contract met, or exit 2 naming the option.

* ``epsilon --rho 1e-300``: the accountant's CKS bound is clipped at 0 there; its help
  promises exit 2 below about 1.36e-20 (at delta 1e-10, where the bound reaches 0), so 0 is
  refused.
* Budget certificates are verified before they are printed: a target within 1e-8 of the
  marginal posterior's supremum has no certified first crossing (the measure just above
  rho* rounds to the target) -- exit 2 naming ``--target``; a certified answer is printed
  with ``value_at_rho <= target < value_above``.
* ``attribute --x2-prior bogus`` names ``--x2-prior``; the API names ``n_cells`` as written.
"""

from __future__ import annotations

import json

import pytest
from cli_helpers import run_cli

from dprisk.inference.attribute.design import expected_true_posterior, p_map_correct
from dprisk.inference.privacy.accounting import epsilon_cks
from dprisk.inference.privacy.budget import DGBudget, check_certificate


@pytest.mark.parametrize("rho", ["1e-300", "1e-20", "5e-324"])
def test_tiny_rho_cks_epsilon_is_refused_not_zero(rho, capsys):
    status, out, err = run_cli(["epsilon", "--rho", rho, "--json"], capsys)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "the CKS bound is 0 there" in err, err
    assert "allowed range at delta = 1e-10: about 1.36e-20 < rho <= 2.3e+05" in err, err


def test_cks_zero_is_refused_in_the_api():
    with pytest.raises(ValueError, match="the CKS bound is 0 there"):
        epsilon_cks(1e-300, 1e-10)


def test_target_within_rounding_of_the_supremum_is_refused_naming_target(capsys):
    status, out, err = run_cli(["budget", "--measure", "marginal-posterior", "--target",
                                "0.99999999", "--json"], capsys)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "--target" in err and "cannot be certified" in err, err


def test_printed_certificates_hold(capsys):
    status, out, err = run_cli(["budget", "--measure", "marginal-risk", "--target", "1.5",
                                "--json"], capsys)
    assert status == 0, err
    answer = json.loads(out)
    assert answer["value_at_rho"] <= answer["target"] < answer["value_above"]


@pytest.mark.parametrize(("at", "above", "ok"), [
    (0.5, 0.6, True), (0.5, 0.5, False), (0.6, 0.7, False), (0.4, 0.5, False),
])
def test_check_certificate_table(at, above, ok):
    answer = DGBudget(1.0, "marginal-posterior", 0.5, 0.5, at, above)
    if ok:
        assert check_certificate(answer) is answer
    else:
        with pytest.raises(ValueError, match=r"^--target = 0.5 cannot be certified"):
            check_certificate(answer, "--target")


def test_x2_prior_refusal_names_the_option(capsys):
    status, _, err = run_cli(["attribute", "--rho1", "0.5", "--cells", "2016", "--strategy",
                              "census-2020", "--rho2", "0.5", "--d", "3", "--x2-prior",
                              "bogus"], capsys)
    assert status == 2
    assert err.startswith("dprisk attribute: error: --x2-prior 'bogus'"), err


@pytest.mark.parametrize("function", [p_map_correct, expected_true_posterior])
def test_api_names_n_cells_as_written(function):
    with pytest.raises(ValueError, match=r"^n_cells must be an integer >= 2"):
        function(0.5, n_cells=1)
    with pytest.raises(ValueError, match=r"^n_cells must be given"):
        function(0.5)
