"""``dprisk attribute``: the JSON contract of both forms and exit 2 on bad input."""

import json

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

from dprisk.inference.attribute.design import expected_true_posterior, p_map_correct
from dprisk.inference.attribute.posterior import cell_posterior


@pytest.fixture
def files(tmp_path):
    (tmp_path / "release.csv").write_text("0\n2\n-1\n1\n")
    (tmp_path / "known.json").write_text("[0, 1, 0, 0]")
    (tmp_path / "prior.csv").write_text("0.1,0.2,0.3,0.4\n")
    (tmp_path / "prior_bad_sum.csv").write_text("0.1,0.2,0.3,0.5\n")
    (tmp_path / "known_negative.csv").write_text("0,-1,0,0\n")
    (tmp_path / "words.csv").write_text("a,b\n")
    # float() read these as counts: true as 1, "\u0663" (Arabic-Indic three) as 3, "2" as 2
    (tmp_path / "release_true.json").write_text("[0, 2, -1, true]")
    (tmp_path / "release_string.json").write_text('[0, "2", -1, 1]')
    (tmp_path / "release_digits.csv").write_text("0\n2\n-1\n\u0663\n", "utf-8")
    (tmp_path / "prior_booleans.json").write_text("[true, false, false, false]")
    return tmp_path


def test_design_form_json_matches_the_library(capsys, files):
    status, out, err = run_cli(["attribute", "--rho1", "0.3", "--cells", "4", "--prior",
                                str(files / "prior.csv"), "--true-cell", "2", "--json"],
                               capsys)
    assert status == 0, err
    payload = json.loads(out)
    assert set(payload) == {"p_map_correct", "expected_true_posterior", "prior_true", "cells"}
    prior = [0.1, 0.2, 0.3, 0.4]
    assert payload["p_map_correct"] == p_map_correct(0.3, prior=prior, true_cell=2)
    assert payload["expected_true_posterior"] == expected_true_posterior(0.3, prior=prior,
                                                                         true_cell=2)
    assert payload["prior_true"] == pytest.approx(0.3, rel=1e-15)
    assert payload["cells"] == 4


def test_release_form_json_matches_the_library(capsys, files):
    status, out, err = run_cli(["attribute", "--rho1", "0.5", "--release",
                                str(files / "release.csv"), "--known",
                                str(files / "known.json"), "--json"], capsys)
    assert status == 0, err
    payload = json.loads(out)
    assert set(payload) == {"posterior", "map_cell", "risk"}
    post = cell_posterior([0, 2, -1, 1], [0, 1, 0, 0], 0.5)
    np.testing.assert_allclose(payload["posterior"], post.posterior, rtol=1e-15)
    assert payload["map_cell"] == post.map_cell
    assert payload["risk"] == pytest.approx(post.risk(post.map_cell), rel=1e-15)


@pytest.mark.parametrize(("extra", "named"), [
    (["--cells", "1"], "--cells"),
    # 1e308 cells x 64 B is an integer beyond the doubles: the refusal's size (format_bytes)
    # once failed converting it (exit 1, "OverflowError: int too large to convert to float")
    (["--cells", "1e308"], "--cells"),
    (["--cells", "4", "--prior", "{prior_bad_sum.csv}"], "--prior"),
    (["--cells", "3", "--prior", "{prior.csv}"], "--prior"),
    (["--cells", "4", "--prior", "{words.csv}"], "--prior"),
    (["--cells", "4", "--true-cell", "4"], "--true-cell"),
    (["--cells", "4", "--seed", "3"], "--seed"),
    (["--cells", "4", "--rho2", "0.2"], "--rho2"),
    (["--release", "{release.csv}", "--known", "{known_negative.csv}"], "--known"),
    (["--release", "{release.csv}", "--known", "{known.json}", "--cells", "4"], "--release"),
    (["--release", "{release.csv}", "--known", "{known.json}", "--prior", "{prior_bad_sum.csv}"],
     "--prior"),
    (["--release", "{release_true.json}", "--known", "{known.json}"], "--release"),
    (["--release", "{release_string.json}", "--known", "{known.json}"], "--release"),
    (["--release", "{release_digits.csv}", "--known", "{known.json}"], "--release"),
    (["--cells", "4", "--prior", "{prior_booleans.json}"], "--prior"),
])
def test_bad_input_exits_2_naming_the_option(capsys, files, extra, named):
    argv = ["attribute", "--rho1", "0.5", "--json"]
    argv += [str(files / a[1:-1]) if a.startswith("{") else a for a in extra]
    assert_refused(argv, named, capsys)


def test_strategy_form_reports_seed_and_mcse_and_reproduces(capsys):
    argv = ["attribute", "--rho1", "census:block", "--cells", "2016", "--strategy",
            "census-2020", "--releases", "40", "--seed", "9", "--json"]
    status, out, err = run_cli(argv, capsys)
    assert status == 0, err
    payload = json.loads(out)
    assert {"p_map_correct", "expected_true_posterior", "prior_true", "cells", "seed",
            "p_map_correct_mcse", "expected_true_posterior_mcse"} <= set(payload)
    assert payload["seed"] == 9 and payload["cells"] == 2016
    assert json.loads(run_cli(argv, capsys)[1]) == payload


@pytest.mark.parametrize(("extra", "named"), [
    (["--cells", "864"], "--cells"),
    (["--cells", "2016", "--d", "3"], "--rho2"),
    (["--cells", "2016", "--releases", "1"], "--releases"),
    # beyond a float, the work check's float(releases) failed: exit 1, OverflowError
    (["--cells", "2016", "--releases", str(10**400)], "--releases"),
    (["--cells", "2016", "--releases", str(2**53 + 1)], "--releases"),
    # point:0 leaves X1 = 1 no X2 in every cell (the block group empty but the target): the
    # text form printed p_map_correct 0.72 and nan, --json 'Out of range float values are not
    # JSON compliant: nan'
    (["--cells", "2016", "--rho2", "0.5", "--d", "3", "--x2-prior", "point:0"], "--x2-prior"),
])
def test_strategy_bad_input(capsys, extra, named):
    argv = ["attribute", "--rho1", "0.1", "--strategy", "census-2020", "--json", *extra]
    assert_refused(argv, named, capsys)


def test_a_prior_cell_below_1e_300_is_refused_not_an_infinite_risk(capsys, tmp_path):
    """A cell prior of 5e-324 (subnormal) would make the risk 1 / prior overflow to inf
    (RuntimeWarning, "risk": Infinity); it is refused naming --prior and the range."""
    (tmp_path / "rel.csv").write_text("0\n5\n")
    (tmp_path / "known.csv").write_text("0\n0\n")
    (tmp_path / "prior.csv").write_text("1\n5e-324\n")
    err = assert_refused(["attribute", "--rho1", "100", "--release", str(tmp_path / "rel.csv"),
                          "--known", str(tmp_path / "known.csv"), "--prior",
                          str(tmp_path / "prior.csv"), "--json"], "--prior", capsys)
    assert "1e-300" in err


@pytest.mark.parametrize("x2_prior", ["truncated:0", "{not_proper.py}:prior", "point:0"])
def test_an_x2_prior_refusal_names_x2_prior_not_the_cell_prior(capsys, tmp_path, x2_prior):
    """With --prior FILE (the cell prior) given too, the refusal of the X2 prior at the
    scenario's checks read '--prior 'truncated:0' leaves no possible X2 ...': the library's
    'prior ...' named as the cell prior's option. It must start with --x2-prior."""
    (tmp_path / "cells.csv").write_text(",".join([repr(1 / 2016)] * 2016))
    (tmp_path / "not_proper.py").write_text(
        "import numpy as np\nimport pytensor.tensor as pt\nfrom dprisk import UserPrior\n"
        "prior = UserPrior(lambda k2, k1: np.log(np.float64(0.5)) * pt.cast(k2 - k1 + 1, "
        "'float64') + np.log(np.float64(1.01)))\n")
    spec = x2_prior.replace("{not_proper.py}", str(tmp_path / "not_proper.py"))
    err = assert_refused(["attribute", "--rho1", "0.1", "--cells", "2016", "--prior",
                          str(tmp_path / "cells.csv"), "--strategy", "census-2020", "--rho2",
                          "0.25", "--d", "27", "--x2-prior", spec, "--releases", "10",
                          "--seed", "1", "--json"], "--x2-prior", capsys)
    assert err.startswith(f"dprisk attribute: error: --x2-prior {spec!r}"), err


def test_x2_prior_help_lists_model_files_and_a_file_gives_the_builtin_numbers(capsys, tmp_path):
    """--x2-prior took PATH.py:NAME, but its help listed only improper | truncated:U | point:K.
    A file with the uniform prior on {k1, ..., 8} gives truncated:8's numbers (same seed)."""
    status, out, _ = run_cli(["attribute", "--help"], capsys)
    assert "point:K | PATH.py:NAME" in " ".join(out.split())
    (tmp_path / "uniform8.py").write_text(
        "import pytensor.tensor as pt\nfrom dprisk import UserPrior\n"
        "prior = UserPrior(lambda k2, k1: -pt.log(pt.cast(9 - k1, 'float64')) "
        "+ pt.zeros_like(k2, dtype='float64'), support=lambda k1: (k1, 8))\n")
    payloads = []
    for spec in ("truncated:8", f"{tmp_path / 'uniform8.py'}:prior"):
        status, out, err = run_cli(["attribute", "--rho1", "0.1", "--cells", "2016",
                                    "--strategy", "census-2020", "--rho2", "0.25", "--d", "3",
                                    "--x2-prior", spec, "--releases", "20", "--seed", "4",
                                    "--json"], capsys)
        assert status == 0, err
        payloads.append(json.loads(out))
    # the same log Bayes factors up to rounding of -log(9 - k1): 1e-12 relative is ample
    for key in ("p_map_correct", "expected_true_posterior"):
        assert payloads[1][key] == pytest.approx(payloads[0][key], rel=1e-12, abs=1e-15)


def test_strategy_table_above_the_memory_limit_names_rho1(capsys):
    """At --rho1 1e-9 the conditional MAP's table (2.9e11 cells) failed with exit 1
    'MemoryError: Unable to allocate 2.11 TiB'; now refused naming --rho1, exit 2."""
    message = assert_refused(["attribute", "--rho1", "1e-9", "--cells", "2016", "--strategy",
                              "census-2020", "--releases", "20", "--seed", "1"], "--rho1",
                             capsys)
    assert "16.9 TiB" in message and "DPRISK_MEMORY_LIMIT" in message


def test_strategy_with_the_block_group_counts_its_k2_window(monkeypatch, capsys):
    """With --rho2 --d every cell of every release gets its exact two-level posterior on the
    k2 window of rho2 + rho1/d (34939 values at 1e-7, d = 3): 20 releases took 4 s of CPU
    and 1e-9 (359071 values) 36 s, while 20 x (1e5 + 3 x 1e4) steps (12 ms) were checked.
    Now + releases x cells x window steps (2.5-2.8 ns a step measured): 1.4e8 for 2
    releases at 1e-7, refused under 1e8 naming the rhos."""
    monkeypatch.setenv("DPRISK_WORK_LIMIT", "1e8")
    message = assert_refused(["attribute", "--rho1", "1e-7", "--cells", "2016", "--strategy",
                              "census-2020", "--rho2", "1e-7", "--d", "3", "--releases", "2",
                              "--seed", "1"], "--releases and --d, --rho1, --rho2", capsys)
    assert "2016 cells on a k2 window of 34939 values is about 1.41e8 steps" in message
