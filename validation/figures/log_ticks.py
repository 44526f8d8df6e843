"""Fewer minor ticks on log axes that span many decades.

matplotlib's log axes put a minor tick at every 2, 3, ..., 9 x 10^k while they span fewer than
10 decades, and none from 10 on. Over 4 to 9 decades that is up to 72 minor ticks (and grid
lines) an axis, each a tick object matplotlib builds once and places again at every layout
pass (a good part of the cost of drawing the report's log-log figures), for marks too close
together to read. :func:`thin_log_minor_ticks` keeps them at 2 and 5 x 10^k only on an axis
that spans more than :data:`DENSE_DECADES` decades; an axis that spans fewer (where minor
ticks may carry labels) draws the same minor ticks as before. On both, the minor ticks outside
the view (which matplotlib makes, places, and does not draw) are no longer made. An axis whose
minor ticks its figure's code set is left alone.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import Locator, LogLocator

__all__ = ["DENSE_DECADES", "SparseMinorLocator", "thin_log_minor_ticks"]

#: Widest span (in decades) over which a log axis keeps all its minor ticks.
DENSE_DECADES = 3.0
#: Minor ticks kept (as multiples of a power of ten) on a wider axis.
_KEPT_MULTIPLES = (2.0, 5.0)
#: Relative tolerance of "inside the view" (matplotlib's own test is on the log scale, 1e-10).
_CLOSE = 1e-9


class SparseMinorLocator(Locator):
    """Ticks of a base-10 minor ``LogLocator``, only at 2 and 5 x 10^k beyond a few decades.

    Parameters
    ----------
    minor : matplotlib.ticker.LogLocator
        The axis's minor locator; its ticks are kept as they are when the view spans at most
        ``dense_decades`` decades, or when they are not multiples 2..9 of powers of ten.
    dense_decades : float
        See :data:`DENSE_DECADES`.
    """

    #: It reads the axis's length only through the wrapped ``LogLocator``'s tick space
    #: (:func:`dprisk.validation.figures.draw_once.ticks_placed_once` may key on that).
    reads_length_through_tick_space = True

    def __init__(self, minor: LogLocator, dense_decades: float = DENSE_DECADES):
        self.minor = minor
        self.dense_decades = dense_decades

    def set_axis(self, axis):
        """Set the axis of this locator and of the wrapped one."""
        super().set_axis(axis)
        self.minor.set_axis(axis)

    def __call__(self):
        """The wrapped locator's ticks over the axis's view, thinned."""
        vmin, vmax = self.axis.get_view_interval()
        return self._thinned(self.minor(), vmin, vmax)

    def tick_values(self, vmin, vmax):
        """The wrapped locator's ticks over ``[vmin, vmax]``, thinned."""
        return self._thinned(self.minor.tick_values(vmin, vmax), vmin, vmax)

    def nonsingular(self, v0, v1):
        """As the wrapped locator."""
        return self.minor.nonsingular(v0, v1)

    def view_limits(self, vmin, vmax):
        """As the wrapped locator."""
        return self.minor.view_limits(vmin, vmax)

    def _thinned(self, ticks, vmin, vmax):
        ticks = np.asarray(ticks, dtype=float)
        low, high = sorted((vmin, vmax))
        if low <= 0:
            return ticks
        # a tick outside the view is never drawn, but would be made and placed all the same
        ticks = ticks[(ticks >= low * (1 - _CLOSE)) & (ticks <= high * (1 + _CLOSE))]
        if ticks.size == 0 or np.log10(high / low) <= self.dense_decades:
            return ticks
        positive = ticks[ticks > 0]
        multiples = positive / 10.0 ** np.floor(np.log10(positive))
        if positive.size < ticks.size or not np.allclose(multiples, np.round(multiples)):
            return ticks  # not a base-10 locator's minor ticks: leave them
        kept = np.isclose(multiples[:, None], _KEPT_MULTIPLES).any(axis=1)
        return positive[kept]


def thin_log_minor_ticks(fig: Figure, dense_decades: float = DENSE_DECADES) -> None:
    """Give each log axis of ``fig`` on its default minor ticks a :class:`SparseMinorLocator`.

    Axes of ``fig`` and their child axes (secondary axes) are visited; an axis is changed
    when its minor locator is the one its scale set (``isDefault_minloc``) and a
    ``LogLocator``; ``isDefault_minloc`` is then false, so calling it again changes nothing
    more, and setting the axis's scale again brings its default minor ticks back.
    """
    pending = list(fig.axes)
    while pending:
        ax = pending.pop()
        pending.extend(ax.child_axes)
        for axis in (ax.xaxis, ax.yaxis):
            minor = axis.get_minor_locator()
            if axis.isDefault_minloc and isinstance(minor, LogLocator):
                axis.set_minor_locator(SparseMinorLocator(minor, dense_decades))
