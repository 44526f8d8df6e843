"""``dprisk product``: the exact keys, the reference, the text form and exit 2 on bad input.

The numbers are those of :func:`dprisk.inference.product.exact.product_risk` (equality: the
CLI only formats); the reference carries 7 digits (``atol = 5e-8``). ``--method mc`` adds
keys to the fixed seven and its numbers are those of
:func:`dprisk.inference.product.monte_carlo_risk.product_risk_mc` for the same seed
(equality); its agreement with the exact risk (within 4 MCSE) is tested there and here once.
"""


import pytest
from cli_helpers import run_cli, run_json

from dprisk.inference.product.exact import product_risk
from dprisk.inference.product.monte_carlo_risk import product_risk_mc
from dprisk.models.census.allocation import census_level

BASE = ("product", "--rho1", "census:block", "--rho2", "census:block-group", "--others", "3")
KEYS = {"marginal_posterior", "p_correct", "accuracy", "noisy_marginal_posterior",
        "noisy_p_correct", "noisy_accuracy", "neglected_mass"}


def test_reference_json(capsys):
    got = run_json([*BASE, "--m", "0", "--p", "1/2", "--invariant", "none"], capsys)
    assert set(got) == KEYS
    want = {"marginal_posterior": 0.5627809, "p_correct": 0.5925918, "accuracy": 0.6466352,
            "noisy_marginal_posterior": 0.5745472, "noisy_p_correct": 0.6613179,
            "noisy_accuracy": 0.6613179}
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=5e-8), key
    assert 0 <= got["neglected_mass"] < 1e-12


def test_defaults_and_api(capsys):
    got = run_json(BASE, capsys)
    risk = product_risk(census_level("block").rho, census_level("block-group").rho, [3])
    assert got["marginal_posterior"] == risk.marginal_posterior
    assert got["accuracy"] == risk.accuracy


def test_invariant_reveals(capsys):
    got = run_json([*BASE, "--invariant", "block-group"], capsys)
    assert got["marginal_posterior"] == pytest.approx(1.0, abs=1e-12)
    assert got["p_correct"] == pytest.approx(1.0, abs=1e-12)


def test_text_form(capsys):
    status, out, _ = run_cli([*BASE, "--invariant", "block-group"], capsys)
    assert status == 0
    assert "marginal posterior" in out and "noisy" in out and "confidential" in out


@pytest.mark.parametrize(("extra", "option"), [
    (("--others", "3,-1"), "--others"),
    (("--others", "3,x"), "--others"),
    (("--others", ""), "--others"),
    (("--others", "3,,1"), "--others"),
    (("--others", "nan"), "--others"),
    (("--others", "1e20"), "--others"),
    (("--others", "9007199254740992"), "--others"),   # m + 1 + sum > 2**53
    (("--others", "0,0,0,0,0,0"), "--others"),        # d too large for exact enumeration
    (("--rho1", "0"), "--rho1"),
    (("--rho1", "nan"), "--rho1"),
    (("--rho1", "1e101"), "--rho1"),
    (("--rho1", "1e-320"), "--rho1"),                 # noise window beyond 2**53
    (("--rho2", "-2"), "--rho2"),
    (("--rho2", "1e-300"), "--rho2"),
    (("--rho1", "census:nowhere"), "--rho1"),
    (("--m", "-1"), "--m"),
    (("--m", "abc"), "--m"),
    (("--m", "1.5"), "--m"),
    (("--p", "1.5"), "--p"),
    (("--p", "nan"), "--p"),
    (("--p", "0"), "--p"),
    (("--invariant", "state"), "--invariant"),
    (("--method", "gibbs"), "--method"),
    (("--seed", "1"), "--seed"),                      # mc only
    (("--datasets", "10"), "--datasets"),             # mc only
    (("--method", "mc", "--datasets", "1"), "--datasets"),
    (("--method", "mc", "--datasets", "abc"), "--datasets"),
    (("--method", "mc", "--datasets", "1000000000000"), "--datasets"),  # work limit
    (("--method", "mc", "--seed", "-5"), "--seed"),
    (("--method", "mc", "--others", ",".join(["1"] * 1000)), "--others"),
    (("--block-group-total", "4"), "--block-group-total"),  # needs --invariant block-group
    (("--invariant", "block-group", "--block-group-total", "2"), "--block-group-total"),
    (("--invariant", "block-group", "--block-group-total", "5"), "--block-group-total"),
    (("--invariant", "block-group", "--block-group-total", "-1"), "--block-group-total"),
    (("--invariant", "block-group", "--block-group-total", "x"), "--block-group-total"),
])
def test_refused(extra, option, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = list(BASE)
    for flag, value in zip(extra[::2], extra[1::2], strict=True):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    status, out, err = run_cli([*argv, "--json"], capsys)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and option in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_exact_too_large_suggests_mc(capsys):
    status, _, err = run_cli([*BASE[:-1], "3,3,3,3,3", "--json"], capsys)
    assert status == 2 and "--others" in err and "--method mc" in err


def test_missing_option(capsys):
    status, out, err = run_cli(["product", "--rho1", "0.1", "--others", "1"], capsys)
    assert status == 2 and out == "" and "--rho2" in err


MC = ("--method", "mc", "--datasets", "3000", "--seed", "5")


def test_mc_keys_equal_api_and_agree_with_exact(capsys):
    got = run_json([*BASE, *MC], capsys)
    assert KEYS <= set(got)
    assert set(got) - KEYS == {"method", "datasets", "seed", "mcse"}
    assert got["method"] == "mc" and got["datasets"] == 3000 and got["seed"] == 5
    assert set(got["mcse"]) == {"marginal_posterior", "p_correct", "accuracy"}
    rho1, rho2 = census_level("block").rho, census_level("block-group").rho
    risk = product_risk_mc(rho1, rho2, [3], datasets=3000, random_seed=5)
    assert got["marginal_posterior"] == risk.marginal_posterior
    assert got["mcse"]["accuracy"] == risk.mcse_accuracy
    exact = product_risk(rho1, rho2, [3])
    for key in ("marginal_posterior", "p_correct", "accuracy"):
        assert abs(got[key] - getattr(exact, key)) <= 4 * got["mcse"][key], key
    assert got["noisy_accuracy"] == exact.noisy_accuracy


def test_mc_seed_drawn_and_reported(capsys):
    status, out, _ = run_cli([*BASE, "--method", "mc", "--datasets", "20"], capsys)
    assert status == 0 and "--seed" in out and "MCSE" in out


def test_mc_large_d(capsys):
    got = run_json([*BASE[:-1], ",".join(["3"] * 12), "--method", "mc", "--datasets", "100",
                 "--seed", "1"], capsys)
    assert 0 <= got["marginal_posterior"] <= 1


@pytest.mark.parametrize(("total", "posterior"), [("4", 1.0), ("3", 0.0)])
def test_block_group_total(total, posterior, capsys):
    got = run_json([*BASE, "--invariant", "block-group", "--block-group-total", total], capsys)
    assert got["block_group_total"] == int(total)
    assert got["invariant_posterior"] == posterior
    assert set(got) - KEYS == {"block_group_total", "invariant_posterior"}
    assert got["marginal_posterior"] == pytest.approx(1.0, abs=1e-12)
