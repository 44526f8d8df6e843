"""The report's section "Every person of a population": records, independent check, figure.

The study runs on a 5,000-person state here (about a second); the report's 100,000-person
state has the same code path. The independent recomputation (``direct_shares``) is checked
by hand on a four-person population, and shown to catch a wrong answer.
"""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from study_checks import assert_records_match, numbers_without_units

from dprisk.inference.population.categories import N_DETAILED_CELLS
from dprisk.inference.population.measurements import BlockMeasurements
from dprisk.validation.beyond import population
from dprisk.validation.figures.captions import caption


@pytest.fixture(scope="module")
def small_study():
    patch = pytest.MonkeyPatch()
    patch.setattr(population, "PERSONS", 5_000)
    try:
        yield population.study()
    finally:
        patch.undo()


def test_records_match_the_direct_recomputation(small_study):
    data = small_study.datasets["population_by_band"]
    expected = 1 + 2 + sum(  # sigma², the two baselines, then per adversary and band
        int(np.isfinite(float(data[name].sel(adversary=a, band=b))))
        for a in population.ADVERSARIES for b in data.band.values
        for name in ("map_correct_nonmodal", "mean_posterior_true"))
    assert_records_match(small_study.records, expected)
    assert data.attrs["persons_total"] == 5_000
    assert abs(data.attrs["noise_variance"] - 10.0928) < 1e-3  # the DAS's block detailed σ²
    assert int(data.persons.sel(band="all")) == 5_000
    assert int(data.persons.sel(band=list(data.band.values[:-1])).sum()) == 5_000
    assert int(data.blocks.sel(band="all")) == len(np.unique(
        population.measured_state(5_000)[0]["geoid"]))


def test_section_figure_and_caption(small_study):
    """Ours (4 lines) and the Census Bureau's published series beside them, in the figure
    and in the notes."""
    fig = small_study.figures["population_by_band"]
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == list(population.BAND_LABELS)
    lines = ax.get_lines()
    assert len(lines) == 4 + len(population.CENSUS_PER_BAND) == 8
    for line, (label, rates) in zip(lines[4:], population.CENSUS_PER_BAND.items()):
        assert line.get_label() == f"Census study: {label}"
        assert np.allclose(line.get_ydata(),
                           [100 * rates[b] for b in population.BAND_LABELS], rtol=0, atol=1e-12)
    text = caption(fig, "population_by_band")
    assert "not a replication" in text and "compare the shapes" in text
    assert "Tables 13 and 16" in text
    notes = " ".join(small_study.notes)
    assert population.CENSUS_SOURCE in notes
    assert "1-9: rHDF_b,t 86.0 %, rMDF_b,t 25.4 %, MDG 7.2 %, PRG 31.8 %" in notes
    assert "all: rHDF_b,t 43.3 %, rMDF_b,t 20.1 %, MDG 0.9 %, PRG 16.0 %" in notes
    assert "1-9: informed " in notes  # ours, in the same bands


#: The published counts behind CENSUS_PER_BAND (thousands, rounded by the Census Bureau to
#: four significant digits): (putative, confirmed) reidentifications of non-modal persons,
#: attacker CEFatkr, Tables 13 and 16 of the source named in the module.
PUBLISHED_COUNTS = {
    "2010 tables reconstructed (rHDF_b,t)": [
        (279, 240), (8084, 5777), (12900, 7221), (18260, 7645), (10880, 3337), (7813, 1945),
        (4595, 1017), (62810, 27180)],
    "2020 DAS on 2010 data, reconstructed (rMDF_b,t)": [
        (56, 14), (2405, 535), (5148, 1079), (9673, 1958), (7506, 1471), (6364, 1217),
        (4225, 834), (35380, 7108)],
    "block-modal guess (MDG), 2010 data": [
        (276, 20), (7971, 184), (12790, 157), (18210, 132), (10870, 51), (7812, 28),
        (4595, 8), (62530, 580)],
    "proportional random guess (PRG), 2010 data": [
        (276, 88), (7971, 1587), (12790, 2111), (18210, 2798), (10870, 1586), (7812, 1116),
        (4595, 717), (62530, 10000)],
}


def test_census_rates_agree_with_their_published_counts():
    """Each entered rate is the published confirmed / putative, within the rounding of both
    counts (half a unit each) and of the rate (0.05 percentage points): a typo fails."""
    assert set(population.CENSUS_PER_BAND) == set(PUBLISHED_COUNTS)
    for name, counts in PUBLISHED_COUNTS.items():
        rates = population.CENSUS_PER_BAND[name]
        assert list(rates) == [*population.BAND_LABELS, "all"]
        for band, (putative, confirmed) in zip(rates, counts):
            low = (confirmed - 0.5) / (putative + 0.5) - 5e-4
            high = (confirmed + 0.5) / (putative - 0.5) + 5e-4
            assert low <= rates[band] <= high, (name, band)


def test_no_census_line_when_none_given(small_study):
    from dprisk.validation.figures.population import figure

    data = small_study.datasets["population_by_band"]
    assert len(figure(data).axes[0].get_lines()) == 4
    assert len(figure(data, {"one": {"1-9": 0.5}}).axes[0].get_lines()) == 5


def _four_persons():
    geoids = np.array(["010010001001000", "010010001001001"])
    frame = pd.DataFrame({"geoid": [geoids[0]] * 3 + [geoids[1]], "hhgq": 0, "votingage": 1,
                          "hispanic": 0, "cenrace": [1, 1, 6, 8]})
    noisy = np.zeros((2, N_DETAILED_CELLS), dtype=np.int64)
    group = 1 * 126  # hhgq 0, voting age 1
    noisy[0, group + 0], noisy[0, group + 5], noisy[1, group + 7] = 2, 1, 1
    noisy[0, group + 9] = -3  # a negative noisy cell: no weight in the proportional guess
    return frame, BlockMeasurements(geoids, noisy, np.full(2, 10.0))


def test_direct_shares_by_hand():
    frame, measurements = _four_persons()
    answer = SimpleNamespace(map=np.array([0, 3, 5, 7]),
                             posterior_true=np.array([0.5, 0.5, 0.2, 1.0]))
    got = population.direct_shares(frame, measurements, answer)["1-9"]
    # block A: categories 0, 0, 5 (modal 0: the one non-modal person has 5, guessed right);
    # block B: one person, modal. Noisy modal of A is 0 (MDG wrong); PRG: 1 / (2 + 1).
    assert got["map_correct"] == 0.75
    assert got["map_correct_nonmodal"] == 1.0
    assert got["mdg_correct_nonmodal"] == 0.0
    assert got["prg_correct_nonmodal"] == pytest.approx(1 / 3, rel=1e-15)
    assert got["mean_posterior_true"] == pytest.approx(0.55, rel=1e-15)
    assert "map_correct_nonmodal" not in population.direct_shares(
        frame, measurements, answer)["10-49"]


def test_a_wrong_answer_is_caught(small_study):
    frame, measurements, sigma_sq = population.measured_state(5_000)
    data, answers = population.population_by_band(frame, measurements)
    wrong = answers["informed"]
    flipped = np.array(wrong.map, copy=True)
    flipped[:50] = (flipped[:50] + 1) % 126
    direct = {a: population.direct_shares(frame, measurements, answers[a])
              for a in population.ADVERSARIES}
    direct["informed"] = population.direct_shares(
        frame, measurements, SimpleNamespace(map=flipped, posterior_true=wrong.posterior_true))
    statuses = {r["id"]: r["status"] for r in population.records(data, direct, sigma_sq)}
    assert statuses["population/informed/all/map_correct_nonmodal"] == "differs"
    assert statuses["population/outsider/all/map_correct_nonmodal"] == "match"


def test_every_number_of_the_data_has_units(small_study):
    # results.nc's population group had no units on any of its 8 numeric variables
    data = small_study.datasets["population_by_band"]
    assert not numbers_without_units({"population_by_band": data})
    # nor a long_name on any of them
    assert not numbers_without_units({"population_by_band": data}, attribute="long_name")
    assert data["persons"].attrs["units"] == "persons"
