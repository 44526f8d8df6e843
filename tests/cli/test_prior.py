"""Tests of dprisk/cli/commands/prior.py: ``dprisk prior SPEC [--plot FILE.png] [--json]``."""

import json

import pytest
from cli_helpers import check_contract, run_cli

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
