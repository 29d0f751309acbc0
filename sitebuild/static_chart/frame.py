"""What frames the data: gridlines and zero lines, tick labels, axis titles, the title, and the horizontal
legend below the plot (which traces it lists, its rows, and each entry's swatch)."""

import itertools
import math
from typing import Any
from xml.sax.saxutils import escape

from sitebuild.static_chart.axis import Axis
from sitebuild.static_chart.bars import _bar_fill
from sitebuild.static_chart.canvas import Canvas
from sitebuild.static_chart.marks import dasharray, stroke_path
from sitebuild.static_chart.scatter import _marker_def
from sitebuild.static_chart.text import AXIS_TITLE_FONT, FONT, TITLE_FONT, _attr, _dict, _n, _num, _text, text_width

SMALL = f' font-size="{_n(FONT * 0.75)}"'  # a minor tick's label


def draw_grid(chart: Canvas) -> list[str]:
    grid, zero = [], []
    for ax in chart.axes.values():
        if ax.overlaying or not ax.used or ax.spec.get("showgrid") is False:
            continue
        spans = _cross_spans(chart, ax)
        grid += [_across(ax, spans, ax.px(u)) for u, _, _ in ax.ticks]
        lo, hi = min(ax.lo, ax.hi), max(ax.lo, ax.hi)
        bar_position = any(t.get("pos_ax") is ax for t in chart.traces)  # plotly draws none there
        if ax.type == "linear" and lo <= 0 <= hi and ax.spec.get("zeroline") is not False and not bar_position:
            zero.append(_across(ax, spans, ax.px(0.0)))
    return [f'<path class="sc-{name}" d="{"".join(d)}"/>' for name, d in (("grid", grid), ("zero", zero)) if d]


def _across(ax: Axis, spans: list[tuple[float, float]], p: float) -> str:
    """Lines across the plot at `p` px along `ax`, over each of the counter axes' `spans`."""
    return "".join(f"M{_n(a)},{_n(p)}H{_n(b)}" if ax.vertical else f"M{_n(p)},{_n(a)}V{_n(b)}" for a, b in spans)


def _cross_spans(chart: Canvas, ax: Axis) -> list[tuple[float, float]]:
    """The pixel extents of the counter axes that share a subplot with `ax` (for its gridlines)."""
    pairs = [(t["xa"], t["ya"]) for t in chart.traces] + [(t["ya"], t["xa"]) for t in chart.traces]
    return sorted({tuple(sorted((counter.p0, counter.p1))) for own, counter in pairs if own is ax})  # type: ignore[arg-type]


def draw_axes_text(chart: Canvas) -> list[str]:
    out = []
    for ax in chart.axes.values():
        if not ax.used or ax.spec.get("visible") is False:  # an overlaying axis too: no trace drawn on it
            continue
        if ax.vertical:
            right = ax.side == "right"
            x, anchor = (chart.right + 3, "start") if right else (chart.left - 3, "end")
            attrs = [
                f'x="{_n(x)}" y="{_n(ax.px(u) + FONT * (0.75 if minor else 1) * 0.35)}"{SMALL if minor else ""}'
                for u, _, minor in ax.ticks
            ]
            widest, mid = _widest_label(ax), (ax.p0 + ax.p1) / 2
            tx = chart.right + widest + 20 if right else max(AXIS_TITLE_FONT, chart.left - widest - 20)
            title_attrs = f'transform="translate({_n(tx)},{_n(mid)}) rotate({90 if right else -90})"'
        else:
            y_ref = ax.spec.get("anchor")
            y_axis = chart.axis(y_ref) if isinstance(y_ref, str) and y_ref.startswith("y") else None
            base = max(y_axis.p0, y_axis.p1) if y_axis is not None else chart.bottom
            rotate, anchor = getattr(ax, "rotate", False), "middle"
            attrs = [
                f'transform="translate({_n(ax.px(u) - 4)},{_n(base + 12)}) rotate(30)" text-anchor="start"'
                if rotate
                else f'x="{_n(ax.px(u))}" y="{_n(base + 17)}"{SMALL if minor else ""}'
                for u, _, minor in ax.ticks
            ]
            drop = _widest_label(ax) * 0.5 if rotate else 0
            title_attrs = f'x="{_n((ax.p0 + ax.p1) / 2)}" y="{_n(base + 47 + drop)}"'
        labels = "".join(f"<text {a}>{escape(lab)}</text>" for a, (_, lab, _) in zip(attrs, ax.ticks, strict=True))
        out.append(f'<g class="sc-text sc-tick" text-anchor="{anchor}">{labels}</g>')
        if title := _text(ax.spec.get("title")):
            out.append(f'<text class="sc-text sc-axis-title" {title_attrs} text-anchor="middle">{escape(title)}</text>')
    return out


def draw_titles(chart: Canvas) -> list[str]:
    text = _text(chart.layout.get("title"))
    sub = _text(_dict(chart.layout.get("title")).get("subtitle"))
    x, out = f'x="{_n(chart.width / 2)}"', []
    if text:
        y = chart.top / 2 + TITLE_FONT * 0.35 - (8 if sub else 0)  # a subtitle goes under a raised title
        out.append(f'<text class="sc-text sc-title" {x} y="{_n(y)}" text-anchor="middle">{escape(text)}</text>')
    if sub:
        y = chart.top / 2 + 16
        out.append(f'<text class="sc-text sc-subtitle" {x} y="{_n(y)}" text-anchor="middle">{escape(sub)}</text>')
    return out


def _widest_label(ax: Axis) -> float:
    return max(text_width(lab) for _, lab, _ in ax.ticks) if ax.ticks else text_width("0")


def _x_label_space(chart: Canvas) -> float:
    x_axes = [ax for ax in chart.axes.values() if not ax.vertical and ax.used and ax.spec.get("visible") is not False]
    return max((22 + (30 if _text(ax.spec.get("title")) else 0) + _x_rotation_drop(ax) for ax in x_axes), default=0.0)


def _x_rotation_drop(ax: Axis) -> float:
    """How much lower rotated (30°) tick labels reach than upright ones."""
    if len(ax.ticks) < 2:
        return 0.0
    spacing = abs(ax.px(ax.ticks[1][0]) - ax.px(ax.ticks[0][0])) if ax.hi != ax.lo else 0
    widest = _widest_label(ax)
    if spacing and widest > spacing * 0.95:  # plotly turns crowded labels by 30°
        ax.rotate = True  # type: ignore[attr-defined]
        return widest * 0.5 + 4
    return 0.0


LEGEND_ROW = 19


def place_legend(chart: Canvas, avail: float) -> None:
    """The legend's entries and rows: one line if the items fit in `avail` px, else a grid of equal columns."""
    items = [t for t in chart.traces if t["trace"].get("showlegend") is not False]
    shown = chart.layout.get("showlegend")
    reverse = chart.barmode in ("stack", "relative") and any(t["kind"] == "bar" for t in chart.traces)
    chart.legend = [] if shown is False or (shown is not True and len(items) < 2) else items[::-1] if reverse else items
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
    if "lines" in t["mode"]:
        out += stroke_path("M5,0H35", color, min(width, 5), dasharray(dash, width))
    if "markers" in t["mode"]:
        size = _num(_dict(trace.get("marker")).get("size")) or 6
        ident, attrs = _marker_def(chart, trace, color, min(1.0, 12 / size))
        out += f'<use xlink:href="#{ident}" x="20" y="0" {attrs}/>'
    return out or f'<path d="M5,0H35" stroke="{_attr(color)}" stroke-width="2"/>'
