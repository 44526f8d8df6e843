"""The notebooks' live controls (:mod:`dprisk.explore.notebook`) without a browser (issue 37).

What the page shows is read from the Panel objects the page is rendered from: a pane's HTML
as Panel sends it to the browser (``_transform_object``, which renders Markdown to HTML), a
box's text as its ``value``. The browser itself is tested in
``tests/notebooks/test_jupyterlab.py``.

- Every label of a result table is a cell of its own and every value is visible: the
  two-level notebook's labels contain ``|``, which split the cells of the Markdown table.
- A number box applies on Enter: Panel's ``enter-pressed`` event (sent from the key-up of
  Enter, which JupyterLab does not cancel) sets the value and recomputes.
- A slider position is shown and used at the precision of its step: a float position such as
  ``0.001 + 71 * 0.005 = 0.35600000000000004`` shows as ``0.356``, and the view gets 0.356.
"""

from __future__ import annotations

import html
from html.parser import HTMLParser

import pytest
from deferred_modules import deferred_module

from dprisk.explore.notebook import decimals, live, slider_step, table_html
from dprisk.inference.single_level import closed_form as sl

# Panel: imported by the first test that uses it
pn = deferred_module("panel")
panel_widget_models = deferred_module("panel.models.widgets")


class _Rows(HTMLParser):
    """The text of every table cell, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.rows, self._cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(self._cell.strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def _shown_rows(view) -> list[list[str]]:
    """The table rows of the live view's output, as the browser receives them."""
    rows = []
    for pane in view.output.objects:
        if isinstance(pane, (pn.pane.Markdown, pn.pane.HTML)):
            parser = _Rows()
            parser.feed(html.unescape(pane._transform_object(pane.object)["object"]))
            rows += parser.rows
    return rows


def _box(view, name: str) -> pn.widgets.TextInput:
    boxes = [w for w in view.layout.select(pn.widgets.TextInput)
             if f"dprisk-live-{name}-box" in w.css_classes]
    assert len(boxes) == 1, f"expected one text box for {name}, found {len(boxes)}"
    return boxes[0]


def _press_enter(box: pn.widgets.TextInput, text: str) -> None:
    """What the browser sends when a person types ``text`` and presses Enter (no blur)."""
    box.value_input = text
    box._process_event(panel_widget_models.EnterEvent(model=None, value_input=text))


LABELS = {"P[X1 = m+1 | D]": 0.123456789, "E[X2 | D]": 3.5, "a | b | c": 7,
          "<b>x</b> & *y*": 0.25}


def test_table_shows_every_label_and_value():
    view = live(lambda rho1: dict(LABELS), rho1=0.5)
    rows = _shown_rows(view)
    assert rows[0] == ["quantity", "value"]
    assert rows[1:] == [["P[X1 = m+1 | D]", "0.123457"], ["E[X2 | D]", "3.5"],
                        ["a | b | c", "7"], ["<b>x</b> & *y*", "0.25"]]


def test_table_html_escapes_markup():
    text = table_html({"<script>": 1.0})
    assert "<script>" not in text and "&lt;script&gt;" in text


def test_number_box_applies_on_enter():
    calls = []

    def view(rho1, p, known):
        calls.append((rho1, p, known))
        return {"P[correct]": sl.p_correct(rho1, p, known)}

    panel = live(view, rho1=0.5, p=0.2, known=0, ranges={"rho1": (0.001, 5.0)})
    _press_enter(_box(panel, "rho1"), "0.05")
    assert calls[-1] == (0.05, 0.2, 0)
    _press_enter(_box(panel, "p"), "1/3")  # a box without a slider; a fraction
    assert calls[-1] == (0.05, 1 / 3, 0)
    _press_enter(_box(panel, "known"), "2")
    assert calls[-1] == (0.05, 1 / 3, 2)
    assert _shown_rows(panel)[1] == ["P[correct]", f"{sl.p_correct(0.05, 1 / 3, 2):.6g}"]
    slider = panel.controls["rho1"].slider
    assert slider.value == 0.05  # the slider follows the box


def test_number_box_refuses_text_with_one_line():
    panel = live(lambda known, p: {"p": p}, known=0, p=0.5)
    _press_enter(_box(panel, "known"), "1.5")
    assert panel.last is None
    assert "known must be an integer" in panel.output.objects[0].object
    _press_enter(_box(panel, "known"), "1")
    assert panel.last == {"p": 0.5}
    _press_enter(_box(panel, "p"), "abc")
    assert "p must be a number" in panel.output.objects[0].object


@pytest.mark.parametrize(("typed", "known"), [("9007199254740993", 2**53 + 1),
                                              ("12345678901234567", 12345678901234567),
                                              ("6/2", 3), (" 4.0 ", 4), ("1e3", 1000)])
def test_an_integer_box_reads_the_integer_typed(typed, known):
    """Finding "a typed integer was rounded to a float's": the box read every number as a
    float, so known = 9007199254740993 (beyond 2**53, refused by ``dprisk marginal --known``
    and by dr.marginal_posterior) became 9007199254740992, which the view computed and
    showed as current under the box's text (marginal posterior 0.523843 at rho = 0.1).
    Integers are now read exactly (the command line's parse_integer); an integer-valued
    fraction or decimal is still its integer."""
    panel = live(lambda known: {"known": known}, known=0)
    _press_enter(_box(panel, "known"), typed)
    assert panel.last == {"known": known} and type(panel.last["known"]) is int
    panel = live(lambda known: {"m": sl.marginal_posterior(0.1, 0.5, known)}, known=0)
    _press_enter(_box(panel, "known"), "9007199254740993")
    assert panel.last is None
    assert "got 9007199254740993" in panel.output.objects[0].object


def test_slider_value_at_the_precision_of_its_step():
    calls = []
    panel = live(lambda rho1: calls.append(rho1) or {"rho1": rho1}, rho1=0.5,
                 ranges={"rho1": (0.001, 5.0)})
    slider = panel.controls["rho1"].slider
    assert slider.step == 0.005 and slider.tooltips is False
    slider.value = 0.35628800000000005  # a position as the issue saw it after a drag
    assert _box(panel, "rho1").value == "0.356"
    assert calls[-1] == 0.356  # the view gets the number shown (round to 3 decimals)
    dragged = 0.001 + 7 * slider.step  # as the browser computes a position
    assert repr(dragged) != "0.036"  # float noise
    slider.value = dragged
    assert _box(panel, "rho1").value == "0.036" and calls[-1] == 0.036


def test_int_slider_and_typed_value_outside_the_range():
    panel = live(lambda known: {"known": known}, known=3, ranges={"known": (0, 10)})
    control = panel.controls["known"]
    control.slider.value = 7
    assert _box(panel, "known").value == "7" and panel.last == {"known": 7}
    _press_enter(_box(panel, "known"), "25")
    assert control.slider.end == 25 and control.slider.value == 25
    control.value = 4  # from Python: the box and the slider follow
    assert _box(panel, "known").value == "4" and control.slider.value == 4


@pytest.mark.parametrize(("start", "end", "step", "places"), [
    (0.001, 5.0, 0.005, 3), (0.001, 0.999, 0.001, 3), (0.0, 1.0, 0.001, 3),
    (0.01, 2.0, 0.002, 3), (1e-4, 0.1, 1e-4, 4), (0.0, 3000.0, 5.0, 0),
])
def test_slider_step_is_one_two_or_five_times_a_power_of_ten(start, end, step, places):
    assert slider_step(start, end) == step
    assert (end - start) / step <= 1000 + 1e-9
    assert max(decimals(step), decimals(start)) == places
    # every position rounds to a value whose shortest form has at most `places` decimals
    for i in (0, 1, 7, 71, 333, 999):
        position = start + i * step
        assert decimals(round(position, places)) <= places
        assert abs(round(position, places) - position) < 1e-9 * max(1.0, abs(position))


def test_controls_built_when_first_used_are_those_built_at_once():
    """Outside a kernel ``live`` computes the view at once and builds its Panel objects when
    first used (a plain script never uses them, nor imports Panel); in a kernel it builds
    them at once. Both give the same controls and output, from one call of the view."""
    import matplotlib.pyplot as plt
    import numpy as np

    from dprisk.explore.notebook import LiveView

    calls = []

    def view(rho1, known, priors, prior, exact):
        calls.append((rho1, known, priors, prior, exact))
        return plt.figure(), {"rho1": rho1, "n": len(priors)}, f"prior {prior}"

    parameters = {"rho1": 0.5, "known": 2, "priors": (0.5, 0.1), "prior": "improper",
                  "exact": True}
    at_once = LiveView(view, parameters, {"rho1": (0.01, 2.0)}, build=True)
    later = LiveView(view, parameters, {"rho1": (0.01, 2.0)}, build=False)
    assert calls == [(0.5, 2, [0.5, 0.1], "improper", True)] * 2
    assert "controls" not in vars(later) and later.last is not None
    assert not plt.fignum_exists(later.last[0].number)  # closed at once, as the panes do
    assert later.values() == at_once.values()
    assert [type(p) for p in later.output.objects] == [type(p) for p in at_once.output.objects]
    assert ([p.object for p in later.output.objects[1:]]
            == [p.object for p in at_once.output.objects[1:]])
    assert {n: type(w) for n, w in later.controls.items()} == {
        n: type(w) for n, w in at_once.controls.items()}
    assert len(calls) == 2  # building the controls did not compute the view again
    _press_enter(_box(later, "rho1"), "0.05")
    assert calls[-1][0] == 0.05 and later.last[1] == {"rho1": 0.05, "n": 2}
    # a list whose repr is not a literal (numpy 2 scalars): the same message either way
    odd = {**parameters, "priors": [np.float64(0.5)]}
    bad_later, bad_at_once = (LiveView(view, odd, build=build) for build in (False, True))
    assert bad_later.last is None and bad_at_once.last is None
    assert "must be a Python list" in bad_later.output.objects[0].object
    assert bad_later.output.objects[0].object == bad_at_once.output.objects[0].object


def _png_size(data: bytes) -> tuple[int, int]:
    """(width, height) of a PNG file, from its header."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.mark.parametrize("layout", ["constrained", None])
def test_a_views_figure_is_shown_as_a_png_of_what_it_draws(layout):
    """A view's figure is shown as a PNG pane: the figure at ``LIVE_FIGURE_DPI`` cropped to
    what it draws, the picture Panel's Matplotlib pane (``tight=True``) showed, within two
    pixels each way (the crop counts drawn pixels, the tight box the texts' whole boxes);
    with or without a layout engine (without one it is saved with ``bbox_inches="tight"``).
    The figure is closed in pyplot, and its dpi is as the view left it."""
    import io

    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.image import imread

    from dprisk.explore.live_widgets import LIVE_FIGURE_DPI, panes

    def figure():
        fig, ax = plt.subplots(figsize=(6, 3.2), layout=layout)
        releases = np.arange(-3, 6)
        ax.plot(releases, sl.posterior(releases, 0.5, 0.5, 0), marker="o", ms=3)
        ax.set(xlabel="released x1*", ylabel="P[X1 = m+1 | x1*]", ylim=(0, 1))
        return fig

    fig = figure()
    dpi = fig.dpi
    (pane,) = panes(fig)
    assert isinstance(pane, pn.pane.PNG) and not plt.fignum_exists(fig.number)
    assert fig.dpi == dpi
    reference = pn.pane.Matplotlib(figure(), format="png", dpi=LIVE_FIGURE_DPI, tight=True)
    expected = reference._data(reference.object)
    width, height = _png_size(pane.object)
    expected_width, expected_height = _png_size(expected)
    assert abs(width - expected_width) <= 2 and abs(height - expected_height) <= 2
    pixels = imread(io.BytesIO(pane.object))
    assert pixels.shape[:2] == (height, width) and float(pixels.std()) > 0.05  # not blank
    shown = pane._transform_object(pane.object)
    assert (shown["width"], shown["height"]) == (width, height)
    plt.close("all")


def _static_outputs(monkeypatch, view, **parameters) -> tuple:
    """(the object ``live`` returned, the bundles it displayed) under ``DPRISK_LIVE=static``."""
    from dprisk.explore.notebook import STATIC_ENV

    monkeypatch.setenv(STATIC_ENV, "static")
    shown = []
    monkeypatch.setattr("IPython.display.display",
                        lambda bundle, raw: shown.append(bundle) if raw else None)
    result = live(view, **parameters)
    result._ipython_display_()
    return result, shown


def test_a_static_view_shows_the_output_at_the_parameters_without_controls(monkeypatch):
    """Under ``DPRISK_LIVE=static`` (what ``docs/conf.py`` sets for the kernels that execute
    the notebooks for the site) ``live`` computes the view once and displays, under the note,
    the figure as the PNG the live output shows (the same bytes as the PNG pane of the same
    figure), the numbers as the same HTML table, the Markdown as Markdown; no control is
    built (nothing of Panel's is displayed: a static page cannot run it). The end-to-end
    check, in a kernel, is in ``tests/notebooks/test_notebooks.py``."""
    import matplotlib.pyplot as plt

    from dprisk.explore.live_widgets import panes
    from dprisk.explore.notebook import STATIC_NOTE, StaticView

    def figure(rho1):
        fig, ax = plt.subplots(figsize=(4, 2), layout="constrained")
        ax.plot([0, 1, 2], [0.1, rho1, 0.3])
        ax.set(xlabel="released x1*", ylabel="P[X1 = m+1 | x1*]")
        return fig

    calls = []

    def view(rho1, prior):
        calls.append((rho1, prior))
        return figure(rho1), dict(LABELS), f"prior **{prior}**"

    shown_view, bundles = _static_outputs(monkeypatch, view, rho1=0.5, prior="improper",
                                          ranges={"rho1": (0.01, 2.0)})
    assert isinstance(shown_view, StaticView) and calls == [(0.5, "improper")]
    assert "controls" not in vars(shown_view) and not plt.get_fignums()
    assert [sorted(b) for b in bundles] == [["text/html", "text/plain"],
                                            ["image/png", "text/plain"],
                                            ["text/html", "text/plain"],
                                            ["text/markdown", "text/plain"]]
    assert bundles[0]["text/plain"] == STATIC_NOTE
    assert html.escape(STATIC_NOTE) in bundles[0]["text/html"]
    (pane,) = panes(figure(0.5))
    assert bundles[1]["image/png"] == pane.object
    parser = _Rows()
    parser.feed(bundles[2]["text/html"])  # as a browser reads it: the labels escaped once
    assert parser.rows[1:] == [[label, f"{value:.6g}" if isinstance(value, float)
                                else str(value)] for label, value in LABELS.items()]
    assert "dprisk-live-table" in bundles[2]["text/html"]
    assert bundles[3]["text/markdown"] == "prior **improper**"


def test_a_static_view_of_refused_input_shows_the_message(monkeypatch):
    """A view that refuses the parameters (``ValueError``) shows the note and its one-line
    message as the live output shows it (:func:`message_html`), nothing else."""
    from dprisk.explore.notebook import message_html

    def view(rho1):
        raise ValueError(f"rho1 must be positive, got {rho1}")

    shown_view, bundles = _static_outputs(monkeypatch, view, rho1=-1.0)
    assert shown_view.last is None and len(bundles) == 2
    assert bundles[1] == {"text/html": message_html("rho1 must be positive, got -1.0"),
                          "text/plain": "rho1 must be positive, got -1.0"}


@pytest.mark.parametrize("mode", ["yes", "Static", "off"])
def test_an_unknown_live_mode_is_refused_by_name(monkeypatch, mode):
    """``DPRISK_LIVE`` is ``static``, ``live`` or unset; anything else is an error naming
    the variable, its values and the text, before the view is computed (the settings'
    refusal, as for every ``DPRISK_*`` variable)."""
    monkeypatch.setenv("DPRISK_LIVE", mode)
    calls = []
    with pytest.raises(ValueError, match=rf"^DPRISK_LIVE must be one of live, static, "
                                         rf"got '{mode}'$"):
        live(lambda rho1: calls.append(rho1), rho1=0.5)
    assert calls == []
    monkeypatch.setenv("DPRISK_LIVE", "live")
    live(lambda rho1: calls.append(rho1), rho1=0.5)
    assert calls == [0.5]


@pytest.mark.parametrize(("args", "kwargs", "error", "match"), [
    # before: TypeError "'str' object is not callable" from the first update
    (("p_correct",), {"rho1": 0.5}, TypeError, r"^view must be a callable view"),
    # before: a range naming no parameter was ignored; the others failed only when the
    # controls were built ("a slider range needs start < end"), outside a kernel when shown
    ((), {"rho1": 0.5, "ranges": {"rho": (0.1, 1.0)}}, ValueError,
     r"^ranges\['rho'\] names no numeric parameter of the view \(the parameters: rho1\)"),
    ((), {"rho1": 0.5, "ranges": {"rho1": (1.0, 0.1)}}, ValueError,
     r"^ranges\['rho1'\] must be finite with start < end"),
    ((), {"rho1": 0.5, "ranges": {"rho1": (0.1, float("nan"))}}, ValueError, "start < end"),
    ((), {"rho1": 0.5, "ranges": {"rho1": "ab"}}, ValueError, r"must be two numbers"),
    ((), {"rho1": 0.5, "ranges": [("rho1", (0.1, 1.0))]}, TypeError, r"^ranges must be a dict"),
])
def test_live_refuses_bad_arguments(args, kwargs, error, match):
    from dprisk.explore.notebook import live

    view = args[0] if args else (lambda rho1: {"rho1": rho1})
    with pytest.raises(error, match=match):
        live(view, **kwargs)


def test_a_view_failing_with_another_error_shows_its_line_not_the_previous_numbers():
    """Typing ``['a']`` in the choose-rho notebook's list of priors: the API refuses it with a
    ``TypeError``, not a ``ValueError``. Before, the exception only left the callback (in
    JupyterLab, the kernel's log) and the output kept the previous priors' rho* as if it
    were the current one; now the output is the one line ``TypeError: ...`` (the exception
    is still raised, so a failing view stays visible), and a good list recovers."""
    from dprisk.inference.privacy import budget

    def view(target, priors):
        return {"rho*": budget.rho_for_target("marginal-risk", target, p=priors).rho}

    panel = live(view, target=1.5, priors=[0.5, 0.2])
    first = panel.last["rho*"]
    with pytest.raises(TypeError, match="p must be a number"):
        _press_enter(_box(panel, "priors"), "['a']")
    assert panel.last is None
    assert len(panel.output.objects) == 1  # the message only: no table of the old numbers
    assert "TypeError: p must be a number, got [&#x27;a&#x27;]" in panel.output.objects[0].object
    _press_enter(_box(panel, "priors"), "[0.5, 0.2]")
    assert panel.last == {"rho*": first}


@pytest.mark.parametrize(("value", "bounds"), [(10.0, (0.001, 5.0)), (0.0005, (0.001, 5.0)),
                                               (30, (0, 10))])
def test_a_parameter_outside_its_slider_range_widens_it(value, bounds):
    """A parameters cell's value outside the live range (the single-level notebook suggests
    ``rho1`` = 10 beside its slider's (0.001, 5.0)) widens the slider, as a typed value does.
    Before, the slider kept its range: the browser (noUiSlider) clamps the handle and sends
    the clamped value back on page load, so the view was recomputed at rho1 = 5 instead of 10
    (P[correct] at p = 0.2: 0.993352 shown for 0.999955; seen in headless Chromium). Here
    the page's answer is what a page sends: the slider's value clamped to its range."""
    calls = []
    panel = live(lambda x: calls.append(x) or {"x": x}, x=value, ranges={"x": bounds})
    slider = panel.controls["x"].slider
    assert slider.start <= value <= slider.end
    slider.value = min(max(slider.value, slider.start), slider.end)  # the page's answer
    assert calls[-1] == value and panel.last == {"x": value}
    assert _box(panel, "x").value == str(value)


def test_a_refused_input_leaves_no_figure_open_in_pyplot():
    """The notebooks' views draw their figure before the API checks the input (the
    single-level view calls ``plt.subplots`` and then ``dr.posterior``). Before, each refused
    input left that figure open in pyplot, and in a kernel the inline backend showed it,
    half drawn, under the next cell the person ran. Figures opened before are kept."""
    import matplotlib.pyplot as plt

    def view(rho1, p, known):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [sl.posterior(1, rho1, p, known)] * 2)
        return fig, {"P[correct]": sl.p_correct(rho1, p, known)}

    mine = plt.figure()
    try:
        panel = live(view, rho1=0.5, p=0.2, known=0, ranges={"rho1": (0.001, 5.0)})
        _press_enter(_box(panel, "p"), "1.5")  # refused by the API, after the figure
        assert panel.last is None and "p must be a probability" in panel.output.objects[0].object
        assert plt.get_fignums() == [mine.number]
        refused = live(view, rho1=-1.0, p=0.2, known=0)  # refused at the first computation
        assert refused.last is None and plt.get_fignums() == [mine.number]
    finally:
        plt.close("all")


def test_numpy_scalars_get_the_controls_of_python_numbers():
    """A parameter taken from an array (``n=np.arange(30)[20]``: ``np.int64``; ``np.float32``;
    ``np.bool_``) gets the control of the Python number or bool it holds. Before, only
    Python ``int`` and ``float`` were numbers: the others got a text box, ``ranges`` for them
    was accepted but gave no slider, and the view received the strings ``'20'`` and ``'0.5'``
    (and ``'True'``) instead of numbers, from its first call."""
    import numpy as np

    calls = []
    panel = live(lambda n, rho, exact: calls.append((n, rho, exact)) or {"n": n},
                 n=np.arange(30)[20], rho=np.float32(0.5), exact=np.bool_(True),
                 ranges={"n": (0, 30)})
    assert calls == [(20, 0.5, True)]
    assert [type(value) for value in calls[0]] == [int, float, bool]
    assert panel.controls["n"].slider.value == 20
    assert isinstance(panel.controls["exact"], pn.widgets.Checkbox)
    _press_enter(_box(panel, "rho"), "1/4")
    assert calls[-1] == (20, 0.25, True)


def test_a_refused_typed_value_does_not_widen_the_slider():
    """A typed value the view refuses leaves the slider's range and position as they were at
    the last accepted values. Before, typing ``rho1 = -1`` (refused: rho1 must be > 0) left
    the slider's range at (-1, 5.0) with its handle at -1. An accepted value outside the
    range still widens it. Exact comparisons: the bounds and positions are the numbers set."""
    def view(rho1):
        if not rho1 > 0:
            raise ValueError(f"rho1 must be > 0, got {rho1}")
        return {"rho1": rho1}

    panel = live(view, rho1=0.5, ranges={"rho1": (0.001, 5.0)})
    slider = panel.controls["rho1"].slider
    _press_enter(_box(panel, "rho1"), "-1")
    assert panel.last is None and "rho1 must be &gt; 0" in panel.output.objects[0].object
    assert (slider.start, slider.end, slider.value) == (0.001, 5.0, 0.5)
    assert _box(panel, "rho1").value == "-1"  # the box keeps what was typed
    _press_enter(_box(panel, "rho1"), "8")  # accepted: widens
    assert panel.last == {"rho1": 8.0} and (slider.start, slider.end) == (0.001, 8.0)
    _press_enter(_box(panel, "rho1"), "-2")
    assert (slider.start, slider.end, slider.value) == (0.001, 8.0, 8.0)
    slider.value = 2.0  # the slider still drives the view
    assert panel.last == {"rho1": 2.0} and _box(panel, "rho1").value == "2.000"
