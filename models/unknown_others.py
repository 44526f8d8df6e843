r"""An adversary who does not know everyone: the validated ``n`` and ``q`` of the model.

The paper's adversary knows everyone in block :math:`g_1` except the target (§3.1). Here the
adversary knows the block except the target and ``n`` other people, and believes each of
those has the characteristics ``c`` with probability ``q``, independently (the first
future-work item of the paper's conclusion):

.. math::

    X_1 = m + B_t + K, \qquad B_t \sim \mathrm{Bernoulli}(p), \qquad
    K \sim \mathrm{Binomial}(n, q),

with :math:`B_t` and :math:`K` independent, :math:`m` the adversary's count of the people it
does know. ``n = 0`` is the paper's adversary (``q`` is then irrelevant).

:class:`UnknownOthers` is the one place where ``n`` (``unknown_others``) and ``q`` are checked;
the public entry points of :mod:`dprisk.inference.unknown_others.closed_form` build it and the
kernels
trust it. :meth:`UnknownOthers.log_weights` is the one home of the binomial log weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dprisk.models.checks import check_closed_probability, check_positive_int

__all__ = ["MAX_UNKNOWN_OTHERS", "UnknownOthers"]

#: Largest number of unknown others accepted (every kernel holds arrays of ``n + 1`` weights
#: per release; a census block rarely holds more than a few thousand people).
MAX_UNKNOWN_OTHERS = 10_000


@dataclass(frozen=True)
class UnknownOthers:
    r"""The adversary's ``n`` unknown others, each with ``c`` with probability ``q``.

    Build it with :meth:`checked`; the fields are then trusted by every kernel.

    Attributes
    ----------
    n : int (0 <= n <= MAX_UNKNOWN_OTHERS)
        Number of people in the block, besides the target, whom the adversary does not know.
    q : float (0 <= q <= 1)
        Probability that one of them has ``c`` (0.0 when ``n = 0`` and no ``q`` was given).
    """

    n: int
    q: float

    @classmethod
    def checked(cls, unknown_others=0, q=None) -> UnknownOthers:
        """Check ``unknown_others`` (an integer ``>= 0``) and ``q`` (``0 <= q <= 1``) once.

        ``q`` may be omitted (``None``) only when ``unknown_others == 0``; a ``q`` given with
        ``unknown_others == 0`` is still checked, and does not change any result.

        Raises
        ------
        ValueError
            One line naming ``unknown_others`` or ``q`` and the allowed range (``TypeError``
            for a value that is not a number).
        """
        allowed = (f"unknown_others must be an integer >= 0 and <= {MAX_UNKNOWN_OTHERS} "
                   f"(allowed range: 0 <= unknown_others <= {MAX_UNKNOWN_OTHERS})")
        try:
            n = check_positive_int(unknown_others, "unknown_others", minimum=0)
        except ValueError:
            raise ValueError(f"{allowed}, got {unknown_others!r}") from None
        if n > MAX_UNKNOWN_OTHERS:
            raise ValueError(f"{allowed}, got {n}")
        if q is None:
            if n > 0:
                raise ValueError(f"q is required when unknown_others = {n} > 0 "
                                 "(allowed range: 0 <= q <= 1)")
            return cls(0, 0.0)
        return cls(n, check_closed_probability(q, "q"))

    def log_weights(self) -> np.ndarray:
        r"""Log binomial weights :math:`\log P[K = k]`, ``k = 0, ..., n`` (``-inf`` if impossible).

        .. math::

            \log P[K = k] = \log\Gamma(n+1) - \log\Gamma(k+1) - \log\Gamma(n-k+1)
                + k \log q + (n - k) \log(1 - q)

        with :math:`0 \log 0 = 0`, so ``q = 0`` and ``q = 1`` give point masses at ``0`` and
        ``n``; ``n = 0`` gives ``[0.0]``.
        """
        from scipy.special import gammaln, xlog1py, xlogy

        k = np.arange(self.n + 1, dtype=float)
        with np.errstate(divide="ignore"):
            out = (gammaln(self.n + 1.0) - gammaln(k + 1.0) - gammaln(self.n - k + 1.0)
                   + xlogy(k, self.q) + xlog1py(self.n - k, -self.q))
        return out

    def support(self) -> tuple[int, int]:
        """Smallest and largest ``k`` with ``P[K = k] > 0``: ``(0 or n, n or 0)`` at the ends."""
        low = self.n if self.q == 1.0 else 0
        high = 0 if self.q == 0.0 else self.n
        return low, high
