"""Tests of validation.published: the paper's numbers as data, and the agreement rule."""

import math

import pytest

from dprisk.validation.paper import published as pub

KINDS = {"probability", "risk", "rho", "epsilon", "threshold", "count", "bound", "claim",
         "input", "setting"}
COMPUTED_BY = {"single_level", "unique_levels", "hierarchical", "mcmc", "prior_sensitivity",
               "dg_sums", "census", "input"}


def test_ids_unique_and_lookup():
    ids = pub.ids()
    assert len(ids) == len(set(ids)) == len(pub.PUBLISHED)
    for record in pub.PUBLISHED:
        assert pub.get(record.id) is record
    with pytest.raises(KeyError, match="table1/x1_star=9/mass"):
        pub.get("table1/x1_star=9/mass")


def test_select_by_prefix_in_paper_order():
    table1 = pub.select("table1/")
    assert len(table1) == 5 + 5 * 4 + 5 * 5  # mass, posteriors (no 1/864), risks
    assert [r.id for r in pub.select("table1/x1_star=1/")][:2] == [
        "table1/x1_star=1/mass", "table1/x1_star=1/p=1/2/posterior"]
    assert len(pub.select("table2/p=")) == 10
    assert len(pub.select("table2/census_rho/")) == 6
    assert len(pub.select("table5/")) == 8
    assert pub.select("no-such-prefix") == []


@pytest.mark.parametrize("record", pub.PUBLISHED, ids=lambda r: r.id)
def test_record_is_consistent_with_its_printed_text(record):
    assert record.kind in KINDS
    assert record.computed_by in COMPUTED_BY
    assert record.relation in {"=", "<", ">", "≈"}
    assert record.source and record.quantity
    text = record.printed.replace(",", "")
    if record.decimals is None:
        return
    if text.endswith("%"):
        number = float(text[:-1]) / 100
        assert record.decimals == len(text[:-1].partition(".")[2]) + 2
    else:
        number = float(text)
        assert record.decimals == len(text.partition(".")[2])
    assert record.value == pytest.approx(number, abs=1e-15)
    assert f"{record.value:.{record.decimals}f}" == f"{number:.{record.decimals}f}"
    if record.kind == "probability":
        assert 0 <= record.value <= 1


def test_selected_values_as_printed():
    assert pub.get("table1/x1_star=3/mass").value == 0.073
    assert pub.get("table1/x1_star=5/p=1/2/posterior").value == 0.710
    assert pub.get("table1/x1_star=4/p=1/864/risk").value == 2.00
    assert pub.get("table2/p=1/864/posterior").value == 0.0014
    assert pub.get("table2/p=1/864/posterior").decimals == 4
    assert pub.get("table2/census_rho/block").value == 0.0992
    assert pub.get("text4.2/p=1/2/p_correct").value == 0.59
    assert pub.get("text4.2/p=1/5/rho=0.5/p_correct").value == 0.30
    assert pub.get("text4.2/p=1/5/rho=0.6/p_correct").value == 0.28
    assert pub.get("table4/k1=1/posterior").value == 0.570
    assert pub.get("table4/k1=1/posterior").decimals == 3
    assert [r.value for r in pub.select("table5/")] == [0.11, 0.40, 0.30, 0.14, 0.046, 0.007,
                                                         0.0008, 0.0001]
    assert pub.get("fig4/net").value == pytest.approx(
        pub.get("fig4/gain").value - pub.get("fig4/loss").value, abs=1e-15)
    assert pub.get("text2.3/epsilon").value == 17.91
    assert pub.get("table2/geolevel_share/block").value == 165 / 4099
    assert math.isclose(sum(r.value for r in pub.select("table4/k1=")), 1.0)


def test_agrees_uses_half_unit_of_last_printed_place():
    record = pub.get("table1/x1_star=2/mass")  # 0.119, 3 decimals
    assert record.half_unit == pytest.approx(5e-4)
    assert pub.agrees(record, 0.11949913)
    assert pub.agrees(record, 0.1185)
    assert not pub.agrees(record, 0.11951)
    assert not pub.agrees(record, 0.1184)
    exact = pub.get("text4.1/gvhr_levels_1940")
    assert exact.half_unit == 0 and pub.agrees(exact, 864) and not pub.agrees(exact, 865)


def test_agrees_bounds_and_approximate_claims():
    bound = pub.get("text4.2/p=1/5/p_correct_bound")  # < 0.01
    assert pub.agrees(bound, 0.0017) and not pub.agrees(bound, 0.01)
    over = pub.get("fig4/region_mass")  # > 0.99
    assert pub.agrees(over, 0.995) and not pub.agrees(over, 0.99)
    claim = pub.get("text4.2/fig2/rho=5/p=1/2/posterior")  # ≈ 1
    assert pub.agrees(claim, 0.95) and not pub.agrees(claim, 0.85)
    assert pub.agrees(claim, 0.85, approx_rtol=0.2)
