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
# # What if the adversary read the published product instead of the noisy measurements?
#
# **Question.** The Census Bureau publishes a post-processed product: non-negative integer
# counts that add up to the level above, some totals held exact (invariants). It has also
# released the noisy measurements behind it. Does releasing the noisy measurements add risk
# beyond the product? For one block group over the target's block and ``d`` other blocks
# whose counts the adversary knows, ``dprisk.inference.product.exact`` computes both sides
# exactly for the same adversary. We show, for the parameters below:
#
# * the marginal posterior and P[correct] of the noisy measurements, of the product and of
#   the product with the block-group total held exact, against the block ``rho1``;
# * the same against the number of other blocks ``d``;
# * one product value's likelihood, exact against Monte Carlo.

# %% tags=["parameters"]
rho2 = 0.2465  # block-group rho (Census: about 0.2465)
census_rho1 = 0.0992  # the Census block rho, marked on the rho1 axis
others = [3]  # the other blocks' counts, known to the adversary
m = 0  # the target block's count without the target
p = 0.5  # the adversary's prior that the target has c
n_rho_grid = 8  # points on the rho1 axis
d_max = 3  # largest number of other blocks on the d axis (d <= 3 stays under a second each)
mc_draws = 20_000  # draws per hypothesis of the Monte Carlo check

# %%
import matplotlib.pyplot as plt
import numpy as np

import dprisk as dr

rho_grid = np.geomspace(0.03, 1.5, n_rho_grid)
rows = {"noisy": [], "product": [], "invariant": []}
for rho1 in rho_grid:
    plain = dr.product.risk(rho1, rho2, others, m, p)
    fixed = dr.product.risk(rho1, rho2, others, m, p, invariant="block-group")
    rows["noisy"].append((plain.noisy_marginal_posterior, plain.noisy_p_correct))
    rows["product"].append((plain.marginal_posterior, plain.p_correct))
    rows["invariant"].append((fixed.marginal_posterior, fixed.p_correct))

fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
for name, values in rows.items():
    values = np.array(values)
    for ax, col in zip(axes, (0, 1), strict=True):
        ax.plot(rho_grid, values[:, col], marker=".", label=name)
for ax, label in zip(axes, ("marginal posterior", "P[correct | target has c]"), strict=True):
    ax.set_xscale("log")
    ax.axvline(census_rho1, color="grey", lw=1)
    ax.set_xlabel("rho1")
    ax.set_ylabel(label)
axes[0].legend()
plt.show()

# %% [markdown]
# The product's curves lie below the noisy measurements' for the marginal posterior (data
# processing: the product is a function of the measurements). With the block-group total
# held exact the product reveals the target: an invariant is confidential data, not
# post-processing. P[correct] at the truth alone is not bounded this way; the accuracy over
# the prior is. Now against ``d``, at the Census rho:

# %%
ds = list(range(1, d_max + 1))
by_d = [dr.product.risk(census_rho1, rho2, [1] * d, m, p) for d in ds]
fig, ax = plt.subplots(figsize=(5.5, 3.8))
ax.plot(ds, [r.noisy_marginal_posterior for r in by_d], marker="o", label="noisy")
ax.plot(ds, [r.marginal_posterior for r in by_d], marker="o", label="product")
ax.set_xlabel("d other blocks (1 each)")
ax.set_ylabel("marginal posterior")
ax.set_xticks(ds)
ax.legend()
plt.show()
for d, r in zip(ds, by_d, strict=True):
    print(f"d = {d}: accuracy product {r.accuracy:.4f}, noisy {r.noisy_accuracy:.4f}")

# %% [markdown]
# The noisy side does not depend on ``d`` (the others' measurements carry nothing about the
# target once their counts are known); the product spreads the block-group measurement over
# more blocks. Finally, one product value's likelihood by simulation, with its MCSE:

# %%

table = dr.product.table(census_rho1, rho2, others, m)
likeliest = int(np.argmax(table.likelihood[1]))
value = table.outputs[likeliest]
mc = dr.product.likelihood_mc(value, census_rho1, rho2, others, m, draws=mc_draws,
                           random_seed=2026)
print(f"product value (x2~, blocks) = {value.tolist()}")
for h, name in enumerate(("m", "m+1")):
    print(f"  P[value | {name}]: exact {table.likelihood[h, likeliest]:.5f}, "
          f"Monte Carlo {mc.likelihood[h]:.5f} ± {mc.mcse[h]:.5f}")

# %% [markdown]
# ## Live controls
#
# Move $\rho_1$, $\rho_2$ or $p$, or type a value in a box (the other blocks' counts as a
# Python list, ``[0, 5, 2]``) and press Enter: the marginal posterior, P[correct] and the
# accuracy of the noisy measurements, of the product and of the product with the block-group
# total held exact update at once (exact sums: milliseconds with one other block, about half a
# second with three; an enumeration beyond the memory limit shows its message instead). A
# headless run shows them at the parameters cell's values, at the Census block's $\rho_1$.

# %%


def product_live(rho1, rho2, others, m, p):
    plain = dr.product.risk(rho1, rho2, others, m, p)
    fixed = dr.product.risk(rho1, rho2, others, m, p, invariant="block-group")
    releases = ("noisy", "product", "product, total exact")
    posterior = (plain.noisy_marginal_posterior, plain.marginal_posterior,
                 fixed.marginal_posterior)
    correct = (plain.noisy_p_correct, plain.p_correct, fixed.p_correct)
    accuracy = (plain.noisy_accuracy, plain.accuracy, fixed.accuracy)
    fig, ax = plt.subplots(figsize=(6, 3.2), constrained_layout=True)
    at = np.arange(len(releases))
    ax.bar(at - 0.2, posterior, width=0.4, label="marginal posterior")
    ax.bar(at + 0.2, correct, width=0.4, label="P[correct | target has c]")
    ax.axhline(p, color="grey", lw=0.8)
    ax.set_xticks(at, releases)
    ax.set(ylim=(0, 1), ylabel="probability")
    ax.legend(fontsize=8)
    numbers = {}
    for name, values in (("marginal posterior", posterior), ("P[correct]", correct),
                         ("accuracy", accuracy)):
        numbers |= {f"{name}, {release}": value
                    for release, value in zip(releases, values, strict=True)}
    return fig, numbers


dr.live(product_live, rho1=float(census_rho1), rho2=float(rho2), others=list(others),
        m=int(m), p=float(p),
        ranges={"rho1": (0.01, 2.0), "rho2": (0.01, 2.0), "p": (0.001, 0.999)})

# %% [markdown]
# **What to try next.** Several other blocks with different counts (``others = [0, 5, 2]``);
# a small prior (``p = 0.1``); a large ``rho2`` (the block-group total nearly exact, close to
# the invariant); the command line: ``dprisk product --rho1 census:block --rho2
# census:block-group --others 3``.
