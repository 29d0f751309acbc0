"""Bars: grouped, stacked or overlaid, vertical or horizontal; their fill or pattern; their text inside or outside."""

import re
from typing import Any
from xml.sax.saxutils import escape

from sitebuild.static_chart.axis import PAD
from sitebuild.static_chart.canvas import Canvas
from sitebuild.static_chart.marks import PATTERN_SIZE, pattern_body
from sitebuild.static_chart.text import FONT, _attr, _color, _dict, _n, _num, text_width

Box = tuple[float, float, float, float]


def expand_bars(chart: Canvas) -> None:
    """Each bar's slot and extent (chart.bar_geometry), stacked or grouped, and the axes padded for them."""
    bar_w = 1 - (_num(chart.layout.get("bargap")) if _num(chart.layout.get("bargap")) is not None else 0.2)
    chart.bar_geometry = {}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for t in chart.traces:
        if t["kind"] == "bar":
            key = (t["xa"].name, t["ya"].name)
            if chart.barmode == "group" and t["trace"].get("offsetgroup") is not None:
                # plotly puts bars with offset groups side by side across overlaying axes
                key = ("offsetgroup", (t["ya"] if t["horizontal"] else t["xa"]).name)
            groups.setdefault(key, []).append(t)
    # bars: position (slot) and size (base..end), stacked or grouped per subplot
    for members in groups.values():
        n = len(members) if chart.barmode == "group" else 1
        width = bar_w / n
        stacks: dict[tuple[float, bool], float] = {}
        for gi, t in enumerate(members):
            pos_ax, size_ax = (t["ya"], t["xa"]) if t["horizontal"] else (t["xa"], t["ya"])
            positions, sizes = (t["y"], t["x"]) if t["horizontal"] else (t["x"], t["y"])
            bases = t["trace"].get("base")
            offset = (gi - (n - 1) / 2) * width if chart.barmode == "group" else 0.0
            geometry = []
            for i, (p, s) in enumerate(zip(positions, sizes, strict=False)):
                pu, sv = pos_ax.to_linear(p), _num(s)
                if pu is None or sv is None:
                    continue
                b = _num(bases[i] if i < len(bases) else None) if isinstance(bases, list) else _num(bases)
                base = b if b is not None else 0.0
                if chart.barmode in ("stack", "relative") and bases is None:
                    key = (pu, sv < 0)
                    base = stacks.get(key, 0.0)
                    stacks[key] = base + sv
                geometry.append((pu + offset, width, base, base + sv, i))
            chart.bar_geometry[t["index"]] = geometry
            t["pos_ax"], t["size_ax"] = pos_ax, size_ax
            for pu, wd, base, end, _ in geometry:
                pad = PAD * pos_ax.length() if pos_ax.type != "category" else 0.0
                pos_ax.expand(pu - wd / 2, pad, 0)
                pos_ax.expand(pu + wd / 2, 0, pad)
                if pos_ax.type == "category":
                    pos_ax.expand(round(pu) - 0.5)
                    pos_ax.expand(round(pu) + 0.5)
                sp = PAD * size_ax.length()
                if t["trace"].get("textposition") == "outside" and t["trace"].get("text") is not None:
                    sp += FONT + 4  # room for the label beyond the bar's end
                for v in (base, end):
                    u = size_ax.to_linear(v) if size_ax.type != "category" else v
                    if u is not None:  # the end padded away from the base only, as plotly's tozero bars
                        size_ax.expand(u, sp if v < base else 0, sp if v > base else 0)


def _bar_fill(chart: Canvas, trace: dict[str, Any], color: str) -> str:
    shape = _dict(_dict(trace.get("marker")).get("pattern")).get("shape")
    if isinstance(shape, str) and shape and (tile := pattern_body(shape, color)):
        s = PATTERN_SIZE
        body = f'<pattern id="{{id}}" patternUnits="userSpaceOnUse" width="{s}" height="{s}">{tile}</pattern>'
        return f"url(#{chart.def_id(('pattern', shape, color), body)})"
    return _attr(color)


def draw_bar(chart: Canvas, t: dict[str, Any]) -> str:
    trace = t["trace"]
    color, _, _ = chart._style(t)
    fill = _bar_fill(chart, trace, color)
    mline = _dict(_dict(trace.get("marker")).get("line"))
    lc, lw = _color(mline.get("color"), ""), _num(mline.get("width"))
    stroke = f' stroke="{_attr(lc)}" stroke-width="{_n(lw if lw is not None else 1)}"' if lc and lw != 0 else ""
    pos_ax, size_ax = t["pos_ax"], t["size_ax"]
    rects, labels = [], []
    texts = trace.get("text")
    position = str(trace.get("textposition", "auto"))
    for pu, wd, base, end, i in chart.bar_geometry.get(t["index"], []):
        b, e = (size_ax.to_linear(base), size_ax.to_linear(end)) if size_ax.type != "category" else (base, end)
        if size_ax.type == "log":
            floor = min(size_ax.lo, size_ax.hi) - 1
            b, e = (floor if b is None else b), (floor if e is None else e)
        if b is None or e is None:
            continue
        p0, p1 = pos_ax.px(pu - wd / 2), pos_ax.px(pu + wd / 2)
        lo_px, hi_px = sorted((size_ax.p0, size_ax.p1))
        s0, s1 = (min(max(size_ax.px(u), lo_px - 1), hi_px + 1) for u in (b, e))  # a pixel past the plot at most
        (a0, a1), (b0, b1) = ((s0, s1), (p0, p1)) if t["horizontal"] else ((p0, p1), (s0, s1))  # along x, along y
        x, y, w, h = min(a0, a1), min(b0, b1), abs(a1 - a0), abs(b1 - b0)
        rects.append(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}"/>')
        label = texts[i] if isinstance(texts, list) and i < len(texts) else (texts if isinstance(texts, str) else None)
        if label not in (None, "") and position != "none":
            on = None if fill.startswith("url(") else color  # text on a pattern takes the theme's colour
            labels.append(_bar_text(str(label), position, on, t["horizontal"], (x, y, w, h), s1 < s0))
    text = f'<g class="sc-text sc-label">{"".join(labels)}</g>' if any(labels) else ""
    return f'<g class="sc-bars" fill="{fill}"{stroke}>{"".join(rects)}</g>{text}'


def _bar_text(label: str, position: str, color: str | None, horizontal: bool, box: Box, grows_up: bool) -> str:
    """A bar's label in or beyond its rectangle `box` (x, y, width, height in px)."""
    x, y, w, h = box
    e = escape(label)
    natural = text_width(label)
    if position == "outside":
        if horizontal:
            return f'<text x="{_n(x + w + 3)}" y="{_n(y + h / 2 + FONT * 0.35)}">{e}</text>'
        ty = y - 4 if grows_up else y + h + FONT
        return f'<text x="{_n(x + w / 2)}" y="{_n(ty)}" text-anchor="middle">{e}</text>'
    # inside (plotly's "auto" when it fits): shrink to fit, turn along tall narrow bars
    fill = "" if color is None else f' fill="{"#ffffff" if _luminance(color) < 0.5 else "#444444"}"'
    if horizontal:
        size = min(FONT, (w - 6) * FONT / natural if natural else FONT, h - 2)
        if size < 5:
            return ""
        return (
            f'<text x="{_n(x + w - 3)}" y="{_n(y + h / 2 + size * 0.35)}" text-anchor="end" '
            f'font-size="{_n(size)}"{fill}>{e}</text>'
        )
    size = min(FONT, (w - 4) * FONT / natural if natural else FONT)
    if size >= 7 and size * 1.2 < h:
        ty = y + size + 2 if grows_up else y + h - 3
        return f'<text x="{_n(x + w / 2)}" y="{_n(ty)}" text-anchor="middle" font-size="{_n(size)}" {fill}>{e}</text>'
    size = min(FONT, (h - 6) * FONT / natural if natural else FONT, w - 2)
    if size < 5:
        return ""
    cx, cy = x + w / 2 + size * 0.35, y + 3 if grows_up else y + h - 3
    return f'<text transform="translate({_n(cx)},{_n(cy)}) rotate(90)" font-size="{_n(size)}" {fill}>{e}</text>'


def _luminance(color: str) -> float:
    m = re.fullmatch(r"#([0-9a-fA-F]{6})", color)
    if not m:
        return 0.0
    r, g, b = (int(m[1][i : i + 2], 16) / 255 for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b
