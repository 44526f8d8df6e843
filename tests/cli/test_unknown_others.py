"""``dprisk posterior|marginal --unknown-others N --q Q``: the single-level forms only.

The JSON keeps the single-level keys and adds the inputs ``unknown_others`` and ``q``; the
numbers are those of :mod:`dprisk.inference.unknown_others.closed_form`. Refusals exit 2 with one
stderr
line naming the option and nothing on stdout.
"""


import pytest
from cli_helpers import assert_refused, run_cli, run_json

from dprisk.inference.unknown_others import closed_form as uo

POST = ("posterior", "--rho1", "0.1", "--x1-star", "4", "--p", "0.3", "--known", "2")
MARG = ("marginal", "--rho1", "0.1", "--p", "0.3")


def test_posterior_json(capsys):
    got = run_json([*POST, "--unknown-others", "6", "--q", "0.25"], capsys)
    plain = run_json(POST, capsys)
    assert set(got) == set(plain) | {"unknown_others", "q"}
    assert got["unknown_others"] == 6 and got["q"] == 0.25
    assert got["posterior"] == uo.posterior(4, 0.1, 0.3, 2, unknown_others=6, q=0.25)
    assert got["risk"] == uo.risk(4, 0.1, 0.3, 2, unknown_others=6, q=0.25)
    assert got["posterior"] < plain["posterior"]


def test_marginal_json(capsys):
    got = run_json([*MARG, "--unknown-others", "10", "--q", "0.5"], capsys)
    plain = run_json(MARG, capsys)
    assert set(got) == set(plain) | {"unknown_others", "q"}
    kw = {"unknown_others": 10, "q": 0.5}
    assert got["marginal_risk"] == uo.marginal_risk(0.1, 0.3, **kw)
    assert got["p_correct"] == uo.p_correct(0.1, 0.3, **kw)
    assert got["threshold"] == uo.decision_threshold(0.1, 0.3, **kw)


@pytest.mark.parametrize("argv", [POST, MARG])
def test_zero_unknown_others_is_the_paper(argv, capsys):
    got = run_json([*argv, "--unknown-others", "0"], capsys)
    plain = run_json(argv, capsys)
    assert got["q"] is None and got["unknown_others"] == 0
    assert {k: got[k] for k in plain} == plain


def test_summary_lines(capsys):
    status, out, _ = run_cli([*MARG, "--unknown-others", "3", "--q", "0.1"], capsys)
    assert status == 0 and "unknown others n = 3, q = 0.1" in out and "P[correct" in out


@pytest.mark.parametrize(("argv", "option"), [
    ((*POST, "--q", "0.5"), "--q"),
    ((*MARG, "--q", "0.5"), "--q"),
    ((*MARG, "--unknown-others", "4"), "--q"),
    ((*MARG, "--unknown-others", "-1", "--q", "0.5"), "--unknown-others"),
    ((*POST, "--unknown-others", "10001", "--q", "0.5"), "--unknown-others"),
    ((*POST, "--unknown-others", "2.5", "--q", "0.5"), "--unknown-others"),
    ((*MARG, "--unknown-others", "4", "--q", "1.5"), "--q"),
    ((*MARG, "--unknown-others", "4", "--q", "nan"), "--q"),
    (("marginal", "--rho1", "0.1", "--rho2", "0.2", "--d", "3", "--x2", "4",
      "--unknown-others", "2", "--q", "0.5"), "--unknown-others"),
    (("marginal", "--rhos", "0.1,0.2", "--q", "0.5"), "--q"),
    (("posterior", "--rho1", "0.1", "--rho2", "0.2", "--d", "3", "--x1-star", "1",
      "--x2-star", "2", "--y1-star", "1", "--unknown-others", "2"), "--unknown-others"),
    (("posterior", "--rhos", "0.1,0.2", "--siblings", "3", "--stars", "1,2,1", "--q", "0.5"),
     "--q"),
])
def test_refused(argv, option, capsys):
    assert_refused([*argv, "--json"], option, capsys)


@pytest.mark.parametrize("command", ["posterior", "marginal"])
def test_help_lists_the_options(command, capsys):
    status, out, _ = run_cli([command, "--help"], capsys)
    assert status == 0 and "--unknown-others" in out and "--q" in out


def test_accuracy_is_the_best_test_over_the_release_grid(capsys):
    """The threshold decision's accuracy equals sum_x max(p P1(x), (1-p) P0(x)) (brute force)."""
    import numpy as np
    from scipy.stats import binom

    from dprisk.models.mechanism.discrete_gaussian import pmf

    got = run_json([*MARG, "--unknown-others", "6", "--q", "0.4"], capsys)
    rho, p, n, q = 0.1, 0.3, 6, 0.4
    x = np.arange(-80, 90)
    others = binom.pmf(np.arange(n + 1), n, q)
    p0 = sum(w * pmf(x, k, rho) for k, w in enumerate(others))
    p1 = sum(w * pmf(x, k + 1, rho) for k, w in enumerate(others))
    best = float(np.maximum(p * p1, (1 - p) * p0).sum())
    assert got["accuracy"] == pytest.approx(best, abs=1e-12)
    assert got["worst_case_accuracy"] == got["accuracy"]


@pytest.mark.parametrize("extra", [[], ["--unknown-others", "3", "--q", "0.5"]])
def test_a_marginal_risk_above_the_largest_double_is_null(extra, capsys):
    """R = marginal posterior / p <= 1/p: at p = 1e-320 and rho1 = 1000 (posterior 1, or
    1/8 = q**3 with three unknown others) it is above the largest double. '--json' was exit 2
    'Out of range float values are not JSON compliant' after numpy's overflow warning; the
    key is now null (strict JSON), the other numbers as before, nothing on stderr."""
    payload = run_json(["marginal", "--rho1", "1000", "--p", "1e-320", *extra], capsys)
    assert payload["marginal_risk"] is None
    assert payload["marginal_posterior"] == pytest.approx(0.125 if extra else 1.0, rel=1e-12)
    finite = run_json(["marginal", "--rho1", "1e100", "--p", "6e-309", *extra], capsys)
    assert finite["marginal_risk"] == pytest.approx(
        finite["marginal_posterior"] / 6e-309, rel=1e-12)


def test_the_whole_marginal_command_is_sized_before_it_starts(monkeypatch, capsys):
    """Two marginal sums and three sets of decision tails, checked before the first.

    At rho1 = 0.1, n = 100 one marginal is about 3.9e4 steps (``work_steps(marginals=1)``) and
    the tails (P[correct], accuracy's two) about 1.2e5: a limit between one marginal and the
    whole command was passed by the marginal's own check, the tails unsized.
    """
    kw = {"unknown_others": 100, "q": 0.3}
    marginal = uo.work_steps(0.1, 0.3, **kw)
    whole = uo.work_steps(0.1, 0.3, marginals=2, tail_sets=3, **kw)
    assert whole > 4 * marginal
    monkeypatch.setenv("DPRISK_WORK_LIMIT", f"{2 * marginal:.6g}")
    message = assert_refused([*MARG, "--unknown-others", "100", "--q", "0.3", "--json"],
                             "--unknown-others", capsys)
    assert "accuracy" in message
