"""Tests of models/priors/graph_eval.py: the numpy walk of a prior's graph equals the compiled one.

Reference: ``pytensor.function`` with the default mode (the path used before graph_eval, numba
linker and full rewrites). Tolerance 1e-12 relative (the rewrites may reorder a floating-point
operation; observed differences are about 1e-14).
"""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from reference_priors import NB_SPEC, reference_log_weight

from dprisk.models.priors.graph_eval import graph_function
from dprisk.models.priors.library import parse_prior

EXAMPLES = [NB_SPEC, "models/examples/geometric_prior.py:prior",
            "models/examples/table_prior.py:prior", "models/examples/mixture_prior.py:prior"]


@pytest.mark.parametrize("spec", EXAMPLES)
def test_walk_equals_compiled_function(spec):
    prior = parse_prior(spec)
    k2v, k1v = pt.lvector("k2"), pt.lvector("k1")
    compiled = pytensor.function([k2v, k1v], prior.log_weight_pt(k2v, k1v))
    k2 = np.tile(np.arange(0, 300, dtype=np.int64), 3)
    k1 = np.repeat(np.array([0, 1, 7], dtype=np.int64), 300)
    want = compiled(k2, k1)
    (got,) = graph_function([k2v, k1v], [prior.log_weight_pt(k2v, k1v)])(k2, k1)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-12)
    np.testing.assert_allclose(prior.log_weight(k2, k1), got, rtol=0)


def test_negative_binomial_example_matches_pymc_and_scipy():
    import pymc as pm

    prior = parse_prior(NB_SPEC)
    k2 = np.arange(0, 500)
    dist = pm.NegativeBinomial.dist(mu=np.float64(5.0), alpha=np.float64(2.0))
    pymc_values = pm.logp(dist, k2 - 2).eval()
    got = prior.log_weight(k2, 2)
    finite = k2 >= 2
    np.testing.assert_allclose(got[finite], pymc_values[finite], rtol=1e-12)
    np.testing.assert_allclose(got[finite], reference_log_weight(NB_SPEC, k2, 2)[finite],
                               rtol=1e-12)
    assert np.all(got[~finite] == -np.inf)


def test_constants_and_shared_variables():
    x = pt.dvector("x")
    shared = pytensor.shared(np.float64(3.0))
    (out,) = graph_function([x], [pt.exp(x) * shared + np.float64(1.0)])(np.array([0.0, 1.0]))
    np.testing.assert_allclose(out, [4.0, 3.0 * np.e + 1.0], rtol=1e-15)


_FRESH_EVALUATION = """
import sys
import numpy as np
from dprisk.models.priors.library import parse_prior
k2 = np.concatenate([np.arange(-5, 3000), [10**6, 2**40]]).astype(np.int64)
for spec in {specs!r}:
    prior = parse_prior(spec)
    values = prior.log_weight(k2, np.full_like(k2, 2))
    sys.stdout.write(values.tobytes().hex() + " " + str("scipy.special" in sys.modules) + "\\n")
"""


@pytest.fixture(scope="module")
def fresh_evaluations():
    """``{spec: (hex of the values, whether scipy.special was loaded after it)}`` from ONE fresh
    process evaluating every example in turn (one interpreter start instead of four, ~0.9 s of
    CPU each): scipy.special is checked after each prior, so any prior importing it shows at
    that prior and every later one."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _FRESH_EVALUATION.format(specs=EXAMPLES)],
                          capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert len(lines) == len(EXAMPLES), done.stdout
    return dict(zip(EXAMPLES, (tuple(line.split()) for line in lines), strict=True))


@pytest.mark.parametrize("spec", EXAMPLES)
def test_special_functions_without_importing_scipy_special(spec, fresh_evaluations):
    """A fresh process evaluates the prior (gammaln for the negative binomial) with SciPy's
    compiled ufuncs loaded alone, never importing scipy.special; the values are the same bits
    as through scipy.special (no tolerance: the same compiled function)."""
    import scipy.special  # noqa: F401 -- here the ordinary path (prepare_node's import)

    hex_values, imported = fresh_evaluations[spec]
    assert imported == "False"
    prior = parse_prior(spec)
    k2 = np.concatenate([np.arange(-5, 3000), [10**6, 2**40]]).astype(np.int64)
    # a fresh graph function: a prior's cached one may predate the import above
    k2v, k1v = pt.lvector("k2"), pt.lvector("k1")
    (want,) = graph_function([k2v, k1v], [prior.log_weight_pt(k2v, k1v)])(
        k2, np.full_like(k2, 2))
    assert bytes.fromhex(hex_values) == np.asarray(want, dtype=float).tobytes()


def test_loaded_ufuncs_are_scipys():
    import scipy.special

    from dprisk.models.priors import graph_eval

    module = graph_eval._load_special_ufuncs()
    assert module is not None
    x = np.concatenate([np.linspace(-60.0, 60.0, 20001), [0.0, -0.0, 1e-300, 1e300, np.inf,
                                                           -np.inf, np.nan, -3.0, 171.5]])
    for name in ("gammaln", "psi", "erf", "erfc", "gamma", "expit", "log_expit", "i0", "j0"):
        ufunc = getattr(module, name, None)
        if ufunc is None:
            continue
        with np.errstate(all="ignore"):
            assert ufunc(x).tobytes() == getattr(scipy.special, name)(x).tobytes(), name
    assert graph_eval.special_ufunc("gammaln") is None  # scipy.special imported: ordinary path
