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
# # Choose ρ for a risk target
#
# **Question.** An agency wants the disclosure risk of a discrete Gaussian count release to
# stay below a threshold for every adversary it worries about. Which zCDP $\rho$ is the
# largest that keeps it there, and what $(\varepsilon, \delta)$ guarantee does that $\rho$
# carry?
#
# The risk is stated on a *measure* (the ratio $R'$ itself is unbounded for the discrete
# Gaussian): the marginal risk $R$, the marginal posterior, the probability that the
# adversary's 0-1-loss decision is correct, or the tail
# $P[R'(X^*) > r^*(p)]$ with the risk profile $r^*(p) = \max(\tilde r, \tilde a / p)$ —
# "a ratio up to $\tilde r$, or a posterior up to $\tilde a$". The answer is
# $\rho^* = \min_p \inf\{\rho : \text{measure}(\rho, p) > \text{target}\}$, the *first*
# crossing, because P[correct] and the tail are not monotone in $\rho$.

# %% tags=["parameters"]
measure = "tail"  # marginal-risk | marginal-posterior | p-correct | tail
target = 0.05  # the target (for "tail": the tolerance tau of P[R' > r*(p)])
max_ratio = 3.0  # tail profile: the largest accepted posterior-to-prior ratio r~ (> 1)
max_posterior = 0.25  # tail profile: the largest accepted posterior a~ (0 < a~ < 1)
priors = [1 / 2, 1 / 5, 1 / 10, 1 / 50, 1 / 864]  # the adversaries' priors p = P[X1 = m+1]
known = 0  # m, the count of the other people in the block with c (known to the adversary)
n_rho_grid = 400  # points of the rho axis of the plot (log-spaced)
delta = 1e-10  # delta used to quote rho as an (epsilon, delta)-DP guarantee

# %%
import matplotlib.pyplot as plt
import numpy as np

import dprisk as dr
from dprisk.inference.privacy.budget import measure_function
from dprisk.inference.privacy.budget_levels import census_fractions
from dprisk.models.census.allocation import CENSUS_RHO_TOTAL

profile = ({"max_ratio": max_ratio, "max_posterior": max_posterior} if measure == "tail"
           else {})
# p-correct has no answer for p > 1/2 (P[correct] -> 1 as rho -> 0): keep p <= 1/2 there
usable = [p for p in priors if measure != "p-correct" or p <= 0.5]
answer = dr.privacy.rho_for_target(measure, target, p=usable, known=known, **profile)
print(f"measure {measure}, target {target:g}, priors {[round(p, 5) for p in usable]}")
print(f"  rho*       = {answer.rho:.6g}   (binding prior p = {answer.binding_p:.4g})")
print(f"  epsilon    = {dr.privacy.epsilon_cks(answer.rho, delta):.4f} (Canonne-Kamath-Steinke), "
      f"{dr.privacy.epsilon_bun_steinke(answer.rho, delta):.4f} (the paper's Theorem 1), "
      f"delta = {delta:g}")
print(f"  certificate: measure at rho* = {answer.value_at_rho:.6g} <= {target:g} < "
      f"{answer.value_above:.6g} just above")

# %% [markdown]
# ## The measure against ρ, and where the target binds
#
# One line per prior; the horizontal line is the target and the star the answer. For
# P[correct] and the tail, the lines jump up at computable $\rho$ values (the adversary's
# decision threshold, or the set of releases with $R' > r^*$, moves by one count): the first
# jump above the target is the answer even if the line comes back below it later.

# %%
rho_grid = np.geomspace(answer.rho / 100, answer.rho * 30, n_rho_grid)
fig, ax = plt.subplots(figsize=(8, 4.2), constrained_layout=True)
for k, p in enumerate(usable):
    value = measure_function(measure, p, known, **profile)
    ax.plot(rho_grid, [value(rho) for rho in rho_grid], color=f"C{k}", label=f"p = {p:.4g}")
ax.axhline(target, color="k", lw=0.8, ls="--", label=f"target {target:g}")
ax.plot([answer.rho], [answer.value_at_rho], "r*", markersize=14,
        label=f"ρ* = {answer.rho:.4g} (binding p = {answer.binding_p:.4g})")
ax.axvline(dr.census_level("block").rho, color="grey", lw=0.8, ls=":",
           label=f"2020 Census block ρ1 = {dr.census_level('block').rho:.4f}")
ax.set(xscale="log", xlabel="ρ (zCDP parameter of the count)", ylabel=measure,
       title=f"{measure} against ρ, single level")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## What it means for the whole 2020 allocation
#
# The 2020 persons strategy gives the block's detailed (GVHR) query a fixed share of the
# global $\rho$. Keeping every share fixed, the largest global $\rho$ that meets the same
# target at the block is $\rho^*/f_1$; the 2020 release used 2.56.

# %%
block_share = float(census_fractions()[0])
census = dr.privacy.census_rho_for_target(measure, target, p=usable, known=known, **profile)
census_epsilon = dr.privacy.epsilon_cks(census.rho, delta)
print(f"block share f1 = {block_share:.5f}; largest global rho = {census.rho:.4g} "
      f"(2020: {float(CENSUS_RHO_TOTAL)}), epsilon = {census_epsilon:.3f}")
print("the 2020 allocation", "meets" if census.rho >= float(CENSUS_RHO_TOTAL) else
      "does not meet", "this target at the block")

# %% [markdown]
# ## The ε-DP counterpart (Kazan & Reiter)
#
# For a pure ε-DP release the worst-case ratio is bounded, so the same profile gives one
# $\varepsilon^*$ without a tolerance.

# %%
pure = dr.privacy.pure_dp_budget(max_ratio, max_posterior)
print(f"epsilon-DP budget for r*(p) = max({max_ratio:g}, {max_posterior:g}/p): "
      f"epsilon* = {pure.epsilon:.6f} at p = {pure.binding_p:.4g}")

# %% [markdown]
# ## Live controls
#
# Change the measure, the target, the profile or the priors: the largest $\rho$ meeting the
# target and its $\varepsilon$ update. A target the measure cannot meet shows the reason.

# %%


def choose_rho_live(measure, target, max_ratio, max_posterior, priors, known):
    profile = ({"max_ratio": max_ratio, "max_posterior": max_posterior}
               if measure == "tail" else {})
    found = dr.privacy.rho_for_target(measure, target, p=priors, known=known, **profile)
    rho_axis = np.geomspace(found.rho / 30, found.rho * 30, 80)
    value = measure_function(measure, found.binding_p, known, **profile)
    fig, ax = plt.subplots(figsize=(6, 3.2), constrained_layout=True)
    ax.semilogx(rho_axis, [value(float(r)) for r in rho_axis])
    ax.axhline(target, color="C3", ls="--")
    ax.axvline(found.rho, color="k", ls=":")
    ax.set(xlabel="rho", ylabel=f"{measure} at p = {found.binding_p:.3g}")
    return fig, {"rho*": found.rho, "binding p": found.binding_p,
                 "epsilon (Bun-Steinke)": dr.privacy.epsilon_bun_steinke(found.rho, delta)}


dr.live(choose_rho_live, measure=str(measure), target=float(target),
     max_ratio=float(max_ratio), max_posterior=float(max_posterior), priors=list(usable),
     known=int(known))

# %% [markdown]
# **What to try next:** set ``measure = "p-correct"`` with ``target = 0.3`` and
# ``priors = [1 / 5, 1 / 10, 1 / 50, 1 / 864]`` and watch the answer land on a jump point
# (with $p = 1/2$ among the priors P[correct] tends to 1/2 as $\rho \to 0$: the target must
# then be above 1/2); lower ``target`` for the tail to 0.001; note that the prior ``1/2``
# of the tail never binds (with ``max_ratio = 3``: $3 \cdot 1/2 \ge 1$); or run
# ``dprisk budget --measure p-correct --target 0.593 --rho1 census:block --d 5 --x2 10`` for
# the block-group version (a target of 0.6 is never exceeded there: any $\rho_2$ meets it).
