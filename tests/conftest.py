"""Shared test configuration: a non-interactive matplotlib backend and seeded generators."""

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")


@pytest.fixture
def rng():
    """A fresh, fixed-seed numpy Generator for each test."""
    return np.random.default_rng(20201)
