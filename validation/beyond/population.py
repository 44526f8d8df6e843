r"""Every person of a population (issue 34, part 5): a synthetic state at the noise the DAS drew.

The report's section "Every person of a population". A synthetic state of
:data:`PERSONS` persons (:func:`dprisk.inference.population.synth.synthesize`, block sizes
following the 2010 distribution of persons by block-size band), measured as the 2020 DAS
measured it: the block ``detailed`` query's noise drawn with the exact sampler at the
production allocation (:class:`dprisk.inference.population.noise.LevelNoise`: pmf
:math:`\propto \exp(-x^2/(2\sigma^2))`, :math:`\sigma^2 = 1/\rho_{\text{query}}`, about
10.09), the same noise ``dprisk population measure --seed`` writes; :math:`\sigma^2` is then
read back from the measurements, as a user's files give it. Every person's posterior of their
category (docs/noise-conventions.md), informed and outsider adversaries, tract prior; by
block-size band the Bayes MAP precision for non-modal persons beside the block-modal guess
(MDG) and the proportional random guess (PRG) computed from the same noisy cells.

Records (computed, exact paths; ``published`` is an independent recomputation):

* the summary's shares (:func:`dprisk.inference.population.metrics.summary_payload`, exact
  integer sums over partitions) against a direct recomputation from the per-person answers
  with pandas (the block's modal category, the band, the noisy modal guess and the
  proportional guess all recomputed here), to 1e-12;
* :math:`\sigma^2` read from the measurements against the DAS's 1/ρ of the query.

The Census Bureau's 2010 reconstruction study (Abowd et al., "A Simulated Reconstruction and
Reidentification Attack on the 2010 U.S. Census", CES working paper 23-63R, arXiv:2312.11283;
"The 2010 Census Confidentiality Protections Failed, Here's How and Why", NBER w31995)
reports the precision of its reidentifications for non-modal persons by the same block-size
bands: :data:`CENSUS_PER_BAND`, entered from the Bureau's own replication package (module
constant's comment: repository, commit, file, sheets), is drawn and listed beside ours. It is
another attack (reconstruction, then linkage on block, sex and age) on other data (the real
2010 tables, and the 2020 system run on the 2010 data): compare the shapes, not the levels.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from dprisk.inference.population.categories import (
    BAND_EDGES,
    BAND_LABELS,
    N_CATEGORIES,
    N_DETAILED_CELLS,
    N_GROUPS,
)
from dprisk.validation.paper.records import StudyResult, exact_record
from dprisk.validation.registry import report_study

__all__ = ["ADVERSARIES", "CENSUS_PER_BAND", "CENSUS_SOURCE", "PERSONS", "SEED", "direct_shares",
           "measured_state", "person_table", "population_by_band", "records", "study"]

#: Persons of the synthetic state (a few seconds for both adversaries).
PERSONS = 100_000
#: Seed of the synthetic state and of its noise.
SEED = 20261128
#: The adversaries of the section.
ADVERSARIES = ("informed", "outsider")
#: The Census Bureau's published precision for non-modal persons by block-size band, as
#: fractions, ``{series: {band or "all": share}}``; the attacker holding the confidential
#: block, sex and age of every person ("CEFatkr", the study's best-informed attacker; the
#: commercial-data attacker's rates differ by at most 3.1 points). Source: Abowd et al., the
#: December 14, 2023 submission to the Harvard Data Science Review (arXiv:2312.11283; CES
#: working paper 23-63R), Table 13 (rHDF_b,t, MDG, PRG) and Table 16 (rMDF_b,t), "Precision
#: (%)" column of the CEFatkr attacker, as the Bureau's replication package gives them:
#: https://github.com/uscensusbureau/recon_replication, commit
#: 6b1ae14629aa76f5b32a96aad0887137cf03b4ce, file "20231214-HDSR submission tables and
#: figures.xlsx", sheets "Table 13" and "Table 16" (the Science-submission file
#: manuscript/science/20230502-All tables with summary data.xlsx, sheet "Table 5", gives the
#: same CEFatkr rHDF_b,t, MDG and PRG rates). Precision = confirmed / putative
#: reidentifications; counts rounded by the Bureau to four significant digits.
CENSUS_PER_BAND: dict[str, dict[str, float]] = {
    "2010 tables reconstructed (rHDF_b,t)": {
        "1-9": 0.860, "10-49": 0.715, "50-99": 0.560, "100-249": 0.419, "250-499": 0.307,
        "500-999": 0.249, "1000+": 0.221, "all": 0.433},
    "2020 DAS on 2010 data, reconstructed (rMDF_b,t)": {
        "1-9": 0.254, "10-49": 0.223, "50-99": 0.210, "100-249": 0.202, "250-499": 0.196,
        "500-999": 0.191, "1000+": 0.197, "all": 0.201},
    "block-modal guess (MDG), 2010 data": {
        "1-9": 0.072, "10-49": 0.023, "50-99": 0.012, "100-249": 0.007, "250-499": 0.005,
        "500-999": 0.004, "1000+": 0.002, "all": 0.009},
    "proportional random guess (PRG), 2010 data": {
        "1-9": 0.318, "10-49": 0.199, "50-99": 0.165, "100-249": 0.154, "250-499": 0.146,
        "500-999": 0.143, "1000+": 0.156, "all": 0.160},
}
#: Where :data:`CENSUS_PER_BAND` comes from, as the report states it.
CENSUS_SOURCE = ("Abowd et al. 2023, arXiv:2312.11283 (HDSR submission of 14 December 2023), "
                 "Tables 13 and 16, attacker CEFatkr; from github.com/uscensusbureau/"
                 "recon_replication (commit 6b1ae14, 20231214-HDSR submission tables and "
                 "figures.xlsx)")
#: The shares of the section, by band and adversary.
SHARES = ("map_correct_nonmodal", "mdg_correct_nonmodal", "prg_correct_nonmodal",
          "map_correct", "mean_posterior_true")
#: ``long_name`` of each share (:mod:`dprisk.inference.population.metrics`).
_SHARE_NAMES = {
    "map_correct_nonmodal": "share of the non-modal persons whose MAP category is right",
    "mdg_correct_nonmodal": "share of the non-modal persons guessed right as the block's "
                            "noisy modal category",
    "prg_correct_nonmodal": "expected share of the non-modal persons guessed right in "
                            "proportion to their group's positive noisy cells",
    "map_correct": "share of the persons whose MAP category is right",
    "mean_posterior_true": "mean posterior of the person's true category",
}
_SOURCE = ("beyond the paper: every person of a population (issue 34 part 5; "
           "docs/noise-conventions.md), independent recomputation from the per-person answers")
_TOLERANCE = 1e-12


def measured_state(persons: int | None = None, seed: int = SEED):
    """A synthetic state and its block ``detailed`` measurements at the DAS's noise.

    Returns
    -------
    (pandas.DataFrame, BlockMeasurements, float)
        The persons, the measurements (noise from ``seed``, as ``dprisk population measure
        --seed`` draws it) and the DAS's σ² of the query (1/ρ_query); ``persons`` defaults
        to :data:`PERSONS`.
    """
    from dprisk.inference.population.geography import spine_codes
    from dprisk.inference.population.measure import block_counts
    from dprisk.inference.population.measurements import BlockMeasurements
    from dprisk.inference.population.noise import LevelNoise
    from dprisk.inference.population.synth import synthesize

    frame = synthesize(PERSONS if persons is None else persons, seed)
    geoids, block_index, cell = block_counts(frame)
    counts = np.bincount(block_index * N_DETAILED_CELLS + cell,
                         minlength=geoids.size * N_DETAILED_CELLS)
    counts = counts.reshape(geoids.size, N_DETAILED_CELLS).astype(np.int64)
    noise = LevelNoise("Block", seed)
    drawn = noise.draw(spine_codes(geoids).block, ["detailed"])["detailed"]
    variance = noise.variance("detailed")
    return (frame, BlockMeasurements(geoids, counts + drawn, np.full(geoids.size, variance)),
            float(variance))


def population_by_band(frame, measurements) -> tuple[xr.Dataset, dict]:
    """Both adversaries' summaries (tract prior) as a Dataset over ``(adversary, band)``.

    Returns
    -------
    (xarray.Dataset, dict)
        :data:`SHARES` by adversary and band, ``persons``, ``nonmodal_persons`` and
        ``blocks`` by band (``all``
        last; NaN where a band has no non-modal persons), and each adversary's per-person
        :class:`~dprisk.inference.population.risk.PopulationRisk`.
    """
    from dprisk.inference.population.risk import population_risk

    bands = [*BAND_LABELS, "all"]
    data = {name: np.full((len(ADVERSARIES), len(bands)), np.nan) for name in SHARES}
    persons = np.zeros(len(bands), dtype=np.int64)
    nonmodal = np.zeros(len(bands), dtype=np.int64)
    blocks = np.zeros(len(bands), dtype=np.int64)
    answers = {}
    for a, adversary in enumerate(ADVERSARIES):
        answers[adversary] = population_risk(frame, measurements, adversary=adversary,
                                             prior="tract")
        summary = answers[adversary].summary()
        for b, row in enumerate([*summary["by_block_size"], summary["all"]]):
            for name in SHARES:
                data[name][a, b] = np.nan if row[name] is None else row[name]
            persons[b], nonmodal[b] = row["persons"], row["nonmodal_persons"]
            blocks[b] = row["blocks"]
    variance = np.asarray(measurements.variance)
    # the shares are fractions of the band's (non-modal) persons, the mean posterior a
    # probability
    dataset = xr.Dataset(
        {**{name: (("adversary", "band"), values,
                   {"long_name": _SHARE_NAMES[name],
                    "units": "probability" if name == "mean_posterior_true" else "1"})
            for name, values in data.items()},
         "persons": ("band", persons, {"long_name": "persons in the band", "units": "persons"}),
         "nonmodal_persons": ("band", nonmodal, {"long_name": "persons whose category is not "
                                                              "their block's modal one",
                                                 "units": "persons"}),
         "blocks": ("band", blocks, {"long_name": "blocks in the band", "units": "blocks"})},
        coords={"adversary": list(ADVERSARIES), "band": bands},
        attrs={"persons_total": len(frame), "blocks": int(variance.size),
               "noise_variance": float(variance.min()), "prior": "tract", "seed": SEED,
               "noise": "block detailed query, discrete Gaussian pmf ∝ exp(-x²/(2σ²)), "
                        "σ² = 1/ρ_query (the DAS's), σ² read from the measurements"},
    )
    return dataset, answers


def direct_shares(frame, measurements, answer, *, persons=None) -> dict[str, dict[str, float]]:
    """The summary's shares recomputed directly from the per-person answers (pandas).

    An independent path: the block's true modal category (largest count, ties to the
    smallest), its band, the noisy modal guess and the proportional guess are recomputed
    from the persons and the noisy cells, and each share is a mean over persons
    (``math.fsum``). Returns ``{band or "all": {share: value}}`` (bands with no non-modal
    persons left out of the non-modal shares). ``persons``: :func:`person_table` of
    ``frame`` and ``measurements``, computed once for several answers (default: here).
    """
    table = person_table(frame, measurements) if persons is None else persons
    cat, band, is_nonmodal = table["cat"], table["band"], table["is_nonmodal"]
    noisy_modal, prg = table["noisy_modal"], table["prg"]
    right = np.asarray(answer.map) == cat
    out = {}
    for label, mask in [*((lab, band == i) for i, lab in enumerate(BAND_LABELS)),
                        ("all", np.ones(cat.size, bool))]:
        shares = {}
        if mask.any():
            shares["map_correct"] = float(np.mean(right[mask]))
            shares["mean_posterior_true"] = math.fsum(answer.posterior_true[mask]) / mask.sum()
        sub = mask & is_nonmodal
        if sub.any():
            shares["map_correct_nonmodal"] = float(np.mean(right[sub]))
            shares["mdg_correct_nonmodal"] = float(np.mean(noisy_modal[sub] == cat[sub]))
            shares["prg_correct_nonmodal"] = math.fsum(prg[sub]) / sub.sum()
        out[label] = shares
    return out


def person_table(frame, measurements) -> dict[str, np.ndarray]:
    """Per person, what :func:`direct_shares` reads besides the answer (pandas, independent).

    ``cat`` (the category), ``band`` (of its block's size), ``is_nonmodal`` (not its block's
    true modal category: largest count, ties to the smallest), ``noisy_modal`` (the block's
    modal category from the noisy cells) and ``prg`` (the proportional guess of its own
    category from the noisy cells of its group). Blocks are looked up once per block
    (``pandas.factorize`` of the persons' block codes), not once per person.
    """
    import pandas as pd

    codes, geoids = pd.factorize(frame["geoid"])  # per person: its block, numbered
    geoids = np.asarray(geoids).astype(str)
    cat = (63 * frame["hispanic"].to_numpy(np.int64) + frame["cenrace"].to_numpy(np.int64) - 1)
    grp = 2 * frame["hhgq"].to_numpy(np.int64) + frame["votingage"].to_numpy(np.int64)
    table = pd.DataFrame({"block": codes, "c": cat})
    counts = table.groupby(["block", "c"]).size().unstack(fill_value=0)
    modal = counts.idxmax(axis=1)  # first of the ascending columns: ties to the smallest
    size = table.groupby("block").size()
    block_row = pd.Series(np.arange(len(measurements.geoids)),
                          index=np.asarray(measurements.geoids).astype(str))
    noisy = np.asarray(measurements.noisy).reshape(-1, N_GROUPS, N_CATEGORIES)
    rows = block_row.loc[geoids].to_numpy()[codes]
    noisy_modal = np.argmax(noisy.sum(axis=1), axis=1)[rows]
    cells = noisy[rows, grp]
    positive = np.maximum(cells, 0)
    total = positive.sum(axis=1)
    prg = np.where(total > 0, positive[np.arange(cat.size), cat] / np.maximum(total, 1),
                   1.0 / N_CATEGORIES)
    blocks = np.arange(geoids.size)
    band = np.digitize(size.loc[blocks].to_numpy()[codes], BAND_EDGES) - 1
    is_nonmodal = cat != modal.loc[blocks].to_numpy()[codes]
    return {"cat": cat, "band": band, "is_nonmodal": is_nonmodal, "noisy_modal": noisy_modal,
            "prg": prg}


def records(data: xr.Dataset, direct: dict[str, dict], sigma_sq_das: float) -> list[dict]:
    """Computed records: each share of the summary against :func:`direct_shares`."""
    out = [exact_record(
        "population/noise_variance", _SOURCE + "; the DAS's 1/rho_query of the block "
        "detailed query", sigma_sq_das, data.attrs["noise_variance"],
        abs(data.attrs["noise_variance"] - sigma_sq_das) <= _TOLERANCE * sigma_sq_das,
        "σ² of the block detailed query as read from the measurements (computed) against "
        "the DAS's 1/ρ_query at the production allocation (published column).")]
    names = {"informed": ("map_correct_nonmodal", "mean_posterior_true"),
             "outsider": ("map_correct_nonmodal", "mean_posterior_true")}
    for adversary, wanted in names.items():
        for band in data.band.values:
            for name in wanted:
                ours = float(data[name].sel(adversary=adversary, band=band))
                theirs = direct[adversary][str(band)].get(name)
                if theirs is None or math.isnan(ours):
                    continue
                out.append(exact_record(
                    f"population/{adversary}/{band}/{name}", _SOURCE, theirs, ours,
                    abs(ours - theirs) <= _TOLERANCE * max(abs(theirs), 1e-300)
                    or abs(ours - theirs) <= 1e-15,
                    f"{name} of the {adversary} adversary (tract prior) in band {band} of a "
                    f"{data.attrs['persons_total']:,}-person synthetic state at σ² = "
                    f"{data.attrs['noise_variance']:.4f} (seed {data.attrs['seed']}): the "
                    "summary's exact sums (computed) against a direct pandas recomputation "
                    "from the per-person answers (published column), to 1e-12 relative."))
    for name in ("mdg_correct_nonmodal", "prg_correct_nonmodal"):
        ours = float(data[name].sel(adversary="informed", band="all"))
        theirs = direct["informed"]["all"][name]
        out.append(exact_record(
            f"population/baseline/all/{name}", _SOURCE, theirs, ours,
            abs(ours - theirs) <= _TOLERANCE * abs(theirs),
            f"The {'block-modal' if name.startswith('mdg') else 'proportional random'} guess's "
            "precision for non-modal persons from the same noisy cells (computed) against a "
            "direct recomputation (published column), to 1e-12 relative."))
    return out


def _census_rows() -> str:
    """The published per-band rates as the notes list them (percent, one decimal)."""
    short = {name: name.split(" (")[1].split(")")[0] if "(" in name else name
             for name in CENSUS_PER_BAND}
    return "; ".join(
        f"{band}: " + ", ".join(f"{short[name]} {100 * rates[band]:.1f} %"
                                for name, rates in CENSUS_PER_BAND.items())
        for band in [*BAND_LABELS, "all"])


def _notes(data: xr.Dataset) -> list[str]:
    def pct(name, adversary, band):
        value = float(data[name].sel(adversary=adversary, band=band))
        return "—" if math.isnan(value) else f"{100 * value:.1f} %"

    rows = "; ".join(
        f"{band}: informed {pct('map_correct_nonmodal', 'informed', band)}, outsider "
        f"{pct('map_correct_nonmodal', 'outsider', band)}, MDG "
        f"{pct('mdg_correct_nonmodal', 'informed', band)}, PRG "
        f"{pct('prg_correct_nonmodal', 'informed', band)}"
        for band in data.band.values)
    return [
        f"A synthetic state of {data.attrs['persons_total']:,} persons in "
        f"{data.attrs['blocks']:,} blocks (dprisk population synth, seed {SEED}; block sizes "
        "follow the 2010 distribution of persons by block-size band), measured at the noise "
        "the DAS drew: the block detailed query (hhgq × voting age × Hispanic × CENRACE, 2,016 "
        "cells) with discrete Gaussian noise pmf ∝ exp(−x²/(2σ²)), σ² = "
        f"{data.attrs['noise_variance']:.4f} read from the measurements (the DAS's 1/ρ of the "
        "query at the production allocation; not the 5.04 of the paper's convention, "
        "docs/noise-conventions.md). Every person's posterior of their category (126 "
        "categories: Hispanic × CENRACE) given their block, hhgq and voting age, with the "
        "tract prior; the MAP guess's precision among non-modal persons (category different "
        "from the block's most common), by the block's true population.",
        "Informed: the adversary knows everyone else's record (the paper's adversary). "
        "Outsider: knows only how many people share the target's (hhgq, voting age) group in "
        "the block. Baselines from the same noisy cells: MDG guesses the block's noisy modal "
        "category for everyone (so it is never right for a non-modal person unless the noise "
        "moves the mode); PRG draws a category in proportion to the positive noisy cells of "
        "the person's group.",
        "Non-modal precision by band — " + rows + ". Blocks per band: "
        + ", ".join(f"{band} {int(data['blocks'].sel(band=band)):,}"
                    for band in data.band.values[:-1])
        + " (a band of few blocks gives jumpy shares).",
        "This is another attack on different data — a Bayesian adversary reading the 2020 "
        "noisy measurements of a synthetic population — not a replication of the Census "
        "Bureau's 2010 reconstruction-abetted reidentification study, which attacked the "
        "real 2010 tables and, separately, the 2020 system run on 2010 data: compare the "
        "shapes across block sizes, not the levels. Its published precision for non-modal "
        "persons (" + CENSUS_SOURCE + "), by band — " + _census_rows() + ".",
    ]


@report_study(order=110, title="beyond the paper: every person of a population", cost=4.9)
def study(*, paper_scale: bool = False) -> StudyResult:
    """The report's section "Every person of a population" (the same at either scale)."""
    from dprisk.validation.figures.population import figure

    frame, measurements, sigma_sq_das = measured_state()
    data, answers = population_by_band(frame, measurements)
    persons = person_table(frame, measurements)  # once for both adversaries
    direct = {adv: direct_shares(frame, measurements, answers[adv], persons=persons)
              for adv in ADVERSARIES}
    return StudyResult(
        name="population",
        title="Every person of a population: a synthetic state at the noise the DAS drew",
        records=records(data, direct, sigma_sq_das),
        datasets={"population_by_band": data},
        figures={"population_by_band": figure(data, CENSUS_PER_BAND)},
        notes=_notes(data),
        seeds={"synthetic_state_and_noise": SEED},
    )
