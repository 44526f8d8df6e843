r"""Exact kernels for a target unique at :math:`\ell` levels (supplement S1.3).

The posterior log-odds after releases at :math:`\ell` levels is
:math:`\operatorname{logit}(p) + S`, :math:`S = \sum_i \rho_i (2 j_i + 1)` with independent
:math:`j_i = x_i^* - m - 1 \sim \mathrm{DG}(0, 1/(2\rho_i))` when the target has ``c``.
This module holds the exact methods on validated values (``rhos`` a 1-d float array of
``rho > 0``, ``0 < p < 1``):

* the atoms of ``S`` (distinct partial sums and their probabilities), built level by level;
* the marginal posterior by enumeration (:func:`log_marginal_enumerate`) and by a
  Mellin–Barnes contour integral (:func:`log_marginal_contour`);
* the probability of a correct 0-1-loss decision (:func:`p_correct_levels`).

The public entry point, :func:`dprisk.inference.nested.unique_levels.marginal_unique_levels`,
validates and chooses the method.
"""

from __future__ import annotations

import numpy as np

from dprisk.inference.single_level.closed_form_kernels import TAIL_RELATIVE, odds_term
from dprisk.inference.single_level.closed_form_kernels import p_correct as single_p_correct
from dprisk.inference.single_level.replace_one import TIE_RELATIVE
from dprisk.models.mechanism.discrete_gaussian import support_halfwidth_kernel
from dprisk.models.numerics import dg_log_normalizer, logit

__all__ = [
    "MAX_ATOMS",
    "MAX_PAIRS",
    "PLAIN_SUM_FLOOR",
    "TAIL_ABSOLUTE",
    "level_atoms",
    "log_marginal_contour",
    "log_marginal_enumerate",
    "log_mgf",
    "merge_atoms",
    "p_correct_levels",
    "split_atoms",
    "tail_centre",
    "tie_tolerance",
]

#: Neglected probability when the enumeration for :func:`p_correct_levels` truncates.
TAIL_ABSOLUTE = 1e-25
#: Smallest P[correct] the windows centred at 0 give as they are: their neglected part, below
#: :data:`TAIL_ABSOLUTE`, is then under 1e-12 of it; a smaller value is summed again over the
#: tilted windows (:func:`tail_centre`), accurate relative to itself.
PLAIN_SUM_FLOOR = TAIL_ABSOLUTE * 1e12
#: Largest number of atoms one side of an exact multi-level enumeration may hold.
MAX_ATOMS = 4_000_000
#: Largest number of (atom, atom) pairs an exact multi-level marginal sum evaluates.
MAX_PAIRS = 200_000_000
#: Elements of one temporary matrix.
_CHUNK = 2_000_000


def level_atoms(rhos, tail_per_level: float, centre: int = 0):
    """Distinct values of ``S = sum_i rho_i (2 j_i + 1)`` and their log-probabilities.

    ``j_i = x_i* - m - 1 ~ DG(0, 1/(2 rho_i))`` independently, truncated to
    ``|j_i - centre| <= support_halfwidth(rho_i, tail_per_level)`` (``centre`` 0 but in
    :func:`p_correct_levels`' far tail). Levels are added one at a time
    (a convolution keyed by the exact floating-point partial sum, accumulated in the same
    order as :func:`dprisk.inference.single_level.closed_form_kernels.cumulative_log_odds`); atoms
    with
    equal keys are merged.
    """
    s_vals = np.zeros(1)
    log_w = np.zeros(1)
    for rho in rhos:
        halfwidth = int(support_halfwidth_kernel(rho, tail_per_level))
        j = np.arange(centre - halfwidth, centre + halfwidth + 1, dtype=float)
        level_s = odds_term(j + 1.0, rho)
        level_w = -rho * j**2 - dg_log_normalizer(np.asarray(rho))
        size = s_vals.size * j.size
        if size > MAX_ATOMS:
            raise ValueError(
                f"exact enumeration needs {size} atoms (> MAX_ATOMS = {MAX_ATOMS}); use "
                f"method='contour' or fewer levels"
            )
        s_vals = (s_vals[:, None] + level_s[None, :]).ravel()
        log_w = (log_w[:, None] + level_w[None, :]).ravel()
        s_vals, log_w = merge_atoms(s_vals, log_w)
    return s_vals, log_w


def merge_atoms(s_vals: np.ndarray, log_w: np.ndarray):
    """Merge atoms with identical keys (log-sum-exp of their weights); keys sorted."""
    uniq, inverse = _unique_inverse(s_vals)
    if uniq.size == s_vals.size:  # all keys distinct: inverse is the sorting permutation
        sorted_w = np.empty_like(log_w)
        sorted_w[inverse] = log_w
        return uniq, sorted_w
    peak = np.full(uniq.size, -np.inf)
    np.maximum.at(peak, inverse, log_w)
    total = np.bincount(inverse, weights=np.exp(log_w - peak[inverse]), minlength=uniq.size)
    return uniq, peak + np.log(total)


def _unique_inverse(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` of a 1-d float array, by a stable sort.

    The keys of :func:`level_atoms` come as sorted runs (each earlier atom plus the level's
    increasing terms), which a stable sort (timsort) merges in about half the time of
    ``np.unique``'s quicksort. The sorted distinct keys and each key's index among them do
    not depend on how equal keys are ordered, so both are ``np.unique``'s. Keys that are
    not all finite (NaN: ``np.unique`` merges them) go to ``np.unique`` itself.
    """
    if keys.ndim != 1 or not np.isfinite(keys).all():
        return np.unique(keys, return_inverse=True)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = np.empty(ordered.size, dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inverse = np.empty(keys.size, dtype=np.intp)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def split_atoms(rhos, tail_per_level: float, centre: int = 0):
    """Atoms of the first levels (as many as fit in MAX_ATOMS) and of the remaining ones.

    Each level's window is centred at ``centre`` (see :func:`level_atoms`).
    """
    sizes = [2 * int(support_halfwidth_kernel(r, tail_per_level)) + 1 for r in rhos]
    cut, count = 0, 1
    while cut < len(rhos) and count * sizes[cut] <= MAX_ATOMS:
        count *= sizes[cut]
        cut += 1
    cut = max(cut, 1)
    first = level_atoms(rhos[:cut], tail_per_level, centre)
    rest = level_atoms(rhos[cut:], tail_per_level, centre) if cut < len(rhos) else (
        np.zeros(1), np.zeros(1))
    return first, rest


def log_marginal_enumerate(rhos: np.ndarray, logit_p: np.ndarray, p_min: float) -> np.ndarray:
    r"""Log marginal posterior per prior (``logit_p`` 1-d) by exact enumeration of the atoms.

    .. math:: \log \sum_{a, b} \operatorname{expit}(\operatorname{logit}(p) + s_a + s_b)\, w_a w_b

    over the (first levels) x (remaining levels) atom pairs; neglected probability below
    ``TAIL_RELATIVE * p_min`` (refused above ``MAX_PAIRS`` pairs).
    """
    # SciPy's special functions only here: the worst-case and single-level commands import
    # this module for split_atoms and should not pay scipy.special's import (0.4 s)
    from scipy.special import log_expit, logsumexp

    tail = TAIL_RELATIVE * p_min / rhos.size
    (s_a, w_a), (s_b, w_b) = split_atoms(rhos, tail)
    pairs = s_a.size * s_b.size
    if pairs > MAX_PAIRS:
        raise ValueError(
            f"exact enumeration needs {pairs:.3g} (atom, atom) evaluations per prior "
            f"(> MAX_PAIRS = {MAX_PAIRS:.3g}); use method='contour'"
        )
    out = np.empty(logit_p.shape)
    rows = max(1, _CHUNK // s_b.size)
    for k, lp in enumerate(logit_p):
        parts = []
        for lo in range(0, s_a.size, rows):
            block = lp + s_a[lo : lo + rows, None] + s_b[None, :]
            parts.append(logsumexp(log_expit(block) + w_a[lo : lo + rows, None] + w_b[None, :]))
        out[k] = logsumexp(parts)
    return out


def log_mgf(s: np.ndarray, rho: float) -> np.ndarray:
    r"""``log E[exp(2 s rho J)]``, ``J ~ DG(0, 1/(2 rho))``, for complex ``s`` with 0 <= Re s <= 1.

    .. math:: \log \sum_k e^{-\rho k^2 + 2 \rho s k} - \log Z(\rho)
              = \rho a^2 + \log \sum_k e^{-\rho (k - a)^2 + 2 i \rho \tau k} - \log Z(\rho)

    with ``s = a + i tau``; every term has modulus <= 1 (no overflow, no cancellation beyond
    the sum's own).
    """
    halfwidth = int(support_halfwidth_kernel(rho, 1e-20)) + 1
    k = np.arange(-halfwidth, halfwidth + 2, dtype=float)
    a = s.real[..., None]
    tau = s.imag[..., None]
    terms = np.exp(-rho * (k - a) ** 2 + 2j * rho * tau * k)
    # Far out on the line the sum cancels to rounding noise (|G| ~ e^{-rho tau^2} there); an
    # exact 0 becomes log 0 = -inf, i.e. a zero integrand, which is correct to that noise.
    with np.errstate(divide="ignore"):
        log_sum = np.log(terms.sum(-1))
    return rho * s.real**2 + log_sum - dg_log_normalizer(np.asarray(rho))


def log_marginal_contour(rhos: np.ndarray, logit_p: float, p: float) -> float:
    r"""Marginal posterior for ``ell`` levels by a Mellin–Barnes integral (see module notes).

    With :math:`T = \sum_i \rho_i j_i` and :math:`c = \operatorname{logit}(p) + \sum_i \rho_i`
    the marginal posterior is :math:`M = E[\operatorname{expit}(c + 2T)]`. Using
    :math:`\operatorname{expit}(x) = \frac{1}{2\pi i}\int_{a - i\infty}^{a + i\infty}
    e^{s x} \frac{\pi}{\sin \pi s}\, ds` for :math:`0 < a < 1`,

    .. math::

        M = \frac{1}{2\pi} \int_{-\infty}^{\infty} e^{s c} \prod_i E[e^{2 s \rho_i j_i}]\,
            \frac{\pi}{\sin \pi s}\, d\tau, \qquad s = a + i\tau .

    The integrand is analytic in the strip :math:`|\mathrm{Im}\,\tau| < \min(a, 1-a)` and
    decays like :math:`e^{-\pi|\tau|}`, so the trapezoidal rule converges geometrically; ``a`` is
    the saddle point of the integrand's modulus (fewest digits lost to cancellation) and the
    step is chosen from the strip width and the growth of the integrand inside it.
    """
    c = logit_p + float(rhos.sum())

    def phi(a):  # log of the integrand's modulus scale on the line Re s = a (convex in a)
        a = np.asarray(a, dtype=float)
        total = a * c - np.log(np.sin(np.pi * a))
        for rho in rhos:
            total = total + log_mgf(a.astype(complex), float(rho)).real
        return total

    grid = np.linspace(0.005, 0.995, 199)
    a = float(grid[np.argmin(phi(grid))])
    d = min(a, 1.0 - a)
    half = 0.5 * d
    growth = float(max(phi(a - half), phi(a + half)) - phi(a))
    log_scale = float(phi(a)) + np.log(np.pi)
    lost = max(0.0, log_scale - np.log(p))  # log(scale / M) <= log(scale / p), since M >= p
    step = 2.0 * np.pi * half / (42.0 + growth + lost)
    tau_max = (44.0 + lost + np.log(1.0 / step)) / np.pi + 1.0
    tau = np.arange(0.0, tau_max + step, step)
    s = a + 1j * tau
    # log(pi / sin(pi s)) via sin(pi s) = e^{-i pi s} (e^{2 i pi s} - 1) / (2i); |e^{2i pi s}| <= 1
    log_sin = -1j * np.pi * s + np.log(np.exp(2j * np.pi * s) - 1.0) - np.log(2j)
    log_f = s * c + np.log(np.pi) - log_sin
    for rho in rhos:
        log_f = log_f + log_mgf(s, float(rho))
    f = np.exp(log_f - log_scale).real
    integral = step * (0.5 * f[0] + f[1:].sum()) / np.pi
    if not integral > 0:  # pragma: no cover - would mean total cancellation
        raise FloatingPointError("contour integral lost all precision")
    return log_scale + np.log(integral)


def p_correct_levels(rhos: np.ndarray, p: np.ndarray) -> np.ndarray:
    r"""Probability that the 0-1-loss decision is correct with ``ell`` unique levels.

    .. math:: P[\operatorname{logit}(p) + S > 0 \mid x_1 = m+1],
              \quad S = \sum_i \rho_i (2 j_i + 1), \; j_i \sim \mathrm{DG}(0, 1/(2\rho_i))

    Exact: the atoms of ``S`` are split into the first levels (``S_A``) and the rest
    (``S_B``); with ``S_B`` sorted and its upper-tail sums accumulated from the top,
    :math:`P = \sum_a w_a P[S_B > -\operatorname{logit}(p) - s_a]` costs
    :math:`O(N_A \log N_B)` (milliseconds for the six Census levels). Each level's window
    :math:`|j_i - c| \le K(\rho_i, \mathtt{TAIL\_ABSOLUTE} / \ell)` is centred at
    :func:`tail_centre` ``c``. With ``c = 0`` (the cut within about :math:`\sum_i \rho_i`
    of the mean of ``S``) the neglected probability is below ``TAIL_ABSOLUTE`` (absolute).
    With ``c > 0`` (P in the far upper tail) the windows are those of the exponentially
    tilted noise :math:`w(j) \propto e^{-\rho_i (j - c)^2}` (the tilt
    :math:`e^{2 c \rho_i j_i}`, the same for every level, i.e. :math:`e^{c S}` with
    :math:`M(c) = E[e^{c S}]`), whose mean of ``S`` is within :math:`\sum_i \rho_i` of the cut
    :math:`t = -\operatorname{logit}(p)`; with :math:`s_0` the least atom above the cut,
    :math:`P[\text{neglected}] \le e^{-c s_0} M(c)\, \mathtt{TAIL\_ABSOLUTE}` while
    :math:`P = e^{-c s_0} M(c)\, E_c[e^{-c (S - s_0)}; S \ge s_0]`, so the neglected part
    is ``TAIL_ABSOLUTE`` relative to P divided by a factor that decays only like
    :math:`1/(c\,\mathrm{sd}_c(S))`; the sum runs in log space, so P is accurate relative
    to its value (rhos 0.5, 0.7 at p = 1e-12: 6.36e-67). Priors with the same ``c`` share
    one enumeration; a prior whose plain sum (``c = 0``) is at least
    :data:`PLAIN_SUM_FLOOR` keeps it (already relative to 1e-12).
    One level is the single-level
    exact tail (:func:`dprisk.inference.single_level.closed_form_kernels.p_correct`, also
    relative). A release whose log-odds is 0 to within :func:`tie_tolerance` is a tie
    (posterior 1/2), decided ``m`` as the rule says.
    """
    if rhos.size == 1:
        return single_p_correct(rhos[0], p, np.zeros((), dtype=np.int64))
    atoms = {}  # centre -> split atoms, shared by priors with the same centre
    out = np.empty(p.size)
    for k, lp in enumerate(logit(p.ravel())):
        centre = tail_centre(rhos, lp)
        plain = _p_correct_at(rhos, lp, 0, atoms)
        # a plain sum at or above the floor is already accurate relative to its value
        out[k] = plain if centre == 0 or plain >= PLAIN_SUM_FLOOR else _p_correct_at(
            rhos, lp, centre, atoms)
    # a probability: where every atom decides m + 1 the rounding of the atoms' weights (each
    # window's pmf sums to 1 only to a few ulp) put the sum up to 4.4e-16 above 1 (--rhos
    # 1e100,0.5,0.5: 1.0000000000000004)
    return np.minimum(out, 1.0).reshape(p.shape)


def _p_correct_at(rhos: np.ndarray, lp: float, centre: int, atoms: dict) -> float:
    """:func:`p_correct_levels` at one ``logit(p)`` with its windows centred at ``centre``."""
    if centre not in atoms:
        atoms[centre] = split_atoms(rhos, TAIL_ABSOLUTE / rhos.size, centre)
    (s_a, w_a), (s_b, w_b) = atoms[centre]
    # first s_b with lp + s_a + s_b above the ties
    idx = np.searchsorted(s_b, -lp - s_a + tie_tolerance(lp, s_a, s_b), side="right")
    if centre == 0:
        upper = np.cumsum(np.exp(w_b)[::-1])[::-1]  # upper[i] = P[S_B >= s_b[i]]
        return float(np.dot(np.exp(w_a), np.append(upper, 0.0)[idx]))
    # the same sums in log space: every term may underflow
    log_upper = np.append(np.logaddexp.accumulate(w_b[::-1])[::-1], -np.inf)
    terms = w_a + log_upper[idx]
    peak = terms.max()
    return 0.0 if peak == -np.inf else float(np.exp(
        peak + np.log(np.exp(terms - peak).sum())))


def tail_centre(rhos: np.ndarray, logit_p: float) -> int:
    r"""Integer centre ``c`` of :func:`p_correct_levels`' windows: the exponential tilt.

    .. math:: c = \max\Bigl(0, \operatorname{round}\Bigl(\tfrac12 \bigl(
              -\operatorname{logit}(p) / \textstyle\sum_i \rho_i - 1\bigr)\Bigr)\Bigr),

    the shift of every :math:`j_i` that puts the mean of
    :math:`S = \sum_i \rho_i (2 j_i + 1)` at the decision cut
    :math:`-\operatorname{logit}(p)`, rounded (an integer shift keeps each tilted level a
    discrete Gaussian centred on its window); 0 when the cut is not above the mean of ``S``.
    """
    shift = 0.5 * (-float(logit_p) / float(rhos.sum()) - 1.0)
    return max(0, int(np.rint(shift)))


def tie_tolerance(logit_p: float, s_a: np.ndarray, s_b: np.ndarray) -> float:
    r"""Largest :math:`|\operatorname{logit}(p) + s_a + s_b|` that is a tie (log-odds 0).

    .. math:: \tau = \mathtt{TIE\_RELATIVE} \times \bigl(|\operatorname{logit}(p)|
              + \max |s_a| + \max |s_b|\bigr)

    with :data:`dprisk.inference.single_level.replace_one.TIE_RELATIVE` (8 eps). Ties are
    exact when the rhos are commensurate: at ``p = 1/2`` with equal rhos, any releases
    whose terms :math:`2 j_i + 1` add up to 0 (four levels at rho = 0.1: 8 % of the
    releases). Their keys are sums of terms accumulated level by level, each off by at most
    about 0.5 eps times the sum of the terms' largest magnitudes (measured over 7e5 exact
    ties: equal rhos from 1e-3 to 123, 4 to 12 levels, sums whole or split in two), so the
    computed log-odds of a tie fell on either side of 0 (P[correct] 0.6483 instead of
    0.6316 there); the atoms' extremes bound those magnitudes.
    """
    return TIE_RELATIVE * (abs(float(logit_p)) + float(np.max(np.abs(s_a)))
                           + float(np.max(np.abs(s_b))))
