r"""Exact posterior of the ``h``-level nested model (:mod:`dprisk.models.builders.nested`).

The joint posterior of the counts ``X_1 ∈ {m, m+1}, X_2, …, X_h`` is a chain (Markov) model

.. math::

    \pi(k_1, \dots, k_h) \propto \prod_{\ell=1}^{h} \phi_\ell(k_\ell)
        \prod_{\ell=2}^{h} \psi_\ell(k_{\ell-1}, k_\ell), \qquad
    \phi_\ell(k) = e^{-\rho_\ell (x_\ell^* - k)^2}\,(P[X_1 = k] \text{ if } \ell = 1),

    \psi_\ell(j, k) = w_\ell(k \mid j)\, e^{-(\rho_{\ell-1}/d_\ell)(y_{\ell-1}^* - (k - j))^2},

with ``w_ℓ`` the prior of ``X_ℓ | X_{ℓ-1}`` (zero unless ``k >= j``). For ``h = 2`` it is the
two-level posterior, computed by
:func:`dprisk.inference.two_level.exact.two_level_posterior` (the one implementation of the
two-level model). For ``h >= 3``, sum–product (forward–backward) along the
chain on one window ``G_ℓ`` of ``W_ℓ`` consecutive integers per level (``G_1 = {m, m+1}``;
the checked box of :mod:`dprisk.inference.nested.box_kernels`), in log space:

.. math::

    \alpha_1 = \log\phi_1, \quad
    \alpha_\ell(k) = \log\phi_\ell(k)
        + \operatorname{LSE}_j [\alpha_{\ell-1}(j) + \log\psi_\ell(j, k)],

    \beta_h = 0, \quad
    \beta_{\ell-1}(j) = \operatorname{LSE}_k
        [\log\psi_\ell(j, k) + \log\phi_\ell(k) + \beta_\ell(k)],

so ``P[X_1 = m + b | D] ∝ exp(α_1(b) + β_1(b))`` and ``P[X_ℓ = k | D] ∝ exp(α_ℓ(k) + β_ℓ(k))``.
Cost ``O(Σ_ℓ W_{ℓ-1} W_ℓ) = O(h K²)`` per release (:attr:`NestedPosterior.pairwise_cells`
counts the pairwise factor evaluations), vectorised over releases.
"""

from __future__ import annotations

import numpy as np

from dprisk.inference.kernels.table_kernels import DEFAULT_TAIL_MASS
from dprisk.inference.nested.box_kernels import (
    Box,
    at_widest,
    grid_structure,
    too_narrow,
    widened,
)
from dprisk.inference.two_level.exact import two_level_posterior
from dprisk.inference.two_level.level_form import NestedPosterior, from_two_level
from dprisk.models.numerics import check_tail_mass, logsumexp
from dprisk.models.scenario import Release, Scenario, nested_scenario
from dprisk.runtime.memory_limit import check_memory
from dprisk.runtime.work_limit import check_work

__all__ = ["NestedPosterior", "exact_posterior", "from_two_level", "nested_posterior"]

#: Target number of pairwise cells per vectorised chunk of releases.
_CHUNK_CELLS = 2**20
#: Bytes per release and window value (summed over the levels) of the kept level pmfs (the
#: chunks' marginals, the joined and the renormalised pmfs): measured 33-37, rounded up.
LEVEL_VALUE_BYTES = 48
#: Work steps (:mod:`dprisk.runtime.work_limit`) per release and pairwise cell of its first
#: window: measured 20-23 at h = 3 and 5, rounded up.
PAIR_CELL_STEPS = 40


def exact_posterior(
    x_stars, y_stars, *, scenario: Scenario | None = None,
    tail_mass: float = DEFAULT_TAIL_MASS, **parameters,
) -> NestedPosterior:
    r"""Exact posterior of the ``h``-level model; ``h = 2`` is the two-level one.

    .. math::

        \pi(k_1, \dots, k_h) \propto P[X_1 = k_1] \prod_{\ell=1}^{h}
            e^{-\rho_\ell (x_\ell^* - k_\ell)^2}
            \prod_{\ell=2}^{h} w_\ell(k_\ell \mid k_{\ell-1})\,
            e^{-(\rho_{\ell-1}/d_\ell)(y_{\ell-1}^* - (k_\ell - k_{\ell-1}))^2},

    ``k_1`` in ``{m, m+1}``, ``w_ℓ`` the prior of ``X_ℓ | X_{ℓ-1}`` (zero unless
    ``k_ℓ >= k_{ℓ-1}``); marginals by forward–backward along the levels (module docstring).

    Parameters
    ----------
    x_stars : array_like of int, shape ``S + (h,)``
        Released noisy counts ``x_1*, …, x_h*`` on the last axis (batch shape ``S``).
    y_stars : array_like of int, shape ``S + (h - 1,)``
        Released noisy sibling sums ``y_1*, …, y_{h-1}*`` on the last axis.
    scenario : Scenario, optional
        A validated scenario (:meth:`dprisk.models.scenario.Scenario.nested`) instead of the
        keyword parameters ``rhos, siblings, p, known, prior`` below.
    rhos : sequence of float (> 0), length h >= 2
        zCDP parameters, block level first.
    siblings : sequence of int (>= 1), length h - 1
        ``d_2, …, d_h``.
    p : float (0 < p < 1)
        Prior probability ``P[X1 = known + 1]``.
    known : int (known >= 0)
        ``m``.
    prior : str, X2Prior or sequence of h - 1 of them
        Prior of ``X_ℓ | X_{ℓ-1}``: one for all levels, or h - 1 of them (``X2 | X1`` first)
        as a list or a ``;``-separated string of specs.
    tail_mass : float (0 < tail_mass <= 1e-3)
        Largest share of each branch's posterior mass the grids may leave out.

    Returns
    -------
    NestedPosterior
        ``prob_x1`` = ``P[X1 = m+1 | D]``, every level's marginal pmf, the neglected-mass
        bound and the number of pairwise factor evaluations.

    Raises
    ------
    ValueError
        Bad parameters or releases (the message names the parameter).
    GridTooNarrowError
        If the neglected mass cannot be brought below ``tail_mass``.
    """
    scenario = nested_scenario(scenario, **parameters)
    release = Release.nested(x_stars, y_stars, h=scenario.h)
    return nested_posterior(release, scenario, check_tail_mass(tail_mass))


def nested_posterior(release: Release, params: Scenario, tail_mass: float) -> NestedPosterior:
    """Kernel of :func:`exact_posterior` for a validated release and scenario (no checks)."""
    if release.size == 0:
        raise ValueError("x_stars and y_stars must hold at least one release, got none")
    if params.h == 2:
        return from_two_level(two_level_posterior(release, params, tail_mass), release)
    xs, ys = release.flat()
    shape = release.shape
    h, n = params.h, len(xs)
    base = grid_structure(params, tail_mass)[2]
    first = [2] + [2 * k + 5 for k in widened(base, 0)[1:]]  # the first windows, as below
    what = f"the level posteriors of {n} release(s) on windows of {first} values"
    # one release's work is large only by its windows (set by the rhos and siblings)
    names = "rhos, siblings" if n == 1 else "x_stars, y_stars"
    check_memory(float(LEVEL_VALUE_BYTES) * n * sum(first), parameter=names, what=what)
    check_work(float(PAIR_CELL_STEPS) * n * sum(first[i - 1] * first[i] for i in range(1, h)),
               parameter=names, what=what)
    log_branch = np.empty((n, 2))
    neglected = np.empty(n)
    cells = np.empty(n, dtype=np.int64)
    pieces = []  # (release indices, starts per level, pmfs per level)
    pending = np.arange(n)
    attempt = 0
    while pending.size:
        # Estimated pairwise cells per release (the spread of the branch centres is <= 2).
        guess = [2] + [2 * k + 5 for k in widened(base, attempt)[1:]]
        cells_guess = sum(guess[i - 1] * guess[i] for i in range(1, h))
        chunk = max(1, _CHUNK_CELLS // cells_guess)
        failed = []
        for lo in range(0, pending.size, chunk):
            idx = pending[lo : lo + chunk]
            box = Box(xs[idx], ys[idx], params, attempt, tail_mass)
            if not box.ok.all() and at_widest(box):
                i = int(np.flatnonzero(~box.ok)[0])
                raise too_narrow(box, i, xs[idx[i]], ys[idx[i]], tail_mass)
            good = box.ok
            failed.append(idx[~good])
            if not good.any():
                continue
            log_branch[idx[good]] = box.log_branch[good]
            with np.errstate(over="ignore"):
                neglected[idx[good]] = np.exp(
                    logsumexp(box.log_bound[good], -1) - box.log_total[good]
                )
            cells[idx[good]] = box.cells
            pieces.append(
                (
                    idx[good],
                    [s[good] for s in box.start],
                    [box.marginal(i)[good] for i in range(h)],
                )
            )
        pending = np.concatenate(failed)
        attempt += 1

    if not np.all(np.isfinite(np.logaddexp(log_branch[:, 0], log_branch[:, 1]))):
        i = int(np.flatnonzero(~np.isfinite(np.logaddexp(*log_branch.T)))[0])
        raise ValueError(
            f"release x_stars = {xs[i].tolist()}, y_stars = {ys[i].tolist()} has no possible "
            f"X_1, ..., X_h under the priors ({', '.join(pr.spec for pr in params.priors)})"
        )
    widths = [max(piece[2][i].shape[-1] for piece in pieces) for i in range(h)]
    starts = [np.empty(n, dtype=np.int64) for _ in range(h)]
    pmfs = [np.zeros((n, w)) for w in widths]
    for idx, piece_starts, piece_pmfs in pieces:
        for i in range(h):
            starts[i][idx] = piece_starts[i]
            pmfs[i][idx, : piece_pmfs[i].shape[-1]] = piece_pmfs[i]
    # Renormalise the level marginals (each sums to one up to rounding).
    pmfs = [pmf / pmf.sum(-1, keepdims=True) for pmf in pmfs]
    with np.errstate(invalid="ignore"):
        log_odds = log_branch[:, 1] - log_branch[:, 0]
    return NestedPosterior(
        log_odds_x1=log_odds.reshape(shape),
        level_start=tuple(s.reshape(shape) for s in starts),
        level_pmf=tuple(pmf.reshape(*shape, pmf.shape[-1]) for pmf in pmfs),
        neglected_mass=neglected.reshape(shape),
        pairwise_cells=cells.reshape(shape),
        params=params,
        x_stars=xs.reshape(*shape, h),
        y_stars=ys.reshape(*shape, h - 1),
    )
