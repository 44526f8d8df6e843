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
# # Policy sweep: how should the budget be split between blocks and block groups?
#
# **Question.** For a fixed truth $(x_1, x_2)$ in one block group, how often does the
# adversary of paper §4.3 make the right 0-1-loss decision about the target, as a
# function of the block budget $\rho_1$ and the block-group budget $\rho_2$? And how much
# of that comes from the block-group release, compared with the block release alone?
#
# Each grid point is an exact sum over all releases $D = (x_1^*, x_2^*, y_1^*)$ drawn from
# the true mechanism (``dprisk.inference.studies.p_correct.p_correct_two_level``; no Monte
# Carlo), so
# the differences in the maps are real, not noise. The grid runs through
# ``dprisk.inference.sweeps.sweep.sweep``: in this process by default, on a local Dask cluster
# when ``n_workers > 0``.

# %% tags=["parameters"]
x1 = 1  # true block count with c: known (target lacks c) or known + 1 (target has c)
x2 = 1  # true block-group count with c (at least x1)
d = 27  # number of other blocks in the block group
p = 0.5  # prior probability of the adversary that the target has c (X1 is m + 1)
known = 0  # m, the count of the other people in the block with c (known to the adversary)
prior = "improper"  # prior of X2 | X1 of the adversary (dr.parse_prior spec)
decision_model = "exact"  # "exact": the model's posterior; "variant": see section 3
rho1_min = 0.02  # smallest block rho of the grid
rho1_max = 2.0  # largest block rho of the grid
n_rho1 = 9  # block rho values (log-spaced)
rho2_min = 0.05  # smallest block-group rho of the grid
rho2_max = 10.0  # largest block-group rho of the grid
n_rho2 = 9  # block-group rho values (log-spaced)
n_workers = 0  # 0: compute in this process (default; works as a plain script); k > 0: a
#   local Dask cluster of k worker processes (opt-in; in a notebook kernel)

# %%
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import TwoSlopeNorm
from tqdm import TqdmWarning

import dprisk as dr
from dprisk.inference.studies.p_correct import p_correct_variant

# sweep() imports tqdm.auto even with progress=False; without ipywidgets that warns once.
warnings.filterwarnings("ignore", message="IProgress not found", category=TqdmWarning)
quantities = {"exact": dr.two_level.p_correct, "variant": p_correct_variant}
if decision_model not in quantities:
    raise ValueError(f"decision_model must be one of {sorted(quantities)}, got {decision_model!r}")
rho1_grid = np.geomspace(rho1_min, rho1_max, int(n_rho1))
rho2_grid = np.geomspace(rho2_min, rho2_max, int(n_rho2))
rho_census = {"rho1": dr.census_level("block").rho, "rho2": dr.census_level("block-group").rho}
print(f"truth x1 = {x1}, x2 = {x2}; d = {d}, p = {p}, known m = {known}, prior {prior}")
print(f"grid: {len(rho1_grid)} x {len(rho2_grid)} points; Census: "
      f"rho1 = {rho_census['rho1']:.4f}, rho2 = {rho_census['rho2']:.4f}")

# %% [markdown]
# ## 1. Run the sweep
#
# By default (``n_workers = 0``) every grid point is computed in this process, so the file
# also runs as a plain script. With ``n_workers > 0`` (opt-in, in a notebook kernel) the
# points go to a local Dask cluster, grouped in chunks, one task per chunk; the values do not
# depend on how the chunks are spread over the workers. The cluster lives only inside this
# cell (``with``), so it is closed even if the sweep fails. Pass ``out="sweep.nc"`` to
# ``sweep`` to keep the result in a resumable netCDF file.

# %%
sweep_args = {
    "rho1": rho1_grid.tolist(), "rho2": rho2_grid.tolist(), "d": d, "x2": x2, "x1": x1,
    "p": p, "known": known, "prior": prior, "quantity": quantities[decision_model],
    "out": None, "progress": False,
}
start = time.perf_counter()
if int(n_workers) > 0:
    from dask.distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=int(n_workers), processes=True, threads_per_worker=1,
                     dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        print(client)
        result = dr.sweep(**sweep_args, client=client)
else:
    result = dr.sweep(**sweep_args, client=None)
print(f"{result.sizes['rho1'] * result.sizes['rho2']} points in "
      f"{time.perf_counter() - start:.1f} s")
result

# %% [markdown]
# ## 2. Heat maps
#
# Left: $P[\text{correct}]$ using both releases. Right: what the block-group release adds,
# $P[\text{correct}] - P[\text{correct without the block group}]$ (red: it helps the
# adversary, blue: it hurts). The star is the 2020 Census allocation.

# %%
def _edges(grid: np.ndarray) -> np.ndarray:
    """Cell edges of a log-spaced grid (geometric midpoints, one extra cell at each end)."""
    if grid.size == 1:
        return np.array([grid[0] / 1.5, grid[0] * 1.5])
    mid = np.sqrt(grid[:-1] * grid[1:])
    return np.concatenate([[grid[0] ** 2 / mid[0]], mid, [grid[-1] ** 2 / mid[-1]]])


difference = result["p_correct"] - result["p_correct_no_hierarchy"]
limit = max(float(np.abs(difference).max()), 1e-12)
panels = [
    (result["p_correct"], "viridis", None, "P[correct] with the block group"),
    (difference, "RdBu_r", TwoSlopeNorm(0.0, -limit, limit),
     "P[correct] − P[correct without the block group]"),
]
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
for ax, (values, cmap, norm, title) in zip(axes, panels, strict=True):
    mesh = ax.pcolormesh(_edges(rho2_grid), _edges(rho1_grid),
                         values.transpose("rho1", "rho2").values, cmap=cmap, norm=norm)
    fig.colorbar(mesh, ax=ax, label=title + " (probability)")
    ax.plot(rho_census["rho2"], rho_census["rho1"], "*", color="w", mec="k", ms=14)
    ax.set(xscale="log", yscale="log", xlabel="$\\rho_2$ (block group)",
           ylabel="$\\rho_1$ (block)", title=title)
fig.suptitle(f"P[correct decision about X1]: truth x1 = {x1}, x2 = {x2}; p = {p}, "
             f"d = {d}, prior {prior}, "
             f"decision: {decision_model}")
plt.show()

# %% [markdown]
# The same numbers as curves over $\rho_2$, one per $\rho_1$ (solid), with the block
# release alone dashed: read off how much extra block-group accuracy costs in disclosure.

# %%
fig, ax = plt.subplots(figsize=(7, 4.2), constrained_layout=True)
for i, rho1_value in enumerate(result["rho1"].values):
    row = result.isel(rho1=i)
    line, = ax.plot(row["rho2"], row["p_correct"], marker="o", ms=3,
                    label=f"ρ1 = {rho1_value:.3g}")
    ax.axhline(float(row["p_correct_no_hierarchy"].mean()), color=line.get_color(), ls="--",
               lw=0.8)
ax.axvline(rho_census["rho2"], color="k", lw=0.8, ls=":", label="Census ρ2")
ax.set(xscale="log", xlabel="$\\rho_2$ (block group)", ylabel="P[correct decision about X1]",
       title="solid: with the block group; dashed: block release alone")
ax.legend(fontsize=7, ncol=2)
plt.show()

# %% [markdown]
# ## 3. Gain and loss, and a note on the decision model
#
# ``gain`` is the probability that the block group turns a wrong decision into a right one,
# ``loss`` the reverse; ``p_correct - p_correct_no_hierarchy = gain - loss``. With the
# model's exact posterior and a true $x_2$ this small, the improper prior's support
# constraint $X_2 \ge X_1$ pulls decisions towards $X_1 = m$, so when the target does have
# ``c`` the loss can dominate. ``decision_model = "variant"`` decides instead with the
# Gibbs sampler that drops that constraint in the $X_1$ update (the reading of the paper's
# Figures 5-6 in ``dprisk.inference.studies.p_correct``); compare the two.

# %%
net = result["gain"] - result["loss"]
assert float(np.abs(net - difference).max()) < 1e-9, "gain - loss must equal the difference"
best = result["p_correct"].argmax(dim=("rho1", "rho2"))
print(f"largest P[correct] on the grid: {float(result['p_correct'].max()):.4f} at "
      f"rho1 = {float(result['rho1'][best['rho1']]):.3g}, "
      f"rho2 = {float(result['rho2'][best['rho2']]):.3g}")
print(f"gain ranges over [{float(result['gain'].min()):.2e}, {float(result['gain'].max()):.2e}],"
      f" loss over [{float(result['loss'].min()):.2e}, {float(result['loss'].max()):.2e}]")

# %% [markdown]
# ## Live controls
#
# One row of the grid, live: P[correct] with and without the block group against $\rho_2$
# at the chosen $\rho_1$, for the truth $(x_1, x_2)$, the adversary's $d$, $p$, prior and
# decision model (``exact`` or ``variant``, as in the maps above).

# %%


def policy_live(rho1, x1, x2, d, p, known, prior, decision_model):
    if decision_model not in quantities:
        raise ValueError(f"decision_model must be one of {sorted(quantities)}, "
                         f"got {decision_model!r}")
    rho2_axis = np.geomspace(rho2_min, rho2_max, n_rho2)
    rows = [quantities[decision_model](x2=x2, rho1=rho1, rho2=r2, d=d, x1=x1, p=p,
                                       known=known, prior=prior) for r2 in rho2_axis]
    fig, ax = plt.subplots(figsize=(6, 3.2), constrained_layout=True)
    ax.semilogx(rho2_axis, [r.p_correct for r in rows], marker="o", label="with block group")
    ax.axhline(rows[0].p_correct_no_hierarchy, color="k", ls=":", label="x1* only")
    ax.set(xlabel="rho2", ylabel="P[correct]", ylim=(0, 1))
    ax.legend()
    return fig, {"P[correct], x1* only": rows[0].p_correct_no_hierarchy,
                 f"P[correct] at rho2 = {rho2_axis[-1]:.3g}": rows[-1].p_correct}


dr.live(policy_live, rho1=float(rho1_min), x1=int(x1), x2=int(x2), d=int(d), p=float(p),
     known=int(known), prior=str(prior), decision_model=str(decision_model),
     ranges={"rho1": (rho1_min, rho1_max)})

# %% [markdown]
# **What to try next:** set ``x1 = 0`` (the target lacks ``c``) or ``x2 = 10`` and see the
# sign of the gain flip; switch ``decision_model`` to ``"variant"``; try ``p = 0.2`` or a
# ``truncated:10`` prior; widen the grid and pass ``out="sweep.nc"`` to keep the result.
