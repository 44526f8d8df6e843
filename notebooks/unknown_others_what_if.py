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
# # What if the adversary does not know everyone in the block?
#
# **Question.** The paper's adversary knows everyone in the target's block except the
# target. Suppose instead it does not know ``n`` other people either, and believes each of
# them has the characteristics ``c`` with probability ``q`` (the paper's first future-work
# item). The block count is then
#
# $$X_1 = m + B_t + K, \quad B_t \sim \mathrm{Bernoulli}(p), \quad
#   K \sim \mathrm{Binomial}(n, q), \qquad x_1^* = X_1 + \eta_1,\ \eta_1 \sim
#   \mathrm{DG}(0, 1/(2\rho_1)),$$
#
# and the posterior that the target has ``c`` is an exact sum over the binomial
# (``dprisk.inference.unknown_others.closed_form``). How much less does the release reveal as ``n``
# grows? We show, for the parameters below:
#
# * per release: the posterior and $R'(x_1^*)$ for a few ``n``;
# * averaged over releases when the target has ``c`` (the others' count drawn from the
#   adversary's binomial): the marginal risk $R$ and $P[\text{correct decision}]$ against
#   ``n``, with the paper's single level ($n = 0$) for reference;
# * a cross-check of the exact posterior against PyMC's samplers for one release.

# %% tags=["parameters"]
rho1 = 0.0992  # zCDP parameter of the block count (Census block: about 0.0992)
p = 0.5  # adversary's prior probability that the target has c
q = 0.3  # adversary's probability that one unknown other has c
known = 0  # m, the count with c among the people the adversary knows
n_max = 50  # largest number of unknown others on the n axis
n_shown = [0, 5, 20]  # numbers of unknown others shown in the per-release plot
x1_star = 8  # the release of the PyMC cross-check
pymc_draws = 2000  # draws per chain of the PyMC cross-check (0 skips it)

# %%
import matplotlib.pyplot as plt
import numpy as np

import dprisk as dr

releases = np.arange(known - 15, known + 30)
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
for n in n_shown:
    model = {"unknown_others": n, "q": q}
    axes[0].plot(releases, dr.unknown_others.posterior(releases, rho1, p, known, **model),
                 marker=".", label=f"n = {n}")
    axes[1].plot(releases, dr.unknown_others.risk(releases, rho1, p, known, **model), marker=".",
                 label=f"n = {n}")
axes[0].set_ylabel("P[target has c | x1*]")
axes[1].set_ylabel("R'(x1*) = posterior / p")
for ax in axes:
    ax.set_xlabel("released block count x1*")
    ax.grid(alpha=0.3)
    ax.legend()
fig.suptitle(f"rho1 = {rho1:g}, p = {p:g}, q = {q:g}, m = {known}")
plt.show()

# %% [markdown]
# Unknown others shift the posterior curve to the right (the adversary expects ``n q`` more
# people with ``c`` in the count) and flatten it (their number is uncertain): the same release
# says less about the target.

# %%
n_axis = np.arange(0, int(n_max) + 1)
risk = [dr.unknown_others.marginal_risk(rho1, p, unknown_others=int(n), q=q) for n in n_axis]
correct = [dr.unknown_others.p_correct(rho1, p, unknown_others=int(n), q=q) for n in n_axis]
wrong_without = [dr.unknown_others.p_correct(rho1, p, unknown_others=int(n), q=q, target=0)
                 for n in n_axis]
accuracy = p * np.asarray(correct) + (1 - p) * np.asarray(wrong_without)
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
axes[0].plot(n_axis, risk, marker=".")
axes[0].axhline(dr.marginal_risk(rho1, p), color="k", ls=":", label="paper (n = 0)")
axes[0].set_ylabel("marginal risk R")
axes[1].plot(n_axis, correct, marker=".", label="P[correct | target has c]")
axes[1].plot(n_axis, accuracy, marker=".", label="accuracy averaged over the prior")
axes[1].axhline(dr.p_correct(rho1, p), color="k", ls=":", label="paper (n = 0)")
for ax in axes:
    ax.set_xlabel("n, unknown others")
    ax.grid(alpha=0.3)
    ax.legend()
plt.show()
print(f"R: {risk[0]:.4f} at n = 0 (paper: {dr.marginal_risk(rho1, p):.4f}), "
      f"{risk[-1]:.4f} at n = {n_axis[-1]}")

# %% [markdown]
# ``P[correct | target has c]`` (the paper's measure) jumps as ``n`` grows: the decision
# threshold moves by whole counts while the expected number of others with ``c`` moves
# smoothly. The accuracy averaged over the adversary's prior and the risk ``R`` fall steadily.
#
# **Cross-check.** The same model declared in PyMC
# (``dprisk.models.builders.unknown_others``), sampled with PyMC's own steps, against the
# exact posterior:

# %%
if pymc_draws > 0:
    from dprisk.inference.unknown_others.sampling import pymc_posterior

    n_check = max(n_shown)
    result = pymc_posterior(x1_star, rho1, p, known, unknown_others=n_check, q=q,
                            draws=int(pymc_draws), chains=2, random_seed=2026)
    print(f"n = {n_check}, x1* = {x1_star}: PyMC {result['posterior']:.4f} "
          f"± {result['mcse']:.4f} (MCSE), exact {result['exact']:.4f}, z = {result['z']:.2f}, "
          f"R-hat {result['r_hat']:.3f}")

# %% [markdown]
# ## Live controls
#
# Change $\rho_1$, $p$, $q$, $m$ or the number $n$ of unknown others: the posterior over
# releases (around the likeliest ones, $m + 1 + nq$) and the marginal risk and P[correct]
# update (exact closed forms).

# %%


def unknown_others_live(rho1, p, q, known, n):
    model = {"unknown_others": n, "q": q}
    numbers = {"marginal risk R": dr.unknown_others.marginal_risk(rho1, p, **model),
               "P[correct]": dr.unknown_others.p_correct(rho1, p, **model),
               "paper (n = 0) P[correct]": dr.p_correct(rho1, p)}  # inputs checked here
    # releases around E[X1*] = m + 1 + n q (target with c), 15 + 4 sd either side (at most 1000)
    centre = int(known + 1 + n * q)
    half = min(1000, 15 + int(4 * np.sqrt(n * q * (1 - q) + 1 / (2 * rho1))))
    shown = np.arange(centre - half, centre + half + 1)
    fig, ax = plt.subplots(figsize=(6, 3.2), constrained_layout=True)
    ax.plot(shown, dr.unknown_others.posterior(shown, rho1, p, known, **model), marker=".")
    ax.set(xlabel="released block count x1*", ylabel="P[target has c | x1*]", ylim=(0, 1))
    return fig, numbers


dr.live(unknown_others_live, rho1=float(rho1), p=float(p), q=float(q), known=int(known),
     n=int(n_shown[-1]), ranges={"rho1": (0.001, 5.0), "p": (0.001, 0.999),
                                 "q": (0.001, 0.999)})

# %% [markdown]
# **What to try next.** Set ``q`` near 0 or 1 (the others' count is then nearly known and the
# paper's answer returns, shifted by ``n q``); raise ``rho1`` to see how fast unknown others
# erode a large budget's risk; pass ``true_others=k`` to ``marginal_risk`` and ``p_correct``
# to state how many of the unknown others really have ``c`` instead of averaging over the
# adversary's binomial. On the command line: ``dprisk marginal --rho1 census:block --p 0.5
# --unknown-others 20 --q 0.3``.
