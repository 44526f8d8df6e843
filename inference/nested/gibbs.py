r"""Gibbs sampler of the ``h``-level nested model with exact full conditionals.

Systematic scan ``X_1, X_2, …, X_h`` on the checked box of
:mod:`dprisk.inference.nested.box_kernels` (neglected mass below ``tail_mass``): ``X_1 | X_2`` on
``{m, m+1} ∩ {≤ k_2}``, and

.. math::

    P[X_\ell = k \mid X_{\ell-1} = j, X_{\ell+1} = l] \propto
        \psi_\ell(j, k)\, \phi_\ell(k)\, \psi_{\ell+1}(k, l)

(a discrete Gaussian of precision ``ρ_ℓ + ρ_{ℓ-1}/d_ℓ + ρ_ℓ/d_{ℓ+1}`` times the prior
weights, truncated to the support; ``φ, ψ`` as in :mod:`dprisk.inference.nested.exact`),
tabulated once as cumulative tables (recomputed for each sweep instead when a level's table
would exceed :data:`MAX_TABLE_CELLS` cells) and drawn by inversion, vectorised over chains.
For ``h = 2`` the two-level sampler :func:`dprisk.inference.two_level.gibbs.gibbs_draws` runs.
Results
are arrays of shape ``(h, chains, draws)`` or a DataTree whose ``posterior`` group holds one
variable per level, ``X1 … Xh`` with dims ``(chain, draw)``: the names of the PyMC model's
variables, so Gibbs and PyMC results compare by name.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from dprisk.inference.kernels.table_kernels import DEFAULT_TAIL_MASS
from dprisk.inference.mcmc.draws_tree import draws_datatree
from dprisk.inference.mcmc.run_options import check_draws_memory, run_options
from dprisk.inference.nested.box_kernels import checked_box
from dprisk.inference.two_level.gibbs import gibbs_draws
from dprisk.models.builders.nested import x_var_name
from dprisk.models.mechanism.dg_sampling import resolve_random_seed
from dprisk.models.numerics import check_tail_mass, expit
from dprisk.models.scenario import Release, Scenario, nested_scenario
from dprisk.runtime.renamed import renamed_attributes
from dprisk.runtime.work_limit import GIBBS_DRAW_STEPS, NESTED_SWEEP_STEPS, check_work

__all__ = ["MAX_TABLE_CELLS", "NestedDraws", "gibbs_sample", "nested_draws", "to_datatree"]

#: Largest full-conditional table (cells) :func:`gibbs_sample` keeps per level.
MAX_TABLE_CELLS = 2**22
#: Sweeps per block of pre-drawn uniforms in :func:`gibbs_sample`.
_SWEEP_BLOCK = 1024


class NestedDraws(NamedTuple):
    """Draws of :func:`gibbs_sample`: ``x`` (int64) of shape ``(h, chains, draws)``.

    ``x[ℓ - 1]`` holds the draws of ``X_ℓ``; ``x[0]`` is ``m`` or ``m + 1``. ``random_seed``
    is the integer seed of the run (drawn when none was given; None when a numpy Generator
    was passed): the same seed gives the same draws.
    """

    x: np.ndarray
    known: int
    random_seed: int | None = None

    def level(self, level: int) -> np.ndarray:
        """Draws of ``X_level`` (1..h), shape ``(chains, draws)``."""
        return self.x[level - 1]

    @property
    def target(self) -> np.ndarray:
        """Indicator draws ``1[X1 = m + 1]`` (int64), shape ``(chains, draws)``."""
        return self.x[0] - self.known


def _cdf_rows(log_weight: np.ndarray) -> np.ndarray:
    """Cumulative rows (last axis) scaled to end at exactly 1; all-zero rows stay zero."""
    top = log_weight.max(-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    cdf = np.cumsum(np.exp(log_weight - top), -1)
    total = cdf[..., -1:]
    return np.where(total > 0, cdf / np.where(total > 0, total, 1.0), 0.0)


def _draw_rows(rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inversion: index ``k`` with ``cdf[k-1] <= u < cdf[k]`` for each row (u in [0, 1))."""
    return (rows <= u[:, None]).sum(1)


def gibbs_sample(
    x_stars, y_stars, *, scenario: Scenario | None = None, draws: int = 1000, chains: int = 4,
    tune: int = 100, random_seed=None, tail_mass: float = DEFAULT_TAIL_MASS, **parameters,
) -> NestedDraws:
    r"""Systematic-scan Gibbs sampler with exact full conditionals for one release.

    Sweep: ``X_1 | X_2``, then ``X_ℓ | X_{ℓ-1}, X_{ℓ+1}`` for ``ℓ = 2..h-1``, then
    ``X_h | X_{h-1}``, each drawn exactly (inversion of tabulated conditionals on the checked
    box of :mod:`dprisk.inference.nested.box_kernels`, neglected mass < ``tail_mass``). Chains
    start from ``X_1 = m + 1`` and ``m`` in turn (its possible values; one chain: uniform on
    them, so that chains which cannot leave their start disagree and R-hat shows it) and
    ``X_ℓ`` drawn from ``P[X_ℓ | X_{ℓ-1}, D]``
    (so the start is inside the support but not a posterior draw); the first ``tune``
    sweeps are discarded. For ``h = 2`` the two-level sampler
    :func:`dprisk.inference.two_level.gibbs.gibbs_draws` runs (the one implementation of that
    model).

    Parameters
    ----------
    x_stars, y_stars : sequence of int
        One release: ``h`` and ``h - 1`` integers.
    scenario, tail_mass, **parameters
        As in :func:`dprisk.inference.nested.exact.exact_posterior` (``rhos, siblings,
        p, known, prior`` or a validated ``scenario``).
    draws : int (>= 1)
        Recorded sweeps per chain.
    chains : int (>= 1)
        Chains, run together (vectorised).
    tune : int (>= 0)
        Sweeps discarded at the start of every chain.
    random_seed : int, numpy.random.Generator or None
        Source of randomness (``np.random.default_rng(random_seed)``). Without one, a seed is
        drawn, used and reported (``NestedDraws.random_seed``).

    Returns
    -------
    NestedDraws
        ``x`` of shape ``(h, chains, draws)``; ``random_seed`` the integer seed used.
    """
    scenario = nested_scenario(scenario, **parameters)
    release = Release.nested(x_stars, y_stars, h=scenario.h)
    release.one("gibbs_sample")
    tail_mass = check_tail_mass(tail_mass)
    if random_seed is None:  # draw one, use it and report it: every random result reproducible
        random_seed = resolve_random_seed(None)
    run = run_options(draws, chains, tune, random_seed)
    seed = int(random_seed) if isinstance(random_seed, numbers.Integral) else None
    return nested_draws(release, scenario, **run, tail_mass=tail_mass)._replace(random_seed=seed)


def nested_draws(release: Release, params: Scenario, *, draws: int, chains: int, tune: int,
                 generator: np.random.Generator, tail_mass: float,
                 progress: bool = False) -> NestedDraws:
    """Kernel of :func:`gibbs_sample` for one validated release (checks only the budgets).

    ``progress`` shows a progress bar over the sweeps on stderr.
    """
    if params.h == 2:
        two = gibbs_draws(release, params, draws=draws, chains=chains, tune=tune,
                          generator=generator, tail_mass=tail_mass, progress=progress)
        return NestedDraws(np.stack([two.x1, two.x2]), params.known)
    check_draws_memory(params.h, chains, draws)
    check_work((tune + draws) * (NESTED_SWEEP_STEPS + float(params.h) * chains * GIBBS_DRAW_STEPS),
               parameter="draws, chains",
               what=f"{params.h} levels x {chains} chains x {tune + draws} sweeps")
    rng = generator
    box = checked_box(*release.flat(), params, tail_mass)
    h = params.h
    phi = [f[0] for f in box.log_phi]
    psi = [None] + [f[0] for f in box.log_psi[1:]]
    psi_up = [None] + [np.ascontiguousarray(psi[i + 1].T) for i in range(1, h - 1)]

    # X1 | X2 = grid[1][j]: P[X1 = m + 1 | k2].
    log_b = phi[0][:, None] + psi[1]  # (2, W_2)
    with np.errstate(invalid="ignore"):
        prob_x1 = np.where(np.isfinite(log_b[1]), expit(log_b[1] - log_b[0]), 0.0)
    # X_ℓ | neighbours: cdf[i] of shape (W_{i-1} * W_{i+1}, W_i) (top level: W_{h-2} rows);
    # a table too large to keep is replaced by rows computed for each sweep (None).
    cdfs = [None]
    for i in range(1, h):
        table = psi[i] + phi[i][None, :]  # (W_{i-1}, W_i)
        if i < h - 1:
            if table.size * box.width[i + 1] > MAX_TABLE_CELLS:
                cdfs.append(None)
                continue
            table = table[:, None, :] + psi[i + 1].T[None, :, :]  # (W_{i-1}, W_{i+1}, W_i)
        cdfs.append(_cdf_rows(table).reshape(-1, box.width[i]))

    # Initial state: X1 = m + 1 and m in turn (one chain: uniform on its possible values),
    # X_ℓ ~ P[X_ℓ | X_{ℓ-1}, D].
    state = np.empty((h, chains), dtype=np.int64)  # grid offsets of X_1 ... X_h
    options = np.flatnonzero(box.feasible)
    if chains > 1:  # m + 1 and m in turn: chains that cannot leave their start disagree
        state[0] = options[::-1][np.arange(chains) % len(options)]
    else:
        state[0] = options[rng.integers(len(options), size=chains)]
    for i in range(1, h):
        start_cdf = _cdf_rows(psi[i] + phi[i][None, :] + box.beta[i][0][None, :])
        state[i] = _draw_rows(start_cdf[state[i - 1]], rng.random(chains))

    out = np.empty((h, chains, draws), dtype=np.int64)
    total = tune + draws
    done = 0
    from tqdm import tqdm

    bar = tqdm(total=total, desc="gibbs", unit="sweep", disable=not progress)  # closed below
    while done < total:
        steps = min(_SWEEP_BLOCK, total - done)
        u = rng.random((steps, h, chains))
        for t in range(steps):
            state[0] = u[t, 0] < prob_x1[state[1]]
            for i in range(1, h - 1):
                if cdfs[i] is None:
                    rows = _cdf_rows(psi[i][state[i - 1]] + phi[i] + psi_up[i][state[i + 1]])
                else:
                    rows = cdfs[i][state[i - 1] * box.width[i + 1] + state[i + 1]]
                state[i] = _draw_rows(rows, u[t, i])
            state[h - 1] = _draw_rows(cdfs[h - 1][state[h - 2]], u[t, h - 1])
            if done + t >= tune:
                out[:, :, done + t - tune] = state
        done += steps
        bar.update(steps)
    bar.close()
    starts = np.array([s[0] for s in box.start])
    out += starts[:, None, None]
    return NestedDraws(out, params.known)


def to_datatree(samples: NestedDraws, *, attrs: dict | None = None):
    """Draws as a DataTree: group ``posterior`` with ``X1 … Xh`` (chain, draw) and ``attrs``.

    ``known`` (read by :func:`dprisk.validation.crosschecks.diagnostics.convergence_report`)
    and the run's integer ``random_seed`` (when known) are recorded in the attributes unless
    ``attrs`` gives them.
    """
    x = np.asarray(samples.x)
    seed = {} if samples.random_seed is None else {"random_seed": int(samples.random_seed)}
    return draws_datatree(
        {x_var_name(level): x[level - 1] for level in range(1, x.shape[0] + 1)},
        sampler="exact Gibbs, systematic scan (dprisk.inference.nested.gibbs)",
        attrs={"known": int(samples.known), **seed, **(attrs or {})},
    )


#: Old names (issue 35: ``two_level`` for two levels, ``nested`` for h levels), still importable
#: from this module with a FutureWarning naming the new one.
__getattr__ = renamed_attributes(__name__, {
    "MultilevelDraws": "NestedDraws",
})
