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
# # The whole record: what if the adversary reads every noisy cell?
#
# **Question.** The paper's adversary reads one noisy cell of the block's histogram (the
# target's). The Census publishes every cell. An adversary who knows the counts $m_j$ of
# everyone but the target in all $K$ cells, with a prior $\pi$ over the target's cell, reads
# all of them: $P[C = c \mid x^*] \propto \pi_c \exp(\rho_1 (2 (x_c^* - m_c) - 1))$.
# How often is its best guess (the MAP cell) the target's true cell, and how much posterior
# does the true cell get, as $\rho_1$ and $K$ change?
#
# We use the paper's own 1940 histogram (ED 28-21, Dare County, 864 cells) and the 2020
# GVHR size (2,016 cells), with a uniform prior or one that knows some attributes.

# %% tags=["parameters"]
rho1 = 0.5  # what-if zCDP parameter of every cell's noise (Census block: about 0.0992)
cells_what_if = 2016  # K for the curves (2,016 = 2020 GVHR, 864 = 1940)
known_attributes = "votingage=Of Voting Age;hispanic=Not Hispanic"  # restricts the 1940 prior
n_rho_grid = 15  # points of the rho1 axis (log-spaced)
rho_grid_min = 1e-2  # smallest rho1 of that axis
rho_grid_max = 10.0  # largest rho1 of that axis
n_releases = 2000  # simulated releases for the Monte Carlo check
seed = 2026  # random seed of the simulated releases

# %%
import matplotlib.pyplot as plt
import numpy as np

import dprisk as dr
from dprisk.inference.attribute.posterior import sample_releases
from dprisk.models.census.histogram_1940 import ed_28_21, ed_28_21_known, ed_28_21_target
from dprisk.models.priors.histogram import restricted_prior

rho_block = dr.census_level("block").rho
hist, known, target = ed_28_21(), ed_28_21_known(), ed_28_21_target()
restrictions = dict(part.split("=", 1) for part in known_attributes.split(";") if part)
structured = restricted_prior(hist.mask(**restrictions))
priors = {"uniform over 864": None, f"knows {known_attributes}": structured}
for label, prior in priors.items():
    for rho in (rho_block, float(rho1)):
        pm = dr.attribute.p_map_correct(rho, hist.n_cells, prior, true_cell=target)
        mean = dr.attribute.expected_true_posterior(rho, hist.n_cells, prior, true_cell=target)
        print(f"{label:>52} rho1 = {rho:.4f}: P[MAP = target] = {pm:.5f}, "
              f"E[posterior of target] = {mean:.5f}")

# %% [markdown]
# ## 1. One release of the 1940 histogram
#
# Simulate one release at the what-if $\rho_1$ and look at the posterior of every cell.

# %%
release = sample_releases(known, float(rho1), target, 1, random_seed=seed)[0]
post = dr.attribute.cell_posterior(release, known, float(rho1), structured)
print("MAP cell:", post.map_cell, hist.cell_labels(post.map_cell))
print("target:  ", target, hist.cell_labels(target), f"posterior {post.posterior[target]:.4f}")
fig, ax = plt.subplots(figsize=(9, 3.2), constrained_layout=True)
ax.plot(post.posterior, ".", ms=3)
ax.plot([target], [post.posterior[target]], "o", color="C3", label="target's cell")
ax.set(xlabel="cell", ylabel="posterior", title=f"one release, rho1 = {float(rho1):g}")
ax.legend()
plt.show()

# %% [markdown]
# ## 2. Against $\rho_1$ and $K$
#
# Exact $P[\mathrm{MAP} = t]$ (uniform prior) for the 1940 and the what-if number of cells,
# next to the paper's one-cell prior guess $1/K$.

# %%
rho_grid = np.logspace(np.log10(rho_grid_min), np.log10(rho_grid_max), int(n_rho_grid))
fig, ax = plt.subplots(figsize=(7, 3.8), constrained_layout=True)
for k in sorted({864, int(cells_what_if)}):
    ax.plot(rho_grid, [dr.attribute.p_map_correct(r, k) for r in rho_grid], label=f"K = {k}")
    ax.axhline(1 / k, ls=":", lw=0.8)
ax.axvline(rho_block, color="k", ls="--", lw=0.8, label="Census block")
ax.set(xscale="log", yscale="log", xlabel="$\\rho_1$", ylabel="P[MAP cell = true cell]")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## 3. A Monte Carlo check
#
# Simulated releases must agree with the exact answer within a few Monte Carlo errors. The
# check uses the error the exact answer implies, $\sqrt{P(1-P)/n}$ (an upper bound: each
# release's share of the MAP is in [0, 1] with mean $P$), not the sample's, which is 0 when
# no release picks the target (often, for a small $P$ and few releases).

# %%
releases = sample_releases(known, float(rho1), target, int(n_releases), random_seed=seed)
sim = dr.attribute.cell_posterior(releases, known, float(rho1))
winners = sim.log_posterior == sim.log_posterior.max(-1, keepdims=True)
share = winners[:, target] / winners.sum(-1)
exact = dr.attribute.p_map_correct(float(rho1), hist.n_cells, true_cell=target)
mcse = share.std(ddof=1) / np.sqrt(share.size)
print(f"exact {exact:.5f}, Monte Carlo {share.mean():.5f} ± {mcse:.5f}")
assert abs(share.mean() - exact) < 5 * np.sqrt(exact * (1 - exact) / share.size) + 1e-12

# %% [markdown]
# ## Live controls
#
# Change $\rho_1$ or the number of cells $K$: the probability that the adversary's MAP cell
# is the true one (uniform prior over $K$ cells) and its curve against $\rho_1$ update.

# %%


def whole_record_live(rho1, cells_what_if):
    rho_axis = np.geomspace(rho_grid_min, rho_grid_max, n_rho_grid)
    fig, ax = plt.subplots(figsize=(6, 3.2), constrained_layout=True)
    map_correct = [dr.attribute.p_map_correct(r, cells_what_if) for r in rho_axis]
    ax.semilogx(rho_axis, map_correct, marker=".")
    ax.axvline(rho1, color="k", ls=":")
    ax.set(xlabel="rho1", ylabel="P[MAP cell = true cell]", ylim=(0, 1))
    return fig, {"P[MAP = true], uniform prior": dr.attribute.p_map_correct(rho1, cells_what_if),
                 "chance 1/K": 1 / cells_what_if}


dr.live(whole_record_live, rho1=float(rho1), cells_what_if=int(cells_what_if),
     ranges={"rho1": (rho_grid_min, rho_grid_max)})

# %% [markdown]
# **What to try next:** restrict the prior further (add ``cenrace=Black``), set
# ``rho1`` to the Census block value, or run ``dprisk attribute --rho1 census:block --cells
# 2016 --strategy census-2020 --releases 2000`` to add the other ten block queries.
