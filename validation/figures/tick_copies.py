"""New ticks of an axis made by copying one tick, not built one by one, while a figure draws.

An axis keeps one :class:`matplotlib.axis.Tick` per tick location (its major and minor ticks
separately). When it needs more than it has (``Axis.get_major_ticks`` and
``get_minor_ticks``, called as it places its ticks), matplotlib builds each new tick from its
tick parameters (``Axis._get_tick``: a ``Tick`` of two tick lines, a grid line and two labels,
each reading its defaults from ``rcParams``; about 0.45 ms) and then copies the properties of
the axis's first tick onto it (``Axis._copy_tick_props``: each part's ``update_from``, which
deep-copies the first tick's markers; about 0.25 ms). The report's 28 figures make about 1,300
ticks that way while they draw.

Within :func:`ticks_copied`, each new tick is a copy of one tick built by matplotlib for that
axis (its *prototype*: built once per axis and kind, with the tick parameters then in effect,
and never used), each mutable part of it copied (callback registries new, fonts, markers,
paths, lists and arrays copied, as a new tick has its own), followed by the same copy of the
first tick's properties as matplotlib's, except that a tick line's marker is copied shallowly
(a :class:`~matplotlib.markers.MarkerStyle` cannot be changed once made: matplotlib's
``Line2D`` replaces it whenever it changes it). The ticks then are what matplotlib's would be,
attribute by attribute: :func:`tick_copies_agree` builds ticks both ways for axes of
several kinds (linear, logarithmic with minor ticks, custom tick parameters, rotated labels,
grid lines) and compares every attribute of every part (values, not identities, where a
new tick has its own object); the copies are made only if all agree. The figures drawn are the
same, pixel for pixel (the report's 28 figures compared).

Only axes whose ticks are matplotlib's :class:`~matplotlib.axis.XTick` and
:class:`~matplotlib.axis.YTick` are concerned; ticks of other axes (polar, 3-D) are built as
matplotlib builds them. As in :mod:`dprisk.validation.figures.draw_once`, ``rcParams``, tick
parameters and the axes' transforms do not change while a figure draws; a prototype is built
again when an axis's tick parameters differ from those it was built with.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from matplotlib.axis import Axis, Tick, XTick, YTick
from matplotlib.cbook import CallbackRegistry
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.markers import MarkerStyle
from matplotlib.path import Path
from matplotlib.text import Text
from matplotlib.transforms import Affine2DBase

__all__ = ["tick_copies_agree", "ticks_copied"]

#: The parts of a tick (matplotlib 3.11's names), in the order ``_copy_tick_props`` copies them.
_TEXTS = ("label1", "label2")
_LINES = ("tick1line", "tick2line", "gridline")
#: The tick attributes ``Axis._copy_tick_props`` copies besides its parts'.
_TICK_COPIED = ("_loc", "_size", "_width", "_base_pad", "_labelrotation", "_zorder", "_tickdir")
#: What ``Line2D.update_from`` copies besides ``Artist.update_from`` and the marker.
_LINE_COPIED = ("_linestyle", "_linewidth", "_color", "_gapcolor", "_markersize",
                "_markerfacecolor", "_markerfacecoloralt", "_markeredgecolor",
                "_markeredgewidth", "_unscaled_dash_pattern", "_dash_pattern", "_dashcapstyle",
                "_dashjoinstyle", "_solidcapstyle", "_solidjoinstyle", "_drawstyle")
#: The methods of ``Axis`` that :func:`ticks_copied` replaces for its block.
_REPLACED = ("get_major_ticks", "get_minor_ticks")
#: matplotlib's own methods (as this module found them), which the agreement check compares to.
_MATPLOTLIBS = {name: Axis.__dict__.get(name) for name in _REPLACED}


@contextmanager
def ticks_copied() -> Iterator[None]:
    """Within the block, an axis's new ticks are copies of a prototype (module notes).

    ``Axis.get_major_ticks`` and ``get_minor_ticks`` are replaced on the class for the block's
    duration, by methods that return the same ticks made more cheaply; afterwards ``Axis`` has
    matplotlib's methods again. Nothing changes where :func:`tick_copies_agree` is False.
    """
    originals = {name: Axis.__dict__.get(name) for name in _REPLACED}
    if any(method is None for method in originals.values()) or not tick_copies_agree():
        yield
        return
    copier = _TickCopier(originals)
    Axis.get_major_ticks = copier.get_major_ticks
    Axis.get_minor_ticks = copier.get_minor_ticks
    try:
        yield
    finally:
        for name, method in originals.items():
            setattr(Axis, name, method)


class _TickCopier:
    """``get_major_ticks`` and ``get_minor_ticks`` making new ticks from prototypes."""

    def __init__(self, originals: dict):
        self.originals = originals
        self.prototypes: dict[tuple[int, bool], tuple] = {}
        copier = self

        def get_major_ticks(axis, numticks=None):
            return copier.ticks(axis, True, numticks)

        def get_minor_ticks(axis, numticks=None):
            return copier.ticks(axis, False, numticks)

        get_major_ticks.__doc__ = originals["get_major_ticks"].__doc__
        get_minor_ticks.__doc__ = originals["get_minor_ticks"].__doc__
        self.get_major_ticks, self.get_minor_ticks = get_major_ticks, get_minor_ticks

    def ticks(self, axis, major: bool, numticks) -> list:
        """``axis.get_major_ticks(numticks)`` (``get_minor_ticks`` if not ``major``)."""
        if not _plain(axis):
            return self.originals["get_major_ticks" if major else "get_minor_ticks"](
                axis, numticks)
        if numticks is None:
            numticks = len(axis.get_majorticklocs() if major else axis.get_minorticklocs())
        name = "majorTicks" if major else "minorTicks"
        while len(getattr(axis, name)) < numticks:
            tick = self.new_tick(axis, major)
            ticks = getattr(axis, name)
            ticks.append(tick)
            _copy_tick_props(ticks[0], tick)
        return getattr(axis, name)[:numticks]

    def new_tick(self, axis, major: bool):
        """What ``axis._get_tick(major)`` returns: a copy of the axis's prototype."""
        tick_kw = axis._major_tick_kw if major else axis._minor_tick_kw
        known = self.prototypes.get((id(axis), major))
        if known is None or known[0] is not axis or not _same_kw(known[1], tick_kw):
            known = (axis, dict(tick_kw), _Prototype(axis._get_tick(major=major)))
            self.prototypes[id(axis), major] = known
        return known[2].copy()


def _plain(axis) -> bool:
    """Whether ``axis`` makes its ticks as :class:`~matplotlib.axis.Axis` does (module notes)."""
    kind = type(axis)
    return (axis._tick_class in (XTick, YTick) and kind._get_tick is Axis._get_tick
            and kind._copy_tick_props is Axis._copy_tick_props
            and "_get_tick" not in vars(axis) and "_copy_tick_props" not in vars(axis))


def _same_kw(saved: dict, current: dict) -> bool:
    if saved.keys() != current.keys():
        return False
    for key, value in saved.items():
        other = current[key]
        if value is other:
            continue
        try:
            if type(value) is not type(other) or not bool(value == other):
                return False
        except (ValueError, TypeError):  # arrays and the like: a new prototype
            return False
    return True


class _Prototype:
    """A tick built by matplotlib, and how to copy it: each part's state and mutable values."""

    def __init__(self, tick: Tick):
        self.tick = tick
        self.parts = [(name, *_copy_plan(getattr(tick, name))) for name in (*_LINES, *_TEXTS)]
        self.own = _copy_plan(tick)

    def copy(self) -> Tick:
        """A tick equal to the prototype attribute by attribute, with its own mutable parts."""
        new = _copied(*self.own)
        for name, kind, state, plan in self.parts:
            new.__dict__[name] = _copied(kind, state, plan)
        return new


def _copied(kind: type, state: dict, plan: list):
    new = object.__new__(kind)
    state = state.copy()
    for key, copy_value in plan:
        state[key] = copy_value(state[key])
    new.__dict__ = state
    return new


def _copy_plan(artist) -> tuple[type, dict, list]:
    """``(type, state, [(attribute, copier)])``: what a copy of ``artist`` copies of its own."""
    state = dict(vars(artist))
    plan = []
    for key, value in state.items():
        if isinstance(value, CallbackRegistry):
            plan.append((key, _new_registry))
        elif key == "_path_effects":
            continue  # rcParams' list, as a new artist has it
        elif isinstance(value, (list, dict)):
            plan.append((key, type(value)))
        elif isinstance(value, (np.ndarray, FontProperties, Path)):
            plan.append((key, type(value).copy))
        elif isinstance(value, MarkerStyle):
            plan.append((key, _copy_marker))
    return type(artist), state, plan


def _new_registry(registry: CallbackRegistry) -> CallbackRegistry:
    return CallbackRegistry(registry.exception_handler, signals=registry._signals)


def _copy_marker(marker: MarkerStyle) -> MarkerStyle:
    new = object.__new__(MarkerStyle)
    new.__dict__ = dict(vars(marker))
    return new


def _copy_tick_props(src: Tick, dest: Tick) -> None:
    """``Axis._copy_tick_props(src, dest)``, each tick line's marker copied shallowly."""
    for name in _TEXTS:
        getattr(dest, name).update_from(getattr(src, name))
    for name in _LINES:
        line, other = getattr(dest, name), getattr(src, name)
        _line_update_from(line, other)
    dest.update_from(src)
    for name in _TICK_COPIED:
        setattr(dest, name, getattr(src, name))


def _line_update_from(line: Line2D, other: Line2D) -> None:
    """``Line2D.update_from``, with the marker copied shallowly (module notes)."""
    super(Line2D, line).update_from(other)
    state, source = vars(line), vars(other)
    for name in _LINE_COPIED:
        state[name] = source[name]
    line._marker = _copy_marker(other._marker)


@functools.cache
def tick_copies_agree() -> bool:
    """Whether ticks made within :func:`ticks_copied` equal matplotlib's here.

    For a figure with a linear axes, a logarithmic one (minor ticks), one with many tick
    parameters set (sizes, widths, colours, direction, pads, label sizes and rotation, grid
    lines) and one whose first tick's parts were changed directly, each axis makes three major
    and three minor ticks both ways; every attribute of every tick and part must be equal. False
    with a matplotlib whose ticks this does not know (any failure).
    """
    if (not all(hasattr(Axis, name) for name in ("_get_tick", "_copy_tick_props"))
            or None in _MATPLOTLIBS.values()):
        return False
    try:
        pairs = _sample_ticks()
        return len(pairs) > 0 and all(_equal(a, b, {}) for a, b in pairs)
    except Exception:  # any failure means: keep matplotlib's ticks
        return False


def _sample_ticks() -> list[tuple]:
    """Pairs (matplotlib's tick, the copy's) of the sample axes (:func:`tick_copies_agree`)."""
    import matplotlib as mpl
    from matplotlib.figure import Figure

    with mpl.rc_context({"axes.grid": True, "xtick.minor.visible": True}):
        fig = Figure(figsize=(6, 4))
        plain, log, custom, changed = fig.subplots(2, 2).ravel()
    log.set_yscale("log")
    custom.tick_params(axis="both", which="both", direction="in", length=6, width=1.3,
                       color="tab:red", pad=7, labelsize=7, labelrotation=30,
                       labelcolor="tab:blue", grid_color="0.5", grid_alpha=0.4,
                       grid_linestyle=":", right=True, top=True, labelright=True)
    custom.tick_params(axis="x", which="minor", length=2, gridOn=True)
    first = changed.xaxis.majorTicks[0]  # the first only: the others are copied from it
    first.label1.set_fontweight("bold")
    first.tick1line.set_markeredgecolor("tab:green")
    first.gridline.set_linewidth(2.5)
    first.gridline.set_visible(True)
    originals = _MATPLOTLIBS  # not a block's replacements, if called within one
    copier = _TickCopier(originals)
    pairs = []
    for ax in (plain, log, custom, changed):
        for axis in (ax.xaxis, ax.yaxis):
            for major, name in ((True, "majorTicks"), (False, "minorTicks")):
                if not _plain(axis):
                    return []
                first = getattr(axis, name)[0]
                theirs = originals["get_major_ticks" if major else "get_minor_ticks"](axis, 3)
                setattr(axis, name, [first])
                ours = copier.ticks(axis, major, 3)
                pairs += zip(theirs, ours, strict=True)
    return pairs


def _equal(a, b, seen: dict) -> bool:
    """Whether ``a`` and ``b`` (tick attributes) are equal: values, or the same figure parts."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y, seen) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k], seen) for k in a)
    if isinstance(a, Affine2DBase):  # a marker's own transforms (deep copies in matplotlib's)
        return bool(np.array_equal(a.get_matrix(), b.get_matrix()))
    if isinstance(a, types.MethodType):
        # A marker's ``_marker_function``: called only while the marker is made (by its
        # ``_recache``, from ``_set_marker``); matplotlib's copy binds it to a half-made copy.
        return a.__func__ is b.__func__
    if isinstance(a, CallbackRegistry):
        return not a.callbacks and not b.callbacks and a._signals == b._signals
    if isinstance(a, (Tick, Line2D, Text, MarkerStyle, Path, FontProperties)):
        if seen.get(id(a)) is b:
            return True
        seen[id(a)] = b
        return _equal(vars(a), vars(b), seen)
    if hasattr(a, "__dict__") and not isinstance(a, type):
        return False  # other objects (figures, axes, transforms) must be the same object
    try:
        return bool(a == b) or (a != a and b != b)
    except (TypeError, ValueError):
        return False
