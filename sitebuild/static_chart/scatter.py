"""Scatter traces: lines (with steps and gaps), markers and text at the points."""

from typing import Any
from xml.sax.saxutils import escape

from sitebuild.static_chart.axis import PAD
from sitebuild.static_chart.canvas import Canvas
from sitebuild.static_chart.marks import dasharray, line_path, marker_path, stroke_path
from sitebuild.static_chart.text import FONT, _attr, _color, _dict, _n, _num


def expand_scatter(chart: Canvas) -> None:
    """Each scatter trace's mode, and the axes padded for its points."""
    for t in chart.traces:
        if t["kind"] != "scatter":
            continue
        t["mode"] = mode = str(t["trace"].get("mode", "lines+markers" if len(t["x"]) < 20 else "lines"))
        has_markers, has_text = "markers" in mode, "text" in mode
        size = _num(_dict(t["trace"].get("marker")).get("size")) or 6
        ppad = max(size / 1.6, 3) if has_markers else 0  # plotly's markerTrans (sizeref 1.6)
        for ax, vals in ((t["xa"], t["x"]), (t["ya"], t["y"])):
            padded = has_markers or has_text or (ax.vertical and ax.type != "category")
            pad = (PAD * ax.length() if padded else 0.0) + ppad
            if us := [u for u in (ax.to_linear(v) for v in vals) if u is not None]:
                ax.expand(min(us), pad, pad)
                ax.expand(max(us), pad, pad)


def draw_scatter(chart: Canvas, t: dict[str, Any]) -> str:
    trace = t["trace"]
    color, width, dash = chart._style(t)
    mode = t["mode"]
    xa, ya = t["xa"], t["ya"]
    points = []
    for xv, yv in zip(t["x"], t["y"], strict=False):
        xu, yu = xa.to_linear(xv), ya.to_linear(yv)
        points.append(None if xu is None or yu is None else (xa.px(xu), ya.px(yu)))
    out = []
    if "lines" in mode:
        if d := line_path(points, str(_dict(trace.get("line")).get("shape") or trace.get("line_shape") or "linear")):
            out.append(stroke_path(d, color, width, dasharray(dash, width)))
    if "markers" in mode:
        out.append(_markers(chart, trace, points, color))
    if "text" in mode:
        out.append(_point_text(trace, points))
    return "".join(out)


def _marker_def(chart: Canvas, trace: dict[str, Any], color: str, scale: float = 1.0) -> tuple[str, str]:
    """The id of the marker's <defs> path and the fill/stroke attributes of its <use>s."""
    marker = _dict(trace.get("marker"))
    symbol = marker.get("symbol") if isinstance(marker.get("symbol"), str) else "circle"
    size = (_num(marker.get("size")) or 6) * scale
    d, open_ = marker_path(symbol, size)
    ident = chart.def_id(("marker", symbol, _n(size)), f'<path id="{{id}}" d="{d}"/>')
    mline = _dict(marker.get("line"))
    lw = _num(mline.get("width"))
    if open_:
        attrs = f'fill="none" stroke="{_attr(color)}" stroke-width="{_n(lw if lw is not None else 2)}"'
    else:
        lc = _color(mline.get("color"), "")
        attrs = f'fill="{_attr(color)}"' + (f' stroke="{_attr(lc)}" stroke-width="{_n(lw or 1)}"' if lc else "")
    return ident, attrs


def _markers(chart: Canvas, trace: dict[str, Any], points: list[tuple[float, float] | None], color: str) -> str:
    marker = _dict(trace.get("marker"))
    symbol = marker.get("symbol", "circle")
    if symbol in ("circle", "square") and not _color(_dict(marker.get("line")).get("color"), ""):
        # plain dots and squares: one path of zero-length strokes with round or square caps
        size = _num(marker.get("size")) or 6
        d = "".join(f"M{_n(p[0])},{_n(p[1])}h0" for p in points if p is not None)
        cap = "round" if symbol == "circle" else "square"
        return (
            f'<path class="sc-dots" d="{d}" fill="none" stroke="{_attr(color)}" stroke-width="{_n(size)}" '
            f'stroke-linecap="{cap}"/>'
        )
    ident, attrs = _marker_def(chart, trace, color)
    uses = "".join(f'<use xlink:href="#{ident}" x="{_n(p[0])}" y="{_n(p[1])}"/>' for p in points if p is not None)
    return f'<g class="sc-markers" {attrs}>{uses}</g>'


def _point_text(trace: dict[str, Any], points: list[tuple[float, float] | None]) -> str:
    texts = trace.get("text")
    if texts is None:
        return ""
    position = str(trace.get("textposition", "middle center"))
    size = _num(_dict(trace.get("marker")).get("size")) or 6
    top, bottom = position.startswith("top"), position.startswith("bottom")
    dy = -(size / 2 + 4) if top else size / 2 + 4 + FONT * 0.7 if bottom else FONT * 0.35
    left, right = position.endswith("left"), position.endswith("right")
    dx, anchor = (-(size / 2 + 2), "end") if left else (size / 2 + 2, "start") if right else (0.0, "middle")
    out = []
    for i, p in enumerate(points):
        label = texts[i] if isinstance(texts, list) and i < len(texts) else (texts if isinstance(texts, str) else "")
        if p is not None and label not in (None, ""):
            out.append(
                f'<text x="{_n(p[0] + dx)}" y="{_n(p[1] + dy)}" text-anchor="{anchor}">{escape(str(label))}</text>'
            )
    return f'<g class="sc-text sc-label">{"".join(out)}</g>' if out else ""
