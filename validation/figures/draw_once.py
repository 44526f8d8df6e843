"""What one draw of a laid-out figure would compute several times over, computed once.

A constrained layout lays a figure out in two passes, each of which measures every axes'
tight box, and the draw then measures most of it again. Each measurement of an axis places
its ticks again (:meth:`matplotlib.axis.Axis._update_ticks`: locate them in the view, format
their labels, set each tick's position and label text) and measures its tick labels' boxes
again (``Axis._get_ticklabel_bboxes``, laying out each label's text): about ten times for each
axis over one draw (the axis's tight box, its label's position, which also measures the tick
labels of the axes it is aligned with, each of its spines' extents, the draw itself), most of
them with the axis where it was and its view unchanged. :func:`ticks_placed_once` makes those
repeats return what the first run at that place returned, for the duration of one draw.

Math text (``$10^{-2}$``, the labels of log axes) is parsed by a parser that each new
renderer makes for itself, whose cache matplotlib keys on that parser and holds 50
expressions: each figure parses its labels again, as does a figure with more than 50 of them.
:func:`shared_math_parser` is one parser for the renderers of :func:`~dprisk.validation.
figures.png.png_bytes`, remembering :data:`MATH_CACHE_SIZE` expressions across figures.

Each text is laid out (its lines' sizes from the font, its box for its alignment and rotation)
each time its extent is asked for and again when it is drawn, some four times over a draw;
:func:`texts_laid_out_once` keeps each text's layout while what it depends on is unchanged.

Each access to an axes' view limits (``viewLim``, thousands of times over a draw) first checks
whether it or an axes sharing its x or y axis awaits autoscaling, by sorting the axes' share
groups; :func:`view_limits_settled` skips that check once no axes of the figure awaits it.

A legend packs its entries (``VPacker`` and ``HPacker``: each child's box measured, then
aligned and stacked) each time its extent is asked for, in each layout pass and twice as it
draws; :func:`boxes_packed_once` keeps each packer's box and its children's offsets while the
packer is unchanged.

All return what matplotlib computes: the figures drawn are the same, pixel for pixel (the
report's 28 figures compared).

Drawing a figure makes tens of thousands of Python objects, enough to set off Python's cyclic
garbage collector many times, and now and then a full collection, which walks every object of
the process: after a study of the report, some 400,000 (PyMC, PyTensor, xarray), about 0.5 s
of CPU each time, for little garbage (most objects of a drawing are freed by reference
counting as it goes). The report draws a study's figures with the collector paused
(:func:`dprisk.runtime.collector.collector_paused`); it runs again, as it was, afterwards.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.figure import Figure, FigureBase
from matplotlib.mathtext import MathTextParser
from matplotlib.offsetbox import HPacker, VPacker
from matplotlib.text import Text

__all__ = ["MATH_CACHE_SIZE", "boxes_packed_once", "shared_math_parser",
           "texts_laid_out_once", "ticks_placed_once", "view_limits_settled"]

#: Math-text expressions (with their dpi and font) :func:`shared_math_parser` remembers.
MATH_CACHE_SIZE = 512
#: The output a ``MathTextParser`` is made for (``MathTextParser(output)``), by its output type.
_AGG_PARSER_OUTPUTS = {"vector": "path", "raster": "agg"}
#: The methods of an axis that :func:`ticks_placed_once` replaces during a draw.
_REPLACED = ("_update_ticks", "_get_ticklabel_bboxes")
#: What a packer's box and offsets (``_get_bbox_and_child_offsets``) read of the packer itself.
_PACKER_ATTRIBUTES = ("pad", "sep", "width", "height", "align", "mode")
#: What a text's layout (``Text._get_layout``) reads of the text, besides its font, figure dpi
#: and renderer (matplotlib 3.11's names; without them, texts are laid out as matplotlib does).
_LAYOUT_ATTRIBUTES = ("_text", "_rotation", "_rotation_mode", "_horizontalalignment",
                      "_verticalalignment", "_multialignment", "_linespacing", "_parse_math")


@contextmanager
def ticks_placed_once(fig: Figure) -> Iterator[None]:
    """Within the block, each axis of ``fig`` places its ticks again only when it has moved.

    Each axis's ``_update_ticks`` (matplotlib's; it returns the ticks inside the view) runs as
    before when the axis's *place* differs from the one it last ran at, and otherwise returns
    what that run returned: its ticks are then already placed and labelled as that run left
    them. The place is what the run's result depends on: the view and data intervals and the
    axis's length of the axis and of the axes its locators and formatters belong to (the
    axes of a shared axis share them), and the figure's dpi. matplotlib's locators read the
    length only through ``Axis.get_tick_space`` (the number of tick labels that fit: ``nbins``
    or ``numticks="auto"``) and its formatters not at all, so for an axis whose locators and
    formatters are matplotlib's (or declare ``reads_length_through_tick_space``) the place
    holds that number, not the axes' box: a constrained layout's passes, which move an axes by
    a few pixels, then place its ticks once (the report's risk figures: 174 placements -> 100);
    for any other helper it holds the axes' box in pixels. Likewise each axis's
    ``_get_ticklabel_bboxes`` (the boxes of its tick labels' texts) runs again only when the
    ticks have been placed again, the place has changed, or it is asked about other ticks or
    another renderer. Locators, formatters, tick parameters and tick label fonts do not change
    while a figure draws. On leaving the block (normally or by an exception) the axes use
    matplotlib's methods again, so that a figure drawn later (or changed) behaves as before.

    Axes of three dimensions (whose ticks also depend on the projection) and axes of
    matplotlib versions without these methods are left as they are; an axis whose locator or
    formatter belongs to something other than an axis (a polar axes' angle axis: a wrapper of
    it) places its ticks each time, as matplotlib does.
    """
    replaced = []
    try:
        for axis in _axes_axis(fig):
            if not all(hasattr(axis, name) for name in _REPLACED):
                continue
            saved = {name: axis.__dict__[name] for name in _REPLACED if name in axis.__dict__}
            memo = _AxisMemo(axis)
            replaced.append((axis, saved))
            axis._update_ticks = memo.update_ticks
            axis._get_ticklabel_bboxes = memo.ticklabel_bboxes
        yield
    finally:
        for axis, saved in replaced:
            for name in _REPLACED:
                axis.__dict__.pop(name, None)
            axis.__dict__.update(saved)


@contextmanager
def texts_laid_out_once() -> Iterator[None]:
    """Within the block, a text is laid out again only when what its layout reads has changed.

    ``Text._get_layout(renderer)`` (matplotlib's: each line's width, ascent and descent from
    the font, the box they make, aligned and rotated about the text's anchor; not its
    position) returns, for a text it has laid out before in the block, what it returned then
    if the renderer, the figure's dpi, the font (its properties' hash, as matplotlib's own
    caches key fonts) and the text's string, rotation, rotation mode, alignments and line
    spacing are the same. Texts that wrap, use TeX or take their rotation from their transform
    (whose layout depends on more) are laid out as before. Afterwards ``Text`` has its own
    method again. The method is replaced on the class for the block's duration: a figure
    drawn by another thread meanwhile gets the same layouts, computed the same way.
    """
    original = Text.__dict__.get("_get_layout")
    sample = vars(Text(0, 0, "x"))
    if original is None or not all(name in sample for name in _LAYOUT_ATTRIBUTES):
        yield
        return
    layouts: dict[int, tuple] = {}

    def get_layout(text, renderer):
        if text.get_wrap() or text.get_usetex() or text.get_transform_rotates_text():
            return original(text, renderer)
        state = vars(text)
        key = (renderer, text.get_figure(root=True).dpi, hash(text._fontproperties),
               *(state[name] for name in _LAYOUT_ATTRIBUTES))
        return _remembered(layouts, text, key, lambda: original(text, renderer))

    Text._get_layout = get_layout
    try:
        yield
    finally:
        Text._get_layout = original


def _remembered(store: dict, owner, key, compute):
    """``compute()`` for ``owner``, or what it returned the last time ``owner`` had ``key``.

    ``store`` maps ``id(owner)`` to ``(owner, key, value)``: the owner itself is kept, so an
    id reused by a new object after the old one is freed is never taken for it.
    """
    known = store.get(id(owner))
    if known is not None and known[0] is owner and known[1] == key:
        return known[2]
    value = compute()
    store[id(owner)] = (owner, key, value)
    return value


@contextmanager
def boxes_packed_once() -> Iterator[None]:
    """Within the block, a packer packs its children again only when it or the renderer changed.

    ``VPacker._get_bbox_and_child_offsets(renderer)`` and ``HPacker``'s (matplotlib's: each
    visible child's box, aligned and stacked with the packer's ``pad`` and ``sep`` in points,
    so scaled by the renderer's dpi) return, for a packer packed before in the block, what they
    returned then if the renderer, its dpi, the packer's pad, separation, width, height,
    alignment and mode and its visible children are the same. Its children (texts, drawing
    areas, packers) do not change while a figure draws. Afterwards the classes have their own
    methods again.
    """
    originals = {kind: kind.__dict__.get("_get_bbox_and_child_offsets")
                 for kind in (VPacker, HPacker)}
    if any(method is None for method in originals.values()) or not all(
            hasattr(VPacker(), name) for name in _PACKER_ATTRIBUTES):
        yield
        return
    packed: dict[int, tuple] = {}

    def remembering(original):
        def get_bbox_and_child_offsets(packer, renderer):
            key = (renderer, renderer.dpi, *(getattr(packer, name) for name in _PACKER_ATTRIBUTES),
                   *map(id, packer.get_visible_children()))
            return _remembered(packed, packer, key, lambda: original(packer, renderer))
        return get_bbox_and_child_offsets

    for kind, original in originals.items():
        kind._get_bbox_and_child_offsets = remembering(original)
    try:
        yield
    finally:
        for kind, original in originals.items():
            kind._get_bbox_and_child_offsets = original


@contextmanager
def view_limits_settled(fig: Figure) -> Iterator[None]:
    """Within the block, an axes of ``fig`` checks its view limits only while some await scaling.

    ``_AxesBase._unstale_viewLim`` (matplotlib's: autoscale the axes if it or an axes sharing
    one of its axes has been marked stale by ``_request_autoscale_view``) does nothing when no
    axes of the figure (its subfigures, inset axes and the axes they share an axis with) is
    marked stale; the method then returns at once for them, as matplotlib's would after its
    check. It runs as before for other axes, and for every axes again after a request until
    none is stale. Afterwards the axes have matplotlib's methods again.
    """
    base = next((kind for kind in Axes.__mro__ if "_unstale_viewLim" in vars(kind)), None)
    unstale = None if base is None else base.__dict__["_unstale_viewLim"]
    request = None if base is None else base.__dict__.get("_request_autoscale_view")
    axes = {id(ax): ax for ax in _all_axes(fig)}
    if request is None or not all(
            hasattr(ax, "_stale_viewlims") and hasattr(ax, "_shared_axes") for ax in axes.values()):
        yield
        return
    for ax in list(axes.values()):
        for name in ax._axis_names:
            axes.update((id(other), other) for other in ax._shared_axes[name].get_siblings(ax))
    state = {"settled": False}

    def settled() -> bool:
        return not any(stale for ax in axes.values() for stale in ax._stale_viewlims.values())

    def unstale_view_limits(ax):
        if state["settled"] and axes.get(id(ax)) is ax:
            return
        unstale(ax)
        state["settled"] = settled()

    def request_autoscale_view(ax, *args, **kwargs):
        state["settled"] = False
        return request(ax, *args, **kwargs)

    base._unstale_viewLim = unstale_view_limits
    base._request_autoscale_view = request_autoscale_view
    try:
        yield
    finally:
        base._unstale_viewLim = unstale
        base._request_autoscale_view = request


def _axes_axis(fig: FigureBase) -> list:
    """Every axis (x, y, ...) of the 2-D axes of ``fig``, its subfigures and inset axes."""
    return [axis for ax in _all_axes(fig) if getattr(ax, "name", "") != "3d"
            for axis in getattr(ax, "_axis_map", {}).values()]


def _all_axes(fig: FigureBase) -> list:
    """Every axes of ``fig``, its subfigures and their inset axes, each once."""
    axes, pending = [], [fig]
    while pending:
        parent = pending.pop()
        axes += parent.get_axes()
        pending += getattr(parent, "subfigs", [])
    seen, pending = {}, list(axes)
    while pending:
        ax = pending.pop()
        if id(ax) not in seen:
            seen[id(ax)] = ax
            pending += getattr(ax, "child_axes", [])
    return list(seen.values())


class _AxisMemo:
    """An axis's tick placement and tick label boxes, remembered for the axis's place."""

    def __init__(self, axis):
        self.axis = axis
        self.update = axis._update_ticks  # matplotlib's (or what was set before), bound
        self.bboxes = axis._get_ticklabel_bboxes
        self.place = self.ticks = None
        self.placements = 0  # how many times the ticks were placed (for the boxes' key)
        self.boxes_key = self.boxes = None

    def update_ticks(self) -> list:
        """``axis._update_ticks()``, run again only when the axis's place has changed."""
        place = _place(self.axis, _tick_place)
        if place is None or place != self.place:
            self.ticks, self.place = self.update(), place
            self.placements += 1
        return list(self.ticks)

    def ticklabel_bboxes(self, ticks, renderer) -> tuple[list, list]:
        """``axis._get_ticklabel_bboxes(ticks, renderer)``, measured again only when needed."""
        place = _place(self.axis)
        key = (self.placements, place, renderer, tuple(map(id, ticks)))
        if place is None or key != self.boxes_key:
            self.boxes, self.boxes_key = self.bboxes(ticks, renderer), key
        return list(self.boxes[0]), list(self.boxes[1])


def _place(axis, own=None) -> tuple | None:
    """What an axis's ticks depend on while a figure draws (see :func:`ticks_placed_once`).

    ``own(axis)`` of the axis and of the other axes its helpers belong to (default
    :func:`_own_place`, the axes' box in pixels). None when a locator or formatter of the axis
    belongs to something other than an axis (a polar axes' wrapper of its angle axis): its
    ticks are then placed as matplotlib does.
    """
    own = _own_place if own is None else own
    place = own(axis)
    others = {id(helper.axis): helper.axis
              for ticker in (axis.major, axis.minor)
              for helper in (ticker.locator, ticker.formatter)
              if getattr(helper, "axis", None) is not None and helper.axis is not axis}
    for other in others.values():
        if not isinstance(other, Axis):
            return None
        place += own(other)
    return place


#: Each axis's tick space at its last place (``Axis.get_tick_space`` transforms its box: it
#: is asked for at every tick placement's check, mostly at the same place).
_TICK_SPACES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _tick_place(axis) -> tuple:
    """What the placement of an axis's ticks reads of its place: :func:`_own_place`, or less.

    The view and data intervals, ``axis.get_tick_space()`` (the only way matplotlib's locators
    read the axis's length; its formatters do not read it) and the dpi when every locator and
    formatter of the axis is matplotlib's or declares ``reads_length_through_tick_space``;
    else :func:`_own_place` (a helper of unknown make may read the axes' box itself).
    """
    place = _own_place(axis)
    helpers = (axis.major.locator, axis.major.formatter, axis.minor.locator,
               axis.minor.formatter)
    if not all(_reads_length_through_tick_space(helper) for helper in helpers):
        return place
    known = _TICK_SPACES.get(axis)
    if known is None or known[0] != place:  # the tick space is a function of the place
        known = _TICK_SPACES[axis] = (place, axis.get_tick_space())
    return (*place[:4], known[1], place[-1])


def _reads_length_through_tick_space(helper) -> bool:
    """Whether a locator or formatter reads its axis's length only through its tick space."""
    return (type(helper).__module__.partition(".")[0] == "matplotlib"
            or getattr(helper, "reads_length_through_tick_space", False) is True)


def _own_place(axis) -> tuple:
    return (*axis.get_view_interval(), *axis.get_data_interval(), *axis.axes.bbox.bounds,
            axis.get_figure(root=True).dpi)


class _RememberingMathTextParser(MathTextParser):
    """A ``MathTextParser(output)`` that remembers :data:`MATH_CACHE_SIZE` parses.

    Keyed as matplotlib keys its own cache (expression, dpi, font, antialiasing, glyph loading
    flags) and by the ``mathtext.*`` settings in effect, which the parse reads.
    """

    def __init__(self, output: str):
        super().__init__(output)
        parse = MathTextParser._parse_cached.__wrapped__  # matplotlib's, without its cache

        @functools.lru_cache(MATH_CACHE_SIZE)
        def parse_keyed(s, dpi, prop, antialiased, load_glyph_flags, settings):
            return parse(self, s, dpi, prop, antialiased, load_glyph_flags)

        self._parse_keyed = parse_keyed

    def _parse_cached(self, s, dpi, prop, antialiased, load_glyph_flags):
        settings = tuple((key, str(mpl.rcParams[key])) for key in _math_settings())
        return self._parse_keyed(s, dpi, prop, antialiased, load_glyph_flags, settings)


@functools.cache
def _math_settings() -> tuple[str, ...]:
    return tuple(key for key in mpl.rcParams if key.startswith("mathtext."))


@functools.cache
def shared_math_parser() -> MathTextParser | None:
    """The math-text parser the renderers of ``png_bytes`` share.

    Its output is the one Agg's own parser makes (matplotlib 3.11's Agg renderer parses math
    text to glyphs and boxes, ``"path"``; 3.10's to a bitmap, ``"agg"``). None with a
    matplotlib whose parser this cannot wrap: each renderer then keeps its own.
    """
    if not hasattr(getattr(MathTextParser, "_parse_cached", None), "__wrapped__"):
        return None
    output = _AGG_PARSER_OUTPUTS.get(
        getattr(RendererAgg(1, 1, 72).mathtext_parser, "_output_type", None))
    return None if output is None else _RememberingMathTextParser(output)
