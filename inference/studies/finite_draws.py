r"""The X1 chain of a two-block Gibbs sampler and the exact law of its ``N``-draw decision.

The paper decides ``m + 1`` iff the fraction of ``N`` Gibbs draws (``N = 1e3``) with
``X1 = m + 1`` exceeds 1/2. The X1 path of a two-block Gibbs sampler is a two-state Markov
chain (see :mod:`dprisk.inference.two_level.gibbs`): with ``q(k2) = P[X1 = m + 1 | k2, D]`` the X1
update and ``P[k2 | k1, D]`` the X2 update,

.. math:: a_b = P[X_1^{(t+1)} = m+1 \mid X_1^{(t)} = m+b]
              = \sum_{k_2} P[k_2 \mid m+b, D]\, q(k_2)

(:func:`chain_transitions`), so the count of ``X1 = m + 1`` draws, and with it the decision,
depends on ``(a_0, a_1)`` alone. The chain's stationary probability
:math:`a_0 / (1 - a_1 + a_0)` is the exact posterior; with the X1 update of eq. (X1fc)
*without* its constraint ``k1 <= k2`` (:mod:`dprisk.inference.studies.variant`) the same
construction gives the paper's apparent sampler.

:func:`finite_draws_p_correct` computes the *expected* P[correct] of the ``N``-draw procedure
exactly (no simulation): the count of ones of a two-state chain has probability generating
function :math:`G(z) = \mathbf{s}^\top (P\,\mathrm{diag}(1, z))^N \mathbf{1}`, evaluated at
the ``N + 1`` roots of unity and inverted by FFT (:func:`decision_probability`).
"""

from __future__ import annotations

import numpy as np

from dprisk.inference.kernels.table_kernels import band_window_table, initial_halfwidth, widened
from dprisk.inference.studies.release_cells import CellStore, cell_keys, remember
from dprisk.inference.studies.setup import (
    DEFAULT_TAIL_MASS,
    POSTERIOR_TAIL_MASS,
    TIE_ATOL,
    branch_conditionals,
    check_ties,
    exact_x1_update,
    grid_for_truth,
    posterior_table,
    validated_study_params,
)
from dprisk.inference.studies.thresholds import decision_offsets
from dprisk.inference.studies.variant import (
    variant_chain_up,
    x1_release_term,
    x1_update_window,
)
from dprisk.models.checks import check_flag, check_positive_int
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.numerics import check_tail_mass, dg_log_normalizer, expit
from dprisk.models.scenario import Scenario
from dprisk.runtime.bounded_cache import BoundedCache

__all__ = [
    "BAND_CACHE_ROWS",
    "DECISION_METHODS",
    "band_transitions",
    "chain_transitions",
    "count_moments",
    "decision_probability",
    "exact_chain_log_odds",
    "finite_draws_p_correct",
    "start_probability",
    "stationary_log_odds",
]

#: Methods of :func:`decision_probability`.
DECISION_METHODS = ("fft", "normal")
#: How many :func:`finite_draws_p_correct` answers a process keeps (the report's risk
#: studies ask for the same expectation several times: Figure 5, S4 and the Monte Carlo
#: table).
RESULTS_CACHE_SIZE = 256
_results_cache = BoundedCache(RESULTS_CACHE_SIZE)
#: How many band rows (releases x band) a process keeps the chain transitions of, over all
#: scenarios (24 bytes each): Figure 5's grids for x2 = 1..30 share 80% of their releases.
BAND_CACHE_ROWS = 2**20
_band_cache = BoundedCache(BAND_CACHE_ROWS)


# --------------------------------------------------------------------------- chain tables
def chain_transitions(x1_star, x2_star, y1_star, params: Scenario, *,
                      variant: bool = False):
    r"""``(a0, a1)`` of the X1 chain of the Gibbs sampler, one pair per release (kernel).

    :math:`a_b = \sum_{k_2} P[k_2 \mid X_1 = m + b, D]\, q(k_2)` with ``q`` the model's
    :math:`P[X_1 = m+1 \mid k_2, D]` or, for ``variant=True``, the unconstrained update of
    eq. (X1fc) (:func:`dprisk.inference.studies.variant.variant_chain_up`). A branch the prior rules
    out gets ``a_b = 0`` (the chain stays at ``m``).

    Parameters
    ----------
    x1_star, x2_star, y1_star : ndarray of int, shape (R,)
    params : Scenario

    Returns
    -------
    a0, a1 : ndarray, shape (R,)
    """
    table = posterior_table(x1_star, x2_star, y1_star, params)
    cond = branch_conditionals(table)
    if variant:
        q = variant_chain_up(table, x1_star, y1_star, params)
    else:
        q = exact_x1_update(table.log_joint)
    a0 = (cond[:, 0] * q).sum(-1)
    a1 = (cond[:, 1] * q).sum(-1)
    return np.clip(a0, 0.0, 1.0), np.clip(np.where(table.feasible[1], a1, 0.0), 0.0, 1.0)


def band_transitions(x1_band, x2_star, y1_star, params: Scenario, *, variant: bool = False):
    r""":func:`chain_transitions` of the releases ``(x1_band[c, j], x2_star[c], y1_star[c])``.

    Row ``c J + j`` of the answer is that of :func:`chain_transitions` on the flattened
    releases, bit for bit: the posterior table is
    :func:`dprisk.inference.kernels.table_kernels.band_window_table` (widened by the same
    rule as :func:`dprisk.inference.studies.setup.posterior_table`), and the variant's X1
    update adds the release term of each ``x1*`` to the k2 term computed once per
    ``(x2*, y1*)``.
    """
    a0, a1, _ = _band_rows(x1_band, x2_star, y1_star, params, variant)
    return a0, a1


def _band_rows(x1_band, x2_star, y1_star, params: Scenario, variant: bool):
    """:func:`band_transitions` and the k2 window's width ``W`` it used."""
    x1_band = np.asarray(x1_band, dtype=np.int64)
    cells, band = x1_band.shape
    x2_star, y1_star = (np.asarray(a, dtype=np.int64) for a in (x2_star, y1_star))
    x1s = x1_band.ravel()
    x2s, y1s = np.repeat(x2_star, band), np.repeat(y1_star, band)

    def build(_x1s, _x2s, _y1s, scenario, halfwidth):
        return band_window_table(x1_band, x2_star, y1_star, scenario, halfwidth)

    table = widened(build, x1s, x2s, y1s, params, POSTERIOR_TAIL_MASS, None)
    cond = branch_conditionals(table)
    if variant:
        if not table.feasible.all():
            a0, a1 = chain_transitions(x1s, x2s, y1s, params, variant=True)  # its error
            return a0, a1, table.width
        base = y1_star - table.k2_start.reshape(cells, band)[:, 0] + params.known
        release = x1_release_term(x1_band - params.known, rho1=params.rho1, p=params.p)
        q = x1_update_window(release, np.repeat(base, band), table.width, params, expit)
    else:
        q = exact_x1_update(table.log_joint)
    a0 = (cond[:, 0] * q).sum(-1)
    a1 = (cond[:, 1] * q).sum(-1)
    return (np.clip(a0, 0.0, 1.0), np.clip(np.where(table.feasible[1], a1, 0.0), 0.0, 1.0),
            table.width)


def _band_transitions(centre, half, x2_star, y1_star, params: Scenario, variant: bool):
    r""":func:`band_transitions` of the band ``x1* = m + centre + (-half, ..., half - 1)``.

    Per ``(x2*, y1*)`` the band's rows are remembered (:data:`BAND_CACHE_ROWS`, per scenario,
    ``variant`` and ``half``, with the ``centre`` they were computed at;
    :class:`dprisk.inference.studies.release_cells.CellStore`) and only the releases not met
    before are computed, as one batch. A row depends on its release and on the batch's k2
    window alone, and that window is the first one
    (:func:`dprisk.inference.kernels.table_kernels.initial_halfwidth`) unless a row of the
    batch needs a wider one: rows are kept only from batches at the first window, and when the
    new rows need a wider one the whole band is computed as without the store (every row then
    has the wider window, as in :func:`band_transitions` of the whole band). So the answer is
    :func:`band_transitions`'s, bit for bit.

    Returns ``(a0, a1)``, each of shape ``(cells * 2 half,)``, row ``c 2 half + j``.
    """
    js = np.arange(-half, half)
    x1_band = (params.known + centre[:, None] + js[None, :]).astype(np.int64)
    keys = cell_keys(x2_star, y1_star)
    store_key = (params, bool(variant), int(half))
    store = None if keys is None else _band_cache.get(store_key)
    if keys is not None and store is None:
        store = CellStore.empty(np.dtype(float), np.dtype(float), np.dtype(float),
                                shape=(2 * half,))
    if store is not None:
        rows = store.find(keys)
        known_rows = rows >= 0
        known_rows[known_rows] = store.values[0][rows[known_rows], 0] == centre[known_rows]
        rows[~known_rows] = -1
        if known_rows.all():
            return store.values[1][rows].ravel(), store.values[2][rows].ravel()
        new_keys, first = np.unique(keys[~known_rows], return_index=True)
        pick = np.flatnonzero(~known_rows)[first]
        a0, a1, width = _doubled_band_rows(x1_band[pick], x2_star[pick], y1_star[pick],
                                           keys[pick], centre[pick], params, variant)
        if width == 2 * initial_halfwidth(params.precision, POSTERIOR_TAIL_MASS) + 3:
            shape = (pick.size, 2 * half)
            store = remember(_band_cache, store_key, store, new_keys, (
                np.broadcast_to(centre[pick, None], shape), a0.reshape(shape),
                a1.reshape(shape)), row_size=2 * half)
            rows = store.find(keys)
            return store.values[1][rows].ravel(), store.values[2][rows].ravel()
    a0, a1, _ = _band_rows(x1_band, x2_star, y1_star, params, variant)
    return a0, a1


def _doubled_band_rows(x1_band, x2_star, y1_star, keys, centre, params: Scenario, variant):
    """:func:`_band_rows`, reading the middle half of a doubled band from the half band's rows.

    When every release's half band (``half / 2``, the same ``centre``) is remembered, only the
    outer columns are computed; if they keep the first k2 window, the whole band's batch would
    have it too (the remembered rows were computed at it), so each row is
    :func:`_band_rows`'s, bit for bit. Otherwise the whole band is computed.
    """
    quarter = x1_band.shape[1] // 4
    inner = _band_cache.get((params, bool(variant), quarter)) if quarter else None
    if inner is not None and 4 * quarter == x1_band.shape[1]:
        rows = inner.find(keys)
        if (rows >= 0).all() and (inner.values[0][rows, 0] == centre).all():
            outer = np.concatenate([x1_band[:, :quarter], x1_band[:, 3 * quarter:]], axis=1)
            o0, o1, width = _band_rows(outer, x2_star, y1_star, params, variant)
            if width == 2 * initial_halfwidth(params.precision, POSTERIOR_TAIL_MASS) + 3:
                out = []
                for part, kept in ((o0, inner.values[1]), (o1, inner.values[2])):
                    part = part.reshape(-1, 2 * quarter)
                    out.append(np.concatenate([part[:, :quarter], kept[rows],
                                               part[:, quarter:]], axis=1).ravel())
                return out[0], out[1], width
    return _band_rows(x1_band, x2_star, y1_star, params, variant)


def stationary_log_odds(a0, a1):
    """``log(pi / (1 - pi))`` of the chain, ``pi = a0 / (1 - a1 + a0)``.

    From the rounded ``(a0, a1)``: once :math:`1 - a_1` is below the double's precision
    ``a1`` is 1 and the value ``+inf``, and a chain that cannot change X1 (``a0 = 0, a1 = 1``)
    gives NaN. For the exact chain use :func:`exact_chain_log_odds`.
    """
    with np.errstate(divide="ignore"):
        return np.log(a0) - np.log1p(-a1)


def exact_chain_log_odds(x1_star, x2_star, y1_star, params: Scenario) -> np.ndarray:
    r"""Stationary log-odds of the exact Gibbs sampler's X1 chain: the posterior's, per release.

    The exact sampler's X1 chain is reversible with respect to the posterior,
    :math:`\pi_0 a_0 = \pi_1 (1 - a_1)` (both are the probability of ``X1 = m, X1' = m + 1``
    in the stationary sweep), so its stationary log-odds is
    :math:`\log M_1 - \log M_0`, the branch masses of the releases' posterior table
    (:func:`dprisk.inference.studies.setup.posterior_table`, the table
    :func:`chain_transitions` uses). Formed from ``(a0, a1)`` instead
    (:func:`stationary_log_odds`) it rounds to ``+inf`` where :math:`1 - a_1` is below
    1e-16 (rho1 = 20, rho2 = 0.1, d = 1 at ``(-1, -2, -3)``: posterior log-odds -60.5), and
    to NaN where the chain cannot change X1 (X2 supports given ``m`` and ``m + 1`` apart).
    """
    table = posterior_table(x1_star, x2_star, y1_star, params)
    mass = table.log_branch_mass
    with np.errstate(invalid="ignore"):
        return mass[:, 1] - mass[:, 0]


def _stationary_up(a0, a1, tie_weight: float) -> np.ndarray:
    """1 where the stationary probability exceeds 1/2, ``tie_weight`` where it equals 1/2."""
    log_odds = stationary_log_odds(a0, a1)
    return np.where(log_odds > TIE_ATOL, 1.0,
                    np.where(np.abs(log_odds) <= TIE_ATOL, tie_weight, 0.0))


def start_probability(start, params: Scenario) -> float:
    """P[X1^(0) = m + 1]: the prior ``p`` for ``"prior"``, else the given probability.

    Raises
    ------
    ValueError
        Naming ``start`` and its allowed forms.
    """
    if params.prior.branch_support(params.known + 1) is None:
        return 0.0
    if isinstance(start, str):
        if start != "prior":
            raise ValueError(f"start must be 'prior' or a probability in [0, 1], got {start!r}")
        return params.p
    value = float(start)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"start must be 'prior' or a probability in [0, 1], got {start!r}")
    return value


# --------------------------------------------------------------------------- exact N-draw rate
def decision_probability(a0, a1, start, draws: int, *, method: str = "fft",
                         ties: str = "m") -> np.ndarray:
    r"""P[the ``draws`` X1 draws make the adversary decide m + 1], per chain.

    The chain starts from ``X1^(0) = m + 1`` with probability ``start``; the recorded draws are
    ``X1^(1), ..., X1^(N)`` (as in :func:`dprisk.inference.two_level.gibbs.gibbs_sample`); ``C``
    counts the
    draws equal to ``m + 1``. The decision is ``m + 1`` iff ``C > N/2``; when ``C = N/2``
    exactly (``N`` even) ``ties`` decides: ``"m"`` (strict rule), ``"m+1"`` (the rule
    "estimate >= 1/2") or ``"half"``.

    * ``method="fft"`` (exact): with :math:`P = [[1-a_0, a_0], [1-a_1, a_1]]`, ``C`` has
      generating function :math:`G(z) = (1 - s, s)\,(P\,\mathrm{diag}(1, z))^N \mathbf 1`;
      ``G`` at the ``N + 1`` roots of unity (binary powering), inverted by FFT, gives
      ``P[C = k]`` (round-off about ``N * 1e-16``).
    * ``method="normal"``: the continuity-corrected normal law with the exact mean and
      variance of ``C`` (:func:`count_moments`). O(1) per chain; at ``N = 1000`` on
      Census-parameter releases within 5e-4 of ``"fft"`` (tested).

    Parameters
    ----------
    a0, a1, start : array_like of float in [0, 1] (broadcast to shape (R,))
    draws : int (>= 1)
    method : {"fft", "normal"}
    ties : {"m", "m+1", "half"}
    """
    draws = check_positive_int(draws, "draws")
    tie_weight = check_ties(ties)
    _check_method(method)
    for name, values in (("a0", a0), ("a1", a1), ("start", start)):
        values = np.asarray(values, dtype=float)
        if not np.all((values >= 0) & (values <= 1)):
            raise ValueError(f"{name} must hold probabilities in [0, 1], got {values!r}")
    return _decision_up(a0, a1, start, draws, method, tie_weight)


def _check_method(method: str) -> None:
    if method not in DECISION_METHODS:
        raise ValueError(f"method must be 'fft' or 'normal', got {method!r}")


def _decision_up(a0, a1, start, draws, method, tie_weight):
    a0, a1, start = (np.asarray(v, dtype=float).ravel()
                     for v in np.broadcast_arrays(a0, a1, start))
    if method == "fft":
        return _decision_probability_fft(a0, a1, start, draws, tie_weight)
    return _decision_probability_normal(a0, a1, start, draws, tie_weight)


def _decision_probability_fft(a0, a1, start, draws, tie_weight, chunk=512):
    n_points = draws + 1
    z = np.exp(2j * np.pi * np.arange(n_points) / n_points)[None, :]
    out = np.empty(a0.size)
    for lo in range(0, a0.size, chunk):
        sl = slice(lo, lo + chunk)
        b0, b1, s = a0[sl, None], a1[sl, None], start[sl, None]
        power = ((1.0 - b0) + 0j * z, b0 * z, (1.0 - b1) + 0j * z, b1 * z)  # M(z) = P diag(1, z)
        result = None
        e = draws
        while e:
            if e & 1:
                result = power if result is None else _matmul(result, power)
            e >>= 1
            if e:
                power = _matmul(power, power)
        r00, r01, r10, r11 = result
        gen = (1.0 - s) * (r00 + r01) + s * (r10 + r11)
        # G(w^j) = sum_k P[C = k] w^{jk}, so P[C = k] = fft(G)[k] / (N + 1).
        pmf = np.fft.fft(gen, axis=-1).real / n_points
        up = pmf[:, draws // 2 + 1:].sum(-1)
        if draws % 2 == 0:
            up = up + tie_weight * pmf[:, draws // 2]
        out[sl] = np.clip(up, 0.0, 1.0)
    return out


def _matmul(x, y):
    x00, x01, x10, x11 = x
    y00, y01, y10, y11 = y
    return (x00 * y00 + x01 * y10, x00 * y01 + x01 * y11,
            x10 * y00 + x11 * y10, x10 * y01 + x11 * y11)


def count_moments(a0, a1, start, draws):
    r"""Exact mean and variance of the count ``C`` of ``X1 = m + 1`` among ``N`` draws.

    With :math:`\lambda = a_1 - a_0`, :math:`\pi = a_0/(1-\lambda)`, :math:`c = s - \pi`,
    :math:`S_1 = \sum_{t=1}^N \lambda^t`, :math:`S_2 = \sum_{t=1}^N \lambda^{2t}`,

    .. math::

        E C = N\pi + c S_1, \qquad
        \operatorname{Var} C = \frac{1+\lambda}{1-\lambda}\big(N\pi(1-\pi)
            + c(1-2\pi) S_1 - c^2 S_2\big)
            - \frac{2}{1-\lambda}\big(\pi(1-\pi) S_1 + c(1-2\pi) N\lambda^{N+1}
            - c^2 \lambda^{N+1} S_1\big)

    (from :math:`P[X_1^{(t)} = m+1] = \pi + c\lambda^t` and
    :math:`\operatorname{Cov}(b_t, b_u) = \lambda^{u-t}\operatorname{Var} b_t`).
    """
    a0, a1, start = (np.asarray(v, dtype=float) for v in (a0, a1, start))
    lam = np.clip(a1 - a0, -1.0 + 1e-12, 1.0 - 1e-9)
    gap = 1.0 - lam
    pi = np.clip(a0 / gap, 0.0, 1.0)
    c = start - pi
    lam_n = lam**draws
    s1 = lam * (1.0 - lam_n) / gap
    s2 = lam**2 * (1.0 - lam_n**2) / (1.0 - lam**2)
    mean = draws * pi + c * s1
    var = ((1.0 + lam) / gap * (draws * pi * (1.0 - pi) + c * (1.0 - 2.0 * pi) * s1 - c**2 * s2)
           - 2.0 / gap * (pi * (1.0 - pi) * s1 + c * (1.0 - 2.0 * pi) * draws * lam_n * lam
                          - c**2 * lam_n * lam * s1))
    return mean, np.maximum(var, 0.0)


def _decision_probability_normal(a0, a1, start, draws, tie_weight):
    from scipy.special import ndtr

    mean, var = count_moments(a0, a1, start, draws)
    sd = np.sqrt(np.maximum(var, 1e-300))
    strict = ndtr(-((draws // 2 + 0.5) - mean) / sd)            # P[C >= floor(N/2) + 1]
    if draws % 2:
        return strict
    with_tie = ndtr(-((draws // 2 - 0.5) - mean) / sd)          # P[C >= N/2]
    return strict + tie_weight * (with_tie - strict)


# --------------------------------------------------------------------------- expected rate
def finite_draws_p_correct(*, x2, rho1, rho2, d, draws, x1=None, p=0.5, known=0,
                           prior="improper", variant=False, method="normal", start="prior",
                           ties="m", tail_mass=DEFAULT_TAIL_MASS) -> dict:
    r"""Expected P[correct] of the paper's procedure with ``draws`` Gibbs draws per ``D``.

    .. math::

        \sum_{D} P[D \mid \text{truth}]\;
            P\big[\text{decision from } N \text{ draws is correct} \mid D\big]

    on the grid of :func:`dprisk.inference.studies.setup.release_grid`, with the chain started
    from the prior of X1 (``start="prior"``, as
    :func:`dprisk.inference.two_level.gibbs.gibbs_sample`) or
    from ``X1 = m + 1`` with probability ``start`` (a float in [0, 1]). For each
    ``(x2*, y1*)`` the ``x1*`` within a band around the chain's stationary threshold use
    :func:`decision_probability`; outside it the decision is taken as deterministic (m below,
    m + 1 above), and the band is widened until the bound on the error this makes (the
    decision probability is monotone in ``x1*``), ``band_error``, is below 1e-10.
    ``method`` is that of :func:`decision_probability` (``"normal"`` by default: exact
    moments, continuity-corrected normal law; ``"fft"`` is exact but ~100 times slower).
    ``ties`` decides a count of exactly ``N/2`` and a stationary probability of exactly 1/2
    (``"m"``: estimate must exceed 1/2; ``"m+1"``: estimate >= 1/2; ``"half"``: a coin).

    Answers are remembered per process (:data:`RESULTS_CACHE_SIZE`, keyed by the validated
    inputs, :class:`dprisk.runtime.bounded_cache.BoundedCache`).

    Parameters
    ----------
    x2, rho1, rho2, d, x1, p, known, prior
        The truth and the scenario, as in
        :func:`dprisk.inference.studies.p_correct.p_correct_two_level`.
    draws : int (>= 1)
        ``N``, the Gibbs draws per release from which the posterior is estimated.
    variant : bool, default False
        Sample with the constraint-dropping Gibbs variant
        (:mod:`dprisk.inference.studies.variant`) instead of the exact chain.
    method : {"normal", "fft"}, default "normal"
        How :func:`decision_probability` computes the law of the count of draws with
        ``X1 = m + 1``.
    start : "prior" or float (0 <= start <= 1), default "prior"
        :math:`P[X_1^{(0)} = m + 1]`, the chain's start (``"prior"``: ``p``).
    ties : {"m", "m+1", "half"}, default "m"
        Decision at exactly ``N/2`` draws (and at a stationary probability of exactly 1/2).
    tail_mass : float (0 < tail_mass <= 1e-3), default 1e-9
        Bound on the release probability left out of the grid.

    Returns
    -------
    dict
        ``p_correct`` (``draws`` draws), ``p_correct_stationary`` (the deterministic decision
        with the chain's stationary probability), ``neglected_mass`` (grid) and
        ``band_error`` (bound of the error from treating the decisions outside the band as
        deterministic), and the inputs ``draws``, ``variant``, ``method``, ``ties``,
        ``start``, ``x1``, ``x2`` (``x1`` resolved: ``known + 1`` by default).
    """
    params, x1, x2, y1 = validated_study_params(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=x1, p=p,
                                                known=known, prior=prior)
    draws = check_positive_int(draws, "draws")
    variant = check_flag(variant, "variant")
    tie_weight = check_ties(ties)
    _check_method(method)
    start_prob = start_probability(start, params)
    tail_mass = check_tail_mass(tail_mass)
    key = (params, x1, x2, draws, variant, method, start_prob, ties, tail_mass,
           start if isinstance(start, str) else float(start))
    found = _results_cache.get(key)  # None also for a scenario holding unhashable parts
    if found is None:
        found = _finite_draws(params, x1, x2, y1, draws, variant, method, start_prob,
                              tie_weight, tail_mass)
        _results_cache.put(key, found)
    return {"p_correct": found["p_correct"], "p_correct_stationary": found["p_correct_stationary"],
            "draws": draws, "variant": variant, "method": method, "ties": ties,
            "start": start, "x1": x1, "x2": x2, "neglected_mass": found["neglected_mass"],
            "band_error": found["band_error"]}


def _per_value(function, x, mu, rho):
    """``function(x, mu, rho)`` evaluated once per distinct ``x`` (an elementwise function).

    The band's edges hold a few dozen distinct counts over thousands of releases; each exact
    tail (:func:`dprisk.models.mechanism.discrete_gaussian.cdf`, ``sf``: a sum of terms per
    element, the same number of terms for every element at one ``rho``) is the value of a
    call on that element alone, so the answer is the direct call's, bit for bit.
    """
    values, inverse = np.unique(x, return_inverse=True)
    return function(values, mu, rho)[inverse.ravel()]


def _finite_draws(params, x1, x2, y1, draws, variant, method, start_prob, tie_weight,
                  tail_mass) -> dict:
    """:func:`finite_draws_p_correct` on validated values: its numbers."""
    grid = grid_for_truth(x2, y1, params, tail_mass)
    x2s, y1s = np.meshgrid(grid.x2_star, grid.y1_star, indexing="ij")
    x2s, y1s, weights = x2s.ravel(), y1s.ravel(), grid.weights.ravel()
    m = params.known
    # The band is centred on the chain's own stationary threshold.
    offset, tie = decision_offsets(x2s, y1s, params, "variant" if variant else "exact")
    finite = np.isfinite(offset)
    always_up = offset == -np.inf  # (never for proper inputs; kept for completeness)
    x2f, y1f, wf, centre = x2s[finite], y1s[finite], weights[finite], offset[finite]
    tie_f = tie[finite]
    half = 4
    while True:
        js = np.arange(-half, half)
        x1_grid = (m + centre[:, None] + js[None, :]).astype(np.int64)  # as _band_transitions
        a0, a1 = _band_transitions(centre, half, x2f, y1f, params, variant)
        prob_up = _decision_up(a0, a1, start_prob, draws, method,
                               tie_weight).reshape(x1_grid.shape)
        if variant:
            stationary_up = _stationary_up(a0, a1, tie_weight).reshape(x1_grid.shape)
        else:  # the exact chain's stationary law is the posterior (exact_chain_log_odds)
            stationary_up = np.where(js[None, :] >= 0, 1.0,
                                     np.where(tie_f[:, None] & (js[None, :] == -1),
                                              tie_weight, 0.0))
        below = _per_value(dg.cdf, x1_grid[:, 0] - 1, x1, params.rho1)   # P[x1* < band]
        above = _per_value(dg.sf, x1_grid[:, -1], x1, params.rho1)        # P[x1* > band]
        # Outside the band the decision is taken as m below and m + 1 above; since the
        # decision probability increases with x1*, the error is at most:
        band_error = float((wf * (below * prob_up[:, 0] + above * (1.0 - prob_up[:, -1]))).sum())
        if (band_error < 1e-10 and not stationary_up[:, 0].any()
                and (stationary_up[:, -1] == 1.0).all()):
            break
        half *= 2
        if half > 512:
            raise RuntimeError(f"decision band did not converge (error {band_error:.3g})")
    pmf_x1 = np.exp(-params.rho1 * (x1_grid - x1) ** 2 - dg_log_normalizer(params.rho1))
    up_n = np.where(always_up, 1.0, 0.0)
    up_s = up_n.copy()
    up_n[finite] = (pmf_x1 * prob_up).sum(-1) + above
    up_s[finite] = (pmf_x1 * stationary_up).sum(-1) + above
    if x1 == m + 1:
        correct_n, correct_s = up_n, up_s
    else:
        correct_n, correct_s = 1.0 - up_n, 1.0 - up_s
    return {"p_correct": float((weights * correct_n).sum()),
            "p_correct_stationary": float((weights * correct_s).sum()),
            "neglected_mass": grid.neglected_mass, "band_error": band_error}
