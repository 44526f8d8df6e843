"""The one contract checker (tests/cli_helpers.py) fails on every breach it is meant to catch.

Synthetic runs ``(status, stdout, stderr)``: a checker that cannot fail would let every
command-line test pass.
"""

import pytest
from cli_helpers import check_contract, names_option, tree

REFUSAL = "dprisk: error: --rho1 must be a number > 0, got -1\n"


def test_a_kept_contract_passes(tmp_path):
    check_contract(2, "", REFUSAL, names=("--rho1",), root=tmp_path, before=tree(tmp_path))
    check_contract(0, '{"posterior": 0.5}\n', "", as_json=True)
    check_contract(0, "some lines\nof text\n", "")


@pytest.mark.parametrize(("status", "out", "err", "kwargs"), [
    (1, "", REFUSAL, {}),  # exit 1
    (2, "", "Traceback (most recent call last):\n", {}),  # a traceback
    (2, "partial", REFUSAL, {}),  # something on stdout
    (2, "", REFUSAL + "a second line\n", {}),  # two stderr lines
    (2, "", REFUSAL, {"names": ("--rho2",)}),  # names another option
    (2, "", "--datasets must be >= 2\n", {"names": ("--d",)}),  # --d is not --datasets
    (0, '{"posterior": 0.5}\n', "a warning\n", {"as_json": True}),  # stderr on success
    (0, '{"posterior": NaN}\n', "", {"as_json": True}),  # non-strict JSON
    (0, '{"p_correct": 1.5}\n', "", {"as_json": True}),  # not a probability
    (0, '{"a": 1}\n{"b": 2}\n', "", {"as_json": True}),  # two objects
])
def test_each_breach_fails(status, out, err, kwargs):
    with pytest.raises((AssertionError, ValueError)):
        check_contract(status, out, err, **kwargs)


def test_a_refusal_that_wrote_something_fails(tmp_path):
    before = tree(tmp_path)
    (tmp_path / "partial.nc").write_bytes(b"x")
    with pytest.raises(AssertionError, match="wrote or changed"):
        check_contract(2, "", REFUSAL, root=tmp_path, before=before)


def test_names_option_matches_whole_words():
    assert names_option("--d", "--d must be an integer >= 1")
    assert names_option("rho1", "--rho1 must be > 0")
    assert not names_option("--d", "--datasets must be >= 2")
    assert not names_option("--x1", "--x1-star must be an integer")
