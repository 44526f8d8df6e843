"""Tests of validation.figures.captions: the alt text says what the figure draws."""

import numpy as np
from matplotlib.figure import Figure

from dprisk.validation.beyond.decisions import _profile_figure, profile_data
from dprisk.validation.figures.captions import alt_text, caption
from dprisk.validation.figures.decision_maps import decision_map, plot_decision_map
from dprisk.validation.figures.supplement import figure7
from dprisk.validation.figures.two_level import figure5, figure5_data, figure6, figure6_data
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


def test_alt_text_gives_every_panel_of_a_shared_grid_its_axes():
    # label_outer empties the inner panels' labels: "x1* = 0" was described by its title alone
    ds = decision_map(rho1=0.1, rho2=0.25, d=27, x1_star=np.arange(-1, 3),
                      x2_star=np.arange(0, 2), y1_star=np.arange(-2, 3))
    alt = alt_text(plot_decision_map(ds), "figure4")
    panels = alt.split(" Legend: ")[0].removesuffix(".").split(": ", 1)[1].split(" | ")
    assert len(panels) == 4
    for x1_star, panel in zip(range(-1, 3), panels, strict=True):
        assert panel == (f"x1* = {x1_star}: x2* (block group, persons) against y1* (released "
                         f"count of the other d blocks, persons)")


def test_figure5_and_6_captions_name_every_line_drawn():
    # Figure 5's dotted orange curve (the variant decided from 10^3 draws: the curve that
    # reproduces the paper's 59.05 %) and Figure 6's black dashed line (no block group) were
    # drawn and in the legend but missing from the captions
    fig5 = figure5(figure5_data(x2_values=[1, 4], draws=1000))
    assert any("1000 draws" in text.get_text() for text in fig5.legends[0].get_texts())
    assert "dotted with crosses: decided from 10³ draws" in caption(fig5, "figure5")
    fig6 = figure6(figure6_data(rho2_values=[0.1, 1.0], x2_values=[1]))
    assert any(text.get_text() == "without the block group"
               for text in fig6.legends[0].get_texts())
    assert "black dashed line is the value without the block group" in caption(fig6, "figure6")


def test_alt_text_ends_with_the_legend_drawn_for_the_whole_figure():
    # Figure 5's legend sits below its panels (fig.legend): the alt text had none of its
    # curves; Figures 10-11 draw one such legend per sub-figure, read once
    alt = alt_text(figure5(figure5_data(x2_values=[1, 4], draws=1000)), "figure5")
    assert alt.endswith("Legend: exact posterior (model); constraint-dropping Gibbs variant "
                        "(stationary); variant, 1000 draws, estimate ≥ 1/2 (expected); "
                        "without the block group; exact, mean over 4 ≤ x2 ≤ 10.")
    ds = decision_map(rho1=0.1, rho2=0.25, d=27, x1_star=[0], x2_star=[0], y1_star=[0])
    fig = Figure()
    for sub in fig.subfigures(2, 1):
        plot_decision_map(ds, fig=sub)
    assert alt_text(fig, "figure9a").endswith(
        "Legend: decide X1 = 0; decide X1 = 1; hierarchy changes decision: now correct (gain); "
        "hierarchy changes decision: now wrong (loss).")


def test_alt_text_keeps_text_outside_math_as_drawn():
    # underscores outside $...$ are drawn as underscores: the SBC panel titles read
    # "gibbs/user:negativebinomialprior", Figure 5's legend "MC: x1chain sampler"
    fig = Figure()
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], label="MC: x1_chain sampler")
    ax.set_title("gibbs/user:negative_binomial_prior, X1")
    ax.set_xlabel(r"block $\rho_1$ (costs \$5)")
    ax.set_ylabel("simulations")
    ax.legend()
    assert alt_text(fig, "sbc_rank_histograms").endswith(
        "gibbs/user:negative_binomial_prior, X1: simulations against block ρ1 (costs $5) "
        "(MC: x1_chain sampler).")


def test_alt_text_counts_the_legend_entries_it_leaves_out():
    """A panel legend of 10 entries was cut to 6 in silence; the rest are now counted."""
    import matplotlib.pyplot as plt

    from dprisk.validation.figures.captions import LEGEND_ENTRIES_SHOWN, alt_text

    fig, ax = plt.subplots()
    for k in range(10):
        ax.plot([0, 1], [k, k], label=f"line {k}")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend()
    text = alt_text(fig, "unlisted_stem")
    plt.close(fig)
    assert f"line {LEGEND_ENTRIES_SHOWN - 1}; and {10 - LEGEND_ENTRIES_SHOWN} more)" in text
    assert f"line {LEGEND_ENTRIES_SHOWN};" not in text
