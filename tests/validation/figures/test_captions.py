"""Tests of validation.figures.captions: the alt text says what the figure draws."""

import numpy as np
from matplotlib.figure import Figure

from dprisk.validation.beyond.decisions import _profile_figure, profile_data
from dprisk.validation.figures.captions import alt_text
from dprisk.validation.figures.supplement import figure7
from dprisk.validation.paper.supplement import figure7_data


def test_alt_text_keeps_the_symbols_of_the_budget_profile():
    # the middle and right panels' labels are r"largest $\varepsilon$ ($\varepsilon$-DP)" and
    # rf"largest $\rho$ with tail $\leq$ 0.05": their ε and ≤ were dropped ("largest  (-DP)")
    alt = alt_text(_profile_figure(profile_data(8)), "budget_risk_profile")
    assert "largest ε (ε-DP) against prior p" in alt
    assert "largest ρ with tail ≤ 0.05 against prior p" in alt
    assert "  " not in alt and "\\" not in alt


def test_alt_text_of_the_variance_figure_has_no_mathtext_left():
    alt = alt_text(figure7(figure7_data(np.logspace(-1, 1, 5))), "figure7")
    assert "σ2 = Var DG(0, s)" in alt  # was "Var\,DG(0, s)"
    assert "\\" not in alt and "$" not in alt


def test_alt_text_writes_a_sum_with_its_limits():
    fig = Figure()
    ax = fig.subplots()
    ax.bar([0, 1], [0.5, 0.5], label=r"exact $\sum_{i=1}^n Z_i$")  # Figure 9's legend entry
    ax.set_xlabel("value of the noise sum (persons)")
    ax.set_ylabel("probability mass")
    ax.legend()
    assert "(exact Σ(i=1…n) Zi)" in alt_text(fig, "figure8")  # was "exact i=1n Zi"
