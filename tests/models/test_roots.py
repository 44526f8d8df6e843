"""``brent_root`` returns what ``scipy.optimize.brentq`` returns, bit for bit.

The budget searches' answers are records compared for exact equality, so the root finder that
replaced ``brentq`` (to keep ``scipy.optimize`` out of the command line's imports) must take
the same steps: compared on random smooth functions with one or more sign changes and on the
package's own searches (the single-level measures), at both tolerances the package uses.
"""

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from dprisk.inference.privacy.budget import measure_function
from dprisk.models.roots import brent_root


@pytest.mark.parametrize("xtol", [1e-300, 2e-12])
def test_same_float_as_brentq_on_random_functions(xtol):
    rng = np.random.default_rng(0)
    compared = 0
    for _ in range(1500):
        a, b, c = rng.normal(size=3)
        power = int(rng.integers(1, 6))

        def func(x, a=a, b=b, c=c, power=power):
            return (math.tanh(a * x) ** power * math.exp(b * x) + c * x ** 3 - 0.3
                    + 0.1 * math.sin(5 * x))

        if func(-3.0) * func(3.0) > 0:
            with pytest.raises(ValueError, match="different signs"):
                brent_root(func, -3.0, 3.0, xtol=xtol, rtol=1e-15)
            continue
        assert brent_root(func, -3.0, 3.0, xtol=xtol, rtol=1e-15) == brentq(
            func, -3.0, 3.0, xtol=xtol, rtol=1e-15)
        compared += 1
    assert compared > 500


@pytest.mark.parametrize("measure", ["marginal-risk", "marginal-posterior"])
@pytest.mark.parametrize("p", [0.5, 0.1, 1 / 864])
def test_same_float_as_brentq_on_the_budget_measures(measure, p):
    value = measure_function(measure, p, 0)
    target = 1.2 if measure == "marginal-risk" else (1 + p) / 2

    def excess(rho):
        return value(rho) - target

    lower, upper = 1e-6, 1e3
    assert brent_root(excess, lower, upper, xtol=1e-300, rtol=1e-15) == brentq(
        excess, lower, upper, xtol=1e-300, rtol=1e-15)


def test_refuses_nan_and_reports_no_convergence():
    with pytest.raises(ValueError, match="NaN"):
        brent_root(lambda x: math.nan if x > 0 else -1.0, -1.0, 1.0)
    with pytest.raises(RuntimeError, match="did not converge"):
        brent_root(lambda x: math.exp(x) - 1.5, 0.0, 1.0, xtol=1e-300, rtol=1e-15, maxiter=2)


@pytest.mark.parametrize("scale", [1e-155, 1e-160, 1e-170, 1e-300])
@pytest.mark.parametrize("shape", ["line", "exp", "cubic"])
def test_same_float_as_brentq_on_tiny_function_values(scale, shape):
    # Function values below about 1e-154: the product of two of them underflows to 0 (the
    # old sign test by product lost the bracket and returned 0.0 for scales of 1e-170 and
    # below), and the interpolation's denominators underflow to 0 (ZeroDivisionError at 1e-155
    # and 1e-160, where brentq's C division gives inf and bisects). Same float as brentq.
    unscaled = {"line": lambda x: x - 3.0, "exp": lambda x: math.exp(x) - 5.0,
                "cubic": lambda x: (x - 1.1) ** 3 + 0.2 * (x - 1.1)}[shape]

    def func(x):
        return unscaled(x) * scale

    found = brent_root(func, 0.0, 10.0, xtol=1e-300, rtol=1e-15)
    assert found == brentq(func, 0.0, 10.0, xtol=1e-300, rtol=1e-15)
    assert found == pytest.approx(brentq(unscaled, 0.0, 10.0, xtol=1e-300, rtol=1e-15),
                                  rel=1e-14)
