"""Fixtures shared by the validation tests: studies that more than one test module reads."""

import pytest


@pytest.fixture(scope="session")
def supplement_study_result():
    """The supplement study as the report runs it (exact, about 8 s), computed once per process.

    Read by ``paper/test_supplement.py`` and ``test_numbering.py``, which ``tests/conftest.py``
    (:data:`SHARED_SCOPES`) sends to the same xdist worker. The tests only read it.
    """
    from dprisk.validation.paper import supplement

    return supplement.study()


@pytest.fixture(scope="session")
def single_level_study_result():
    """The single-level study with its figures as the report runs it (exact, about 0.5 s of
    CPU), computed once per process.

    Read by ``paper/test_single_level.py`` and ``test_numbering.py``, which ``tests/conftest.py``
    (:data:`SHARED_SCOPES`) sends to the same xdist worker. The tests only read it.
    """
    from dprisk.validation.figures import single_level as figures_single_level
    from dprisk.validation.paper import single_level as single_level_paper

    return single_level_paper.study(figures=figures_single_level)
