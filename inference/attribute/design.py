r"""Exact design measures of the K-cell adversary: P[MAP = true cell], expected posterior.

Set-up of :mod:`dprisk.inference.attribute.posterior`: the target is in cell :math:`t`, the release
is
:math:`x_j^* = m_j + 1[j = t] + \eta_j` with iid :math:`\eta_j \sim \mathrm{DG}(0, 1/(2\rho))`
(pmf ``f``, cdf ``F``, :mod:`dprisk.models.mechanism.discrete_gaussian`). With residuals
:math:`s_j = x_j^* - m_j` the MAP cell maximises :math:`s_j + b_j`,
:math:`b_j = \log\pi_j / (2\rho)`.

**P[MAP = t] (uniform tie-breaking).** Condition on :math:`\eta_t = e`, so
:math:`s_t = 1 + e`. A cell :math:`j` with :math:`\pi_j \ne \pi_t` loses to :math:`t` iff
:math:`\eta_j < 1 + e + \delta_j`, :math:`\delta_j = b_t - b_j`, i.e.
:math:`\eta_j \le e + \lceil\delta_j\rceil` (an exact tie between cells of different prior
needs :math:`\delta_j \in \mathbb{Z}`, a null set of rho, and is counted as a loss). The
:math:`n` other cells with :math:`\pi_j = \pi_t` lose with probability :math:`F(e)` and tie
with probability :math:`f(e+1)`; with :math:`T` ties the target is picked with probability
:math:`1/(1+T) = \int_0^1 u^T du`, so

.. math::

    P[\mathrm{MAP} = t] = \sum_e f(e) \prod_{j:\, \pi_j \ne \pi_t} F(e + \lceil\delta_j\rceil)
        \; G_n(e), \qquad
    G_n(e) = \int_0^1 (F(e) + f(e+1) u)^n du = \frac{F(e+1)^{n+1} - F(e)^{n+1}}{(n+1) f(e+1)}.

For a uniform prior (:math:`n = K - 1`, no other factor) and :math:`z = e + 1` this is the
order-statistic formula :math:`\sum_z f(z-1) (F(z)^K - F(z-1)^K) / (K f(z))`.
:math:`G_n` is evaluated as :math:`F(e)^n\, \mathrm{expm1}((n+1)L) / ((n+1)\,
\mathrm{expm1}(L))`, :math:`L = \log(F(e+1)/F(e))`, free of cancellation. Cells of equal
:math:`\lceil\delta_j\rceil` are grouped, so a structured prior costs a few terms per ``e``.

**Expected posterior of the true cell.** With
:math:`S = \sum_{j \ne t} (\pi_j/\pi_t) e^{2\rho(\eta_j - 1 - \eta_t)}`,
:math:`P[C = t \mid x^*] = 1/(1+S)` and :math:`1/(1+S) = \int_0^\infty e^{-\lambda(1+S)}
d\lambda`, so by independence

.. math::

    E\,P[C = t \mid x^*] = \sum_e f(e) \int_0^\infty e^{-\lambda}
        \prod_{j \ne t} \phi_j(\lambda, e)\, d\lambda, \qquad
    \phi_j = \sum_\eta f(\eta) \exp\bigl(-\lambda \tfrac{\pi_j}{\pi_t}
        e^{2\rho(\eta - 1 - e)}\bigr),

the :math:`\lambda`-integral by the trapezoid rule in :math:`u = \log\lambda` (step
:data:`LOG_LAMBDA_STEP`; the integrand is analytic and decays double-exponentially, so the
rule converges geometrically; checked against enumeration and Monte Carlo in the tests).
Noise sums run over ``|eta| <= support_halfwidth(rho, tail_mass)``.
"""

from __future__ import annotations

import numpy as np

from dprisk.models.checks import check_rho
from dprisk.models.mechanism.discrete_gaussian import (
    DEFAULT_TAIL_MASS,
    logcdf_kernel,
    logpmf_kernel,
    support_halfwidth_kernel,
)
from dprisk.models.numerics import check_tail_mass, logsumexp
from dprisk.models.priors.histogram import (
    check_cell_prior,
    check_n_cells,
    check_true_cell,
    uniform_prior,
)
from dprisk.runtime.memory_limit import check_memory
from dprisk.runtime.work_limit import DG_TAIL_TERM_STEPS, check_work

__all__ = [
    "CELL_BYTES",
    "LOG_LAMBDA_STEP",
    "check_design_cost",
    "design_cost",
    "expected_true_posterior",
    "log_tie_integral",
    "noise_grid",
    "p_map_correct",
    "p_map_correct_uniform",
    "p_map_kernel",
    "shifted_tied_log_terms",
    "tied_log_terms",
]

#: Step of the trapezoid rule in log(lambda) of :func:`expected_true_posterior`.
LOG_LAMBDA_STEP = 0.1
#: Cells of one (lambda, group, lag) table of :func:`expected_true_posterior` (32 MiB).
_GROUP_CHUNK_CELLS = 2**22
#: Outputs ``e`` per matrix product of :func:`_log_phi` (its band holds
#: ``(columns + W - 1) x columns`` cells, W the noise grid's size: 2 MiB at W = 767).
_BAND_COLUMNS = 256
#: Bytes per cell of a design measure (the prior, its logs and the exact kernels' arrays;
#: measured peak about 40 bytes per cell, rounded up).
CELL_BYTES = 64


def design_cost(rho: float, prior: np.ndarray, true_cell: int, tail_mass: float, *,
                measure: str) -> tuple[float, float]:
    r"""Memory (bytes) and work (steps) of a design measure, before any array is made.

    With the noise window :math:`W = 2h + 1` (:math:`h` the half-width at ``tail_mass``), the
    terms :math:`T` of one far-tail cdf (the half-width at 1e-20) and :math:`G` the distinct
    prior values among the other cells (:math:`G = 1` for a uniform prior):

    * ``"p-map"``: the cdf on :math:`W \times G` shifted points, :math:`T` terms each, an
      exact DG tail term costing :data:`dprisk.runtime.work_limit.DG_TAIL_TERM_STEPS`:
      :math:`2 W G T` terms; :math:`4 \cdot 8 W G` bytes plus the capped tail-sum chunk
      (20 ns of CPU a term measured at rho = 1e-6 and 1e-7; counted as one step a term,
      4.5 ns, the limit let through about 5.6 hours);
    * ``"expected-posterior"``: tables of :math:`U \times G \times (2W - 1)` lags and
      :math:`U \times G \times W` correlations (:math:`U` points of the :math:`\log\lambda`
      rule): :math:`4 U G W^2` steps (two correlations, a multiply and an add each) and
      :math:`12 \cdot 8 U G' W` bytes, :math:`G' \le G` the groups of one chunk.
    """
    from dprisk.models.mechanism.discrete_gaussian import TAIL_SUM_CELLS

    window = 2.0 * float(support_halfwidth_kernel(rho, tail_mass)) + 1.0
    terms = float(support_halfwidth_kernel(rho, 1e-20)) + 2.0
    others = np.delete(prior, true_cell)
    groups = float(max(1, np.unique(others[others > 0]).size))
    chunk = 3.0 * 8.0 * min(2048.0 * terms, max(terms, float(TAIL_SUM_CELLS)))
    if measure == "p-map":
        return (4.0 * 8.0 * window * groups + chunk,
                2.0 * window * groups * terms * DG_TAIL_TERM_STEPS)
    lowest = min(-40.0, float(np.log(prior[true_cell])) - 40.0)
    points = (4.0 - lowest) / LOG_LAMBDA_STEP + 2.0
    chunk_groups = min(groups, max(1.0, float(_GROUP_CHUNK_CELLS // (points * 2 * window))))
    return (12.0 * 8.0 * points * chunk_groups * window + chunk,
            4.0 * points * groups * window * window)


def check_design_cost(rho, prior, true_cell, tail_mass, *, measure: str,
                      names: tuple[str, str] = ("rho", "n_cells")) -> None:
    """Refuse a design measure above the memory or work limit (:func:`design_cost`).

    The message names ``names`` (the rho and the cells; ``--rho1`` and ``--cells`` on the
    command line).
    """
    nbytes, steps = design_cost(rho, prior, true_cell, tail_mass, measure=measure)
    what = (f"the {measure} of {prior.size} cells at rho = {float(rho):.3g} (noise window "
            f"{2 * int(support_halfwidth_kernel(rho, tail_mass)) + 1})")
    parameter = f"{names[0]} and {names[1]}"
    check_memory(nbytes, parameter=parameter, what=what)
    check_work(steps, parameter=parameter, what=what)


def _design_args(rho, n_cells, prior, true_cell, tail_mass):
    rho = check_rho(rho, "rho")
    if rho.ndim:
        raise ValueError(f"rho must be a single number > 0, got shape {rho.shape}")
    if prior is None:  # the K cells' arrays, refused before the uniform prior is made
        n_cells = check_n_cells(n_cells)
        check_memory(n_cells * CELL_BYTES, parameter="n_cells", what=f"{n_cells} cells")
    prior = uniform_prior(n_cells) if prior is None else check_cell_prior(prior, n_cells)
    true_cell = check_true_cell(true_cell, prior)
    return rho, prior, true_cell, check_tail_mass(tail_mass)


def log_tie_integral(log_f_next: np.ndarray, log_cdf: np.ndarray, log_cdf_next: np.ndarray,
                     n_tied: int) -> np.ndarray:
    r"""``log G_n``: :math:`\log\int_0^1 (F + f u)^n du` from ``log f``, ``log F``, ``log(F + f)``.

    :math:`n \log F + \log[\mathrm{expm1}((n+1)L)/((n+1)\mathrm{expm1}(L))]`,
    :math:`L = \log((F + f)/F)` (``F`` the probability of losing to the target, ``f`` of a
    tie).

    Where ``F(e)`` underflows, :math:`(n+1)\log F(e+1) - \log(n+1) - \log f(e+1)`.
    """
    if n_tied == 0:
        return np.zeros_like(log_cdf)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ratio = log_cdf_next - log_cdf
        stable = n_tied * log_cdf + np.log(np.expm1((n_tied + 1) * ratio)
                                           / ((n_tied + 1) * np.expm1(ratio)))
        direct = (n_tied + 1) * log_cdf_next - np.log(n_tied + 1) - log_f_next
        near = np.where(ratio == 0, n_tied * log_cdf, stable)
    return np.where(np.isfinite(log_cdf) & np.isfinite(near), near, direct)


def p_map_correct(rho, n_cells: int | None = None, prior=None, *, true_cell: int = 0,
                  tail_mass: float = DEFAULT_TAIL_MASS) -> float:
    r"""Exact :math:`P[\mathrm{MAP} = t]` with uniform tie-breaking (module docstring).

    Parameters
    ----------
    rho : float (rho > 0)
        zCDP parameter of every cell's noise.
    n_cells : int (>= 2), optional
        ``K``; required when ``prior`` is not given (uniform prior).
    prior : array_like of float, shape ``(K,)``, optional
        :math:`\pi`, non-negative, summing to 1.
    true_cell : int (0 <= true_cell < K, prior > 0)
        The target's cell ``t``.
    tail_mass : float (0 < tail_mass <= 1e-3)
        Neglected mass of the true cell's noise ``eta_t``.

    Returns
    -------
    float
        The probability in [0, 1] that the MAP cell is ``t``.
    """
    if prior is None and n_cells is None:
        raise ValueError("n_cells must be given when prior is not (allowed range: n_cells >= 2)")
    rho, prior, t, tail_mass = _design_args(rho, n_cells, prior, true_cell, tail_mass)
    check_design_cost(rho, prior, t, tail_mass, measure="p-map")
    return _p_map_kernel(rho, prior, t, tail_mass)


def p_map_correct_uniform(rho, n_cells: int, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
    r"""The order-statistic formula for a uniform prior (an independent path for the tests).

    .. math:: P[\mathrm{MAP} = t] = \sum_z f(z-1)\,\frac{F(z)^K - F(z-1)^K}{K f(z)}
    """
    rho, prior, _, tail_mass = _design_args(rho, n_cells, None, 0, tail_mass)
    check_design_cost(rho, prior, 0, tail_mass, measure="p-map")
    z = noise_grid(rho, tail_mass) + 1
    zero = np.zeros_like(z)
    log_cdf, log_cdf_prev = logcdf_kernel(z, zero, rho), logcdf_kernel(z - 1, zero, rho)
    k = prior.size
    # F(z)^K - F(z-1)^K = F(z)^K (1 - exp(K (log F(z-1) - log F(z)))), no cancellation
    with np.errstate(invalid="ignore"):
        log_power_gap = k * log_cdf + np.log(-np.expm1(k * (log_cdf_prev - log_cdf)))
    log_terms = (logpmf_kernel(z - 1, zero, rho) + log_power_gap - np.log(k)
                 - logpmf_kernel(z, zero, rho))
    return float(np.exp(logsumexp(np.where(np.isnan(log_terms), -np.inf, log_terms))))


def _p_map_kernel(rho: np.ndarray, prior: np.ndarray, t: int, tail_mass: float) -> float:
    others = np.delete(np.arange(prior.size), t)
    tied = prior[others] == prior[t]
    rest = others[~tied & (prior[others] > 0)]
    delta = (np.log(prior[t]) - np.log(prior[rest])) / (2.0 * rho)
    return p_map_kernel(rho, delta, int(np.count_nonzero(tied)), tail_mass)


def noise_grid(rho: np.ndarray, tail_mass: float) -> np.ndarray:
    """The noise values ``-H ... H`` with ``P[|eta| > H] < tail_mass`` (kernel)."""
    halfwidth = int(support_halfwidth_kernel(rho, tail_mass))
    return np.arange(-halfwidth, halfwidth + 1, dtype=np.int64)


def tied_log_terms(rho: np.ndarray, e: np.ndarray, n_tied: int) -> np.ndarray:
    r""":math:`\log f(e) + \log G_n(e)` on the noise values ``e`` (kernel)."""
    zero = np.zeros_like(e)
    log_cdf = logcdf_kernel(e, zero, rho)
    log_g = log_tie_integral(logpmf_kernel(e + 1, zero, rho), log_cdf,
                   logcdf_kernel(e + 1, zero, rho), n_tied)
    return logpmf_kernel(e, zero, rho) + log_g


def shifted_tied_log_terms(rho: np.ndarray, e: np.ndarray, n_tied: int,
                           shifts: np.ndarray) -> np.ndarray:
    r"""``log f(e)`` plus the log tie integral with ties at integer offsets (kernel).

    .. math:: \log f(e) + \log\int_0^1 (F(e) + f(e+1) u)^n
              \prod_j \bigl(F(e + k_j) + f(e + k_j + 1) u\bigr)\, du

    on the noise values ``e``. The cells that can tie with the target at an integer offset
    :math:`k_j \ne 0` of the target's noise (weights :math:`w_t - w_j = 2\rho k_j` exactly:
    integer scores in :mod:`dprisk.inference.attribute.strategy`) beside the ``n`` tied at
    offset 0 (:func:`tied_log_terms`): with :math:`T` cells tied at the top the target is
    picked with probability :math:`1/(1+T) = \int_0^1 u^T du`, each cell contributing its
    probability of losing plus ``u`` times that of tying. The integrand is a polynomial of
    degree :math:`n + J`, integrated exactly by Gauss-Legendre with
    :math:`\lfloor (n + J)/2 \rfloor + 1` nodes.
    """
    zero = np.zeros_like(e)
    degree = n_tied + shifts.size
    u, weight = np.polynomial.legendre.leggauss(degree // 2 + 1)
    log_u, log_weight = np.log((u + 1.0) / 2.0), np.log(weight / 2.0)
    offsets = np.concatenate([np.zeros(n_tied, dtype=np.int64),
                              np.asarray(shifts, dtype=np.int64)])
    log_lose = logcdf_kernel(e[:, None] + offsets, zero[:, None], rho)       # (E, n + J)
    log_tie = logpmf_kernel(e[:, None] + offsets + 1, zero[:, None], rho)
    log_factor = np.logaddexp(log_lose[:, :, None], log_tie[:, :, None] + log_u)  # (E, n+J, N)
    log_integral = logsumexp(log_factor.sum(axis=1) + log_weight)
    return logpmf_kernel(e, zero, rho) + log_integral


def p_map_kernel(rho: np.ndarray, delta: np.ndarray, n_tied: int, tail_mass: float) -> float:
    r"""Kernel of :func:`p_map_correct` from the offsets :math:`\delta_j` of the other cells.

    .. math:: \sum_e f(e) \prod_j F(e + \lceil\delta_j\rceil)\, G_n(e)

    ``delta`` holds :math:`\delta_j = (w_t - w_j) / (2\rho)` of the cells that cannot tie
    with the target (weights :math:`w_j = \log\pi_j`, or :math:`\log\pi_j + B_j` with
    :math:`B_j` the other queries' log-likelihood in
    :mod:`dprisk.inference.attribute.strategy`, conditional Monte Carlo); ``n_tied`` counts
    the other cells whose weight equals the target's.
    """
    e = noise_grid(rho, tail_mass)
    log_terms = tied_log_terms(rho, e, n_tied)
    if delta.size:
        # beyond +-2**40 a shift puts F at 0 or 1 to double precision for every rho allowed
        shift = np.ceil(np.clip(delta, -(2.0**40), 2.0**40)).astype(np.int64)
        shifts, counts = np.unique(shift, return_counts=True)
        shifted = logcdf_kernel(e[:, None] + shifts, np.zeros((1, 1), np.int64), rho)
        log_terms = log_terms + (counts * shifted).sum(-1)
    return float(np.exp(logsumexp(log_terms)))


def expected_true_posterior(rho, n_cells: int | None = None, prior=None, *,
                            true_cell: int = 0, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
    r"""Exact :math:`E[P[C = t \mid x^*]]` over releases with the target in ``t``.

    Laplace-transform form of the module docstring, one factor per distinct prior value.

    Parameters
    ----------
    rho, n_cells, prior, true_cell, tail_mass
        As in :func:`p_map_correct`.

    Returns
    -------
    float
        The expected posterior of the true cell, in [0, 1]. Capped at 1 (a probability):
        where the posterior of the true cell is about 1 the trapezoid sum's rounding put it
        up to 5.7e-14 above 1 (rho >= 100, prior (1 - 1e-12, 1e-12), true cell 1).
    """
    if prior is None and n_cells is None:
        raise ValueError("n_cells must be given when prior is not (allowed range: n_cells >= 2)")
    rho, prior, t, tail_mass = _design_args(rho, n_cells, prior, true_cell, tail_mass)
    check_design_cost(rho, prior, t, tail_mass, measure="expected-posterior")
    return min(_expected_posterior_kernel(rho, prior, t, tail_mass), 1.0)


def _correlation_band(f: np.ndarray, columns: int) -> np.ndarray:
    r"""The banded matrix :math:`B_{j + i, i} = f_j` (zero elsewhere), ``columns`` columns.

    For a row :math:`S` of the survival table, :math:`(S B)_i = \sum_j f_j S_{i + j}`: the
    correlation of ``f`` with ``S`` at output ``i`` (:func:`_log_phi`), the same band for
    every block of ``columns`` consecutive outputs (``S`` sliced from the block's first lag).
    """
    width = f.size
    band = np.zeros((columns + width - 1, columns))
    lanes = np.arange(columns)
    band[np.arange(width)[:, None] + lanes, lanes] = f[:, None]
    return band


def _log_phi(u, log_ratio, lag_exponent, f, log_mass):
    r"""``log phi_g(lambda, e)`` on ``(u, group, e)`` (:func:`_expected_posterior_kernel`).

    ``lag_exponent`` holds :math:`2\rho(k - 1)` on the lags :math:`k = -2H..2H`, ``f`` the pmf
    on :math:`-H..H`, ``log_mass`` the log of its sum.
    """
    # rate lambda * ratio_g * exp(2 rho (k - 1)) on (u, group, k); S = exp(-rate) and
    # 1 - S = -expm1(-rate), each to a few ulp
    rate = u[:, None, None] + log_ratio[None, :, None] + lag_exponent[None, None, :]
    with np.errstate(over="ignore"):
        np.exp(rate, out=rate)
    np.negative(rate, out=rate)
    survive = np.exp(rate)
    hit = np.expm1(rate)
    np.negative(hit, out=hit)
    # correlations over eta (j), e = eta_i at column W - 1 - i (lag eta_j - eta_i):
    # phi = sum_j f_j S and psi = sum_j f_j (1 - S) = sum f - phi, as matrix products
    width = f.size
    survive = survive.reshape(-1, 2 * width - 1)
    hit = hit.reshape(-1, 2 * width - 1)
    phi, psi = np.empty((survive.shape[0], width)), np.empty((survive.shape[0], width))
    band = _correlation_band(f, min(width, _BAND_COLUMNS))
    for lo in range(0, width, band.shape[1]):
        hi = min(lo + band.shape[1], width)
        phi[:, lo:hi] = survive[:, lo:hi + width - 1] @ band[:hi - lo + width - 1, :hi - lo]
        psi[:, lo:hi] = hit[:, lo:hi + width - 1] @ band[:hi - lo + width - 1, :hi - lo]
    phi = phi.reshape(rate.shape[0], rate.shape[1], width)
    psi = psi.reshape(rate.shape[0], rate.shape[1], width)
    with np.errstate(divide="ignore", invalid="ignore"):
        # near phi = sum f (small lambda, where log phi's error is multiplied by the number of
        # cells) log phi = log(sum f) + log1p(-psi / sum f), free of the rounding of a sum
        # close to 1; elsewhere log phi itself (relative accuracy of a small phi)
        ratio = psi / np.exp(log_mass)
        return np.where(ratio < 0.5, log_mass + np.log1p(-ratio), np.log(phi))[:, :, ::-1]


def _expected_posterior_kernel(rho: np.ndarray, prior: np.ndarray, t: int, tail_mass: float):
    r"""The Laplace-transform sum of :func:`expected_true_posterior` (module docstring).

    :math:`\phi_g(\lambda, e) = \sum_\eta f(\eta)\, S_g(\lambda, \eta - e)` with the
    survival factor :math:`S_g(\lambda, k) = \exp(-\lambda r_g e^{2\rho(k - 1)})` depends on
    :math:`\eta` and :math:`e` only through :math:`k = \eta - e`: ``S`` is tabulated once on
    :math:`|k| \le 2H` (:math:`4H + 1` exponentials per :math:`(\lambda, g)` instead of
    :math:`W^2`) and :math:`\phi` for every ``e`` is the correlation of ``f`` with ``S``: one
    matrix product of the table's rows with the banded matrix of ``f``
    (:func:`_correlation_band`; BLAS, where ``W`` multiply-adds over the whole table per
    :math:`\eta` cost 2-10 times more, issue 36). Near :math:`\phi = \sum f` its log is
    taken as :math:`\log\sum f + \operatorname{log1p}(-\psi/\sum f)`,
    :math:`\psi = \sum_\eta f(\eta)(1 - S)` (``-expm1``), so the error the exponent (the number
    of cells) multiplies stays far below 1e-16: within 1e-15 relative of an extended-precision
    evaluation (tests), where the former log-sum-exp over ``eta`` per ``e`` was within 5e-14.
    Groups are done a chunk at a time (``_GROUP_CHUNK_CELLS``); the terms are summed over ``e``
    in the order of ``e``.
    """
    eta = noise_grid(rho, tail_mass)
    half = (eta.size - 1) // 2
    log_f = logpmf_kernel(eta, np.zeros_like(eta), rho)
    f = np.exp(log_f)
    others = np.delete(prior, t)
    values, counts = np.unique(others[others > 0], return_counts=True)
    log_ratio = np.log(values) - np.log(prior[t])
    lowest = min(-40.0, float(np.log(prior[t])) - 40.0)
    # nodes i h on integers i (not lowest + i h: |lowest| up to 730 put ulp(730) = 1.1e-13 of
    # jitter on the nodes where the integrand lives, |u| < 5, and 2.3e-13 on the result)
    u = np.arange(np.floor(lowest / LOG_LAMBDA_STEP), 4.0 / LOG_LAMBDA_STEP + 1.0) * LOG_LAMBDA_STEP
    lags = np.arange(-2 * half, 2 * half + 1)  # k = eta - e
    # log of sum f: f's roundings would be common to every (lambda, e) and so multiplied by
    # the number of cells; in extended precision its error is far below the sum's own
    log_mass = float(np.log(np.exp(log_f.astype(np.longdouble)).sum()))
    log_integrand = np.repeat((u - np.exp(u))[:, None], eta.size, axis=1)  # (u, e)
    step = max(1, _GROUP_CHUNK_CELLS // (u.size * lags.size))
    for lo in range(0, values.size, step):
        log_phi = _log_phi(u, log_ratio[lo : lo + step], 2.0 * rho * (lags - 1), f, log_mass)
        log_integrand += np.einsum("g,uge->ue", counts[lo : lo + step].astype(float), log_phi)
    # trapezoid rule (the end points carry negligible mass)
    terms = np.exp(log_f + logsumexp(log_integrand, axis=0) + np.log(LOG_LAMBDA_STEP))
    total = 0.0
    for term in terms:  # summed in the order of e
        total += term
    return float(total)
