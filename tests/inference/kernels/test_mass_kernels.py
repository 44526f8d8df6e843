"""The window-major masses (inference/kernels/mass_kernels.py) equal checked_table's, bit for bit.

No tolerance: the kernel makes the same floating-point operations per cell as
``checked_table`` and replays NumPy's pairwise summation, so the arrays must be identical
(compared as bytes, which also tells -0.0 from 0.0 and one NaN from another). The cases
cover the built-in priors (weights added as a constant, cells off the support set to -inf),
a user prior file (its own ``log_weight`` on the window), windows pushed against the
support (one ``j - r`` per release), windows widened by the check, counts near 2**52 (the
int64 form of ``2r + j - r``) and batches below the size where the layout is used.
"""

import numpy as np
import pytest
from census_values import CENSUS_PRIOR_CASES, RHO_BLOCK, RHO_BLOCK_GROUP
from reference_priors import NB_SPEC

from dprisk.inference.kernels import mass_kernels
from dprisk.inference.kernels.fused_kernels import checked_masses
from dprisk.inference.kernels.mass_kernels import (
    MIN_RELEASES,
    checked_log_masses,
    pairwise_row_sum,
    window_masses,
)
from dprisk.inference.kernels.table_kernels import (
    GridTooNarrowError,
    checked_table,
    window_table,
)
from dprisk.models.scenario import Scenario

CENSUS = {"rho1": RHO_BLOCK, "rho2": RHO_BLOCK_GROUP, "d": 27}
CASES = [
    *CENSUS_PRIOR_CASES,
    ({**CENSUS, "prior": NB_SPEC}, 2, 0.5),
    ({"rho1": 1e-3, "rho2": 2e-3, "d": 5, "prior": "improper"}, 2, 0.5),
    ({"rho1": 2.0, "rho2": 5.0, "d": 3, "prior": "truncated:40"}, 7, 0.9),
    ({"rho1": 0.1, "rho2": 0.25, "d": 27, "prior": "improper"}, 10**7, 0.5),
    ({"rho1": 0.5, "rho2": 3.0, "d": 1, "prior": "improper"}, 2**51, 0.2),
]


def _releases(known: int, n: int, seed: int = 5):
    rng = np.random.default_rng(seed)
    x1s = known + rng.integers(-30, 30, n)
    x2s = known + rng.integers(-60, 80, n)
    y1s = rng.integers(-200, 300, n)
    x1s[:3] = [known - 500, known + 900, known]
    y1s[:3] = [10**6, -400, 0]
    return x1s, x2s, y1s


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


#: Releases of the user-prior case in the window-major layout: 300 (above MIN_RELEASES, so the
#: layout is used), not 3000: its prior file's ``log_weight`` runs on every window cell, 2.0 of
#: the 2.5 s of CPU at 3000; the layout and the prior's column are the same at 300.
USER_PRIOR_RELEASES = 300


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("n", [3000, MIN_RELEASES - 1])
def test_checked_masses_equal_checked_table_bit_for_bit(case, n):
    params, known, p = CASES[case]
    if params["prior"] == NB_SPEC:
        n = min(n, USER_PRIOR_RELEASES)
    scenario = Scenario.two_level(**params, p=p, known=known)
    releases = _releases(known, n)
    table = checked_table(*releases, scenario, 1e-12, None)
    mass, neglected = checked_log_masses(*releases, scenario, 1e-12, None)
    assert _same(mass, table.log_branch_mass)
    assert _same(neglected, table.log_neglected)
    # the numpy path of checked_masses is this kernel
    mass_f, neglected_f = checked_masses(*releases, scenario, 1e-12, None, compiled=False)
    assert _same(mass_f, table.log_branch_mass) and _same(neglected_f, table.log_neglected)


@pytest.mark.parametrize("halfwidth", [0, 1, 3, 20, 62])
def test_fixed_windows_equal_window_table(halfwidth):
    """Narrow windows (most cells off the support for ``point``) and the widest laid out."""
    for params, known, p in CASES[:4]:
        scenario = Scenario.two_level(**params, p=p, known=known)
        releases = _releases(known, 500, seed=halfwidth)
        table = window_table(*releases, scenario, halfwidth)
        masses = window_masses(*releases, scenario, halfwidth)
        assert _same(masses.log_branch_mass, table.log_branch_mass)
        assert _same(masses.log_neglected, table.log_neglected)
        assert masses.width == table.width


def test_same_errors_as_checked_table():
    scenario = Scenario.two_level(**CENSUS, p=0.5, known=0)
    releases = _releases(0, 200)
    with pytest.raises(GridTooNarrowError) as from_table:
        checked_table(*releases, scenario, 1e-12, 1)
    with pytest.raises(GridTooNarrowError) as from_masses:
        checked_log_masses(*releases, scenario, 1e-12, 1)
    assert str(from_masses.value) == str(from_table.value)
    steep = Scenario.two_level(rho1=1.0, rho2=2e6, d=1, p=0.5, known=0)
    with pytest.raises(ValueError, match="rho2 \\+ rho1/d"):
        checked_log_masses(*releases, steep, 1e-12, None)


def test_work_arrays_do_not_carry_over_between_shapes():
    """Calls of other sizes in between (reused work arrays) change no result."""
    scenario = Scenario.two_level(**CENSUS, p=0.5, known=0)
    big, small = _releases(0, 4000, seed=1), _releases(0, 100, seed=2)
    first = checked_log_masses(*small, scenario, 1e-12, None)
    checked_log_masses(*big, scenario, 1e-12, None)
    again = checked_log_masses(*small, scenario, 1e-12, None)
    assert _same(first[0], again[0]) and _same(first[1], again[1])
    assert mass_kernels.work_array("test", (3, 2)).shape == (3, 2)


@pytest.mark.parametrize("width", [*range(0, 140), 255, 256, 300, 1000])
def test_pairwise_row_sum_is_numpys_sum(width):
    rng = np.random.default_rng(width)
    x = rng.standard_normal((40, width)) * np.exp(rng.uniform(-30, 30, (40, width)))
    x[0] = -0.0
    if width:
        x[1, ::3] = np.inf
        x[2, 0] = np.nan
    if width > 1:
        x[3, 1] = -np.inf
    assert _same(pairwise_row_sum(np.ascontiguousarray(x.T)), x.sum(axis=-1))


def test_counts_near_two_to_the_52_use_the_int64_sums():
    """``2r`` beyond 2**52: ``2r + (j - r)`` is formed in int64 (the table's own order)."""
    scenario = Scenario.two_level(**CENSUS, p=0.5, known=0)
    x1s, x2s, y1s = _releases(0, 300, seed=9)
    x2s = x2s + 2**52
    y1s = y1s + 2**52
    table = checked_table(x1s, x2s, y1s, scenario, 1e-12, None)
    mass, neglected = checked_log_masses(x1s, x2s, y1s, scenario, 1e-12, None)
    assert _same(mass, table.log_branch_mass) and _same(neglected, table.log_neglected)
