"""_Chart: lays a figure out (traces, axis types, plot area, autoranges, ticks); puts its SVG together."""

from typing import Any

from sitebuild.static_chart import frame
from sitebuild.static_chart.axis import _axis_name
from sitebuild.static_chart.bars import draw_bar, expand_bars
from sitebuild.static_chart.canvas import Canvas
from sitebuild.static_chart.scatter import draw_scatter, expand_scatter
from sitebuild.static_chart.text import _list, _n, _num, _text

COLORWAY = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
            "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")  # fmt: skip


class _Chart(Canvas):
    def prepare(self) -> None:
        barmode = self.layout.get("barmode", "group")
        for index, trace in enumerate(self.data):
            kind = trace.get("type", "scatter")
            if kind not in ("scatter", "bar") or trace.get("visible") in (False, "legendonly"):
                continue
            xref = trace.get("xaxis") if isinstance(trace.get("xaxis"), str) and trace["xaxis"][:1] == "x" else "x"
            yref = trace.get("yaxis") if isinstance(trace.get("yaxis"), str) and trace["yaxis"][:1] == "y" else "y"
            xa, ya = self.axis(xref), self.axis(yref)
            xa.used = ya.used = True
            xs, ys = _list(trace.get("x")), _list(trace.get("y"))
            horizontal = kind == "bar" and trace.get("orientation") == "h"
            if not horizontal and not xs and ys:  # plotly numbers the points 0, 1, 2...
                xs = list(range(len(ys)))
            if horizontal and not ys and xs:
                ys = list(range(len(xs)))
            n = min(len(xs), len(ys))
            color = COLORWAY[len(self.traces) % len(COLORWAY)]
            t = {"index": index, "trace": trace, "kind": kind, "xa": xa, "ya": ya, "horizontal": horizontal}
            self.traces.append({**t, "x": xs[:n], "y": ys[:n], "default_color": color})
        # axis types: explicit, else category when the values are mostly strings
        values: dict[str, list[Any]] = {}
        for t in self.traces:
            values.setdefault(t["xa"].name, []).extend(t["x"])
            values.setdefault(t["ya"].name, []).extend(t["y"])
        for name, ax in self.axes.items():
            if ax.type not in ("linear", "log", "category"):
                vals = [v for v in values.get(name, []) if v is not None]
                strings = sum(1 for v in vals if isinstance(v, str) and _num(v) is None)
                ax.type = "category" if vals and strings * 2 >= len(vals) and strings else "linear"
        for ax in list(self.axes.values()):
            if ax.overlaying:
                ax.domain = self.axis(ax.overlaying).domain
        self.barmode = barmode if barmode in ("group", "stack", "overlay", "relative") else "group"

    def place(self) -> None:
        m = self.margin
        w, h = self.width, self.height
        # automargin for a y axis: room for its tick labels (measured after a first tick pass)
        left, right = m["l"], m["r"]
        for ax in self.axes.values():
            if ax.vertical and ax.spec.get("automargin"):
                need = frame._widest_label(ax) + (33 if _text(ax.spec.get("title")) else 27)
                if ax.side == "left":
                    left = max(left, need)
                elif ax.side == "right":
                    right = max(right, need)
        self.left, self.right = left, w - right
        plot_w = max(self.right - self.left, 10)
        frame.place_legend(self, plot_w)  # plotly wraps a horizontal legend at the plot area's width
        top = m["t"]
        self.x_space = frame._x_label_space(self)
        plot_h = h - top - max(m["b"], self.x_space)  # automargin: room for the x tick labels and title
        if self.legend:  # plotly puts the legend 25% of the plot height below it, and fits it in
            legend_h = frame.LEGEND_ROW * self.legend_rows + 22
            plot_h = min(plot_h, (h - top - legend_h) / 1.25, h - top - legend_h - self.x_space - 5)
        plot_h = max(plot_h, 20.0)
        self.top, self.bottom = top, top + plot_h
        self.plot_w, self.plot_h = plot_w, plot_h
        self.place_axes(plot_w, plot_h)

    def place_axes(self, w: float, h: float) -> None:
        """Each axis's pixel ends: its domain of a plot area `w` by `h` px from (left, bottom)."""
        for ax in self.axes.values():
            d0, d1 = ax.domain
            if ax.vertical:
                ax.p0, ax.p1 = self.bottom - d0 * h, self.bottom - d1 * h
            else:
                ax.p0, ax.p1 = self.left + d0 * w, self.left + d1 * w

    def build(self) -> str:
        self.prepare()
        # a first pass with provisional geometry (the margins) gives tick labels for automargins
        self.left, self.right = self.margin["l"], self.width - self.margin["r"]
        self.top, self.bottom = self.margin["t"], self.height - self.margin["b"]
        self.place_axes(self.right - self.left, self.bottom - self.top)
        self.fit_axes()
        self.place()  # needs the first pass's tick labels
        self.fit_axes()
        return self.svg()

    def fit_axes(self) -> None:
        """Each axis's autorange and ticks, for the traces at the current geometry."""
        for ax in self.axes.values():
            ax.entries, ax.ticks = [], []
        expand_bars(self)
        expand_scatter(self)
        for ax in self.axes.values():
            ax.autorange()
        for ax in sorted(self.axes.values(), key=lambda a: a.overlaying is not None):
            ax.make_ticks(self.axes.get(_axis_name(ax.overlaying)) if ax.overlaying else None)

    def svg(self) -> str:
        series = []
        for t in self.traces:
            d0, d1 = t["ya"].domain
            y0, y1 = self.bottom - d1 * self.plot_h, self.bottom - d0 * self.plot_h
            clip = self.def_id(
                ("clip", (d0, d1)),
                f'<clipPath id="{{id}}"><rect x="{_n(self.left)}" y="{_n(y0)}" '
                f'width="{_n(self.plot_w)}" height="{_n(y1 - y0)}"/></clipPath>',
            )
            drawn = draw_bar(self, t) if t["kind"] == "bar" else draw_scatter(self, t)
            series.append(f'<g class="sc-series" data-trace="{t["index"]}" clip-path="url(#{clip})">{drawn}</g>')
        bg = f'<rect class="sc-bg" width="{_n(self.width)}" height="{_n(self.height)}"/>'
        out = [bg, *frame.draw_grid(self), f'<g class="sc-data">{"".join(series)}</g>']
        return "".join(out + frame.draw_axes_text(self) + frame.draw_titles(self) + frame.draw_legend(self))
