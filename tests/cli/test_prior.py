"""Tests of dprisk/cli/commands/prior.py: ``dprisk prior SPEC [--plot FILE.png] [--json]``."""

import json

import pytest
from cli_helpers import assert_refused, check_contract, run_cli

WORKED = ["models/examples/geometric_prior.py:prior", "models/examples/table_prior.py:prior",
          "models/examples/mixture_prior.py:prior",
          "models/examples/negative_binomial_prior.py:prior"]


@pytest.mark.parametrize("spec", WORKED)
def test_prior_json_of_each_worked_file(spec, capsys):
    status, out, err = run_cli(["prior", spec, "--json"], capsys)
    assert status == 0, err
    payload = json.loads(out)
    assert payload["spec"] == spec and payload["proper"] and payload["labelled_proper"]
    assert len(payload["census"]["posterior_prior"]) == len(payload["census"]["releases"])


def test_prior_text_and_plot(tmp_path, capsys):
    plot = tmp_path / "prior.png"
    status, out, _ = run_cli(["prior", WORKED[0], "--plot", str(plot)], capsys)
    assert status == 0
    assert "found proper" in out and f"plot written to {plot}" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*tmp"))


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["prior", "improper", "--plot", "out.txt"], "--plot must name a .png file"),
        (["prior", "improper", "--plot", "plain/x.png"], "--plot 'plain/x.png' cannot be created"),
        (["prior", "nonsense"], "allowed forms"),
        (["prior", "missing.py:prior"], "not found"),
    ],
)
def test_prior_bad_input_exit_2(argv, fragment, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain").write_text("a file, not a directory")
    status, out, err = run_cli(argv, capsys)
    assert status == 2
    check_contract(status, out, err)
    assert fragment in err


def test_bare_function_file_exit_2(tmp_path, capsys):
    path = tmp_path / "bare.py"
    path.write_text("def logp(k2, k1):\n    return k2 * 0.0\n")
    status, _, err = run_cli(["prior", f"{path}:logp"], capsys)
    assert status == 2 and "wrap it as UserPrior(logp, is_proper=...)" in err


CONSTANT_PRIORS = """\
import numpy as np
import pytensor.tensor as pt
from dprisk.models.priors.library import UserPrior

def _c800(k2, k1):
    return pt.cast(k2, "float64") * np.float64(0) + np.float64(800.0)
c800 = UserPrior(_c800, is_proper=False, log_weight_max=np.float64(800.0))
big = UserPrior(_c800, is_proper=False, log_weight_max=np.float64(1e308))
"""


def test_a_mass_no_double_holds_is_null_not_infinity(tmp_path, capsys):
    """Weights e^800 (log_weight_max 800, in range): each branch's partial sum is above the
    largest double; it is reported as null and not settled (not "Infinity", settled)."""
    (tmp_path / "pr.py").write_text(CONSTANT_PRIORS)
    status, out, err = run_cli(["prior", f"{tmp_path / 'pr.py'}:c800", "--json"], capsys)
    check_contract(status, out, err, as_json=True)  # strict JSON: no NaN / Infinity
    payload = json.loads(out)
    assert status == 0 and payload["proper"] is False
    for row in payload["branches"].values():
        assert row["mass"] is None and row["mass_settled"] is False


def test_log_weight_max_out_of_range_is_refused_naming_the_prior(tmp_path, capsys):
    (tmp_path / "pr.py").write_text(CONSTANT_PRIORS)
    spec = f"{tmp_path / 'pr.py'}:big"
    status, out, err = run_cli(["prior", spec, "--json"], capsys)
    check_contract(status, out, err, as_json=True)
    assert status == 2
    assert spec in err and "log_weight_max" in err and "-1e+06 <= log_weight_max <= 1e+06" in err


@pytest.mark.parametrize("known", ["0", "4"])
def test_point_mass_at_known_is_proper_and_accepted_as_by_posterior(known, capsys):
    """``point:m`` rules out X1 = m + 1 (branch "1" empty); the posterior commands accept it,
    and so does ``prior`` (with m = 0): found proper, the empty branch left out of the rule.
    ``truncated:m`` is refused by both (only a point mass may rule out X1 = m + 1)."""
    post = ["posterior", "--rho1", "1", "--rho2", "1", "--d", "3", "--x1-star", "1",
            "--x2-star", "3", "--y1-star", "2", "--known", known, "--json"]
    status, out, err = run_cli([*post, "--prior", f"point:{known}"], capsys)
    assert status == 0, err
    assert json.loads(out)["posterior"] == 0.0
    status, _, err = run_cli([*post, "--prior", f"truncated:{known}"], capsys)
    assert status == 2 and "leaves no possible X2" in err
    if known == "0":
        status, out, err = run_cli(["prior", "point:0", "--json"], capsys)
        payload = json.loads(out)
        assert status == 0 and payload["proper"] is True
        assert payload["branches"]["1"]["mass_upto"] is None  # the empty branch
        assert payload["branches"]["0"]["mass"] == 1.0
        status, _, err = run_cli(["prior", "truncated:0", "--json"], capsys)
        assert status == 2 and "leaves no possible X2" in err


@pytest.mark.parametrize("spec", ["point:9007199254740993", "truncated:9007199254740993",
                                  "point:99999999999999999999999"])
def test_a_count_above_2_53_in_a_prior_spec_names_the_prior_option(spec, capsys):
    """``--prior point:K`` / ``truncated:U`` with the count above 2**53 is refused naming
    ``--prior`` and the spec (it named only the class's parameter, ``k must be ...``)."""
    posterior = ["posterior", "--rho1", "0.5", "--rho2", "0.5", "--d", "3", "--x1-star", "1",
                 "--x2-star", "2", "--y1-star", "1", "--prior", spec]
    line = assert_refused(posterior, "--prior", capsys)
    assert f"--prior {spec!r}" in line and "<= 2**53" in line
    line = assert_refused(["prior", spec], "prior", capsys)
    assert f"prior {spec!r}" in line and "<= 2**53" in line
