"""Table tests of the refusals that teach (models/priors/base.py, files.py, library.py).

A logp that does not give one value per k2 names the rule and k2's shape; a bare
``logp(k2, k1)`` function is refused with "wrap it as UserPrior(fn, is_proper=...)"; a prior
labelled proper whose mass is not 1 is refused with the mass found.
"""

import re

import pytest

from dprisk.models.priors.base import PriorRefused, check_prior_values
from dprisk.models.priors.library import as_prior, parse_prior

HEADER = '''
import numpy as np
import pytensor.tensor as pt
from dprisk.models.priors.library import UserPrior
'''

CASES = [
    # (name, body, message fragment)
    ("summed", "prior = UserPrior(lambda k2, k1: pt.sum(-pt.cast(k2, 'float64')))",
     r"one log weight per k2, an array of k2's shape \(\(n,\) .* returned a 0-d array"),
    ("matrix", "prior = UserPrior(lambda k2, k1: pt.outer(k2, k1) * np.float64(0.0))",
     r"one log weight per k2.*returned a 2-d array"),
    ("first_three", "prior = UserPrior(lambda k2, k1: pt.zeros_like(k2[:3], 'float64'))",
     r"\(\(4096,\) for 4096 values of k2\), but returned shape \(3,\)"),
    ("bare", "def bare(k2, k1):\n    return pt.zeros_like(k2, 'float64')",
     r"wrap it as UserPrior\(bare, is_proper=\.\.\.\)"),
    ("flat_labelled_proper",
     "flat_labelled_proper = UserPrior(lambda k2, k1: pt.zeros_like(k2, 'float64'), "
     "is_proper=True)",
     r"labelled proper \(is_proper=True\) but its mass given X1 = 0 is 1048576 "
     r".*not settled.*is_proper=False"),
    ("half_mass",
     "half_mass = UserPrior(lambda k2, k1: np.log(np.float64(0.25)) + pt.zeros_like(k2, "
     "'float64'), support=lambda k1: (k1, k1 + 1), is_proper=True)",
     r"mass given X1 = 0 is 0\.5 over X2 in \[0, 1\], not 1"),
    # a support that works on ints but not on tensors: the error blamed logp(k2, k1)
    ("support_max", "prior = UserPrior(lambda k2, k1: pt.zeros_like(k2, 'float64'), "
     "support=lambda k1: (max(k1, 3), None), is_proper=False)",
     r"support\(k1\) on a PyTensor int64 tensor k1 failed: TypeError: .*; write it with "
     r"plain arithmetic \(pt\.maximum, not max or if\)"),
    # support ends PyTensor cannot hold: 2**63 became -2**63 ("log weight is -inf at every
    # X2", though it is 0 there), 10**20 an OverflowError blamed on logp, inf on support
    *[(f"upper_{label}", "prior = UserPrior(lambda k2, k1: pt.zeros_like(k2, 'float64'), "
       f"support=lambda k1: (k1, {upper}), is_proper=False)",
       rf"support\(0\) gives upper = {shown}, out of range \(allowed range: "
       r"-\(2\*\*63 - 1\) <= upper <= 2\*\*63 - 1, an integer; upper None means no upper "
       r"bound\)")
      for label, upper, shown in (("2_63", "2**63", 2**63), ("1e20", "10**20", 10**20),
                                  ("inf", "float('inf')", "inf"))],
]


@pytest.mark.parametrize(("name", "body", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_refusals_state_rule_and_fix(tmp_path, name, body, fragment):
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + body + "\n")
    attr = name if name in body.split("=")[0] or name == "bare" else "prior"
    with pytest.raises(ValueError, match=fragment) as info:
        prior = parse_prior(f"{path}:{attr}")
        check_prior_values(prior, 0)
    assert "\n" not in str(info.value)
    assert re.search(re.escape(str(path)), str(info.value))


def test_bare_function_refused_in_python_api():
    def my_logp(k2, k1):
        return k2 * 0.0

    with pytest.raises(TypeError, match=r"wrap it as UserPrior\(my_logp, is_proper=\.\.\.\)"):
        as_prior(my_logp)


def test_improper_labelled_improper_is_accepted(tmp_path):
    path = tmp_path / "flat.py"
    path.write_text(HEADER + "prior = UserPrior(lambda k2, k1: pt.zeros_like(k2, 'float64'), "
                    "is_proper=False)\n")
    check_prior_values(parse_prior(f"{path}:prior"), 0)


def test_refusal_is_a_prior_refused(tmp_path):
    path = tmp_path / "summed.py"
    path.write_text(HEADER + CASES[0][1] + "\n")
    with pytest.raises(PriorRefused):
        check_prior_values(parse_prior(f"{path}:prior"), 0)


def test_support_up_to_the_limit_is_the_improper_uniform(tmp_path):
    """An upper end of 2**63 - 1 (the largest accepted, np.iinfo(np.int64).max, which worked
    as "no bound" before and must still) leaves the improper uniform's posterior unchanged:
    the Gaussian factors vanish long before it (same grid, so equal to 1e-15)."""
    from dprisk.inference.two_level.exact import exact_posterior

    path = tmp_path / "wide.py"
    path.write_text(HEADER + "prior = UserPrior(lambda k2, k1: pt.zeros_like(k2, 'float64'), "
                    "support=lambda k1: (k1, 2**63 - 1), is_proper=False)\n")
    kwargs = {"rho1": 0.3, "rho2": 0.5, "d": 3}
    wide = exact_posterior(1, 4, 3, **kwargs, prior=f"{path}:prior").prob_x1
    assert wide == pytest.approx(exact_posterior(1, 4, 3, **kwargs).prob_x1, rel=1e-15)
