"""Tests of models/priors/files.py: priors loaded from ``PATH.py:NAME`` (through parse_prior).

An instance and a zero-argument factory load; a missing name, a non-prior, a factory with
arguments, a missing or broken file each give one line naming the prior and the allowed
forms; the shipped example loads from any working directory; a loaded file is cached.
"""

import math

import numpy as np
import pytest
from reference_priors import NB_SPEC

from dprisk.models.priors.files import load_prior_file
from dprisk.models.priors.library import PRIOR_FORMS, PointMass, parse_prior

PRIOR_FILE = '''
import numpy as np
import pytensor.tensor as pt
from dprisk.models.priors.library import UserPrior, PointMass

def geometric_logp(k2, k1):
    q = np.float64(0.5)
    return (k2 - k1) * pt.log(q) + pt.log1p(-q)

geometric = UserPrior(geometric_logp, description="X2 - X1 ~ Geometric(1/2)")

def make_point():
    return PointMass(3)

def needs_argument(x):
    return PointMass(x)

not_a_prior = 3
'''


@pytest.fixture
def prior_file(tmp_path):
    path = tmp_path / "my_priors.py"
    path.write_text(PRIOR_FILE)
    return path


def test_user_prior_from_file_instance_and_factory(prior_file):
    geometric = parse_prior(f"{prior_file}:geometric")
    assert geometric.spec == f"{prior_file}:geometric"
    k2 = np.arange(0, 60)
    want = np.where(k2 >= 2, (k2 - 2) * math.log(0.5) + math.log(0.5), -np.inf)
    np.testing.assert_allclose(geometric.log_weight(k2, 2), want, rtol=1e-14)
    assert parse_prior(f"{prior_file}:make_point") == PointMass(3)


@pytest.mark.parametrize(
    ("suffix", "fragment"),
    [
        (":missing_name", "defines no name 'missing_name'"),
        (":not_a_prior", "must be an X2Prior"),
        (":needs_argument", "zero-argument"),
    ],
)
def test_user_prior_file_errors(prior_file, suffix, fragment):
    with pytest.raises(ValueError, match=fragment) as info:
        parse_prior(f"{prior_file}{suffix}")
    assert PRIOR_FORMS in str(info.value)


def test_shipped_example_loads_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    prior = parse_prior(NB_SPEC)
    assert prior.spec == NB_SPEC and prior.is_proper


def test_missing_file_and_broken_file(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        parse_prior(f"{tmp_path}/nowhere.py:prior")
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ValueError, match=r"importing .* failed: RuntimeError: boom"):
        parse_prior(f"{broken}:prior")


def test_loaded_file_is_cached_until_it_changes(prior_file):
    first = load_prior_file(f"{prior_file}:geometric", str(prior_file), "geometric")
    assert load_prior_file(f"{prior_file}:geometric", str(prior_file), "geometric") is first


def test_an_edit_keeping_the_modification_time_is_loaded(prior_file):
    """Before: the cache was keyed by the file's modification time, so an edit that keeps it
    (``cp -p``, ``touch -r``, a file system with coarse timestamps) went unseen within a
    process: the edited file's q = 0.25 still gave the old q = 0.5 prior (log weight of
    k2 - k1 = 2, 2 log q + log(1 - q): -2.0794 for -3.0603). Now keyed by the file's bytes;
    closed forms, so a 1e-12 tolerance is rounding only."""
    import os

    spec = f"{prior_file}:geometric"
    first = load_prior_file(spec, str(prior_file), "geometric")
    before = os.stat(prior_file)
    prior_file.write_text(PRIOR_FILE.replace("np.float64(0.5)", "np.float64(0.25)"))
    os.utime(prior_file, ns=(before.st_atime_ns, before.st_mtime_ns))
    edited = load_prior_file(spec, str(prior_file), "geometric")
    assert edited is not first
    k2, k1 = np.array([3]), np.array([1])
    assert float(first.log_weight(k2, k1)[0]) == pytest.approx(2 * math.log(0.5)
                                                               + math.log(0.5), abs=1e-12)
    assert float(edited.log_weight(k2, k1)[0]) == pytest.approx(2 * math.log(0.25)
                                                                + math.log(0.75), abs=1e-12)
