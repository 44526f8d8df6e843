"""Tests of inference/privacy/budget_levels.py: rho2 for a fixed rho1, and the Census global rho.

The block and block-group shares are Table 2's; the block-level Census answer is the
single-level answer rescaled; the two-level answers meet the target at rho*, fail just above
it, and meet it on an independent grid below rho* (first crossing); bad input names the
parameter.
"""

from fractions import Fraction

import numpy as np
import pytest

from dprisk.inference.privacy.budget import rho_for_target
from dprisk.inference.privacy.budget_levels import (
    CENSUS_RHO_RANGE,
    RHO2_RANGE,
    census_fractions,
    census_rho_for_target,
    rho2_for_target,
)
from dprisk.inference.studies.p_correct import p_correct_two_level
from dprisk.models.census.allocation import CENSUS_RHO_TOTAL, census_level


def test_census_fractions_are_table_2():
    block, block_group = census_fractions()
    assert block * CENSUS_RHO_TOTAL == census_level("block").rho_exact
    assert block_group * CENSUS_RHO_TOTAL == census_level("block-group").rho_exact
    assert isinstance(block, Fraction)


@pytest.mark.parametrize(("measure", "target", "profile"), [
    ("marginal-risk", 1.5, {}),
    ("p-correct", 0.3, {}),
    ("tail", 0.05, {"max_ratio": 3.0, "max_posterior": 0.25}),
])
def test_census_block_level_is_the_rescaled_single_level(measure, target, profile):
    priors = [0.05, 0.25, 0.5] if measure != "p-correct" else [0.05, 0.25]
    block = float(census_fractions()[0])
    single = rho_for_target(measure, target, p=priors, **profile)
    census = census_rho_for_target(measure, target, p=priors, **profile)
    assert census.rho == pytest.approx(single.rho / block, rel=1e-14)
    assert census.binding_p == single.binding_p
    assert census.value_at_rho <= target < census.value_above


def _p_correct(rho1, rho2, p, d=5, x2=10):
    return p_correct_two_level(x2=x2, rho1=rho1, rho2=rho2, d=d, p=p).p_correct


def test_rho2_round_trip_and_first_crossing():
    answer = rho2_for_target(0.8, rho1=1.0, x2=5, d=2, p=[0.3, 0.5])
    assert answer.value_at_rho <= 0.8 < answer.value_above
    assert _p_correct(1.0, answer.rho, answer.binding_p, d=2, x2=5) == answer.value_at_rho
    # an independent grid (not the scan's) below rho2*: the target holds everywhere, for
    # every prior
    below = np.geomspace(RHO2_RANGE[0], answer.rho, 23)
    assert all(_p_correct(1.0, rho2, p, d=2, x2=5) <= 0.8 for rho2 in below
               for p in (0.3, 0.5))


def test_census_two_level_scales_both_levels():
    answer = census_rho_for_target("p-correct", 0.6, p=[0.5], x2=10, d=5)
    block, block_group = (float(share) for share in census_fractions())
    at = _p_correct(block * answer.rho, block_group * answer.rho, 0.5)
    assert at == answer.value_at_rho <= 0.6 < answer.value_above
    assert CENSUS_RHO_RANGE[0] < answer.rho < CENSUS_RHO_RANGE[1]


@pytest.mark.parametrize(("call", "name"), [
    (lambda: rho2_for_target(1.2, rho1=0.1, x2=10, d=5), "target"),
    (lambda: rho2_for_target(0.59, rho1=0.1, x2=10, d=0), "d"),
    (lambda: rho2_for_target(0.59, rho1=0.1, x2=10, d=5, p=[]), "p"),
    (lambda: rho2_for_target(0.2, rho1=0.1, x2=10, d=5), "target"),   # fails at rho2 -> 0
    (lambda: rho2_for_target(0.95, rho1=1.0, x2=5, d=1), "target"),  # never exceeded
    (lambda: census_rho_for_target("tail", 0.6, max_ratio=3.0, x2=10, d=5), "max_ratio"),
    (lambda: census_rho_for_target("tail", 0.6, x2=10, d=5), "max_ratio"),
    (lambda: census_rho_for_target("p-correct", 0.6, x2=10), "x2 and d"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
