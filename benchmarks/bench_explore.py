"""Server-side latency of one control change in ``dprisk explore`` (target: 200 ms).

A control change on an exact path runs, in the server, the widget's watcher: reading the text
boxes, the public API call, the numbers table and the Bokeh plot's new data, and the
serialisation of the document patch that goes to the page (Bokeh's ``PATCH-DOC`` message).
``run()`` attaches a view to a Bokeh ``Document`` as the server does, warms it, then times
``repeats`` changes of one control (alternating values, so each is a real change) and reports
the median in milliseconds, beside the bare API call the view makes (the same number of
calls, median) and their ratio, and the ratio to the 200 ms target.
"""

from __future__ import annotations

from timing import median_seconds

#: Upper bound of a control change on an exact path, server side (issue 20).
TARGET_MS = 200.0


def _attach(view):
    from bokeh.document import Document
    from bokeh.protocol import Protocol

    doc = Document()
    doc.add_root(view.layout.get_root(doc))
    events = []
    doc.on_change(events.append)
    protocol = Protocol()

    def flush():
        if events:
            protocol.create("PATCH-DOC", list(events))  # serialises the patch for the page
            events.clear()

    return flush


def _case(view, control: str, values: tuple, api, repeats: int) -> dict:
    view.refresh()
    flush = _attach(view)
    state = {"i": 0}

    def change():
        state["i"] += 1
        view.controls[control].value = values[state["i"] % len(values)]
        flush()

    change()
    change()  # warm both values
    update = median_seconds(change, repeats)
    bare = median_seconds(api, repeats)
    return {"update_ms": 1e3 * update, "api_ms": 1e3 * bare, "ratio_to_api": update / bare,
            "ratio_to_target": 1e3 * update / TARGET_MS}


def run(repeats: int = 15) -> dict:
    """Median server-side update of one control change, per view; milliseconds and ratios."""
    from dprisk.explore import app
    from dprisk.inference.single_level import closed_form as sl
    from dprisk.inference.studies.p_correct import p_correct_two_level
    from dprisk.inference.two_level import exact
    from dprisk.models.census.allocation import census_level

    rho1, rho2 = census_level("block").rho, census_level("block-group").rho
    out = {
        "single_level_rho1_slider": _case(
            app.single_level_view(), "rho1", (0.2, 0.3), lambda: sl.p_correct(0.3, 0.5),
            repeats),
        "two_level_x1_star": _case(
            app.two_level_view(), "x1_star", ("3", "4"),
            lambda: exact.exact_posterior(4, 1, -1, rho1=rho1, rho2=rho2, d=27), repeats),
        "p_correct_x2": _case(
            app.p_correct_view(), "x2", ("2", "3"),
            lambda: p_correct_two_level(x2=3, rho1=rho1, rho2=rho2, d=27), repeats),
    }
    out["target_ms"] = TARGET_MS
    for name, row in out.items():
        if isinstance(row, dict):
            print(f"{name:28s} update {row['update_ms']:8.2f} ms  api {row['api_ms']:8.3f} ms  "
                  f"{row['ratio_to_target']:.3f}x the {TARGET_MS:.0f} ms target")
    return out


if __name__ == "__main__":
    run()
