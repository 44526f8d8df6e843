r"""Sizing of the decision measures: every window, its memory and work, before any is built.

The decision summary (:func:`dprisk.inference.privacy.decision_summary.decision_summary`) and the
single-level marginal (``dprisk marginal --rho1``) compute exact sums over noise windows whose
width grows as :math:`\rho^{-1/2}`: at a tiny rho they would allocate gigabytes part-way, at a
huge one the accountants leave their range. :func:`check_summary_size` and
:func:`check_one_level_size` are their one sizing step: from the rhos alone (window half-widths
:math:`K(\rho, \text{tail})`, no array built) they refuse, naming the rho responsible,

* a window wider than a method allows (range refusals, with the smallest rho allowed):

  - the replace-one lattice at the DAS's noise (:mod:`dprisk.inference.privacy.das_noise`):
    each cell's rho is ``rho1 / 2`` and its half-width at most
    :data:`dprisk.inference.single_level.replace_one.MAX_HALFWIDTH`;
  - the exact atoms of the Bayes and worst-case accuracies
    (:func:`dprisk.inference.nested.unique_levels_kernels.split_atoms`): each side of the split
    at most :data:`~dprisk.inference.nested.unique_levels_kernels.MAX_ATOMS` window values, at
    the smallest tail they use (``TAIL_ABSOLUTE / levels`` with two levels, ``EXACT_TAIL``
    with one);
  - the CKS conversion of the total rho (its optimal Renyi order in [1.01, 1e12] and its
    bound above 0: at delta = 1e-10 about 1.36e-20 < rho <= 2.3e5, ``cks_range``);

* an estimate above the memory limit (:func:`dprisk.runtime.memory_limit.check_memory`) or the
  work limit (:func:`dprisk.runtime.work_limit.check_work`), the estimates

  ===========================================  ===============================================
  computation                                  steps (bytes)
  ===========================================  ===============================================
  PLD bracket (``dp-accounting``), per query   ``(2 T + 1) x PLD_VALUE_STEPS``
                                               (``x PLD_VALUE_BYTES``), T = ceil(11.6 sigma),
                                               sigma = (2 rho)^-1/2
  dense composition of the PLDs (two queries   ``(sum of rho (4 T + 2) / 2e-5) x
  with more than 1,000 losses, or product)     DENSE_BUCKET_STEPS`` (``x DENSE_BUCKET_BYTES``)
  Bayes and worst-case accuracy, per prior     ``(atoms of both sides) x ATOM_STEPS``
                                               (``x ATOM_BYTES``)
  marginal posterior, two levels, per prior    ``(product of the windows) x PAIR_STEPS``
  replace-one lattice (``das_noise``)          ``(2 K + 1)^2 x LATTICE_STEPS``
  closed form of one level, per prior          ``(2 K + 1) x CLOSED_STEPS`` (``x CLOSED_BYTES``)
  ===========================================  ===============================================

  measured on the reference machine (the PLD 640 to 1,400 steps a value, its dense
  composition 70 to 340 a bucket, the atoms 225 to 330 for the five priors, the lattice 0.12
  to 0.9 on a loaded machine, the closed form about 17) and rounded up, so that an estimate
  errs long.

Messages start with the name given for the rho responsible (``names``: the API's
``rho1``/``rho2``, or the command line's ``--rho1``/``--rho2``), or both names joined by
``and`` when the two together set the size, then ``": "``.
"""

from __future__ import annotations

import math

import numpy as np

from dprisk.models.mechanism.discrete_gaussian import DEFAULT_TAIL_MASS, support_halfwidth_kernel
from dprisk.runtime.memory_limit import check_memory
from dprisk.runtime.work_limit import check_work

__all__ = [
    "ATOM_BYTES",
    "ATOM_STEPS",
    "CLOSED_BYTES",
    "CLOSED_STEPS",
    "DENSE_BUCKET_BYTES",
    "DENSE_BUCKET_STEPS",
    "LATTICE_STEPS",
    "PAIR_STEPS",
    "PLD_VALUE_BYTES",
    "PLD_VALUE_STEPS",
    "check_one_level_size",
    "check_summary_size",
    "rounded_up",
    "smallest_rho",
]

#: Steps per noise value of one discrete Gaussian query's PLD, both ends of the bracket.
PLD_VALUE_STEPS = 1500
#: Bytes per noise value of one query's PLD (measured peak about 105).
PLD_VALUE_BYTES = 128
#: Steps per loss bucket of the dense composition of two PLDs, both ends (measured 70 to 340,
#: the latter on a loaded machine).
DENSE_BUCKET_STEPS = 400
#: Bytes per loss bucket of the dense composition (measured peak 20 to 40).
DENSE_BUCKET_BYTES = 64
#: ``dp-accounting``'s largest sparse PLD (``pld_pmf._MAX_PMF_SPARSE_SIZE``).
_SPARSE_POINTS = 1000
#: Steps per atom (both sides of the split) of the Bayes and worst-case accuracy, one prior.
ATOM_STEPS = 100
#: Bytes per atom held by the exact enumeration (measured peak about 64).
ATOM_BYTES = 96
#: Steps per (window, window) pair of the two-level marginal posterior, one prior (measured
#: 0.2 to 4).
PAIR_STEPS = 4
#: Steps per product of the replace-one lattice sum.
LATTICE_STEPS = 1.0
#: Steps per release of the closed-form single-level sums, one prior.
CLOSED_STEPS = 40
#: Bytes per release of the closed-form sums (about six float64 temporaries).
CLOSED_BYTES = 64
#: The cap of ``dp-accounting``'s discrete Gaussian support, in standard deviations.
_PLD_SIGMAS = 11.6


def smallest_rho(max_halfwidth: int, tail: float) -> float:
    """The smallest rho whose window half-width at ``tail`` is at most ``max_halfwidth``.

    By bisection on log rho (the half-width decreases with rho), to a relative 1e-3.
    """
    low, high = 1e-300, 1e300
    for _ in range(80):
        middle = math.sqrt(low * high)
        if _halfwidth(middle, tail) <= max_halfwidth:
            high = middle
        else:
            low = middle
        if high / low < 1.001:
            break
    return high


def rounded_up(value: float, digits: int = 3) -> str:
    """``value`` written with ``digits`` significant digits, rounded up (never below it).

    A stated lower bound ``rho >= B`` must hold at ``B`` itself: rounding to nearest wrote
    1.4e-11 for 1.4158e-11, and 1.4e-11 was refused.
    """
    text = f"{value:.{digits - 1}e}"
    if float(text) < value:
        mantissa, exponent = text.split("e")
        step = 10.0 ** -(digits - 1)
        text = f"{float(mantissa) + step:.{digits - 1}f}e{exponent}"
    return f"{float(text):.{digits}g}"


def _halfwidth(rho: float, tail: float) -> float:
    """``K(rho, tail)``, infinite where it exceeds 2**53 (or ``rho`` underflowed to 0)."""
    if not rho > 0.0:
        return math.inf
    try:
        with np.errstate(all="ignore"):
            return float(support_halfwidth_kernel(np.asarray(float(rho)), tail))
    except ValueError:
        return math.inf


def _too_small(name: str, rho: float, what: str, width: float, allowed: str) -> ValueError:
    wide = "above 2**53" if math.isinf(width) else f"{width:.0f}"
    return ValueError(f"{name}: rho = {rho!r} is too small for {what}: its noise window would be "
                      f"{wide} values wide (allowed range: {allowed})")


def _split_sides(widths: list[float]) -> list[float]:
    """Atoms of each side of ``split_atoms``' split (products of the window widths)."""
    from dprisk.inference.nested.unique_levels_kernels import MAX_ATOMS

    cut, count = 0, 1.0
    while cut < len(widths) and count * widths[cut] <= MAX_ATOMS:
        count *= widths[cut]
        cut += 1
    cut = max(cut, 1)
    return [float(np.prod(widths[:cut])), float(np.prod(widths[cut:])) if cut < len(widths)
            else 1.0]


def _check_atoms(rhos: list[float], names: list[str], priors: int) -> None:
    """The exact atoms of the Bayes and worst-case accuracy: range, memory, work."""
    from dprisk.inference.nested.unique_levels_kernels import MAX_ATOMS, TAIL_ABSOLUTE
    from dprisk.inference.privacy.worst_case import EXACT_TAIL

    tail = TAIL_ABSOLUTE / len(rhos) if len(rhos) > 1 else EXACT_TAIL
    widths = [2.0 * _halfwidth(rho, tail) + 1.0 for rho in rhos]
    widest = int(np.argmax(widths))
    sides = _split_sides(widths)
    if max(sides) > MAX_ATOMS:
        least = smallest_rho((MAX_ATOMS - 1) // 2, tail)
        raise _too_small(names[widest], rhos[widest], "the exact accuracy sums (Bayes "
                         "rule and worst case: window values enumerated)", widths[widest],
                         f"at most {MAX_ATOMS} values, i.e. {names[widest]} >= "
                         f"{rounded_up(least)}")
    atoms = sum(sides)
    what = f"the exact accuracy sums over {atoms:.3g} atoms" + (
        f" x {priors} priors" if priors > 1 else "")
    check_memory(atoms * ATOM_BYTES, parameter=names[widest], what=what)
    check_work(atoms * ATOM_STEPS * priors, parameter=names[widest], what=what)


def _pld_points(rho: float) -> tuple[float, float]:
    """(noise values, dense loss buckets) of one query's PLD at the bracket's interval.

    ``dp-accounting`` keeps the values ``|x| <= T = ceil(11.6 sigma)``, losses
    ``rho (2 x + 1)``: a range of ``rho (4 T + 2)``, ``/ interval`` buckets when dense.
    """
    from dprisk.inference.privacy.accounting import PLD_BRACKET_INTERVAL

    sigma = math.sqrt(1.0 / (2.0 * rho))
    if not math.isfinite(_PLD_SIGMAS * sigma):
        return math.inf, math.inf
    reach = math.ceil(_PLD_SIGMAS * sigma)
    return 2.0 * reach + 1.0, rho * (4.0 * reach + 2.0) / PLD_BRACKET_INTERVAL + 1.0


def _check_pld(rhos: list[float], names: list[str]) -> None:
    """The PLD bracket of the queries: memory and work of their values and composition.

    ``dp-accounting`` composes two queries densely, over the sum of their loss ranges, unless
    both have at most ``_SPARSE_POINTS`` stored losses and so has their product (the
    pessimistic connect-the-dots end stores up to about twice the noise values: counted
    ``2 (2 T + 1) + 2``).
    """
    points, buckets = zip(*(_pld_points(rho) for rho in rhos), strict=True)
    widest = int(np.argmax(points))
    what = f"the PLD bracket of epsilon over {sum(points):.3g} noise values"
    check_memory(max(points) * PLD_VALUE_BYTES, parameter=names[widest], what=what)
    check_work(sum(points) * PLD_VALUE_STEPS, parameter=names[widest], what=what)
    stored = [2.0 * value + 2.0 for value in points]  # connect-the-dots: up to about twice
    if len(rhos) < 2 or (max(stored) <= _SPARSE_POINTS
                         and math.prod(stored) <= _SPARSE_POINTS):
        return
    # named: the rho whose many values make the composition dense and the one whose loss
    # range makes it long (one name when they are the same)
    named = " and ".join(names[i] for i in sorted({widest, int(np.argmax(buckets))}))
    what = (f"the PLD bracket's composition of the {len(rhos)} queries over "
            f"{sum(buckets):.3g} loss buckets")
    check_memory(sum(buckets) * DENSE_BUCKET_BYTES, parameter=named, what=what)
    check_work(sum(buckets) * DENSE_BUCKET_STEPS, parameter=named, what=what)


def _check_cks(rhos: list[float], names: list[str], delta: float) -> None:
    """The CKS epsilon of the total rho is within the accountant's orders (named: the largest).

    A refusal of ``delta`` itself (no rho has a CKS epsilon at it) names ``delta``, unchanged.
    """
    from dprisk.inference.privacy.accounting import epsilon_cks

    try:
        epsilon_cks(float(sum(rhos)), delta)  # a scalar minimisation, cached on disk
    except ValueError as err:
        if str(err).startswith("delta = "):
            raise
        largest = int(np.argmax(rhos))
        total = "" if len(rhos) == 1 else "the total rho1 + rho2: "
        raise ValueError(f"{names[largest]}: {total}{err}") from None


def check_summary_size(rho1: float, rho2: float | None = None, *, delta: float,
                       names: tuple[str, str] = ("rho1", "rho2"), priors=(0.5,)) -> None:
    """The one sizing step of the decision summary (module docstring), before any array.

    Parameters
    ----------
    rho1, rho2 : float (validated, > 0), float or None
        The block's and (optionally) the block group's rho.
    delta : float (validated)
        Of the epsilons.
    names : (str, str)
        How the refusals name ``rho1`` and ``rho2``.
    priors : sequence of float (validated, 0 < p < 1)
        The priors of the table (each a pass of the exact sums).

    Raises
    ------
    ValueError
        One line, starting with the name of the rho responsible (range; the memory and work
        limits' ``MemoryLimitError`` and ``WorkLimitError`` are ``ValueError``).
    """
    from dprisk.inference.single_level.replace_one import MAX_HALFWIDTH

    rhos = [float(rho1)] if rho2 is None else [float(rho1), float(rho2)]
    labels = list(names[:len(rhos)])
    cell = rhos[0] / 2.0  # one cell of the DAS's noise: sigma^2 = 1/rho1, rho = 1/(2 sigma^2)
    half = _halfwidth(cell, DEFAULT_TAIL_MASS)
    if half > MAX_HALFWIDTH:
        least = 2.0 * smallest_rho(MAX_HALFWIDTH, DEFAULT_TAIL_MASS)
        raise _too_small(labels[0], rhos[0], "the block's answers at the DAS's noise (the "
                         "replace-one lattice sum of two cells of variance 1/rho1)",
                         2 * half + 1, f"half-width <= {MAX_HALFWIDTH}, i.e. {labels[0]} >= "
                         f"{rounded_up(least)}")
    _check_atoms(rhos, labels, len(priors))
    _check_cks(rhos, labels, delta)
    _check_pld(rhos, labels)
    lattice, pairs = (2 * half + 1) ** 2 * LATTICE_STEPS, 0.0
    if len(rhos) > 1:
        from dprisk.inference.nested.unique_levels_kernels import TAIL_ABSOLUTE

        _check_contour(rhos, labels, priors)
        pairs = len(priors) * PAIR_STEPS * math.prod(
            2.0 * _halfwidth(rho, TAIL_ABSOLUTE / 2) + 1.0 for rho in rhos)
    # named: rho1 when the lattice (rho1 alone) is the larger part, else both
    check_work(lattice + pairs, parameter=labels[0] if lattice >= pairs else " and ".join(labels),
               what="the marginal posteriors and the answers at the DAS's noise")


def _check_contour(rhos: list[float], names: list[str], priors) -> None:
    """The two-level marginal posterior's contour integral, when its ``auto`` rule takes it.

    Only when the contour would be above the memory limit is the rule asked (its plan builds
    the sweep's atoms when they fit), once per prior, as the summary will.
    """
    from dprisk.inference.nested.unique_levels import choose_method, contour_memory
    from dprisk.runtime.memory_limit import memory_limit

    values = np.asarray(rhos)
    nbytes = contour_memory(values)
    if nbytes <= memory_limit():
        return
    for prior in priors:
        if choose_method(values, np.asarray(float(prior)))[0] == "contour":
            check_memory(nbytes, parameter=names[int(np.argmin(rhos))],
                         what=f"the marginal posterior's contour integral over the window of "
                         f"rho = {min(rhos):.3g}")


def check_one_level_size(rho: float, p: float, *, name: str = "rho") -> None:
    """The sizing of the single-level design measures and worst-case accuracy at ``rho``, ``p``.

    The closed form's window (:mod:`dprisk.inference.single_level.closed_form_kernels`, tail
    ``TAIL_RELATIVE x p``; an invalid ``p`` is counted at 1/2 and refused later) and the exact
    worst-case atoms. Messages start ``"{name}: …"``.
    """
    from dprisk.inference.single_level.closed_form_kernels import TAIL_RELATIVE

    prior = float(p) if isinstance(p, (int, float)) and 0.0 < p < 1.0 else 0.5
    width = 2.0 * _halfwidth(float(rho), max(TAIL_RELATIVE * prior, 1e-300)) + 1.0
    _check_atoms([float(rho)], [name], 1)
    what = f"the closed-form sums over {width:.3g} releases"
    check_memory(width * CLOSED_BYTES, parameter=name, what=what)
    check_work(width * CLOSED_STEPS, parameter=name, what=what)
