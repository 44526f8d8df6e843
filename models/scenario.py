r"""Validated value objects of the two-level and nested models: :class:`Scenario`, :class:`Release`.

A scenario is everything the adversary assumes except the released numbers (paper §3.2,
supplement S3; the nested generalisation of :mod:`dprisk.models.builders.nested`):

* ``rhos`` -- :math:`\rho_1, \dots, \rho_h` (block level first, ``h >= 2``);
* ``siblings`` -- :math:`d_2, \dots, d_h`, the sibling level-(ℓ-1) units inside the level-ℓ
  unit (``d`` of the two-level model);
* ``p`` -- :math:`P[X_1 = m + 1]`; ``known`` -- :math:`m`;
* ``priors`` -- the prior :math:`w_\ell` of :math:`X_\ell \mid X_{\ell-1}` per level above the
  first (:mod:`dprisk.models.priors.library`).

A release holds the noisy counts :math:`x_1^*, \dots, x_h^*` and sibling sums
:math:`y_1^*, \dots, y_{h-1}^*` (scalars or a batch). Both are checked once, by their
constructors (:meth:`Scenario.two_level`, :meth:`Scenario.nested`, :meth:`Release.two_level`,
:meth:`Release.nested`), with the validators of :mod:`dprisk.models.checks`; the public entry
points of :mod:`dprisk.inference` build them from their arguments and hand the validated
objects to kernels that do not check again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from dprisk.models.checks import check_count, check_positive_int, check_probability, check_rho
from dprisk.models.priors.base import check_prior_values
from dprisk.models.priors.library import (
    X2Prior,
    as_prior,
    check_log_weight_override,
    parse_prior,
)

__all__ = [
    "Release",
    "Scenario",
    "nested_scenario",
    "scalar_value",
    "two_level_scenario",
]

#: Stand-in for +infinity when evaluating a prior's upper support end (see :meth:`level_bounds`).
_HUGE = 2**52
#: The smallest prior p a two-level or nested scenario takes: below it the posterior P[X1 = m+1 |
#: D], about p times a likelihood ratio, is subnormal and loses its digits (at p = 5e-324 the
#: risk came out 2.0 for 1.7254); every posterior form of the command line refuses the same.
P_MIN = 1e-300


def scalar_value(array: np.ndarray, name: str):
    """The single value of a checked 0-d array; ``ValueError`` naming ``name`` otherwise."""
    if np.ndim(array) != 0:
        raise ValueError(
            f"{name} must be a scalar (a single number), got an array of shape {np.shape(array)}"
        )
    return np.asarray(array)[()]


def _level_list(values, name: str, what: str) -> list:
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise ValueError(f"{name} must be a list of {what}, got {values!r}")
    return list(np.ravel(values)) if isinstance(values, np.ndarray) else list(values)


def _prior_list(prior, h: int) -> list[X2Prior]:
    """One prior for every level, or ``h - 1`` of them (a list, or specs joined by ``;``)."""
    if isinstance(prior, str) and ";" in prior:
        prior = [part.strip() for part in prior.split(";")]
    if isinstance(prior, (str, X2Prior)):
        return [parse_prior(prior)] * (h - 1)
    raw = _level_list(prior, "prior", f"h - 1 = {h - 1} prior specs")
    if len(raw) != h - 1:
        raise ValueError(
            f"prior must be one prior or a list of h - 1 = {h - 1} priors "
            f"(X2 | X1 first), got {len(raw)}"
        )
    return [parse_prior(spec) for spec in raw]


@dataclass(frozen=True)
class Scenario:
    r"""The validated assumptions of the nested model (``h = 2``: the two-level model).

    Build it with :meth:`two_level` or :meth:`nested` (which check every value); the fields
    are then trusted by every kernel.

    Attributes
    ----------
    rhos : tuple of float (> 0), length h >= 2
        :math:`\rho_1, \dots, \rho_h`, block level first.
    siblings : tuple of int (>= 1), length h - 1
        :math:`d_2, \dots, d_h` (``(d,)`` for two levels).
    p : float (0 < p < 1)
        Prior probability ``P[X1 = known + 1]``.
    known : int (known >= 0)
        ``m``, the adversary's count of the other people in the block with characteristics c.
    priors : tuple of X2Prior, length h - 1
        ``priors[ℓ - 2]`` is the prior of ``X_ℓ`` given ``X_{ℓ-1}``.
    """

    rhos: tuple[float, ...]
    siblings: tuple[int, ...]
    p: float
    known: int
    priors: tuple[X2Prior, ...]

    @classmethod
    def two_level(cls, rho1, rho2, d, *, p=0.5, known=0, prior="improper") -> Scenario:
        """The two-level scenario (block, block group), every value checked once.

        ``prior`` is a spec string (``improper``, ``truncated:U``, ``point:K``,
        ``PATH.py:NAME``) or an :class:`dprisk.models.priors.library.X2Prior`.

        Raises
        ------
        ValueError
            One line naming the parameter (``rho1``, ``rho2``, ``d``, ``p``, ``known``,
            ``prior``) and its allowed range (``TypeError`` for a value that is not a number).
        """
        rho1 = float(scalar_value(check_rho(rho1, "rho1"), "rho1"))
        rho2 = float(scalar_value(check_rho(rho2, "rho2"), "rho2"))
        d = check_positive_int(d, "d")
        return cls._finish((rho1, rho2), (d,), p, known, lambda: [as_prior(prior)])

    @classmethod
    def nested(cls, rhos, siblings, *, p=0.5, known=0, prior="improper") -> Scenario:
        """The ``h``-level scenario, every value checked once.

        ``prior`` is one prior (spec string or :class:`dprisk.models.priors.library.X2Prior`) used
        at
        every level, or ``h - 1`` of them (``X2 | X1`` first) as a list or as one string of
        specs separated by ``;`` (e.g. ``"truncated:30;point:12"``, the command-line form).

        Raises
        ------
        ValueError
            One line naming the parameter (``rhos: rho_ℓ``, ``siblings: d_ℓ``, ``p``,
            ``known``, ``prior``).
        """
        rho_list = _level_list(rhos, "rhos", "h >= 2 numbers rho_1, ..., rho_h")
        if len(rho_list) < 2:
            raise ValueError(
                f"rhos must have at least 2 entries (h >= 2 levels), got {len(rho_list)}"
            )
        h = len(rho_list)
        rho_values = tuple(
            float(scalar_value(check_rho(r, f"rhos: rho_{i + 1}"), f"rhos: rho_{i + 1}"))
            for i, r in enumerate(rho_list)
        )
        d_list = _level_list(siblings, "siblings", f"h - 1 = {h - 1} integers >= 1")
        if len(d_list) != h - 1:
            raise ValueError(
                f"siblings must have h - 1 = {h - 1} entries (d_2, ..., d_h), got {len(d_list)}"
            )
        d_values = tuple(
            check_positive_int(int(d) if isinstance(d, np.integer) else d, f"siblings: d_{i + 2}")
            for i, d in enumerate(d_list)
        )
        return cls._finish(rho_values, d_values, p, known, lambda: _prior_list(prior, h))

    @classmethod
    def _finish(cls, rhos, siblings, p, known, parse_priors) -> Scenario:
        p = float(scalar_value(check_probability(p, "p"), "p"))
        if not p >= P_MIN:
            raise ValueError(f"p must be at least {P_MIN:g} (allowed range: {P_MIN:g} <= p < 1; "
                             f"below it the posterior loses its digits), got {p!r}")
        known = int(scalar_value(check_count(known, "known", minimum=0), "known"))
        priors = parse_priors()  # after p and known, the order of the checks before
        for prior in {id(pr): pr for pr in priors}.values():  # each prior object once
            check_prior_values(prior, known)  # untrusted code first: support() may raise
            check_log_weight_override(prior, known)  # a subclass's numpy form: logp's
        priors[0].check_support(known)
        scenario = cls(tuple(rhos), tuple(siblings), p, known, tuple(priors))
        if len(priors) > 1 and not any(scenario.feasible):
            specs = ", ".join(pr.spec for pr in priors)
            raise ValueError(
                f"prior ({specs}) leaves no possible X_2, ..., X_h for X1 = {known} or "
                f"{known + 1}: every level needs a value >= the level below"
            )
        return scenario

    def at(self, *, rhos=None, p=None) -> Scenario:
        """The scenario with other ``rhos`` and/or ``p``, *not* checked again (trusted).

        For searches and loops over values inside a range whose ends were validated (the
        budget searches over rho, the tail's shifted prior in ``(0, 1)``): the caller
        guarantees every ``rho > 0`` and ``0 < p < 1``. Priors, siblings and ``known`` are
        unchanged, so their checks still hold.
        """
        return replace(
            self, rhos=self.rhos if rhos is None else tuple(float(r) for r in rhos),
            p=self.p if p is None else float(p))

    # -- convenience -----------------------------------------------------------------------
    @property
    def h(self) -> int:
        """Number of levels."""
        return len(self.rhos)

    # The two-level names of the first fields (``rho1, rho2, d, prior``).
    rho1 = property(lambda self: self.rhos[0], doc="zCDP parameter of the block level.")
    rho2 = property(lambda self: self.rhos[1], doc="zCDP parameter of the block-group level.")
    d = property(lambda self: self.siblings[0], doc="Other blocks in the block group (d_2).")
    prior = property(lambda self: self.priors[0], doc="The prior of X2 given X1.")

    @property
    def precision(self) -> float:
        """``A = rho2 + rho1/d``: ``X2 | X1`` is proportional to ``exp(-A (k2 - c)^2)``."""
        return self.rho2 + self.rho1 / self.d

    @property
    def pair_precisions(self) -> tuple[float, ...]:
        r"""``rho_{ℓ-1} / d_ℓ`` for ``ℓ = 2..h``: precision of the ``y_{ℓ-1}*`` factor."""
        return tuple(self.rhos[i] / self.siblings[i] for i in range(self.h - 1))

    @property
    def log_prior_x1(self) -> tuple[float, float]:
        """``(log P[X1 = m], log P[X1 = m + 1])``."""
        return math.log1p(-self.p), math.log(self.p)

    @property
    def log_weight_max(self) -> float:
        """Sum over levels of the priors' ``log_weight_max`` (bounds the product of weights)."""
        return float(sum(pr.log_weight_max for pr in self.priors))

    def level_bounds(self, k1: int) -> list[tuple[int, int | None]] | None:
        """Interval ``(lo, hi)`` holding every possible ``X_ℓ`` (ℓ = 1..h) given ``X1 = k1``.

        ``hi`` is ``None`` when unbounded; returns ``None`` if ``X1 = k1`` leaves no possible
        chain. Assumes each prior's support is an interval with both ends non-decreasing in
        the level below (see :mod:`dprisk.models.builders.nested`).
        """
        lo, hi = int(k1), int(k1)
        bounds = [(lo, hi)]
        for prior in self.priors:
            support = prior.branch_support(lo)
            if support is None:
                return None
            new_lo = support[0]
            # upper(k) does not decrease in k: its largest value on [lo, hi] is upper(hi).
            upper = prior.support(_HUGE if hi is None else hi)[1]
            new_hi = None if upper is None or int(upper) >= _HUGE else int(upper)
            lo, hi = new_lo, new_hi
            if hi is not None and hi < lo:
                return None
            bounds.append((lo, hi))
        return bounds

    @property
    def feasible(self) -> tuple[bool, bool]:
        """Whether ``X1 = m`` and ``X1 = m + 1`` leave a possible chain ``X_2, ..., X_h``."""
        return tuple(self.level_bounds(self.known + b) is not None for b in (0, 1))

    def parameters(self) -> dict:
        """The two-level keyword arguments ``rho1, rho2, d, p, known, prior`` (``h = 2``)."""
        return {"rho1": self.rho1, "rho2": self.rho2, "d": self.d, "p": self.p,
                "known": self.known, "prior": self.prior}

    def attrs(self) -> dict:
        """Plain attributes recording the scenario (for xarray results): see :meth:`from_attrs`.

        Two levels: ``rho1, rho2, d, p, known, prior`` (the prior's spec); more levels:
        ``rhos, siblings`` (lists), ``p, known`` and ``prior`` (specs joined by ``;``).
        """
        if self.h == 2:
            return {**self.parameters(), "prior": self.prior.spec}
        return {"rhos": list(self.rhos), "siblings": list(self.siblings), "p": self.p,
                "known": self.known, "prior": ";".join(pr.spec for pr in self.priors)}

    @classmethod
    def from_attrs(cls, attrs) -> Scenario:
        """The scenario recorded by :meth:`attrs` (validated again: attrs may come from a file)."""
        common = {"p": attrs["p"], "known": attrs["known"], "prior": attrs.get("prior", "improper")}
        if "rhos" in attrs:
            return cls.nested(attrs["rhos"], attrs["siblings"], **common)
        return cls.two_level(attrs["rho1"], attrs["rho2"], attrs["d"], **common)


def two_level_scenario(scenario: Scenario | None = None, /, **parameters) -> Scenario:
    """The entry points' scenario: ``scenario``, or :meth:`Scenario.two_level` of ``parameters``.

    ``parameters`` are the loose keywords ``rho1, rho2, d, p, known, prior`` (not both forms).

    Raises
    ------
    TypeError
        Both forms given, an unknown keyword, a missing ``rho1``/``rho2``/``d``, or a
        ``scenario`` that is not a :class:`Scenario`.
    ValueError
        A bad parameter (naming it), or a scenario with other than two levels.
    """
    if scenario is None:
        return Scenario.two_level(**parameters)
    _check_given(scenario, parameters)
    if scenario.h != 2:
        raise ValueError(f"scenario must have h = 2 levels here, got h = {scenario.h}")
    return scenario


def nested_scenario(scenario: Scenario | None = None, /, **parameters) -> Scenario:
    """``scenario`` itself, or :meth:`Scenario.nested` of ``rhos, siblings, p, known, prior``."""
    if scenario is None:
        return Scenario.nested(**parameters)
    _check_given(scenario, parameters)
    return scenario


def _check_given(scenario, parameters) -> None:
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a Scenario, got {type(scenario).__name__}")
    if parameters:
        raise TypeError(
            f"give either scenario= or the parameters ({', '.join(sorted(parameters))}), not both"
        )


@dataclass(frozen=True)
class Release:
    r"""Validated releases of the nested model: noisy counts and sibling sums, as int64.

    Attributes
    ----------
    x_stars : ndarray of int64, shape ``S + (h,)``
        :math:`x_1^*, \dots, x_h^*` on the last axis (batch shape ``S``, ``()`` for one).
    y_stars : ndarray of int64, shape ``S + (h - 1,)``
        :math:`y_1^*, \dots, y_{h-1}^*` on the last axis.
    """

    x_stars: np.ndarray
    y_stars: np.ndarray

    @classmethod
    def two_level(cls, x1_star, x2_star, y1_star, *, single: bool = False) -> Release:
        """``(x1*, x2*, y1*)``, integers or integer arrays that broadcast to a batch shape.

        With ``single``, each must be one integer (``ValueError`` naming it otherwise).
        """
        named = (("x1_star", x1_star), ("x2_star", x2_star), ("y1_star", y1_star))
        x1s, x2s, y1s = (check_count(value, name, nonempty=True) for name, value in named)
        if single:
            for (name, _), array in zip(named, (x1s, x2s, y1s), strict=True):
                scalar_value(array, name)
        shape = np.broadcast_shapes(x1s.shape, x2s.shape, y1s.shape)
        x1s, x2s, y1s = (np.broadcast_to(a, shape) for a in (x1s, x2s, y1s))
        return cls(np.stack([x1s, x2s], -1), y1s[..., None])

    @classmethod
    def nested(cls, x_stars, y_stars, *, h: int) -> Release:
        """``x_stars`` of shape ``S + (h,)`` and ``y_stars`` of shape ``S + (h - 1,)``.

        The batch shapes broadcast. ``ValueError`` names ``x_stars`` or ``y_stars``.
        """
        xs = check_count(x_stars, "x_stars", nonempty=True)
        ys = check_count(y_stars, "y_stars", nonempty=True)
        if xs.ndim == 0 or xs.shape[-1] != h:
            raise ValueError(
                f"x_stars must have h = {h} entries x_1*, ..., x_h* (last axis), "
                f"got shape {xs.shape}"
            )
        if ys.ndim == 0 or ys.shape[-1] != h - 1:
            raise ValueError(
                f"y_stars must have h - 1 = {h - 1} entries y_1*, ..., y_(h-1)* (last axis), "
                f"got shape {ys.shape}"
            )
        try:
            shape = np.broadcast_shapes(xs.shape[:-1], ys.shape[:-1])
        except ValueError:
            raise ValueError(
                f"x_stars and y_stars must have broadcastable batch shapes, got "
                f"{xs.shape[:-1]} and {ys.shape[:-1]}"
            ) from None
        return cls(np.broadcast_to(xs, (*shape, h)), np.broadcast_to(ys, (*shape, h - 1)))

    @property
    def h(self) -> int:
        """Number of levels."""
        return self.x_stars.shape[-1]

    @property
    def shape(self) -> tuple[int, ...]:
        """The batch shape ``S``."""
        return self.x_stars.shape[:-1]

    @property
    def size(self) -> int:
        """Number of releases in the batch."""
        return math.prod(self.shape)

    @property
    def x1_star(self) -> np.ndarray:
        """:math:`x_1^*`, shape ``S``."""
        return self.x_stars[..., 0]

    @property
    def x2_star(self) -> np.ndarray:
        """:math:`x_2^*`, shape ``S``."""
        return self.x_stars[..., 1]

    @property
    def y1_star(self) -> np.ndarray:
        """:math:`y_1^*`, shape ``S``."""
        return self.y_stars[..., 0]

    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """``(xs (R, h), ys (R, h - 1))``: the batch flattened to ``R`` releases."""
        h = self.h
        return self.x_stars.reshape(-1, h), self.y_stars.reshape(-1, h - 1)

    def one(self, what: str) -> tuple[int, ...]:
        """The single release as Python ints ``(x_1*, ..., x_h*, y_1*, ...)``.

        Raises
        ------
        ValueError
            For a batch: ``what`` takes one release.
        """
        if self.shape != ():
            raise ValueError(f"{what} takes one release, got batch shape {self.shape}")
        return tuple(int(v) for v in (*self.x_stars, *self.y_stars))
