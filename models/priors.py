r"""Priors for the block-group count X2 given the block count X1 = k1 (paper §3.2 and S4).

One prior object serves every method: exact enumeration and the hand-written Gibbs sampler
use its numpy :meth:`X2Prior.log_weight`, the PyMC model uses :meth:`X2Prior.declare`.
Every method targets the same joint posterior (DESIGN.md §3)

.. math::

    \pi(k_1, k_2) \propto P[X_1 = k_1]\, w(k_2 \mid k_1)\,
        e^{-\rho_1 (x_1^* - k_1)^2}\, e^{-\rho_2 (x_2^* - k_2)^2}\,
        e^{-(\rho_1/d)(y_1^* - (k_2 - k_1))^2},

where ``w(k2 | k1) = P[X2 = k2 | X1 = k1]`` (or an improper weight) and ``w = 0`` unless
``k2 >= k1``: the model's constraint is part of every prior's ``log_weight``.

Built-in priors (``spec`` strings accepted by :func:`parse_prior`):

* ``improper`` -- :class:`ImproperUniform`, weight 1 on {k1, k1+1, ...} (the paper's default);
* ``truncated:U`` -- :class:`TruncatedUniform`, ``1/(U - k1 + 1)`` on {k1, ..., U} (S4);
* ``point:K`` -- :class:`PointMass`, all mass at K; ``X1 = k1 > K`` becomes impossible (S4).

Writing your own prior
----------------------
Define the log weight ONCE as a PyTensor expression of ``(k2, k1)``; the numpy version used
by the exact and Gibbs methods is compiled from it (and cached), the PyMC model uses it
directly. Put it in a Python file and pass ``PATH.py:NAME`` wherever a prior is accepted::

    # my_prior.py -- a negative-binomial belief about X2 - X1
    import numpy as np
    import pymc as pm

    from dprisk.models.priors import UserPrior


    def nb_logp(k2, k1):
        # k2, k1: int64 PyTensor tensors (broadcast against each other)
        mu, alpha = np.float64(5.0), np.float64(2.0)
        return pm.logp(pm.NegativeBinomial.dist(mu=mu, alpha=alpha), k2 - k1)


    prior = UserPrior(nb_logp, description="X2 - X1 ~ NegBin(mean 5, alpha 2)")

then ``parse_prior("my_prior.py:prior")``. ``NAME`` may also be a zero-argument function
returning a prior. Rules for the expression:

* it returns ``log P[X2 = k2 | X1 = k1]`` (or a log weight for an improper prior) and may
  return ``-inf`` off its support; the constraint ``k2 >= k1`` is added for you;
* pass ``support=lambda k1: (lower, upper_or_None)`` if the prior lives on a narrower set than
  {k1, k1+1, ...}; write it with plain arithmetic so it works on ints and on tensors;
* weights must be bounded: ``log w <= log_weight_max`` (0, the default, holds for every
  proper prior). The exact and Gibbs methods use this bound to certify the neglected mass of
  their finite k2 grids, so an improper prior with weights above 1 must say so;
* set ``is_proper=False`` for an improper prior;
* write float constants as ``np.float64(5.0)``: PyTensor turns a bare ``5.0`` into a float32
  constant and the whole expression may then be computed in single precision.

A subclass of :class:`X2Prior` that implements :meth:`X2Prior.logp` works the same way.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dprisk.models.checks import check_count

__all__ = [
    "PRIOR_FORMS",
    "ImproperUniform",
    "PointMass",
    "TruncatedUniform",
    "UserPrior",
    "X2Prior",
    "as_prior",
    "check_support",
    "load_prior",
    "parse_prior",
]

#: The accepted prior specifications, quoted in every error message.
PRIOR_FORMS = "improper, truncated:U (integer U), point:K (integer K), or PATH.py:NAME"


def _as_int_array(value, name: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    return check_count(arr, name)


def _pt():
    import pytensor.tensor as pt

    return pt


def _pt_switch_inf(condition, value):
    """``switch(condition, value, -inf)`` in float64 (a bare ``-np.inf`` can give float32)."""
    pt = _pt()
    value = pt.cast(value, "float64")
    return pt.switch(condition, value, pt.constant(-np.inf, dtype="float64"))


class X2Prior(ABC):
    r"""Base class of the priors for X2 given X1 = k1.

    Subclasses implement :meth:`logp` (a PyTensor expression) and may override
    :meth:`support`, :meth:`log_weight` (a faster numpy version) and :meth:`declare`.

    Attributes
    ----------
    spec : str
        A specification that :func:`parse_prior` turns back into an equivalent prior.
    is_proper : bool
        Whether ``w(. | k1)`` sums to one for every ``k1``.
    log_weight_max : float
        An upper bound of ``log w(k2 | k1)`` over all ``k2, k1`` (0 for proper priors and for
        the improper uniform). Grids use it to bound the posterior mass they leave out.
    description : str
        A human-readable one-line description.
    """

    spec: str = "user"
    is_proper: bool = True
    log_weight_max: float = 0.0
    description: str = ""

    # -- to implement ----------------------------------------------------------------------
    @abstractmethod
    def logp(self, k2, k1):
        """Log prior weight of ``X2 = k2`` given ``X1 = k1`` as a PyTensor expression.

        ``k2`` and ``k1`` are int64 tensors. The constraint ``k2 >= k1`` and :meth:`support`
        are applied on top by :meth:`log_weight_pt`.
        """

    def support(self, k1):
        """The prior's own support ``(lower, upper_or_None)`` given ``X1 = k1``.

        This is the set of ``k2`` with positive prior weight before the model's constraint
        ``k2 >= k1``; use :meth:`branch_support` for the intersection. Written with plain
        arithmetic so that ``k1`` may be an int or a PyTensor tensor. Default:
        ``(k1, None)``.
        """
        return k1, None

    # -- derived ---------------------------------------------------------------------------
    def branch_support(self, k1: int) -> tuple[int, int | None] | None:
        """Support of ``X2 | X1 = k1`` under the model: ``support(k1)`` and ``k2 >= k1``.

        Returns ``(lower, upper_or_None)`` as ints, or ``None`` when it is empty.
        """
        k1 = int(k1)
        lower, upper = self.support(k1)
        lower = max(int(lower), k1)
        if upper is not None:
            upper = int(upper)
            if upper < lower:
                return None
        return lower, upper

    def has_support(self, k1: int) -> bool:
        """Whether ``X1 = k1`` leaves at least one possible value of ``X2``."""
        return self.branch_support(k1) is not None

    def feasible_x1(self, known: int) -> tuple[int, ...]:
        """The values of X1 in {known, known + 1} that leave a possible X2 (ascending).

        A model builder starts X1 at one of these (e.g. the Bernoulli's ``initval``).
        """
        return tuple(k1 for k1 in (int(known), int(known) + 1) if self.has_support(k1))

    def check_support(self, known: int) -> None:
        """Raise ``ValueError`` unless both X1 = known and X1 = known + 1 leave a possible X2.

        :class:`PointMass` relaxes this: it only needs X1 = known (a point mass at ``known``
        expresses the belief that the target is not counted, ``X1 = known + 1`` impossible).
        """
        for k1 in (int(known), int(known) + 1):
            if not self.has_support(k1):
                raise ValueError(
                    f"prior {self.spec!r} leaves no possible X2 when X1 = {k1} (known = {known}); "
                    f"the support of X2 | X1 = k1 must contain a value >= k1 for "
                    f"k1 = known and known + 1 (prior forms: {PRIOR_FORMS})"
                )

    def log_weight_pt(self, k2, k1):
        """:meth:`logp` restricted to :meth:`support` and ``k2 >= k1`` (float64, PyTensor)."""
        pt = _pt()
        k2 = pt.as_tensor_variable(k2)
        k1 = pt.as_tensor_variable(k1)
        lower, upper = self.support(k1)
        inside = pt.ge(k2, k1) & pt.ge(k2, lower)
        if upper is not None:
            inside = inside & pt.le(k2, upper)
        return _pt_switch_inf(inside, self.logp(k2, k1))

    def _compiled(self):
        fn = self.__dict__.get("_compiled_log_weight")
        if fn is None:
            import pytensor

            pt = _pt()
            k2 = pt.lvector("k2")
            k1 = pt.lvector("k1")
            fn = pytensor.function([k2, k1], self.log_weight_pt(k2, k1))
            # Cached on the instance (works for frozen dataclasses too).
            object.__setattr__(self, "_compiled_log_weight", fn)
        return fn

    def log_weight(self, k2, k1) -> np.ndarray:
        r"""Log prior weight :math:`\log w(k_2 \mid k_1)` in numpy (broadcasting).

        The default compiles :meth:`log_weight_pt` once (cached on the instance).

        Parameters
        ----------
        k2, k1 : array_like of int
            Values of X2 and X1 (broadcast against each other).

        Returns
        -------
        ndarray of float64
            ``log P[X2 = k2 | X1 = k1]`` (or the improper log weight); ``-inf`` where
            ``k2 < k1`` or outside :meth:`support`.

        Raises
        ------
        ValueError
            If the prior's expression gives NaN or a value above ``log_weight_max``.
        """
        k2 = _as_int_array(k2, "k2")
        k1 = _as_int_array(k1, "k1")
        shape = np.broadcast_shapes(k2.shape, k1.shape)
        flat2 = np.ascontiguousarray(np.broadcast_to(k2, shape)).ravel()
        flat1 = np.ascontiguousarray(np.broadcast_to(k1, shape)).ravel()
        out = np.asarray(self._compiled()(flat2, flat1), dtype=float)
        out = np.broadcast_to(out, flat2.shape).reshape(shape)
        if np.isnan(out).any() or (out > self.log_weight_max + 1e-9).any():
            raise ValueError(
                f"prior {self.spec!r}: log weight is NaN or above log_weight_max = "
                f"{self.log_weight_max} for some (k2, k1); fix the expression or the bound"
            )
        return out

    def initial_value(self, x1):
        """A value of X2 inside the support given ``X1 = x1`` (ints or tensors).

        Default: the lower end of the support, ``max(support(x1)[0], x1)``.
        """
        lower, _ = self.support(x1)
        if isinstance(x1, (int, np.integer)) and isinstance(lower, (int, np.integer)):
            return max(int(lower), int(x1))
        return _pt().maximum(lower, x1)

    def declare(self, name: str, x1, **kwargs):
        """Add X2 to the current ``pm.Model`` given the X1 tensor ``x1``; returns X2.

        Default: an int64 ``pm.CustomDist`` with logp :meth:`log_weight_pt` and
        :meth:`initial_value` as its support point. Keyword arguments go to the
        distribution (e.g. ``dims``, ``initval``).
        """
        import pymc as pm

        pt = _pt()

        def support_point(rv, size, x1_param):
            return pt.cast(pt.broadcast_to(self.initial_value(x1_param), rv.shape), "int64")

        return pm.CustomDist(
            name,
            x1,
            logp=lambda value, x1_param: self.log_weight_pt(value, x1_param),
            support_point=support_point,
            dtype="int64",
            **kwargs,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(spec={self.spec!r})"


class ImproperUniform(X2Prior):
    r"""Improper uniform prior on {k1, k1 + 1, ...}: :math:`w(k_2 \mid k_1) = 1[k_2 \ge k_1]`.

    The paper's default (§3.2): weight one per state in each branch ``k1``.
    """

    spec = "improper"
    is_proper = False
    log_weight_max = 0.0
    description = "improper uniform on {k1, k1+1, ...}"

    def logp(self, k2, k1):
        """Zero log weight (the support ``k2 >= k1`` is applied by :meth:`log_weight_pt`)."""
        return _pt().zeros_like(k2, dtype="float64")

    def log_weight(self, k2, k1) -> np.ndarray:
        """``0`` where ``k2 >= k1``, else ``-inf`` (numpy, broadcasting)."""
        k2 = _as_int_array(k2, "k2")
        k1 = _as_int_array(k1, "k1")
        return np.where(k2 >= k1, 0.0, -np.inf)

    def declare(self, name: str, x1, **kwargs):
        """An int64 ``pm.CustomDist`` with logp ``switch(X2 >= X1, 0, -inf)``, starting at X1."""
        import pymc as pm

        pt = _pt()

        def logp(value, lower):
            return _pt_switch_inf(pt.ge(value, lower), pt.constant(0.0, dtype="float64"))

        def support_point(rv, size, lower):
            return pt.cast(pt.broadcast_to(lower, rv.shape), "int64")

        return pm.CustomDist(
            name, x1, logp=logp, support_point=support_point, dtype="int64", **kwargs
        )

    def __eq__(self, other) -> bool:
        return type(other) is ImproperUniform

    def __hash__(self) -> int:
        return hash(type(self))


class TruncatedUniform(X2Prior):
    r"""Uniform prior on {k1, ..., U}: :math:`w(k_2 \mid k_1) = 1/(U - k_1 + 1)` (supplement S4).

    A proper conditional distribution for every ``k1 <= U``; for ``k1 > U`` it is empty, and
    :meth:`check_support` rejects ``U < known + 1``.

    Parameters
    ----------
    upper : int (upper >= 0)
        The largest value of X2 the adversary considers possible.
    """

    is_proper = True
    log_weight_max = 0.0

    def __init__(self, upper: int):
        self.upper = int(check_count(upper, "upper", minimum=0))
        self.spec = f"truncated:{self.upper}"
        self.description = f"uniform on {{k1, ..., {self.upper}}}"

    def support(self, k1):
        """``(k1, upper)``."""
        return k1, self.upper

    def logp(self, k2, k1):
        """``-log(U - k1 + 1)`` (the support is applied by :meth:`log_weight_pt`)."""
        pt = _pt()
        count = pt.maximum(self.upper - k1 + 1, 1)
        return -pt.log(pt.cast(count, "float64")) + pt.zeros_like(k2, dtype="float64")

    def log_weight(self, k2, k1) -> np.ndarray:
        """``-log(U - k1 + 1)`` on ``k1 <= k2 <= U``, else ``-inf`` (numpy, broadcasting)."""
        k2 = _as_int_array(k2, "k2")
        k1 = _as_int_array(k1, "k1")
        count = np.maximum(self.upper - k1 + 1, 1).astype(float)
        return np.where((k2 >= k1) & (k2 <= self.upper), -np.log(count), -np.inf)

    def declare(self, name: str, x1, **kwargs):
        """``pm.DiscreteUniform(name, lower=x1, upper=U)``."""
        import pymc as pm

        return pm.DiscreteUniform(name, lower=x1, upper=self.upper, **kwargs)

    def __eq__(self, other) -> bool:
        return type(other) is TruncatedUniform and other.upper == self.upper

    def __hash__(self) -> int:
        return hash((type(self), self.upper))


class PointMass(X2Prior):
    r"""All prior mass at ``X2 = k``: :math:`w(k_2 \mid k_1) = 1[k_2 = k]\,1[k \ge k_1]` (S4).

    The adversary "knows" x2. With ``k < known + 1`` the constraint ``X2 >= X1`` makes
    ``X1 = known + 1`` impossible, so the posterior probability of the target is 0.

    Parameters
    ----------
    k : int (k >= 0)
        The value of X2 the adversary is certain of.
    """

    is_proper = True
    log_weight_max = 0.0

    def __init__(self, k: int):
        self.k = int(check_count(k, "k", minimum=0))
        self.spec = f"point:{self.k}"
        self.description = f"point mass at X2 = {self.k}"

    def support(self, k1):
        """``(k, k)``."""
        return self.k, self.k

    def logp(self, k2, k1):
        """``0`` (the support ``{k}`` and ``k >= k1`` are applied by :meth:`log_weight_pt`)."""
        return _pt().zeros_like(k2, dtype="float64")

    def log_weight(self, k2, k1) -> np.ndarray:
        """``0`` where ``k2 == k >= k1``, else ``-inf`` (numpy, broadcasting)."""
        k2 = _as_int_array(k2, "k2")
        k1 = _as_int_array(k1, "k1")
        return np.where((k2 == self.k) & (k1 <= self.k), 0.0, -np.inf)

    def check_support(self, known: int) -> None:
        """Raise ``ValueError`` if ``k < known`` (no X1 is possible at all)."""
        if self.k < int(known):
            raise ValueError(
                f"prior {self.spec!r} is impossible with known = {known}: X2 >= X1 >= known "
                f"needs point:K with K >= known (prior forms: {PRIOR_FORMS})"
            )

    def initial_value(self, x1):
        """``k``."""
        return self.k

    def declare(self, name: str, x1, **kwargs):
        """A constant ``pm.Deterministic`` X2 = k plus a ``pm.Potential`` ruling out X1 > k.

        The potential is named ``f"{name}_support"``; with ``k < known + 1`` start X1 at
        ``known`` (see :meth:`X2Prior.feasible_x1`).
        """
        import pymc as pm

        pt = _pt()
        x1 = pt.as_tensor_variable(x1)
        value = pt.zeros_like(x1, dtype="int64") + np.int64(self.k)
        x2 = pm.Deterministic(name, value, **kwargs)
        pm.Potential(
            f"{name}_support",
            pt.sum(_pt_switch_inf(pt.ge(np.int64(self.k), x1), pt.zeros_like(x1, "float64"))),
        )
        return x2

    def __eq__(self, other) -> bool:
        return type(other) is PointMass and other.k == self.k

    def __hash__(self) -> int:
        return hash((type(self), self.k))


class UserPrior(X2Prior):
    r"""A prior defined once by a PyTensor expression ``logp(k2, k1)`` (see the module docstring).

    Parameters
    ----------
    logp : callable
        ``logp(k2, k1) -> TensorVariable``, the log prior weight of ``X2 = k2`` given
        ``X1 = k1`` for int64 tensors (may be ``-inf`` off the support).
    support : callable, optional
        ``support(k1) -> (lower, upper_or_None)``, plain arithmetic (ints and tensors).
        Default ``(k1, None)``.
    is_proper : bool
        Whether the weights sum to one for every ``k1`` (default True).
    log_weight_max : float
        Upper bound of the log weights (default 0, true for any proper prior).
    description : str
        One line for reports.
    spec : str, optional
        Set by :func:`parse_prior` to the ``PATH.py:NAME`` it was loaded from.
    """

    def __init__(
        self,
        logp: Callable,
        *,
        support: Callable | None = None,
        is_proper: bool = True,
        log_weight_max: float = 0.0,
        description: str = "user-defined prior",
        spec: str | None = None,
    ):
        if not callable(logp):
            raise TypeError(f"logp must be a callable logp(k2, k1), got {logp!r}")
        if support is not None and not callable(support):
            raise TypeError(f"support must be a callable support(k1), got {support!r}")
        if not math.isfinite(log_weight_max):
            raise ValueError(f"log_weight_max must be a finite number, got {log_weight_max!r}")
        self._logp = logp
        self._support = support
        self.is_proper = bool(is_proper)
        self.log_weight_max = float(log_weight_max)
        self.description = description
        self.spec = spec if spec is not None else f"user:{getattr(logp, '__name__', 'logp')}"

    def logp(self, k2, k1):
        """The user's expression."""
        return self._logp(k2, k1)

    def support(self, k1):
        """The user's ``support(k1)``, default ``(k1, None)``."""
        if self._support is None:
            return k1, None
        return self._support(k1)


def as_prior(prior) -> X2Prior:
    """Return ``prior`` if it is an :class:`X2Prior`, else parse it as a spec string."""
    if isinstance(prior, X2Prior):
        return prior
    if isinstance(prior, str):
        return parse_prior(prior)
    raise TypeError(f"prior must be an X2Prior or a spec string ({PRIOR_FORMS}), got {prior!r}")


def _bad(spec: str, why: str) -> ValueError:
    return ValueError(f"prior {spec!r}: {why}; allowed forms: {PRIOR_FORMS}")


def _parse_int(spec: str, text: str, what: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise _bad(spec, f"{what} must be an integer, got {text!r}") from None
    if value < 0:
        raise _bad(spec, f"{what} must be >= 0, got {value}")
    return value


_LOADED: dict[tuple[str, int, str], X2Prior] = {}


def _shipped_example(path: Path) -> Path | None:
    """The installed copy of a ``models/examples/NAME.py`` prior file, if ``path`` names one."""
    parts = path.parts
    if len(parts) != 3 or parts[:2] != ("models", "examples"):
        return None
    candidate = importlib.resources.files("dprisk.models.examples").joinpath(parts[2])
    return Path(str(candidate)) if candidate.is_file() else None


def _load_from_file(spec: str, path_text: str, name: str) -> X2Prior:
    path = Path(path_text).expanduser()
    if not path.is_file() and not path.is_absolute():
        # The shipped ``models/examples/...`` priors load from any working directory.
        shipped = _shipped_example(path)
        if shipped is not None:
            path = shipped
    if not path.is_file():
        raise _bad(spec, f"file {path_text!r} not found")
    resolved = path.resolve()
    key = (str(resolved), resolved.stat().st_mtime_ns, name)
    if key in _LOADED:
        return _LOADED[key]
    module_name = f"_dprisk_prior_{abs(hash(key[:2]))}"
    module_spec = importlib.util.spec_from_file_location(module_name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise _bad(spec, f"cannot import {path_text!r} as a Python file")
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as err:
        raise _bad(spec, f"importing {path_text!r} failed: {type(err).__name__}: {err}") from err
    if not hasattr(module, name):
        raise _bad(spec, f"{path_text!r} defines no name {name!r}")
    obj = getattr(module, name)
    if not isinstance(obj, X2Prior) and callable(obj) and not isinstance(obj, type):
        try:
            obj = obj()
        except TypeError as err:
            raise _bad(spec, f"{name!r} is not a zero-argument factory: {err}") from err
    if not isinstance(obj, X2Prior):
        raise _bad(
            spec,
            f"{name!r} must be an X2Prior instance or a zero-argument function returning one, "
            f"got {type(obj).__name__}",
        )
    object.__setattr__(obj, "spec", spec)
    _LOADED[key] = obj
    return obj


def parse_prior(spec) -> X2Prior:
    """Turn a prior specification into a prior object.

    Parameters
    ----------
    spec : str or X2Prior
        ``improper``, ``truncated:U``, ``point:K`` or ``PATH.py:NAME`` (a Python file and a
        name in it bound to an :class:`X2Prior` or a zero-argument function returning one;
        a relative PATH is looked up in the working directory, then in the project root).
        An :class:`X2Prior` is returned unchanged.

    Raises
    ------
    ValueError
        One line naming the prior and the allowed forms: malformed spec, missing file,
        missing name, wrong type.
    """
    if isinstance(spec, X2Prior):
        return spec
    if not isinstance(spec, str):
        raise ValueError(f"prior must be a string; allowed forms: {PRIOR_FORMS}, got {spec!r}")
    text = spec.strip()
    if text == "improper":
        return ImproperUniform()
    if ".py:" in text:
        path_text, name = text.rsplit(":", 1)
        if not name.isidentifier():
            raise _bad(spec, f"NAME must be a Python identifier, got {name!r}")
        return _load_from_file(text, path_text, name)
    kind, sep, arg = text.partition(":")
    if sep and kind == "truncated":
        return TruncatedUniform(_parse_int(spec, arg, "U"))
    if sep and kind == "point":
        return PointMass(_parse_int(spec, arg, "K"))
    raise _bad(spec, "unrecognised specification")


#: Alias of :func:`parse_prior`.
load_prior = parse_prior


def check_support(prior, known) -> X2Prior:
    """Check that ``prior`` leaves a possible X2 given ``known`` = m; return the prior object.

    Both X1 = m and X1 = m + 1 need a non-empty support of X2 | X1 (e.g. ``truncated:U``
    needs ``U >= m + 1``); :class:`PointMass` only needs ``K >= m``.

    Raises
    ------
    ValueError
        One line naming the prior and the allowed forms.
    """
    prior = as_prior(prior)
    known = int(check_count(known, "known", minimum=0))
    prior.check_support(known)
    return prior
