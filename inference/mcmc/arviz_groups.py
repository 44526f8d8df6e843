r"""The draws of one release's posterior in ArviZ's full layout, the same for every sampler.

:func:`arviz_tree` takes the ``posterior`` of a sampling run (PyMC's ``pm.sample`` or the
hand-written Gibbs samplers; ``X1 … Xh`` with dims ``(chain, draw)``), the validated
:class:`~dprisk.models.scenario.Scenario` and the :class:`~dprisk.models.scenario.Release`,
and returns a ``DataTree`` with ArviZ's groups (the InferenceData schema):

================== ==========================================================================
group              holds
================== ==========================================================================
posterior          ``X1 … Xh`` (int64; PyMC's ``target_has_c`` = ``X1 - m`` is dropped)
sample_stats       PyMC's step statistics, or for the Gibbs samplers ``lp``, the log of the
                   unnormalised joint density :math:`\log \pi(x_1, …, x_h, D)` of each draw
observed_data      the release: ``x1_star … xh_star``, ``y1_star … y(h-1)_star``
constant_data      ``rho`` (dim ``level`` = 1..h), ``siblings`` d_2..d_h (dim
                   ``sibling_level`` = 2..h), ``p``, ``known``
log_likelihood     per observed value and draw, the discrete-Gaussian log pmf:
                   :math:`\log P[x_\ell^* \mid X_\ell] = -\rho_\ell (x_\ell^* - X_\ell)^2 -
                   \log Z(\rho_\ell)`,
                   :math:`\log P[y_\ell^* \mid X] = -\tfrac{\rho_\ell}{d_{\ell+1}}
                   (y_\ell^* - (X_{\ell+1} - X_\ell))^2 - \log Z(\rho_\ell / d_{\ell+1})`
posterior_predictive one replicated release per draw from those likelihoods
prior, prior_predictive  only when every level's prior is proper with a finite support
                   (``truncated:U``, ``point:K``, a proper model-file prior with an upper
                   bound): :math:`X_1 = m + \mathrm{Bernoulli}(p)` restricted to the feasible
                   values, :math:`X_{\ell+1} \mid X_\ell` from the prior's normalised weights
                   (a chain reaching a value that leaves the next level none has no mass and
                   is drawn again); a release replicated from each prior draw. An improper
                   prior (the paper's default) has no prior draws: the groups are left out.
================== ==========================================================================

All randomness (predictive and prior draws) comes from ``np.random.default_rng(random_seed)``.
The posterior group's attributes (scenario, method, seed) are kept and also set on the root.
"""

from __future__ import annotations

import numpy as np

from dprisk.inference.mcmc.convergence import unknown_names
from dprisk.models.mechanism.dg_sampling import sample_kernel
from dprisk.models.mechanism.discrete_gaussian import logpmf_kernel
from dprisk.models.scenario import Release, Scenario

__all__ = ["GROUPS", "arviz_tree"]

#: The groups :func:`arviz_tree` may write, in ArviZ's order.
GROUPS = ("posterior", "posterior_predictive", "log_likelihood", "sample_stats", "prior",
          "prior_predictive", "observed_data", "constant_data")
#: Largest finite prior support enumerated per level for the prior group.
MAX_PRIOR_SUPPORT = 1_000_000
#: Most rounds of ``n`` chains drawn for ``n`` prior draws (chains reaching a value that
#: leaves the next level none are drawn again).
MAX_PRIOR_ROUNDS = 1000


def _observed(scenario: Scenario, release: Release) -> dict[str, int]:
    """``{"x1_star": …, …, "y1_star": …}`` of one release."""
    xs, ys = (np.asarray(a).reshape(-1) for a in (release.x_stars, release.y_stars))
    names = {f"x{level}_star": int(xs[level - 1]) for level in range(1, scenario.h + 1)}
    names.update({f"y{level}_star": int(ys[level - 1]) for level in range(1, scenario.h)})
    return names


def _centres(scenario: Scenario, counts: list[np.ndarray]) -> dict[str, tuple]:
    """``{observed name: (mean of its DG likelihood, rho)}`` given the counts ``X1 … Xh``."""
    out = {f"x{level}_star": (counts[level - 1], scenario.rhos[level - 1])
           for level in range(1, scenario.h + 1)}
    out.update({f"y{level}_star": (counts[level] - counts[level - 1],
                                   scenario.pair_precisions[level - 1])
                for level in range(1, scenario.h)})
    return out


def _log_likelihood(scenario, observed, counts) -> dict[str, np.ndarray]:
    centres = _centres(scenario, counts)
    return {name: logpmf_kernel(np.int64(observed[name]), mu, np.float64(rho))
            for name, (mu, rho) in centres.items()}


def _replicate(scenario, counts, rng) -> dict[str, np.ndarray]:
    centres = _centres(scenario, counts)
    return {name: sample_kernel(mu, np.float64(rho), mu.shape, rng)
            for name, (mu, rho) in centres.items()}


def _log_prior(scenario: Scenario, counts: list[np.ndarray]) -> np.ndarray:
    """``log P[X1] + Σ log w(X_{ℓ+1} | X_ℓ)`` of each draw (improper weights included)."""
    log_m, log_m1 = scenario.log_prior_x1
    out = np.where(counts[0] == scenario.known + 1, log_m1, log_m)
    for level, prior in enumerate(scenario.priors, start=1):
        out = out + prior.log_weight(counts[level], counts[level - 1])
    return out


def _finite_supports(scenario: Scenario) -> bool:
    """Whether every level's prior is proper with a finite support (the prior group applies)."""
    bounds = [scenario.level_bounds(scenario.known + b) for b in (0, 1)]
    return all(pr.is_proper for pr in scenario.priors) and all(
        hi is not None and hi - lo < MAX_PRIOR_SUPPORT
        for chain in bounds if chain is not None for lo, hi in chain)


def _prior_draws(scenario: Scenario, n: int, rng) -> list[np.ndarray]:
    r"""``n`` draws of ``X1 … Xh`` from the joint prior (proper priors of finite support).

    The joint prior is :math:`P[X_1] \prod_\ell w(X_{\ell+1} \mid X_\ell)` normalised: a
    value that leaves the next level no possible value (e.g. ``truncated:5`` then
    ``truncated:3`` at ``X2 = 4``) has no mass. Chains are drawn level by level from the
    normalised weights and those reaching such a value are drawn again (rejection: exact),
    at most :data:`MAX_PRIOR_ROUNDS` times ``n``.
    """
    feasible = scenario.feasible
    p = scenario.p if all(feasible) else float(feasible[1])
    kept = [np.empty(0, dtype=np.int64) for _ in range(scenario.h)]
    for _ in range(MAX_PRIOR_ROUNDS):
        counts, alive = _forward_prior_draws(scenario, n, p, rng)
        kept = [np.concatenate([done, level[alive]]) for done, level in zip(kept, counts,
                                                                              strict=True)]
        if kept[0].size >= n:
            return [level[:n] for level in kept]
    raise ValueError(f"prior {scenario.attrs()['prior']!r}: fewer than 1 in {MAX_PRIOR_ROUNDS} "
                     "chains drawn level by level has a possible value at every level; the "
                     "prior group cannot be drawn")


def _forward_prior_draws(scenario: Scenario, n: int, p: float, rng):
    """``n`` chains drawn level by level, and which reached no level without a value."""
    counts = [scenario.known + (rng.random(n) < p).astype(np.int64)]
    alive = np.ones(n, dtype=bool)
    for prior in scenario.priors:
        below = counts[-1]
        level = below.copy()  # a dead chain's later levels: placeholders, never kept
        for k in np.unique(below[alive]):
            where = alive & (below == k)
            support = prior.branch_support(int(k))
            if support is None:  # no possible next value: no prior mass
                alive &= ~where
                continue
            values = np.arange(support[0], support[1] + 1, dtype=np.int64)
            weights = np.exp(prior.log_weight(values, np.int64(k)))
            level[where] = rng.choice(values, size=int(where.sum()), p=weights / weights.sum())
        counts.append(level)
    return counts, alive


def _dataset(variables: dict, attrs: dict | None = None, dims=("chain", "draw")):
    import xarray as xr

    first = np.asarray(next(iter(variables.values())))
    coords = {dim: np.arange(size) for dim, size in zip(dims, first.shape, strict=False)}
    return xr.Dataset({name: (dims[: np.ndim(value)], np.asarray(value))
                       for name, value in variables.items()}, coords=coords, attrs=attrs or {})


#: The integers a netCDF attribute holds: int64 and uint64.
NETCDF_INT_RANGE = (-(2**63), 2**64 - 1)


def netcdf_attrs(attrs) -> dict:
    """``attrs`` with every integer netCDF cannot hold (:data:`NETCDF_INT_RANGE`) as its digits.

    A seed is any integer >= 0 (numpy's ``SeedSequence`` takes them all), but a netCDF
    attribute holds integers only in :data:`NETCDF_INT_RANGE`: ``--seed 10**23`` sampled,
    then failed writing ``random_seed`` ("illegal data type for attribute"). Such a value is
    kept as its exact decimal digits (``int(attrs["random_seed"])`` reads it back).
    """
    low, high = NETCDF_INT_RANGE
    return {name: str(value) if isinstance(value, int) and not isinstance(value, bool)
            and not low <= value <= high else value for name, value in attrs.items()}


def arviz_tree(tree, scenario: Scenario, release: Release, *, random_seed=None):
    """The draws of ``tree`` with every ArviZ group that applies (module docstring).

    Parameters
    ----------
    tree : xarray.DataTree
        A sampling result with a ``posterior`` group holding ``X1 … Xh`` (chain, draw) for
        one release (no batch dims), e.g. from
        :func:`dprisk.inference.two_level.sampling.sample_posterior`.
    scenario : Scenario
        The validated scenario of the run (``h`` levels).
    release : Release
        The release of the run (one).
    random_seed : int, numpy.random.Generator or None
        Seed of the posterior-predictive and prior draws.

    Returns
    -------
    xarray.DataTree
        Groups among :data:`GROUPS`; ``prior`` and ``prior_predictive`` only for proper priors
        of finite support.

    Raises
    ------
    ValueError
        If the posterior does not hold ``X1 … Xh`` of the scenario's ``h`` levels.
    """
    import xarray as xr

    posterior = tree["posterior"].to_dataset()
    names = unknown_names(posterior)
    if len(names) != scenario.h:
        raise ValueError(f"tree's posterior must hold X1 ... X{scenario.h}, got {names}")
    attrs = netcdf_attrs(posterior.attrs)
    counts = [np.asarray(posterior[n].transpose("chain", "draw").values, dtype=np.int64)
              for n in names]
    rng = np.random.default_rng(random_seed)
    observed = _observed(scenario, release)
    log_lik = _log_likelihood(scenario, observed, counts)
    groups = {
        "posterior": _dataset(dict(zip(names, counts, strict=True)), attrs),
        "posterior_predictive": _dataset(_replicate(scenario, counts, rng)),
        "log_likelihood": _dataset(log_lik),
    }
    if "sample_stats" in tree.children:
        groups["sample_stats"] = tree["sample_stats"].to_dataset()
    else:
        lp = _log_prior(scenario, counts) + sum(log_lik.values())
        groups["sample_stats"] = _dataset({"lp": lp})
    if _finite_supports(scenario):
        prior = _prior_draws(scenario, counts[0].size, rng)
        prior = [c.reshape(1, -1) for c in prior]
        groups["prior"] = _dataset(dict(zip(names, prior, strict=True)))
        groups["prior_predictive"] = _dataset(_replicate(scenario, prior, rng))
    groups["observed_data"] = xr.Dataset({name: ((), np.int64(v)) for name, v in observed.items()})
    groups["constant_data"] = xr.Dataset(
        {"rho": ("level", np.asarray(scenario.rhos, dtype=float)),
         "siblings": ("sibling_level", np.asarray(scenario.siblings, dtype=np.int64)),
         "p": ((), np.float64(scenario.p)), "known": ((), np.int64(scenario.known))},
        coords={"level": np.arange(1, scenario.h + 1),
                "sibling_level": np.arange(2, scenario.h + 1)})
    out = xr.DataTree.from_dict({name: groups[name] for name in GROUPS if name in groups})
    out.attrs.update(attrs)
    return out
