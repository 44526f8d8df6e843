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
# # Single level: what if the block budget or the adversary's prior were different?
#
# **Question.** The adversary knows everyone in the target's block except the target
# (``m`` of them have the characteristics ``c``) and sees the noisy block count
# $x_1^* = x_1 + \eta_1$, $\eta_1 \sim \mathrm{DG}(0, 1/(2\rho_1))$ (paper §3.1, §4.2).
# If the Census Bureau had given blocks a different $\rho_1$, or the adversary came in
# with a different prior $p = P[X_1 = m+1]$, how much would the adversary learn?
#
# We compare the what-if $(\rho_1, p)$ of the parameters cell with the 2020 Census block
# allocation ($\rho_1 \approx 0.0992$) at the same $p$:
#
# * per release: the posterior $P[X_1 = m+1 \mid x_1^*]$ and the risk
#   $R'(x_1^*) = $ posterior / prior, over a range of $x_1^*$;
# * averaged over releases when the target does have ``c``: the marginal posterior,
#   the marginal risk $R$, and the probability $P[\hat X_1 = x_1]$ that the
#   0-1-loss decision is correct.

# %% tags=["parameters"]
rho1 = 0.5  # what-if zCDP parameter of the block count (Census block: about 0.0992)
p = 0.2  # prior probability of the adversary that the target has c (X1 is m + 1)
known = 0  # m, the count of the other people in the block with c (known to the adversary)
x1_star_min = -10  # smallest release shown in the per-release plots
x1_star_max = 15  # largest release shown in the per-release plots
n_rho_grid = 200  # points of the rho1 axis of the marginal plots (log-spaced)
rho_grid_min = 1e-3  # smallest rho1 of that axis
rho_grid_max = 1e2  # largest rho1 of that axis
delta = 1e-10  # delta used to quote each rho as an (epsilon, delta)-DP guarantee

# %%
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import ScalarFormatter

import dprisk as dr
from dprisk.models.mechanism.discrete_gaussian import support_halfwidth

rho_block = dr.census_level("block").rho
scenarios = {"Census block": rho_block, "what-if": float(rho1)}
for label, rho in scenarios.items():
    epsilon = float(dr.zcdp_to_dp(rho, delta))
    print(f"{label:>12}: rho1 = {rho:.5f}  (epsilon = {epsilon:.3f} at delta = {delta:g})")

# %% [markdown]
# ## 1. One release at a time
#
# For each released $x_1^*$ the posterior is
# $\operatorname{expit}\bigl(\operatorname{logit}(p) + \rho_1 (2(x_1^* - m) - 1)\bigr)$:
# larger $\rho_1$ makes every step of $x_1^*$ count for more. The adversary decides
# "the target has ``c``" from the decision threshold $\tilde x_1^*$ upwards
# (posterior above 1/2).

# %%
x1_star = np.arange(known + x1_star_min, known + x1_star_max + 1)
fig, (ax_post, ax_risk) = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
for (label, rho), style in zip(scenarios.items(), ("--", "-"), strict=True):
    post = dr.posterior(x1_star, rho, p, known)
    risk = dr.risk(x1_star, rho, p, known)
    threshold = int(dr.single_level.decision_threshold(rho, p, known))
    name = f"{label} (ρ1 = {rho:.3g}, threshold {threshold})"
    ax_post.plot(x1_star, post, style, marker="o", ms=3, label=name)
    ax_risk.plot(x1_star, risk, style, marker="o", ms=3, label=name)
ax_post.axhline(p, color="grey", lw=0.8)
ax_post.axhline(0.5, color="grey", lw=0.8, ls=":")
ax_post.set(xlabel="released count $x_1^*$", ylabel="$P[X_1 = m+1 \\mid x_1^*]$",
            title=f"posterior (prior p = {p:g}, grey)")
ax_risk.axhline(1.0, color="grey", lw=0.8)
ax_risk.set(xlabel="released count $x_1^*$", ylabel="$R'(x_1^*)$", yscale="log",
            title=f"risk R' = posterior / prior (at most 1/p = {1 / p:.3g})")
ax_post.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## 2. Averaged over releases
#
# The data holder does not know which $x_1^*$ will come out. Averaging the posterior over
# $P[X_1^* = x_1^* \mid x_1 = m+1]$ gives the marginal posterior and $R$; the decision
# is correct with probability $P[X_1^* \ge \tilde x_1^* \mid x_1 = m+1]$.

# %%
print(f"{'':>12} {'rho1':>8} {'marginal post.':>15} {'R':>8} {'threshold':>10} "
      f"{'P[correct]':>11}")
summary = {}
for label, rho in scenarios.items():
    row = {
        "marginal": float(dr.marginal_posterior(rho, p, known)),
        "R": float(dr.marginal_risk(rho, p, known)),
        "threshold": int(dr.single_level.decision_threshold(rho, p, known)),
        "p_correct": float(dr.p_correct(rho, p, known)),
    }
    summary[label] = row
    print(f"{label:>12} {rho:>8.4f} {row['marginal']:>15.4f} {row['R']:>8.4f} "
          f"{row['threshold']:>10d} {row['p_correct']:>11.4f}")

# %% [markdown]
# A check you can trust the table with: the marginal posterior is just the release-weighted
# average of the per-release posterior, so a direct sum over a wide window of releases
# reproduces it (window chosen so that the releases left out have probability below 1e-15).

# %%
for label, rho in scenarios.items():
    halfwidth = int(support_halfwidth(rho, 1e-15))
    window = np.arange(known + 1 - halfwidth, known + 2 + halfwidth)
    direct = np.sum(dr.posterior(window, rho, p, known)
                    * dr.single_level.release_pmf(window, rho, known))
    closed_form = summary[label]["marginal"]
    print(f"{label:>12}: direct sum {direct:.12f}  vs  closed form {closed_form:.12f}")
    # both neglect less than 1e-15; the rest is rounding in a sum of ~1e3 terms
    assert abs(direct - closed_form) < 1e-12

# %% [markdown]
# ## 3. Where do the two budgets sit on the whole $\rho_1$ axis?
#
# The same three numbers over a log grid of $\rho_1$, with the Census block allocation
# and the what-if marked. Under 0-1 loss $P[\text{correct}]$ is jagged for $p < 1/2$:
# it drops whenever the threshold stays put while the noise shrinks (paper Fig. 3).

# %%
rho_grid = np.logspace(np.log10(rho_grid_min), np.log10(rho_grid_max), int(n_rho_grid))
risk_grid = dr.marginal_risk(rho_grid, p, known)
correct_grid = dr.p_correct(rho_grid, p, known)

fig, (ax_r, ax_c) = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
ax_r.plot(rho_grid, risk_grid)
ax_r.set(xscale="log", yscale="log", xlabel="$\\rho_1$", ylabel="marginal risk $R$",
         title=f"R over ρ1 (p = {p:g}; at most 1/p)")
ax_c.plot(rho_grid, correct_grid)
ax_c.set(xscale="log", xlabel="$\\rho_1$", ylabel="$P[\\hat X_1 = x_1]$",
         title="probability of a correct 0-1-loss decision")
for ax in (ax_r, ax_c):
    for (label, rho), style in zip(scenarios.items(), ("--", "-"), strict=True):
        ax.axvline(rho, color="k", ls=style, lw=0.8, label=f"{label} ({rho:.3g})")
ax_r.yaxis.set_major_formatter(ScalarFormatter())
ax_r.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## Live controls
#
# Move $\rho_1$, or type a value in a box and press Enter: the posterior over releases, the
# posterior when the release is the truth ($x_1^* = m+1$) and the averaged measures update at
# once (exact closed forms, under a millisecond each). A headless run shows them at the
# parameters cell's values.

# %%


def single_level_live(rho1, p, known):
    releases = np.arange(known + x1_star_min, known + x1_star_max + 1)
    fig, ax = plt.subplots(figsize=(6, 3.2), constrained_layout=True)
    ax.plot(releases, dr.posterior(releases, rho1, p, known), marker="o", ms=3)
    ax.axhline(p, color="grey", lw=0.8)
    ax.set(xlabel="released x1*", ylabel="P[X1 = m+1 | x1*]", ylim=(0, 1))
    return fig, {"P[X1 = m+1 | x1* = m+1]": float(dr.posterior(known + 1, rho1, p, known)),
                 "marginal posterior": dr.marginal_posterior(rho1, p, known),
                 "marginal risk R": dr.marginal_risk(rho1, p, known),
                 "P[correct]": dr.p_correct(rho1, p, known),
                 "threshold": int(dr.single_level.decision_threshold(rho1, p, known))}


dr.live(single_level_live, rho1=float(rho1), p=float(p), known=int(known),
     ranges={"rho1": (0.001, 5.0), "p": (0.001, 0.999)})

# %% [markdown]
# **What to try next:** set ``p = 1/864`` (a uniform guess over the 1940 GVHR cells) or
# ``p = 0.5``, push ``rho1`` to 1 or 10 and watch $R$ approach $1/p$; then open
# ``two_level_what_if.py`` to see whether the block-group release changes the picture.
