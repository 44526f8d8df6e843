r"""The target's cell among K cells from the whole noisy histogram (issue 15, §1).

The adversary knows :math:`m_j`, the count of everyone but the target in cell
:math:`j = 0, \ldots, K-1` of the block (all-but-one, as in the paper), and holds a prior
:math:`\pi` over the target's cell :math:`C` (:mod:`dprisk.models.priors.histogram`). The
release is every cell's count plus independent noise,
:math:`x_j^* = m_j + 1[j = C] + \eta_j`, :math:`\eta_j \sim \mathrm{DG}(0, 1/(2\rho))`. Given
:math:`C = c` only cell ``c``'s mean moves, so all other likelihood factors cancel and

.. math::

    \log P[C = c \mid x^*] = \log \pi_c + \rho\,\bigl(2 (x_c^* - m_c) - 1\bigr)
        - \log \sum_{j} \pi_j\, e^{\rho (2 (x_j^* - m_j) - 1)},

the per-cell term being the single-level log-likelihood ratio
:math:`\log[f(x_c^* - m_c - 1) / f(x_c^* - m_c)]`
(:func:`dprisk.inference.single_level.closed_form_kernels.odds_term`; the test checks it against
the DG
pmf). An adversary who reads only some cells (``read``) uses the term for those cells only;
reading the target's cell alone is the paper's single-level adversary with ``p = pi_c``.

The risk :math:`R'_c = P[C = c \mid x^*] / \pi_c`. The MAP cell maximises the log posterior;
ties (cells of equal prior and equal residual :math:`x_j^* - m_j`) are broken uniformly at
random in :mod:`dprisk.inference.attribute.design`; :func:`map_cell` returns the lowest index.
Everything is vectorised over a leading batch of releases (last axis = cells).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dprisk.inference.single_level.closed_form_kernels import odds_term
from dprisk.models.checks import check_count, check_rho
from dprisk.models.mechanism.dg_sampling import as_generator, sample_kernel
from dprisk.models.numerics import logsumexp, probability_ratio, scalar_result
from dprisk.models.priors.histogram import (
    check_cell_prior,
    check_known_counts,
    check_true_cell,
    uniform_prior,
)
from dprisk.models.scenario import scalar_value

__all__ = [
    "CellPosterior",
    "cell_log_likelihood",
    "cell_posterior",
    "log_cell_posterior",
    "map_cell",
    "sample_releases",
]

#: Cells per block of releases processed together by :func:`cell_posterior` (about 1 MB
#: per temporary, so the dozen passes over a block stay in cache).
_CHUNK_CELLS = 2**17


def cell_log_likelihood(release: np.ndarray, known: np.ndarray, rho, read=None) -> np.ndarray:
    r"""Per-cell log-likelihood ratio :math:`\rho (2 (x_c^* - m_c) - 1)` (kernel).

    ``release`` int64 of shape ``(..., K)``, ``known`` int64 ``(K,)``, ``rho`` a float or an
    array broadcasting to the cells; ``read`` a boolean ``(K,)`` mask of the cells the
    adversary reads (the others contribute 0).
    """
    terms = odds_term((release - known).astype(float), rho)
    if read is not None:
        terms = np.where(read, terms, 0.0)
    return terms


def log_cell_posterior(release: np.ndarray, known: np.ndarray, rho, log_prior: np.ndarray,
                       read=None) -> np.ndarray:
    r"""Log posterior of every cell (kernel), normalised along the last axis.

    .. math:: \log P[C = c \mid x^*] = \ell_c - \log\sum_j e^{\ell_j},\quad
              \ell_c = \log\pi_c + \rho\,(u_c - \max_j u_j),

    :math:`u_c = 2 (x_c^* - m_c) - 1` (0 for a cell not read): the common term
    :math:`\rho \max_j u_j` cancels, and subtracting it from the integers before multiplying
    by a float ``rho`` keeps :math:`\log\pi_c` (added to :math:`\rho u_c \approx 10^{16}` it
    would be rounded away: posteriors summing to 2). An array ``rho`` (one per cell) takes
    :func:`cell_log_likelihood` as it is.
    """
    if np.ndim(rho) == 0:
        offsets = 2.0 * (release - known) - 1.0  # integers: exact below 2**53
        if read is not None:
            offsets = np.where(read, offsets, 0.0)
        scores = log_prior + rho * (offsets - offsets.max(-1, keepdims=True))
    else:
        scores = log_prior + cell_log_likelihood(release, known, rho, read)
    return scores - logsumexp(scores)[..., None]


def map_cell(log_posterior: np.ndarray) -> np.ndarray:
    """Index of the largest log posterior along the last axis (lowest index among ties).

    Parameters
    ----------
    log_posterior : array_like of float, shape (..., K)
        Log posterior of each of the ``K >= 1`` cells on the last axis (``-inf`` allowed).

    Returns
    -------
    int or ndarray of int
        The MAP cell, of the leading shape (an int for one posterior).

    Raises
    ------
    ValueError, TypeError
        Naming ``log_posterior``: no cell on the last axis, NaN (``np.argmax`` would return
        the first NaN's index), or not numbers; ``-inf`` (a cell of prior 0) is allowed.
    """
    if isinstance(log_posterior, (str, bytes)) or (
            isinstance(log_posterior, np.ndarray) and log_posterior.dtype.kind in "bOSUV"):
        raise TypeError(f"log_posterior must be numbers, got {log_posterior!r}")
    try:
        values = np.asarray(log_posterior, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"log_posterior must be numbers, got {log_posterior!r}") from None
    if values.ndim == 0 or values.shape[-1] == 0:
        raise ValueError(f"log_posterior must hold at least one cell on its last axis, got "
                         f"shape {values.shape}")
    if np.isnan(values).any():
        raise ValueError("log_posterior must not be NaN (allowed: numbers and -inf)")
    return scalar_result(np.argmax(values, axis=-1))


@dataclass(frozen=True)
class CellPosterior:
    r"""Posterior over the target's cell for one release or a batch.

    Attributes
    ----------
    posterior : ndarray, shape ``(..., K)``
        :math:`P[C = c \mid x^*]`.
    log_posterior : ndarray, shape ``(..., K)``
    prior : ndarray, shape ``(K,)``
    map_cell : int or ndarray
        Lowest-index maximiser of the posterior.
    ties : int or ndarray
        Number of cells sharing the largest posterior (1: no tie).
    """

    posterior: np.ndarray
    log_posterior: np.ndarray
    prior: np.ndarray
    map_cell: int | np.ndarray
    ties: int | np.ndarray

    def risk(self, cell=None):
        r"""Risk :math:`R'_c = P[C = c \mid x^*] / \pi_c` of ``cell`` (default the MAP cell).

        The quotient of the two probabilities, one rounding
        (:func:`dprisk.models.numerics.probability_ratio`), so :math:`R'_c \le` ``fl(1/pi_c)``
        (``exp`` of the difference of the logs exceeded it: 864.0000000000005 for a
        posterior of 1 and ``pi_c = 1/864``).
        """
        cell = self.map_cell if cell is None else cell
        cell = np.broadcast_to(np.asarray(cell), self.log_posterior.shape[:-1])
        log_post = np.take_along_axis(self.log_posterior, cell[..., None], -1)[..., 0]
        post = np.take_along_axis(self.posterior, cell[..., None], -1)[..., 0]
        prior = self.prior[cell]
        with np.errstate(divide="ignore"):
            log_prior = np.log(prior)
        return scalar_result(probability_ratio(post, log_post, prior, log_prior))


def cell_posterior(release, known, rho, prior=None, *, read=None) -> CellPosterior:
    r"""Posterior of the target's cell given the whole noisy histogram.

    .. math::

        P[C = c \mid x^*] = \frac{\pi_c\, e^{\rho (2 (x_c^* - m_c) - 1)}}
                                 {\sum_j \pi_j\, e^{\rho (2 (x_j^* - m_j) - 1)}}

    Parameters
    ----------
    release : array_like of int, shape ``(..., K)``
        Noisy counts of all ``K >= 2`` cells (a batch of releases along leading axes).
    known : array_like of int (>= 0), shape ``(K,)``
        ``m_j``: the count of everyone but the target in cell ``j``.
    rho : float (rho > 0)
        zCDP parameter of each cell's noise.
    prior : array_like of float, shape ``(K,)``, optional
        :math:`\pi`, non-negative, summing to 1; uniform by default.
    read : array_like of bool, shape ``(K,)``, optional
        Cells whose counts the adversary reads (default all); ``read = [c]`` only is the
        paper's one-cell adversary.

    Returns
    -------
    CellPosterior
    """
    known = check_known_counts(known)
    release = check_count(release, "release")
    if release.ndim == 0 or release.shape[-1] != known.size:
        raise ValueError(f"release must have one count per cell ({known.size}) on its last "
                         f"axis, got shape {release.shape}")
    rho = float(scalar_value(check_rho(rho, "rho"), "rho"))
    prior = uniform_prior(known.size) if prior is None else check_cell_prior(prior, known.size)
    if read is not None:
        read = np.asarray(read, dtype=bool)
        if read.shape != known.shape:
            raise ValueError(f"read must mark each of the {known.size} cells, got shape "
                             f"{read.shape}")
    with np.errstate(divide="ignore"):
        log_prior = np.log(prior)
    # row blocks (every operation is per release, so blocking changes no value)
    rows = release.reshape(-1, known.size)
    log_post = np.empty(rows.shape)
    posterior = np.empty(rows.shape)
    best = np.empty(rows.shape[0], dtype=np.intp)
    ties = np.empty(rows.shape[0], dtype=np.intp)
    step = max(1, _CHUNK_CELLS // known.size)
    for lo in range(0, rows.shape[0], step):
        block = slice(lo, lo + step)
        block_log_post = log_cell_posterior(rows[block], known, rho, log_prior, read)
        log_post[block] = block_log_post
        np.exp(block_log_post, out=posterior[block])
        best[block] = np.argmax(block_log_post, axis=-1)
        top = np.take_along_axis(block_log_post, best[block, None], -1)
        ties[block] = (block_log_post == top).sum(-1)
    shape = release.shape
    return CellPosterior(posterior.reshape(shape), log_post.reshape(shape), prior,
                         scalar_result(best.reshape(shape[:-1])),
                         scalar_result(ties.reshape(shape[:-1])))


def sample_releases(known, rho, true_cell: int, n_releases: int, *, random_seed=None,
                    rho_cells=None) -> np.ndarray:
    r"""Draw ``n_releases`` noisy histograms with the target in ``true_cell``.

    .. math:: x_j^* = m_j + 1[j = c] + \eta_j,\qquad \eta_j \sim \mathrm{DG}(0, 1/(2\rho))

    Parameters
    ----------
    known : array_like of int (>= 0), shape ``(K,)``
    rho : float (rho > 0)
    true_cell : int (0 <= true_cell < K)
    n_releases : int (>= 0)
    random_seed : int or numpy.random.Generator, optional
    rho_cells : array_like of float, shape ``(K,)``, optional
        A different rho per cell (overrides ``rho``).

    Returns
    -------
    ndarray of int64, shape ``(n_releases, K)``
    """
    known = check_known_counts(known)
    true_cell = check_true_cell(true_cell, uniform_prior(known.size))
    rho = check_rho(rho if rho_cells is None else rho_cells, "rho")
    counts = known.copy()
    counts[true_cell] += 1
    rng = as_generator(random_seed, "random_seed")
    rho = rho if rho.ndim == 0 else np.broadcast_to(rho, counts.shape)
    return sample_kernel(counts, rho, (int(n_releases), known.size), rng)
