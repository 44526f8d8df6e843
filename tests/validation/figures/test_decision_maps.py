"""Decision maps (validation.decision_maps): structure, consistency, masses, figure."""

import numpy as np
import pytest
import xarray as xr
from census_values import RHO_BLOCK, RHO_BLOCK_GROUP
from matplotlib.figure import Figure

from dprisk.inference.two_level.exact import posterior_x1
from dprisk.validation.figures.decision_maps import decision_map, plot_decision_map

CENSUS = {"rho1": RHO_BLOCK, "rho2": RHO_BLOCK_GROUP,
          "d": 27}
#: x1* axis wide enough to hold all but ~1e-12 of X1* ~ DG(1, 1/(2 rho1)).
WIDE_X1 = np.arange(-20, 23)


@pytest.fixture(scope="module", params=["exact", "variant"])
def wide_map(request):
    return decision_map(x1_star=WIDE_X1, model=request.param, **CENSUS)


def test_threshold_structure(wide_map):
    decision = wide_map["decision"].values
    assert np.all(np.diff(decision, axis=0) >= 0)  # nondecreasing in x1*
    assert np.all(decision[0] == 0) and np.all(decision[-1] == 1)


def test_decision_agrees_with_posterior(wide_map):
    post = wide_map["posterior"].values
    decision = wide_map["decision"].values
    assert np.all((post > 0.5) == (decision == 1))
    if wide_map.attrs["model"] == "exact":
        grid = np.meshgrid(WIDE_X1[18:24], wide_map["x2_star"], wide_map["y1_star"],
                           indexing="ij")
        np.testing.assert_allclose(post[18:24], posterior_x1(*grid, **CENSUS), rtol=1e-12)


def test_single_level_decision_and_change_labels(wide_map):
    single = wide_map["decision_no_hierarchy"].values
    assert np.all(single == (WIDE_X1 >= 1)[:, None, None])
    decision = wide_map["decision"].values
    change = wide_map["change"].values
    # truth x1 = 1: gain where the hierarchy says 1 and x1* alone says 0, loss the reverse
    assert np.all((change == "gain") == ((decision == 1) & (single == 0)))
    assert np.all((change == "loss") == ((decision == 0) & (single == 1)))


def test_tile_masses_add_up_to_region_totals(wide_map):
    prob = wide_map["release_probability"]
    assert float(prob.sum()) == pytest.approx(float(wide_map["region_mass"]), abs=1e-10)
    gain = float(prob.where(wide_map["change"] == "gain").sum())
    loss = float(prob.where(wide_map["change"] == "loss").sum())
    assert gain == pytest.approx(float(wide_map["gain_region"]), abs=1e-10)
    assert loss == pytest.approx(float(wide_map["loss_region"]), abs=1e-10)
    assert float(wide_map["gain_region"]) <= float(wide_map["gain_total"])
    assert float(wide_map["region_mass"]) < 0.99  # the paper's 'over 99%' does not hold


def test_variant_changes_only_at_x1_star_0_and_1():
    ds = decision_map(x1_star=np.arange(-6, 8), model="variant", **CENSUS)
    changed = (ds["change"] != "none").any(("x2_star", "y1_star"))
    assert list(ds["x1_star"].values[changed.values]) == [0, 1]


def test_counterfactual_truth_and_ties():
    ds = decision_map(x1=0, x2=0, prior="point:25", **CENSUS)
    assert ds.attrs["x1"] == 0
    assert bool(ds["tie"].any())  # point mass, d odd: posteriors of exactly 1/2
    assert np.allclose(ds["posterior"].values[ds["tie"].values], 0.5, atol=1e-9)
    up = decision_map(x1=0, x2=0, prior="point:25", ties="m+1", **CENSUS)
    assert np.all(up["decision"].values[ds["tie"].values] == 1)
    assert np.all(ds["decision"].values[ds["tie"].values] == 0)


def test_figure_and_netcdf_roundtrip(tmp_path):
    ds = decision_map(**CENSUS)
    fig = plot_decision_map(ds)
    assert isinstance(fig, Figure)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == ds.sizes["x1_star"]
    assert "y1*" in axes[-1].get_xlabel() and "persons" in axes[-1].get_xlabel()
    path = tmp_path / "map.nc"
    ds.to_netcdf(path)
    back = xr.load_dataset(path)
    assert (back["change"].values == ds["change"].values).all()


def test_bad_input():
    with pytest.raises(ValueError, match="model"):
        decision_map(model="pymc", **CENSUS)
    with pytest.raises(ValueError, match="x2_star"):
        decision_map(x2_star=[3, 1], **CENSUS)
    with pytest.raises(ValueError, match="ties"):
        decision_map(ties="half", **CENSUS)


def test_figure_legend_explains_the_tie_crosses():
    # point mass at X2 = 1, d odd: the posterior is exactly 1/2 at (x1*, x2*, y1*) = (0, 0, -13)
    # (supplement Figure 11); the crosses drawn there had no legend entry
    ds = decision_map(prior="point:1", x1_star=[0], x2_star=[0], y1_star=[-14, -13], **CENSUS)
    assert ds["tie"].values.tolist() == [[[False, True]]]
    (legend,) = plot_decision_map(ds).legends
    assert legend.get_texts()[-1].get_text() == "posterior exactly 1/2 (tie, decided X1 = 0)"
    up = decision_map(prior="point:1", x1_star=[0], x2_star=[0], y1_star=[-13], ties="m+1",
                      **CENSUS)
    (legend,) = plot_decision_map(up).legends
    assert legend.get_texts()[-1].get_text() == "posterior exactly 1/2 (tie, decided X1 = 1)"
    (legend,) = plot_decision_map(decision_map(x1_star=[0], **CENSUS)).legends  # no tie
    assert not any("1/2" in text.get_text() for text in legend.get_texts())
