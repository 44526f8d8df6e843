"""Bokeh plots of the explorer's views, updated in place from a view's dataset.

A control change replaces the data of the plot's ``ColumnDataSource`` objects and moves its
markers; Bokeh sends only the new arrays to the page, which draws them. This keeps the
server's side of an update to a few milliseconds, where re-rendering a Matplotlib PNG costs
0.1 to 1 s (measured on the project's 2-core machines). Matplotlib is used for the PNG
download only (:attr:`dprisk.explore.results.WhatIf.draw`).

:class:`CurvePlot` draws every data variable of a one-dimensional dataset against its
coordinate, with optional marker lines and a point taken from the view's numbers;
:class:`TwoLevelPlot` draws the posterior of X2 and the decision map of the two-level view.
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
from bokeh.models import ColumnDataSource, LinearColorMapper, Span
from bokeh.palettes import RdBu11
from bokeh.plotting import figure

__all__ = ["CurvePlot", "TwoLevelPlot"]

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")


class CurvePlot:
    """Lines ``y = dataset[var]`` against the dataset's one coordinate.

    Parameters
    ----------
    x_label, y_label : str
    x_axis_type, y_axis_type : {"linear", "log"}
    vline, hline : str, optional
        Keys of the view's numbers marked by a vertical / horizontal line.
    point : tuple of str, optional
        ``(x_key, y_key)`` of the numbers drawn as one red dot.
    y_range : tuple of float, optional
    """

    def __init__(self, x_label: str, y_label: str, *, x_axis_type: str = "linear",
                 y_axis_type: str = "linear", vline: str | None = None,
                 hline: str | None = None, point: tuple | None = None,
                 y_range: tuple | None = None) -> None:
        options = {"y_range": y_range} if y_range else {}
        self.figure = figure(width=640, height=340, x_axis_type=x_axis_type,
                             y_axis_type=y_axis_type, x_axis_label=x_label,
                             y_axis_label=y_label, tools="pan,wheel_zoom,box_zoom,reset,hover",
                             **options)
        self.sources: dict[str, ColumnDataSource] = {}
        self.vline, self.hline, self.point = vline, hline, point
        self.vspan = Span(dimension="height", line_dash="dashed", line_color="grey",
                          location=None)
        self.hspan = Span(dimension="width", line_dash="dotted", line_color="firebrick",
                          location=None)
        self.figure.add_layout(self.vspan)
        self.figure.add_layout(self.hspan)
        self.point_source = ColumnDataSource({"x": [], "y": []})
        if point:
            self.figure.scatter("x", "y", source=self.point_source, size=9, color="firebrick")

    def _source(self, name: str) -> ColumnDataSource:
        if name not in self.sources:
            source = ColumnDataSource({"x": [], "y": []})
            color = COLORS[len(self.sources) % len(COLORS)]
            self.figure.line("x", "y", source=source, legend_label=name, line_width=2,
                             color=color)
            self.figure.scatter("x", "y", source=source, size=4, color=color)
            self.figure.legend.location = "top_left"
            self.figure.legend.label_text_font_size = "8pt"
            self.sources[name] = source
        return self.sources[name]

    def update(self, result) -> None:
        """Show ``result`` (a :class:`~dprisk.explore.results.WhatIf`).

        A result with a curve the plot has no line for yet adds its renderers inside the
        served document's ``models.freeze()``: Bokeh walks all of the page's models once, at
        the end, instead of once for each renderer, glyph and legend item added (a page's
        first results: 0.9-1.2 -> 0.35-0.43 s of CPU for its five views, 2026-12-01). Other updates
        set data and numbers only, which walk nothing (a freeze would add one walk).
        """
        document = self.figure.document
        adds = any(name not in self.sources for name, var in result.dataset.data_vars.items()
                   if var.ndim == 1)
        with document.models.freeze() if adds and document is not None else nullcontext():
            self._show(result)

    def _show(self, result) -> None:
        ds, numbers = result.dataset, result.numbers
        for name, var in ds.data_vars.items():
            if var.ndim == 1:
                x = ds[var.dims[0]].values
                self._source(name).data = {"x": np.asarray(x, float),
                                           "y": np.asarray(var.values, float)}
        self.vspan.location = float(numbers[self.vline]) if self.vline else None
        self.hspan.location = float(numbers[self.hline]) if self.hline else None
        if self.point:
            x_key, y_key = self.point
            self.point_source.data = {"x": [float(numbers[x_key])],
                                      "y": [float(numbers[y_key])]}


class TwoLevelPlot:
    """Posterior of X2 (bars) and the decision map over releases (image) of one release."""

    def __init__(self) -> None:
        self.pmf = ColumnDataSource({"k2": [], "pmf": []})
        self.map = ColumnDataSource({"image": [], "x": [], "y": [], "dw": [], "dh": []})
        self.star = ColumnDataSource({"x": [], "y": []})
        self.left = figure(width=420, height=340, x_axis_label="k2",
                           y_axis_label="P[X2 = k2 | D]", tools="pan,wheel_zoom,reset,hover")
        self.left.vbar(x="k2", top="pmf", width=0.8, source=self.pmf)
        self.right = figure(width=420, height=340, x_axis_label="x2*", y_axis_label="x1*",
                            title="decision map: P[X1 = m+1 | D] (red: decide m+1)",
                            tools="pan,wheel_zoom,reset,hover")
        mapper = LinearColorMapper(palette=tuple(reversed(RdBu11)), low=0, high=1)
        self.right.image(image="image", x="x", y="y", dw="dw", dh="dh", source=self.map,
                         color_mapper=mapper)
        self.right.scatter("x", "y", source=self.star, marker="star", size=14, color="black")

    @property
    def figure(self):
        """The two figures side by side."""
        from bokeh.layouts import row

        return row(self.left, self.right)

    def update(self, result) -> None:
        """Show ``result`` (a two-level :class:`~dprisk.explore.results.WhatIf`)."""
        ds, numbers = result.dataset, result.numbers
        pmf = ds["x2_pmf"].values
        keep = pmf > 1e-6 * pmf.max()
        self.pmf.data = {"k2": ds["k2"].values[keep], "pmf": pmf[keep]}
        x1s, x2s = ds["x1_star"].values, ds["x2_star"].values
        self.map.data = {"image": [ds["decision_posterior"].values], "x": [x2s[0] - 0.5],
                         "y": [x1s[0] - 0.5], "dw": [len(x2s)], "dh": [len(x1s)]}
        self.star.data = {"x": [numbers["x2_star"]], "y": [numbers["x1_star"]]}
        self.left.title.text = f"P[X1 = m+1 | D] = {numbers['posterior_x1']:.4f}"
