"""Messages as text (issue 33, finding "messages render as Markdown").

A message quotes what a visitor typed; it is shown escaped in an HTML pane, so ``2**53``,
``__init__``, ``PATH.py``, ``![](http://...)`` and ``<img>`` appear as written: no bold,
no automatic link, nothing loaded from another server. The check renders the pane as Panel
sends it to the browser (the pane's transformed object, HTML-unescaped once as the page
does) and looks for the tags Markdown would have made.
"""

import html
import re

from deferred_modules import deferred_module

from dprisk.explore.notebook import live, message_html

app = deferred_module("dprisk.explore.app")  # Panel: imported by the first test that uses it

TYPED = "2**53 __init__ PATH.py ![](http://example.invalid/x.png) <img src=x onerror=alert(1)>"


def _rendered(pane) -> str:
    """The HTML the browser receives for ``pane`` (Panel escapes it once for transport)."""
    return html.unescape(pane._transform_object(pane.object)["object"])


def _tags(markup: str) -> set:
    return set(re.findall(r"<\s*([a-zA-Z]+)", markup))


def test_message_html_is_the_text_and_nothing_else():
    markup = message_html(TYPED)
    assert _tags(markup) == {"div"}
    assert html.unescape(re.sub(r"<[^>]+>", "", markup)) == TYPED


def test_view_message_shows_typed_text_as_written():
    view = app.single_level_view()
    view.refresh()
    view.controls["p"].value = TYPED
    assert view.message.visible
    rendered = _rendered(view.message)
    assert _tags(rendered) == {"div"}  # no strong, em, a or img
    assert html.escape(TYPED) in rendered


def test_notebook_message_shows_typed_text_as_written():
    def view(rho1):
        raise ValueError(f"rho1 refused: {TYPED}")

    panel = live(view, rho1=0.5)
    (pane,) = panel.output.objects
    rendered = _rendered(pane)
    assert _tags(rendered) == {"div"} and html.escape(TYPED) in rendered
