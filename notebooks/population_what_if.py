# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # What if the noise, the prior or the adversary were different, for every person of a state?
#
# **Question.** The 2020 Census published the block ``detailed`` query (hhgq × voting age ×
# Hispanic × CENRACE: 2,016 cells a block) with discrete Gaussian noise,
# $P[\eta = x] \propto \exp(-x^2/(2\sigma^2))$, $\sigma^2 \approx 10.09$ as the DAS drew it
# (docs/noise-conventions.md; the paper's convention would say 5.04). An adversary who
# knows a person's block, hhgq and voting age reads that group's 126 noisy cells $y_c$ and
# computes the posterior of the person's category (Hispanic × CENRACE):
#
# * *informed* (knows everyone else's record, counts $m_c$):
#   $P(t = c \mid y) \propto \pi_c \exp((2(y_c - m_c) - 1)/(2\sigma^2))$;
# * *outsider* (knows only $n$, the people in the person's group; the others Poisson):
#   $P(t = c \mid y) \propto \pi_c L_c(1)/L_c(0)$, $L_c(\delta) = \sum_m
#   \mathrm{Pois}(m; (n-1)\pi_c)\, e^{-(y_c - m - \delta)^2/(2\sigma^2)}$.
#
# For a small synthetic state (``dr.population.synthesize``) measured at a noise variance you
# choose, how often is the MAP guess right for *non-modal* persons (category different from
# their block's most common), by block size, beside guessing the block's noisy majority (MDG)
# or drawing in proportion to the noisy cells (PRG)? And how does it move with $\sigma^2$?
# The report's section "Every person of a population" runs the same at 100,000 persons and
# the DAS's own noise.

# %% tags=["parameters"]
persons = 20000  # persons of the synthetic state
seed = 2026  # seed of the state and of its noise
noise_variance = 10.09  # sigma squared of the block detailed cells (the DAS drew 10.09)
adversary = "informed"  # informed or outsider
prior = "tract"  # tract (composition of the person's tract) or uniform (1/126)
variance_grid = [0.5, 2.0, 5.04, 10.09, 40.0]  # sigma squared values of the second figure

# %%
import matplotlib.pyplot as plt
import numpy as np

import dprisk as dr
from dprisk.models.mechanism.dg_sampling import sample

frame = dr.population.synthesize(int(persons), int(seed))
geoids, block = np.unique(frame["geoid"].to_numpy().astype(str), return_inverse=True)
cell = ((2 * frame["hhgq"].to_numpy(np.int64) + frame["votingage"].to_numpy(np.int64)) * 126
        + 63 * frame["hispanic"].to_numpy(np.int64) + frame["cenrace"].to_numpy(np.int64) - 1)
true_counts = np.bincount(block * 2016 + cell, minlength=geoids.size * 2016)
true_counts = true_counts.reshape(geoids.size, 2016)
print(f"{len(frame):,} persons in {geoids.size:,} blocks (seed {seed})")


def measured(variance):
    """The block detailed cells with DG noise pmf ∝ exp(-x²/(2 variance)) (seed + 1)."""
    if not variance > 0:
        raise ValueError(f"noise_variance must be > 0, got {variance!r}")
    noise = sample(0, 1 / (2 * variance), size=true_counts.shape,
                   random_seed=np.random.default_rng(int(seed) + 1))
    return dr.population.BlockMeasurements(geoids, true_counts + noise,
                                           np.full(geoids.size, float(variance)))


def by_band(variance, adversary, prior):
    """The summary's rows by block-size band (and "all" last) for one setting."""
    summary = dr.population.risk(frame, measured(variance), adversary=adversary,
                                 prior=prior).summary()
    return [*summary["by_block_size"], {"band": "all", **summary["all"]}]


def share(row, name):
    return np.nan if row[name] is None else 100 * row[name]


def band_figure(rows, title):
    bands = [r["band"] for r in rows[:-1]]
    x = np.arange(len(bands))
    fig, ax = plt.subplots(figsize=(8, 3.8), constrained_layout=True)
    for name, label, style in (("map_correct_nonmodal", "Bayes MAP", "-o"),
                               ("mdg_correct_nonmodal", "block-modal guess (MDG)", "--v"),
                               ("prg_correct_nonmodal", "proportional guess (PRG)", ":^")):
        ax.plot(x, [share(r, name) for r in rows[:-1]], style, label=label)
    ax.set_xticks(x, bands)
    ax.set(xlabel="block population (band)", ylabel="precision, non-modal persons (%)",
           title=title)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


rows = by_band(noise_variance, adversary, prior)
band_figure(rows, f"{adversary} adversary, {prior} prior, σ² = {noise_variance:g}")
plt.show()
print("all bands: MAP right for {:.1f} % of non-modal persons (MDG {:.1f} %, PRG {:.1f} %)"
      .format(*(share(rows[-1], n) for n in ("map_correct_nonmodal", "mdg_correct_nonmodal",
                                             "prg_correct_nonmodal"))))

# %% [markdown]
# The baselines use the same noisy cells: MDG guesses one category for the whole block, so a
# non-modal person is right only when the noise moves the block's mode; PRG is right in
# proportion to the person's share of their group's positive noisy cells, which grows with
# the block. The Bayes adversary uses the person's own group and the prior. Bands with few
# blocks (the largest, in a small state) move a lot from seed to seed.
#
# **Against the noise.** The same state at several noise variances (same seed), both
# adversaries; the dotted lines mark the DAS's σ² (10.09) and the paper's convention (5.04).

# %%
curves = {name: [] for name in ("informed", "outsider", "mdg", "prg")}
for variance in variance_grid:
    for name in ("informed", "outsider"):
        everyone = by_band(variance, name, prior)[-1]
        curves[name].append(share(everyone, "map_correct_nonmodal"))
    curves["mdg"].append(share(everyone, "mdg_correct_nonmodal"))
    curves["prg"].append(share(everyone, "prg_correct_nonmodal"))
fig, ax = plt.subplots(figsize=(8, 3.8), constrained_layout=True)
for name, label, style in (("informed", "Bayes MAP, informed", "-o"),
                           ("outsider", "Bayes MAP, outsider", "-s"),
                           ("mdg", "block-modal guess (MDG)", "--v"),
                           ("prg", "proportional guess (PRG)", ":^")):
    ax.plot(variance_grid, curves[name], style, label=label)
for mark in (5.04, 10.09):
    ax.axvline(mark, color="k", ls=":", lw=1)
ax.set_xscale("log")
ax.set(xlabel="noise variance σ² of each cell", ylabel="precision, non-modal persons (%)",
       title=f"All blocks, {prior} prior")
ax.grid(alpha=0.3)
ax.legend()
plt.show()
for variance, informed, outsider in zip(variance_grid, curves["informed"], curves["outsider"],
                                        strict=True):
    print(f"σ² = {variance:g}: informed {informed:.1f} %, outsider {outsider:.1f} %")

# %% [markdown]
# ## Live controls
#
# Change σ², the prior (``tract`` or ``uniform``) or the adversary (``informed`` or
# ``outsider``): the state is re-measured at that σ² (same seed) and every person's
# posterior recomputed; the figure shows non-modal precision by block size.

# %%


def population_live(noise_variance, adversary, prior):
    rows = by_band(noise_variance, adversary, prior)
    fig = band_figure(rows, f"{adversary}, {prior} prior, σ² = {noise_variance:g}")
    everyone = rows[-1]
    return fig, {"MAP right, non-modal persons (%)": share(everyone, "map_correct_nonmodal"),
                 "MDG (%)": share(everyone, "mdg_correct_nonmodal"),
                 "PRG (%)": share(everyone, "prg_correct_nonmodal"),
                 "mean posterior of the truth": everyone["mean_posterior_true"],
                 "mean f-DP bound": everyone["mean_fdp_bound"]}


dr.live(population_live, noise_variance=float(noise_variance), adversary=str(adversary),
        prior=str(prior), ranges={"noise_variance": (0.1, 100.0)})

# %% [markdown]
# **What to try next.** Set σ² near 0 to see the exact tables (the informed adversary is
# certain; the outsider knows a unique's category); compare ``prior = "uniform"`` with the
# tract prior (how much of the adversary's success is the neighbourhood's composition, not
# the release); raise ``persons`` for steadier large-block bands. On the command line, the
# same for any persons file: ``dprisk population synth --persons 100000 --seed 1 --out state``,
# ``dprisk population measure --persons state/persons.parquet --seed 2 --out meas``, then
# ``dprisk population risk --persons state/persons.parquet --noisy meas/noisy.parquet
# --noise-variance 10.09 --adversary outsider --json`` (docs/population.md).
