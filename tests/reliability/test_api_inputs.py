"""Array inputs of the Python API, one table: empty, 0-d, boolean, object and NaN arrays.

Each row of :data:`CASES` calls a public function with an array its caller should not pass
and names the exception (``ValueError`` or ``TypeError``) and the parameter that the one-line
message must name (as a word). ``N_CASES`` is the number of rows (quoted in the README).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.reliability.api_targets import resolve, target_ids

EXACT = "dprisk.inference.two_level.exact:exact_posterior"
GIBBS = "dprisk.inference.two_level.gibbs:gibbs_sample"
DIAG = "dprisk.inference.mcmc.chain_stats:chain_diagnostics"
PMF = "dprisk.inference.single_level.closed_form:release_pmf"
POST = "dprisk.inference.single_level.closed_form:posterior"
ML = "dprisk.inference.nested.exact:exact_posterior"
DG = "dprisk.models.mechanism.discrete_gaussian"
P2 = {"rho1": 0.5, "rho2": 0.5, "d": 3}
NESTED = {"rhos": [0.5, 0.5, 0.5], "siblings": [3, 3]}
EMPTY = np.array([], dtype=np.int64)
PRODUCT = "dprisk.inference.product.exact:product_risk"

#: (function, args, kwargs, exception, parameter named)
CASES = [
    (GIBBS, (EMPTY, 5, 3), {"draws": 10, "random_seed": 1, **P2}, ValueError, "x1_star"),
    (GIBBS, (2, EMPTY, 3), {"draws": 10, "random_seed": 1, **P2}, ValueError, "x2_star"),
    (GIBBS, (np.array([True]), 5, 3), {"draws": 10, **P2}, TypeError, "x1_star"),
    (GIBBS, (2, 5, np.array([np.nan])), {"draws": 10, **P2}, ValueError, "y1_star"),
    (EXACT, (EMPTY, EMPTY, EMPTY), P2, ValueError, "x1_star"),
    (EXACT, (2, 5, EMPTY), P2, ValueError, "y1_star"),
    (EXACT, (np.array([2], dtype=object), 5, 3), P2, TypeError, "x1_star"),
    (EXACT, (np.bool_(True), 5, 3), P2, TypeError, "x1_star"),
    (EXACT, (2, np.array([np.nan, 1.0]), 3), P2, ValueError, "x2_star"),
    (EXACT, (2, 5, 3), {**P2, "rho1": True}, TypeError, "rho1"),
    (EXACT, (2, 5, 3), {**P2, "rho2": np.array(True)}, TypeError, "rho2"),
    (EXACT, (2, 5, 3), {**P2, "p": True}, TypeError, "p"),
    (EXACT, (2, 5, 3), {**P2, "p": np.array([0.5], dtype=object)}, TypeError, "p"),
    (EXACT, (2, 5, 3), {**P2, "rho1": np.array([])}, ValueError, "rho1"),
    (ML, (np.zeros((0, 3), np.int64), np.zeros((0, 2), np.int64)), NESTED, ValueError,
     "x_stars"),
    (ML, (np.array(2), np.array([1, 1])), NESTED, ValueError, "x_stars"),
    (DIAG, (np.zeros((2, 0)),), {}, ValueError, "values"),
    (DIAG, (np.zeros((0, 5)),), {}, ValueError, "values"),
    (DIAG, (np.float64(1.0),), {}, ValueError, "values"),
    (DIAG, (np.zeros((2, 5), bool),), {}, TypeError, "values"),
    (DIAG, (np.zeros((2, 5), object),), {}, TypeError, "values"),
    (DIAG, (np.full((2, 5), np.nan),), {}, ValueError, "values"),
    (PMF, (1.5, 0.5), {}, ValueError, "x1_star"),
    (PMF, (True, 0.5), {}, TypeError, "x1_star"),
    (PMF, (2, np.array([True])), {}, TypeError, "rho"),
    (POST, (2, 0.5), {"p": np.bool_(False)}, TypeError, "p"),
    (POST, (np.array(["2"]), 0.5), {}, TypeError, "x1_star"),
    (f"{DG}:variance", (True,), {}, TypeError, "rho"),
    (f"{DG}:log_normalizer", (np.array([0.5], dtype=object),), {}, TypeError, "rho"),
    # lists of booleans, which numpy reads as a bool array (before: taken as 1 and 0)
    (EXACT, ([True, False], 5, 3), P2, TypeError, "x1_star"),
    (PMF, (2, [True, True]), {}, TypeError, "rho"),
    ("dprisk.inference.attribute.posterior:cell_posterior", ([True, False], [0, 1], 0.5), {},
     TypeError, "release"),
    # a list where one number is taken (before: numpy's 'only 0-dimensional arrays can be
    # converted to Python scalars', naming nothing), as dr.p_correct would broadcast it
    (PRODUCT, (0.5, [0.5, 0.3], [1, 2]), {}, ValueError, "rho2"),
    (PRODUCT, (np.array([]), 0.5, [1, 2]), {}, ValueError, "rho1"),
    (PRODUCT, (0.5, 0.5, [1, 2]), {"m": [0, 1]}, ValueError, "m"),
    (PRODUCT, (0.5, 0.5, [1, 2]), {"p": [0.2, 0.3]}, ValueError, "p"),
    ("dprisk.inference.product.histogram_attribute:cell_tables",
     ([0, 1], [[1, 0], [0, 1]], [0.5, 0.2], 0.5), {}, ValueError, "rho1"),
    ("dprisk.inference.attribute.posterior:cell_posterior", ([1, 0], [0, 0], [0.5, 0.1]), {},
     ValueError, "rho"),
    ("dprisk.models.builders.attribute:build_attribute_model", ([1, 0], [0, 0], [0.5, 0.1]),
     {}, ValueError, "rho"),
    ("dprisk.inference.product.unknown_others:product_risk_unknown_others",
     (0.5, 0.5, 2, [0.5, 0.5]), {"p": [0.1, 0.2]}, ValueError, "p"),
    ("dprisk.inference.product.monte_carlo_risk:product_risk_mc", (0.5, 0.5, [1, 2]),
     {"p": [0.1, 0.2], "datasets": 10}, ValueError, "p"),
    ("dprisk.models.priors.library:PointMass", ([1, 2],), {}, ValueError, "k"),
    ("dprisk.inference.attribute.strategy:census_block_design", (), {"rho_detailed": [0.1, 0.2]},
     ValueError, "rho_detailed"),
    # complex and date arrays (before: cast to float, the imaginary part dropped with a
    # ComplexWarning; a date read as its count of days: posterior 1.0 for 2020-01-01)
    (POST, (np.array([2 + 1j]), 0.5), {}, TypeError, "x1_star"),
    (POST, (np.datetime64("2020-01-01"), 0.5), {}, TypeError, "x1_star"),
    (PRODUCT, (0.5, 0.5, 1 + 1j), {}, TypeError, "others"),
]
N_CASES = len(CASES)


@pytest.mark.parametrize(("target", "args", "kwargs", "raises", "names"), CASES,
                         ids=target_ids(CASES, 4))
def test_bad_array_is_refused(target, args, kwargs, raises, names):
    with pytest.raises(raises) as info:
        resolve(target)(*args, **kwargs)
    message = str(info.value)
    assert type(info.value) is raises or isinstance(info.value, raises)
    assert "\n" not in message
    assert re.search(rf"(?<![\w]){re.escape(names)}(?![\w])", message), message
