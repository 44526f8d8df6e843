"""The base class of the priors for X2 given X1 = k1, and the helpers the priors share.

:class:`X2Prior` fixes what every prior provides: the PyTensor log weight (the one
definition), a numpy version compiled from it for the exact and Gibbs methods, the support,
and the PyMC declaration. The built-in priors, user priors and the spec parser are in
:mod:`dprisk.models.priors.library`.
"""

from __future__ import annotations

import contextlib
import io
from abc import ABC, abstractmethod

import numpy as np

from dprisk.models.checks import check_count
from dprisk.runtime.captured_fds import captured_fds

__all__ = [
    "LOG_WEIGHT_MAX_LIMIT",
    "MASS_TOLERANCE",
    "MASS_WIDTH",
    "PRIOR_FORMS",
    "PROBE_WIDTH",
    "SUPPORT_END_LIMIT",
    "PriorRefused",
    "UserCodeFailed",
    "X2Prior",
    "as_int_array",
    "branch_mass",
    "check_prior_values",
    "one_line",
    "pytensor_tensor",
    "running_user_code",
    "shape_rule",
    "switch_or_neg_inf",
]

#: The accepted prior specifications, quoted in every error message.
PRIOR_FORMS = "improper, truncated:U (integer U), point:K (integer K), or PATH.py:NAME"

#: How many values of X2 (from the lower end of the support) :func:`check_prior_values` tries.
PROBE_WIDTH = 4096
#: Most values of X2 per branch that :func:`branch_mass` sums (a proper prior's mass check).
MASS_WIDTH = 2**20
#: How far from 1 the mass of a prior labelled proper may be (rounding of published tables).
MASS_TOLERANCE = 1e-6
#: Largest ``|log_weight_max|`` of a prior. The bound enters every window's tail bound as
#: ``exp(log_weight_max)`` relative to the branch's mass, so the window must grow until
#: ``A t^2`` exceeds the gap between the bound and the weights: at 1e6 the two-level form's
#: widest window (2**22 values, t up to 2**21) still closes it for every precision
#: ``A >= 2.3e-7``, and log weights of that size keep their rounding (1e6 * 2.2e-16 =
#: 2.2e-10) below the 1e-9 the exact methods are checked to. At 1e308 no window closes it (a
#: GridTooNarrowError, "leaves out up to inf"). The nested-levels windows (h >= 3) are widened
#: only up to 2048 values per level and close far less: a log_weight_max of about 65 per level
#: at rhos 1e-5, 1.2e3 at 1e-3, 1e5 at 0.1, 2.7e6 at 1 (measured, release 1,3,5 / 2,2 with
#: d = 1); a prior declaring more than they close is refused there, naming the prior.
LOG_WEIGHT_MAX_LIMIT = 1e6
#: Largest ``|lower|``, ``|upper|`` of a prior's ``support(k1)``: int64's (so
#: ``np.iinfo(np.int64).max`` as "no bound" works). PyTensor makes a Python int an int64
#: constant: ``2**63`` silently becomes ``-2**63`` (the support is then empty) and a larger
#: one raises OverflowError.
SUPPORT_END_LIMIT = 2**63 - 1


class PriorRefused(ValueError):
    """A prior refused by a check of this package (its message is already one line)."""


class UserCodeFailed(PriorRefused):
    """The user's code of a prior raised, exited or printed (see :func:`running_user_code`)."""


def one_line(text: str, limit: int = 200) -> str:
    """``text`` with its whitespace runs (newlines too) collapsed, cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


@contextlib.contextmanager
def running_user_code(spec: str, what: str):
    """Run the body as untrusted user code of the prior ``spec`` (a file, a logp, a support).

    Standard output and error are captured while the body runs, both ``sys.stdout`` /
    ``sys.stderr`` and the file descriptors 1 and 2 underneath
    (:func:`dprisk.runtime.captured_fds.captured_fds`: ``os.write(1, ...)``, ``os.system``,
    C-level prints). Any exception the body raises, ``SystemExit`` included
    (``KeyboardInterrupt`` still interrupts), becomes a one-line :class:`PriorRefused`
    naming ``spec`` and ``what`` was running; so does text written to standard output (a
    prior must not print: ``--json`` promises one JSON object). Text written to standard
    error is dropped.

    Raises
    ------
    PriorRefused
        ``prior SPEC: WHAT failed: TYPE: MESSAGE`` or ``prior SPEC: WHAT printed ...``.
    """
    captured = io.StringIO()
    try:
        with captured_fds() as written, contextlib.redirect_stdout(captured), \
                contextlib.redirect_stderr(io.StringIO()):
            yield
    except (KeyboardInterrupt, PriorRefused):
        raise
    except BaseException as err:  # user code: SystemExit too
        raise UserCodeFailed(
            f"prior {spec!r}: {what} failed: {type(err).__name__}: {one_line(err)}"
        ) from err
    printed = captured.getvalue() + written.stdout
    if printed:
        raise UserCodeFailed(
            f"prior {spec!r}: {what} printed to standard output "
            f"({one_line(printed, 60)!r}); a prior must not print"
        )


def as_int_array(value, name: str) -> np.ndarray:
    """``value`` as int64 (integer arrays as they are, anything else checked by ``check_count``)."""
    arr = np.asarray(value)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    return check_count(arr, name)


def shape_rule(spec: str, size, found: str) -> str:
    """The refusal of a logp that does not give one value per k2 (the rule and the fix)."""
    return (f"prior {spec!r}: logp(k2, k1) must return one log weight per k2, an array of "
            f"k2's shape (({size},) for {size} values of k2), but returned {found}; write it "
            f"elementwise in k2 and k1 with pytensor.tensor functions (pt.log, pt.switch, ...), "
            f"with no sum, mean or indexing over k2")


def pytensor_tensor():
    """``pytensor.tensor``, imported on first use (the numpy paths do not need PyTensor)."""
    import pytensor.tensor as pt

    return pt


def switch_or_neg_inf(condition, value):
    """``switch(condition, value, -inf)`` in float64 (a bare ``-np.inf`` can give float32)."""
    pt = pytensor_tensor()
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
    values_checked : bool
        True for the built-in priors, whose closed-form weights are finite on their
        non-empty support: :func:`check_prior_values` skips them.
    """

    spec: str = "user"
    values_checked: bool = False
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
        lower = max(self._support_end(lower, "lower", k1), k1)
        if upper is not None:
            upper = self._support_end(upper, "upper", k1)
            if upper < lower:
                return None
        return lower, upper

    def _support_end(self, value, end: str, k1: int) -> int:
        """One end of ``support(k1)`` as an int, refused beyond :data:`SUPPORT_END_LIMIT`.

        Also refused: a non-finite float. Past the limit the PyTensor form of the support
        (:meth:`log_weight_pt`) would differ from these ints.
        """
        if not (isinstance(value, (float, np.floating)) and not np.isfinite(value)):
            number = int(value)
            if abs(number) <= SUPPORT_END_LIMIT:
                return number
        raise PriorRefused(
            f"prior {self.spec!r}: support({k1}) gives {end} = {value!r}, out of range "
            f"(allowed range: -(2**63 - 1) <= {end} <= 2**63 - 1, an integer; upper None "
            f"means no upper bound)"
        )

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
        return self._log_weight_parts(k2, k1)[0]

    def _log_weight_parts(self, k2, k1):
        """``(log_weight_pt, logp)``: the restricted log weight and the user's own expression."""
        pt = pytensor_tensor()
        k2 = pt.as_tensor_variable(k2)
        k1 = pt.as_tensor_variable(k1)
        try:  # the support on tensors: ints passed branch_support, this may still fail
            lower, upper = self.support(k1)
            inside = pt.ge(k2, k1) & pt.ge(k2, lower)
            inside = inside & pt.le(k2, upper) if upper is not None else inside
        except Exception as err:
            raise PriorRefused(f"prior {self.spec!r}: support(k1) on a PyTensor int64 tensor k1 "
                               f"failed: {type(err).__name__}: {one_line(err).rstrip('.')}; "
                               f"write it with plain arithmetic (pt.maximum, not max or if)"
                               ) from err
        own = pt.as_tensor_variable(self.logp(k2, k1))
        return switch_or_neg_inf(inside, own), own

    def _compiled(self):
        fn = self.__dict__.get("_compiled_log_weight")
        if fn is None:
            from pytensor.graph.traversal import ancestors

            from dprisk.models.priors.graph_eval import graph_function

            pt = pytensor_tensor()
            k2 = pt.lvector("k2")
            k1 = pt.lvector("k1")
            full, own = self._log_weight_parts(k2, k1)
            if own.ndim > 1 or (own.ndim == 0 and k2 in set(ancestors([own]))):
                raise PriorRefused(shape_rule(self.spec, "n", f"a {own.ndim}-d array"))
            # Walked with numpy, not compiled (graph_eval's docstring: 9 s -> milliseconds).
            fn = graph_function([k2, k1], [full, own])
            # Cached on the instance (works for frozen dataclasses too).
            object.__setattr__(self, "_compiled_log_weight", fn)
        return fn

    def _refuse_shape(self, flat2: np.ndarray, flat1: np.ndarray) -> None:
        """Raise the shape rule if :meth:`logp` alone gives other than one value per k2."""
        from dprisk.models.priors.graph_eval import graph_function

        pt = pytensor_tensor()
        k2, k1 = pt.lvector("k2"), pt.lvector("k1")
        (own,) = graph_function([k2, k1], [pt.as_tensor_variable(self.logp(k2, k1))])(
            flat2, flat1)
        if own.ndim != 0 and own.shape != flat2.shape:
            raise PriorRefused(shape_rule(self.spec, flat2.size, f"shape {own.shape}"))

    def log_weight(self, k2, k1) -> np.ndarray:
        r"""Log prior weight :math:`\log w(k_2 \mid k_1)` in numpy (broadcasting).

        The default builds :meth:`log_weight_pt` once and evaluates it with numpy
        (:func:`dprisk.models.priors.graph_eval.graph_function`; cached on the instance).

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
        k2 = as_int_array(k2, "k2")
        k1 = as_int_array(k1, "k1")
        shape = np.broadcast_shapes(k2.shape, k1.shape)
        flat2 = np.ascontiguousarray(np.broadcast_to(k2, shape)).ravel()
        flat1 = np.ascontiguousarray(np.broadcast_to(k1, shape)).ravel()
        evaluate = self._compiled()
        try:
            full, own = evaluate(flat2, flat1)
        except ValueError:  # e.g. numpy's broadcast error of a logp of another shape
            self._refuse_shape(flat2, flat1)
            raise
        if own.ndim != 0 and own.shape != flat2.shape:
            raise PriorRefused(shape_rule(self.spec, flat2.size, f"shape {own.shape}"))
        out = np.asarray(full, dtype=float)
        out = np.broadcast_to(out, flat2.shape).reshape(shape)
        if np.isnan(out).any() or (out > self.log_weight_max + 1e-9).any():
            raise PriorRefused(
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
        return pytensor_tensor().maximum(lower, x1)

    def declare(self, name: str, x1, **kwargs):
        """Add X2 to the current ``pm.Model`` given the X1 tensor ``x1``; returns X2.

        Default: an int64 ``pm.CustomDist`` with logp :meth:`log_weight_pt` and
        :meth:`initial_value` as its support point. Keyword arguments go to the
        distribution (e.g. ``dims``, ``initval``).
        """
        import pymc as pm

        pt = pytensor_tensor()

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


def check_prior_values(prior: X2Prior, known: int) -> None:
    r"""Refuse a prior whose log weights are unusable, before any method uses it.

    For ``k1 = known`` and ``known + 1`` whose branch support is not empty, evaluates
    :meth:`X2Prior.log_weight` at the first :data:`PROBE_WIDTH` values of X2 in the support
    (running the user's ``support`` and ``logp`` under :func:`running_user_code`). Refused:
    an exception or output from user code, a NaN or a value above ``log_weight_max``
    (``+inf`` included) anywhere evaluated, and ``-inf`` at every value tried (the prior
    gives X2 no weight where its support says it lives), a logp that does not give one value
    per k2, and a prior labelled proper whose branch mass (:func:`branch_mass`) is off 1 by
    more than :data:`MASS_TOLERANCE`. Every method (exact, Gibbs, PyMC) goes through this
    check once, when the scenario is built.

    Raises
    ------
    PriorRefused
        One line naming the prior (``PATH.py:NAME`` for a file) and the problem.
    """
    if prior.values_checked:
        return
    known = int(known)
    # The outcome per ``known`` (None: passed). A refusal is remembered because the compiled
    # log weight is cached, so the user's code would not run again; a failure of that code
    # holds for every ``known`` (key "code").
    outcomes = getattr(prior, "__dict__", {}).setdefault("_probe_outcomes", {})
    for key in ("code", known):
        if key in outcomes:
            if outcomes[key] is None:
                return
            raise PriorRefused(outcomes[key])
    try:
        _probe_log_weights(prior, known)
    except PriorRefused as err:
        outcomes["code" if isinstance(err, UserCodeFailed) else known] = str(err)
        raise
    outcomes[known] = None


def _probe_log_weights(prior: X2Prior, known: int) -> None:
    """The body of :func:`check_prior_values` (raises :class:`PriorRefused`)."""
    spec = prior.spec
    if not abs(float(prior.log_weight_max)) <= LOG_WEIGHT_MAX_LIMIT:
        raise PriorRefused(
            f"prior {spec!r}: log_weight_max = {prior.log_weight_max!r} is out of range "
            f"(allowed range: -{LOG_WEIGHT_MAX_LIMIT:g} <= log_weight_max <= "
            f"{LOG_WEIGHT_MAX_LIMIT:g}); declare the smallest bound of the log weights"
        )
    for k1 in (known, known + 1):
        with running_user_code(spec, f"support({k1})"):
            support = prior.branch_support(k1)
        if support is None:
            continue
        lower, upper = support
        top = lower + PROBE_WIDTH - 1 if upper is None else min(upper, lower + PROBE_WIDTH - 1)
        k2 = np.arange(lower, top + 1, dtype=np.int64)
        with running_user_code(spec, "logp(k2, k1) on PyTensor int64 tensors"):
            values = np.asarray(prior.log_weight(k2, np.full_like(k2, k1)), dtype=float)
        if values.shape != k2.shape:
            raise PriorRefused(shape_rule(spec, k2.size, f"shape {values.shape}"))
        if not np.isfinite(values).any():
            raise PriorRefused(
                f"prior {spec!r}: log weight is -inf at every X2 in [{lower}, {top}] given "
                f"X1 = {k1}; the prior must give weight inside its support (declare a "
                f"narrower support=(lower, upper) if its mass lies further out)"
            )
        if prior.is_proper:
            with running_user_code(spec, "logp(k2, k1) on PyTensor int64 tensors"):
                mass, last, settled = branch_mass(prior, k1)
            if abs(mass - 1.0) > MASS_TOLERANCE:
                upto = "" if settled else f" (not settled after {MASS_WIDTH} values)"
                raise PriorRefused(
                    f"prior {spec!r} is labelled proper (is_proper=True) but its mass given "
                    f"X1 = {k1} is {mass:.12g} over X2 in [{lower}, {last}]{upto}, not 1 "
                    f"(tolerance {MASS_TOLERANCE:g}); normalise the weights, or declare it "
                    f"UserPrior(..., is_proper=False)"
                )


def branch_mass(prior: X2Prior, k1: int, *, width: int | None = None
                ) -> tuple[float, int, bool]:
    r"""The prior mass :math:`\sum_{k_2} w(k_2 \mid k_1)` of the branch ``X1 = k1``.

    Summed over the branch support in blocks of doubling length (:data:`PROBE_WIDTH`, then
    twice as many, ...) up to ``width`` values (default :data:`MASS_WIDTH`); it stops at the
    support's upper end or when a block adds less than ``1e-15`` times the sum so far (the
    sum has settled).

    Returns
    -------
    mass : float
        The sum (``0.0`` for an empty branch; ``inf``, not settled, when a weight is
        ``+inf`` or the sum overflows a double, e.g. weights ``e^800``).
    last : int
        The largest ``k2`` summed.
    settled : bool
        Whether the sum reached the upper end or settled (else it may still grow).
    """
    width = MASS_WIDTH if width is None else int(width)
    support = prior.branch_support(k1)
    if support is None:
        return 0.0, int(k1), True
    lower, upper = support
    total, start, block = 0.0, lower, PROBE_WIDTH
    while True:
        block = min(block, lower + width - start)
        stop = start + block - 1 if upper is None else min(upper, start + block - 1)
        k2 = np.arange(start, stop + 1, dtype=np.int64)
        with np.errstate(over="ignore"):
            added = float(np.exp(prior.log_weight(k2, np.full_like(k2, k1))).sum())
        total += added
        if not np.isfinite(total):  # a weight above e^709.78 (or +inf): no double holds it
            return total, int(stop), False
        if (upper is not None and stop >= upper) or added <= 1e-15 * total:
            return total, int(stop), True
        if stop - lower + 1 >= width:
            return total, int(stop), False
        start, block = stop + 1, 2 * block
