"""The horizontal legend below the plot: which traces it lists, its rows, and each entry's swatch."""

from __future__ import annotations

import itertools
import math
from typing import Any
from xml.sax.saxutils import escape

from sitebuild.static_chart.bars import _bar_fill
from sitebuild.static_chart.canvas import Canvas
from sitebuild.static_chart.marks import dasharray, stroke_path
from sitebuild.static_chart.scatter import _marker_def
from sitebuild.static_chart.text import FONT, _attr, _dict, _n, _num, _text, text_width

LEGEND_ROW = 19


def legend_items(chart: Canvas) -> list[dict[str, Any]]:
    items = [t for t in chart.traces if t["trace"].get("showlegend") is not False]
    shown = chart.layout.get("showlegend")
    if shown is False or (shown is not True and len(items) < 2):
        return []
    reverse = chart.barmode in ("stack", "relative") and any(t["kind"] == "bar" for t in chart.traces)
    return list(reversed(items)) if reverse else items


def place_legend(chart: Canvas, avail: float) -> None:
    """The legend's entries and rows: one line if the items fit in `avail` px, else a grid of equal columns."""
    chart.legend = legend_items(chart)
    chart.legend_rows = 0
    if chart.legend:
        widths = [text_width(_text(t["trace"].get("name", ""))) + 45 for t in chart.legend]
        if sum(widths) <= avail:
            chart.legend_positions = [(x, 0) for x in itertools.accumulate(widths[:-1], initial=0.0)]
            chart.legend_rows = 1
        else:
            col_w = max(widths)
            cols = max(1, int((avail + 5) // col_w))  # the last column's item gap may overhang
            chart.legend_rows = math.ceil(len(widths) / cols)
            chart.legend_positions = [((i % cols) * col_w, i // cols) for i in range(len(widths))]


def draw_legend(chart: Canvas) -> list[str]:
    if not chart.legend:
        return []
    top = chart.bottom + max(0.25 * chart.plot_h, chart.x_space + 5)
    entries = []
    for t, (x0, row) in zip(chart.legend, chart.legend_positions, strict=False):
        x, y = chart.left + x0, top + 14.5 + row * LEGEND_ROW
        entries.append(
            f'<g class="sc-legend-item" data-trace="{t["index"]}" transform="translate({_n(x)},{_n(y)})">'
            f'{swatch(chart, t)}<text class="sc-text" x="40" y="{_n(FONT * 0.35)}">'
            f"{escape(_text(t['trace'].get('name', '')))}</text></g>"
        )
    return [f'<g class="sc-legend">{"".join(entries)}</g>']


def swatch(chart: Canvas, t: dict[str, Any]) -> str:
    color, width, dash = chart._style(t)
    trace = t["trace"]
    if t["kind"] == "bar":
        return f'<rect x="14" y="-6" width="12" height="12" fill="{_bar_fill(chart, trace, color)}"/>'
    out = ""
    mode = t["mode"]
    if "lines" in mode:
        out += stroke_path("M5,0H35", color, min(width, 5), dasharray(dash, width))
    if "markers" in mode:
        size = _num(_dict(trace.get("marker")).get("size")) or 6
        ident, attrs = _marker_def(chart, trace, color, min(1.0, 12 / size))
        out += f'<use xlink:href="#{ident}" x="20" y="0" {attrs}/>'
    if not out:
        out = f'<path d="M5,0H35" stroke="{_attr(color)}" stroke-width="2"/>'
    return out
