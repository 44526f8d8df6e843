"""Fixtures of the privacy-accounting tests."""

import pytest


@pytest.fixture(scope="module")
def empty_accounting_cache(tmp_path_factory):
    """An empty cache directory for one test module: each accounting value is computed there.

    The accounting functions store what they compute in the user's cache
    (:mod:`dprisk.inference.privacy.accounting_cache`); read from there, a value computed once
    -- by an earlier version, or before a defect -- answers every later run, and the tests that
    check the computation against an independent reference cannot fail. The shipped seed (the
    2020 strategy's fine compositions, recomputed by ``test_accounting_seed.py``) still answers.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DPRISK_CACHE_DIR", str(tmp_path_factory.mktemp("accounting-cache")))
        yield
