"""A slow, separately written reference for the product's likelihood (exact rationals).

Written apart from :mod:`dprisk.inference.product.exact`: it enumerates every noise vector
``(e_0, ..., e_d, e')`` in a box, finds the projection by trying every active set (the one
whose threshold makes exactly its members positive) in :class:`fractions.Fraction`, rounds
by largest remainders listing every tie-break subset with ``itertools.combinations``, and
accumulates a dictionary of product values. Only for tiny grids (large rho).
"""

from __future__ import annotations

import functools
import itertools
import math
from fractions import Fraction


def dg_weights(rho: float, half: int) -> dict[int, float]:
    """DG(0, 1/(2 rho)) pmf on [-half, half], normalised over a much wider range."""
    z = sum(math.exp(-rho * k * k) for k in range(-200, 201))
    return {k: math.exp(-rho * k * k) / z for k in range(-half, half + 1)}


@functools.cache
def project(b: tuple[int, ...], s: int) -> list[Fraction]:
    """Euclidean projection of ``b`` onto {z >= 0, sum z = s}: try every active set."""
    if s == 0:
        return [Fraction(0)] * len(b)
    for size in range(1, len(b) + 1):
        for subset in itertools.combinations(range(len(b)), size):
            # tau = excess / size; b_i > tau compared exactly in integers as b_i size > excess
            excess = sum(b[i] for i in subset) - s
            inside = all(b[i] * size > excess for i in subset)
            outside = all(b[i] * size <= excess for i in range(len(b)) if i not in subset)
            if inside and outside:
                tau = Fraction(excess, size)
                return [max(Fraction(0), b[i] - tau) for i in range(len(b))]
    raise AssertionError("no active set")


def round_outcomes(z: list[Fraction], s: int) -> list[tuple[tuple[int, ...], Fraction]]:
    """Largest remainders; ties among the boundary fractional parts broken uniformly."""
    floors = [math.floor(v) for v in z]
    fracs = [v - f for v, f in zip(z, floors, strict=True)]
    r = s - sum(floors)
    if r == 0:
        return [(tuple(floors), Fraction(1))]
    order = sorted(set(fracs), reverse=True)
    taken: list[int] = []
    for level in order:
        tied = [i for i, f in enumerate(fracs) if f == level]
        if len(taken) + len(tied) <= r:
            taken += tied
            continue
        need = r - len(taken)
        subsets = list(itertools.combinations(tied, need))
        out = []
        for sub in subsets:
            v = list(floors)
            for i in taken + list(sub):
                v[i] += 1
            out.append((tuple(v), Fraction(1, len(subsets))))
        return out
    raise AssertionError("remainder not placed")


def product_likelihood(rho1, rho2, others, m, invariant, half1, half2):
    """``{(x~2, b~0..b~d): [P | k = m, P | k = m + 1]}`` by brute force."""
    w1, w2 = dg_weights(rho1, half1), dg_weights(rho2, half2)
    table: dict[tuple, list[float]] = {}
    for h, k in enumerate((m, m + 1)):
        counts = [k, *others]
        x2 = sum(counts)
        for noise in itertools.product(range(-half1, half1 + 1), repeat=len(counts)):
            p_blocks = math.prod(w1[e] for e in noise)
            b_star = [c + e for c, e in zip(counts, noise, strict=True)]
            parents = {x2: 1.0} if invariant == "block-group" else {}
            if invariant == "none":
                for e2, pe in w2.items():
                    s = max(0, x2 + e2)
                    parents[s] = parents.get(s, 0.0) + pe
            for s, ps in parents.items():
                for v, pv in _rounded_projection(tuple(b_star), s):
                    key = (s, *v)
                    table.setdefault(key, [0.0, 0.0])[h] += p_blocks * ps * pv
    return table


@functools.cache
def _rounded_projection(b: tuple[int, ...], s: int) -> list[tuple[tuple[int, ...], float]]:
    """:func:`round_outcomes` of :func:`project`, probabilities as floats, once per ``(b, s)``
    (the noise boxes of the two hypotheses overlap, so most pairs recur)."""
    return [(v, float(pv)) for v, pv in round_outcomes(project(b, s), s)]


def noisy_likelihood(rho1, rho2, others, m, half1, half2):
    """``{(b0*, x2*): [P | m, P | m + 1]}`` by brute force over the noise."""
    w1, w2 = dg_weights(rho1, half1), dg_weights(rho2, half2)
    table: dict[tuple, list[float]] = {}
    for h, k in enumerate((m, m + 1)):
        for e0, p0 in w1.items():
            for e2, p2 in w2.items():
                key = (k + e0, k + sum(others) + e2)
                table.setdefault(key, [0.0, 0.0])[h] += p0 * p2
    return table
