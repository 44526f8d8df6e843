"""``dprisk product``: the exact keys, the reference, the text form and exit 2 on bad input.

The numbers are those of :func:`dprisk.inference.product.exact.product_risk` (equality: the
CLI only formats); the reference carries 7 digits (``atol = 5e-8``).
"""

import json

import pytest
from cli_helpers import run_cli

from dprisk.inference.product.exact import product_risk
from dprisk.models.census.allocation import census_level

BASE = ("product", "--rho1", "census:block", "--rho2", "census:block-group", "--others", "3")
KEYS = {"marginal_posterior", "p_correct", "accuracy", "noisy_marginal_posterior",
        "noisy_p_correct", "noisy_accuracy", "neglected_mass"}


def _json(argv, capsys):
    status, out, err = run_cli([*argv, "--json"], capsys)
    assert status == 0, err
    return json.loads(out)


def test_reference_json(capsys):
    got = _json([*BASE, "--m", "0", "--p", "1/2", "--invariant", "none"], capsys)
    assert set(got) == KEYS
    want = {"marginal_posterior": 0.5627809, "p_correct": 0.5925918, "accuracy": 0.6466352,
            "noisy_marginal_posterior": 0.5745472, "noisy_p_correct": 0.6613179,
            "noisy_accuracy": 0.6613179}
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=5e-8), key
    assert 0 <= got["neglected_mass"] < 1e-12


def test_defaults_and_api(capsys):
    got = _json(BASE, capsys)
    risk = product_risk(census_level("block").rho, census_level("block-group").rho, [3])
    assert got["marginal_posterior"] == risk.marginal_posterior
    assert got["accuracy"] == risk.accuracy


def test_invariant_reveals(capsys):
    got = _json([*BASE, "--invariant", "block-group"], capsys)
    assert got["marginal_posterior"] == pytest.approx(1.0, abs=1e-12)
    assert got["p_correct"] == pytest.approx(1.0, abs=1e-12)


def test_text_form(capsys):
    status, out, _ = run_cli([*BASE, "--invariant", "block-group"], capsys)
    assert status == 0
    assert "marginal posterior" in out and "noisy" in out and "confidential" in out


@pytest.mark.parametrize(("extra", "option"), [
    (("--others", "3,-1"), "--others"),
    (("--others", "3,x"), "--others"),
    (("--others", "0,0,0,0,0,0"), "--others"),
    (("--rho1", "0"), "--rho1"),
    (("--rho2", "-2"), "--rho2"),
    (("--rho1", "census:nowhere"), "--rho1"),
    (("--m", "-1"), "--m"),
    (("--p", "1.5"), "--p"),
    (("--invariant", "state"), "--invariant"),
])
def test_refused(extra, option, capsys):
    argv = list(BASE)
    for flag, value in zip(extra[::2], extra[1::2], strict=True):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    status, out, err = run_cli([*argv, "--json"], capsys)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and option in err


def test_missing_option(capsys):
    status, out, err = run_cli(["product", "--rho1", "0.1", "--others", "1"], capsys)
    assert status == 2 and out == "" and "--rho2" in err
