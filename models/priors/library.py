r"""Priors for the block-group count X2 given the block count X1 = k1 (paper §3.2 and S4).

One prior object serves every method: exact enumeration and the hand-written Gibbs sampler
use its numpy :meth:`X2Prior.log_weight`, the PyMC model uses :meth:`X2Prior.declare`.
Every method targets the same joint posterior (:mod:`dprisk.inference.two_level.exact`)

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
Define the log weight ONCE as a PyTensor expression of ``(k2, k1)``; the exact and Gibbs
methods evaluate its graph with numpy (no compilation; cached), the PyMC model uses it
directly (docs/priors.md walks through three worked files). Put it in a Python file and pass
``PATH.py:NAME`` wherever a prior is accepted::

    # my_prior.py -- a negative-binomial belief about X2 - X1
    import numpy as np
    import pymc as pm

    from dprisk.models.priors.library import UserPrior


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
  constant and the whole expression may then be computed in single precision;
* the file is untrusted code: importing it, calling the factory, ``support`` and ``logp`` run
  with standard output captured; an exception (``SystemExit`` too) or printed text refuses
  the prior (``ValueError``, CLI exit 2, one line naming the file). When a scenario is built,
  the log weights are evaluated once on the first 4096 values of each branch's support
  (:func:`dprisk.models.priors.base.check_prior_values`): NaN, a value above
  ``log_weight_max`` (``+inf`` included) or ``-inf`` at every value refuses the prior for
  every method (exact, Gibbs, PyMC) alike.

A subclass of :class:`X2Prior` that implements :meth:`X2Prior.logp` works the same way.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import numpy as np

from dprisk.models.checks import check_count
from dprisk.models.priors.base import (
    PRIOR_FORMS,
    PriorRefused,
    X2Prior,
    as_int_array,
    pytensor_tensor,
    running_user_code,
    switch_or_neg_inf,
)
from dprisk.models.priors.files import (
    bad_prior_spec,
    bare_logp,
    file_spec_parts,
    load_prior_file,
    wrap_hint,
)
from dprisk.runtime.ascii_numbers import ascii_number

__all__ = [
    "PRIOR_FORMS",
    "ImproperUniform",
    "PointMass",
    "TruncatedUniform",
    "UserPrior",
    "X2Prior",
    "as_prior",
    "check_log_weight_override",
    "check_support",
    "load_prior",
    "parse_prior",
]


class ImproperUniform(X2Prior):
    r"""Improper uniform prior on {k1, k1 + 1, ...}: :math:`w(k_2 \mid k_1) = 1[k_2 \ge k_1]`.

    The paper's default (§3.2): weight one per state in each branch ``k1``.
    """

    spec = "improper"
    values_checked = True
    is_proper = False
    log_weight_max = 0.0
    description = "improper uniform on {k1, k1+1, ...}"

    def logp(self, k2, k1):
        """Zero log weight (the support ``k2 >= k1`` is applied by :meth:`log_weight_pt`)."""
        return pytensor_tensor().zeros_like(k2, dtype="float64")

    def log_weight(self, k2, k1) -> np.ndarray:
        """``0`` where ``k2 >= k1``, else ``-inf`` (numpy, broadcasting)."""
        k2 = as_int_array(k2, "k2")
        k1 = as_int_array(k1, "k1")
        return np.where(k2 >= k1, 0.0, -np.inf)

    def declare(self, name: str, x1, **kwargs):
        """An int64 ``pm.CustomDist`` with logp ``switch(X2 >= X1, 0, -inf)``, starting at X1."""
        import pymc as pm

        pt = pytensor_tensor()

        def logp(value, lower):
            return switch_or_neg_inf(pt.ge(value, lower), pt.constant(0.0, dtype="float64"))

        def support_point(rv, size, lower):
            return pt.cast(pt.broadcast_to(lower, rv.shape), "int64")

        return pm.CustomDist(
            name, x1, logp=logp, support_point=support_point, dtype="int64", **kwargs
        )

    def __eq__(self, other) -> bool:
        return type(other) is ImproperUniform

    def __hash__(self) -> int:
        return hash(type(self))


class _CountParameterPrior(X2Prior):
    """A built-in prior with one integer parameter ``>= 0``, spelled ``KIND:VALUE`` in specs.

    Subclasses name the parameter (``parameter``), the spec prefix (``kind``) and a
    description template formatted with the value.
    """

    parameter: str
    kind: str
    template: str
    values_checked = True

    def __init_subclass__(cls, *, parameter: str, kind: str, template: str, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.parameter, cls.kind, cls.template = parameter, kind, template

    def __init__(self, value: int, /):
        value = check_count(value, self.parameter, minimum=0)
        if value.ndim:
            raise ValueError(f"{self.parameter} must be a single integer, got an array of shape "
                             f"{value.shape}")
        value = int(value)
        setattr(self, self.parameter, value)
        self.spec = f"{self.kind}:{value}"
        self.description = self.template.format(value)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and (
            getattr(other, self.parameter) == getattr(self, self.parameter))

    def __hash__(self) -> int:
        return hash((type(self), getattr(self, self.parameter)))


class TruncatedUniform(_CountParameterPrior, parameter="upper", kind="truncated",
                       template="uniform on {{k1, ..., {}}}"):
    r"""Uniform prior on {k1, ..., U}: :math:`w(k_2 \mid k_1) = 1/(U - k_1 + 1)` (supplement S4).

    A proper conditional distribution for every ``k1 <= U``; for ``k1 > U`` it is empty, and
    :meth:`check_support` rejects ``U < known + 1``.

    Parameters
    ----------
    upper : int (upper >= 0)
        The largest value of X2 the adversary considers possible.
    """

    def __init__(self, upper: int, /):
        super().__init__(upper)

    def support(self, k1):
        """``(k1, upper)``."""
        return k1, self.upper

    def logp(self, k2, k1):
        """``-log(U - k1 + 1)`` (the support is applied by :meth:`log_weight_pt`)."""
        pt = pytensor_tensor()
        count = pt.maximum(self.upper - k1 + 1, 1)
        return -pt.log(pt.cast(count, "float64")) + pt.zeros_like(k2, dtype="float64")

    def log_weight(self, k2, k1) -> np.ndarray:
        """``-log(U - k1 + 1)`` on ``k1 <= k2 <= U``, else ``-inf`` (numpy, broadcasting)."""
        k2 = as_int_array(k2, "k2")
        k1 = as_int_array(k1, "k1")
        count = np.maximum(self.upper - k1 + 1, 1).astype(float)
        return np.where((k2 >= k1) & (k2 <= self.upper), -np.log(count), -np.inf)

    def declare(self, name: str, x1, **kwargs):
        """``pm.DiscreteUniform(name, lower=x1, upper=U)``."""
        import pymc as pm

        return pm.DiscreteUniform(name, lower=x1, upper=self.upper, **kwargs)


class PointMass(_CountParameterPrior, parameter="k", kind="point",
                template="point mass at X2 = {}"):
    r"""All prior mass at ``X2 = k``: :math:`w(k_2 \mid k_1) = 1[k_2 = k]\,1[k \ge k_1]` (S4).

    The adversary "knows" x2. With ``k < known + 1`` the constraint ``X2 >= X1`` makes
    ``X1 = known + 1`` impossible, so the posterior probability of the target is 0.

    Parameters
    ----------
    k : int (k >= 0)
        The value of X2 the adversary is certain of.
    """

    def __init__(self, k: int, /):
        super().__init__(k)

    def support(self, k1):
        """``(k, k)``."""
        return self.k, self.k

    def logp(self, k2, k1):
        """``0`` (the support ``{k}`` and ``k >= k1`` are applied by :meth:`log_weight_pt`)."""
        return pytensor_tensor().zeros_like(k2, dtype="float64")

    def log_weight(self, k2, k1) -> np.ndarray:
        """``0`` where ``k2 == k >= k1``, else ``-inf`` (numpy, broadcasting)."""
        k2 = as_int_array(k2, "k2")
        k1 = as_int_array(k1, "k1")
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

        pt = pytensor_tensor()
        x1 = pt.as_tensor_variable(x1)
        value = pt.zeros_like(x1, dtype="int64") + np.int64(self.k)
        x2 = pm.Deterministic(name, value, **kwargs)
        pm.Potential(
            f"{name}_support",
            pt.sum(switch_or_neg_inf(pt.ge(np.int64(self.k), x1), pt.zeros_like(x1, "float64"))),
        )
        return x2



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
        Whether the weights sum to one for every ``k1`` (default True); True or False.
    log_weight_max : float (finite)
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
        if not isinstance(is_proper, (bool, np.bool_)):  # "no" would be read as True
            raise TypeError(f"is_proper must be True or False, got {is_proper!r}")
        if isinstance(log_weight_max, (bool, np.bool_)) \
                or not isinstance(log_weight_max, numbers.Real):
            raise TypeError(f"log_weight_max must be a finite number, got {log_weight_max!r}")
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
    if bare_logp(prior):
        raise TypeError(f"prior: {wrap_hint(getattr(prior, '__name__', 'logp'), prior)}")
    raise TypeError(f"prior must be an X2Prior or a spec string ({PRIOR_FORMS}), got {prior!r}")


def _parse_int(spec: str, text: str, what: str) -> int:
    """The count ``what`` of a ``KIND:VALUE`` spec, ``0 <= value <= 2**53``.

    A value out of range is refused naming the spec (the prior's own check names its
    parameter alone, not the ``--prior`` typed). Only ASCII digits are read
    (:func:`dprisk.runtime.ascii_numbers.ascii_number`: ``int`` also reads ``"\u0663"`` as 3).
    """
    try:
        value = int(ascii_number(text.strip()))
    except ValueError:
        raise bad_prior_spec(spec, f"{what} must be an integer, got {text!r}") from None
    if value < 0:
        raise bad_prior_spec(spec, f"{what} must be >= 0, got {value}")
    if value > 2**53:  # the prior's own check_count then validates it (once), naming upper / k
        raise bad_prior_spec(spec, f"{what} must be an integer >= 0 and <= 2**53 (allowed "
                                   f"range: 0 <= {what} <= 2**53), got {value}")
    return value


def parse_prior(spec) -> X2Prior:
    """Turn a prior specification into a prior object.

    Parameters
    ----------
    spec : str or X2Prior
        ``improper``, ``truncated:U``, ``point:K`` or ``PATH.py:NAME`` (a Python file and a
        name in it bound to an :class:`X2Prior` or a zero-argument function returning one;
        a relative PATH is looked up in the working directory; ``models/examples/NAME.py`` also
        names the example shipped with the package).
        An :class:`X2Prior` is returned unchanged.

    Returns
    -------
    X2Prior
        :class:`ImproperUniform`, :class:`TruncatedUniform` (``U``), :class:`PointMass`
        (``K``), or the prior the file names.

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
    if (parts := file_spec_parts(text)) is not None:
        path_text, name = parts
        if not name.isidentifier():
            raise bad_prior_spec(spec, f"NAME must be a Python identifier, got {name!r}")
        return load_prior_file(text, path_text, name)
    kind, sep, arg = text.partition(":")
    if sep and kind == "truncated":
        return TruncatedUniform(_parse_int(spec, arg, "U"))
    if sep and kind == "point":
        return PointMass(_parse_int(spec, arg, "K"))
    raise bad_prior_spec(spec, "unrecognised specification")


#: Alias of :func:`parse_prior`.
load_prior = parse_prior


#: Values of X2 per branch at which an overriding numpy log_weight is compared with logp.
OVERRIDE_PROBE = 256


def check_log_weight_override(prior: X2Prior, known: int) -> None:
    r"""Refuse a subclass whose own numpy ``log_weight`` is not its ``logp`` with the support.

    The exact and Gibbs methods use :meth:`X2Prior.log_weight`, the PyMC model the graph
    :meth:`X2Prior.log_weight_pt` (``logp`` with ``k2 >= k1`` and :meth:`X2Prior.support`
    applied). An override is compared with the graph's values (the base ``log_weight``) at
    ``k1 = known, known + 1`` for :data:`OVERRIDE_PROBE` values of X2 from ``k1 - 2``, and
    on each side of a finite upper end: ``-inf`` where the other is, else within
    ``1e-9`` relative. Priors that do not override it (every built-in, every
    :class:`UserPrior`) are not evaluated.

    Raises
    ------
    PriorRefused
        One line naming the prior, the first ``(k2, k1)`` where the two differ and both values.
    """
    if prior.values_checked or type(prior).log_weight is X2Prior.log_weight:
        return
    for k1 in (int(known), int(known) + 1):
        with running_user_code(prior.spec, f"support({k1})"):
            support = prior.branch_support(k1)
        ends = [k1 - 2] + ([] if support is None or support[1] is None else [support[1] - 2])
        k2 = np.unique(np.concatenate([np.arange(e, e + OVERRIDE_PROBE) for e in ends]))
        k1s = np.full_like(k2, k1)
        with running_user_code(prior.spec, "log_weight(k2, k1)"):
            own = np.broadcast_to(np.asarray(prior.log_weight(k2, k1s), dtype=float), k2.shape)
        graph = X2Prior.log_weight(prior, k2, k1s)
        with np.errstate(invalid="ignore"):
            same = (own == graph) | np.isclose(own, graph, rtol=1e-9, atol=0.0)
        if not same.all():
            i = int(np.flatnonzero(~same)[0])
            raise PriorRefused(
                f"prior {prior.spec!r}: its numpy log_weight gives {float(own[i])!r} at "
                f"X2 = {int(k2[i])}, X1 = {k1}, its logp (the PyMC model's, with k2 >= k1 and "
                f"support applied) {float(graph[i])!r}: the methods would use two priors; "
                f"log_weight must be -inf below k1 and outside support, logp elsewhere")


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
