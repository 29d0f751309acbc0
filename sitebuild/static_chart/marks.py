"""The marks a series is drawn with: line paths, dash arrays, marker symbols and bar patterns."""

import math
import re
from typing import Any

from sitebuild.static_chart.text import _attr, _n, _num

DASHES = {"dot": (1, 1), "dash": (3, 3), "longdash": (5, 5), "dashdot": (3, 1, 1, 1), "longdashdot": (5, 2, 1, 2)}


def dasharray(dash: Any, width: float) -> str:
    """plotly's dash names (scaled by the line width, at least 3) or a list of px lengths → SVG."""
    if not isinstance(dash, str) or dash in ("", "solid"):
        return ""
    dlw = max(width, 3)
    if dash in DASHES:
        return ",".join(_n(k * dlw) for k in DASHES[dash])
    out = []
    for p in (p.strip() for p in dash.split(",")):
        percent = p.endswith("%")  # of the line width; else px, never negative
        f = _num(p[:-1] if percent else p.removesuffix("px"))
        out.append("" if f is None or (f < 0 and not percent) else _n(f * width / 100 if percent else f))
    return ",".join(out) if all(out) else ""


def marker_path(symbol: str, size: float) -> tuple[str, bool]:
    """An SVG path centred on (0, 0) for a plotly marker symbol, and whether it is stroked only."""
    r = max(size, 1) / 2
    base = symbol.replace("-open", "").replace("-dot", "")
    open_ = symbol.endswith("-open") or base in ("line-ns", "line-ew", "x-thin", "cross-thin", "asterisk")

    def poly(points: list[tuple[float, float]]) -> str:
        return "M" + "L".join(f"{_n(x)},{_n(y)}" for x, y in points) + "Z"

    if base == "square":
        d = poly([(r, r), (-r, r), (-r, -r), (r, -r)])
    elif base == "diamond":
        rd = r * 1.3
        d = poly([(rd, 0), (0, rd), (-rd, 0), (0, -rd)])
    elif base.startswith("triangle"):
        rt, r2 = r * 2 / math.sqrt(3), r / 2
        pts = {
            "triangle-down": [(-rt, -r2), (rt, -r2), (0, r)],
            "triangle-left": [(r2, -rt), (r2, rt), (-r, 0)],
            "triangle-right": [(-r2, -rt), (-r2, rt), (r, 0)],
        }.get(base, [(-rt, r2), (rt, r2), (0, -r)])
        d = poly(pts)
    elif base in ("cross", "x"):
        rc, rt = r * 0.4, r * 1.2
        # a quarter of the outline, turned three times by a right angle ((x, y) -> (-y, x))
        pts = [(rt, rc), (rc, rc), (rc, rt)]
        for _ in range(3):
            pts += [(-y, x) for x, y in pts[-3:]]
        if base == "x":
            c = math.sqrt(0.5)
            pts = [((x - y) * c, (x + y) * c) for x, y in pts]
        d = poly(pts)
    elif base == "x-thin":
        rx = r * 0.8
        d = f"M{_n(rx)},{_n(rx)}L{_n(-rx)},{_n(-rx)}M{_n(rx)},{_n(-rx)}L{_n(-rx)},{_n(rx)}"
    elif base in ("cross-thin", "line-ns", "line-ew"):
        ns, ew = f"M0,{_n(r * 1.4)}V{_n(-r * 1.4)}", f"M{_n(r * 1.4)},0H{_n(-r * 1.4)}"
        d = {"cross-thin": ns + ew, "line-ns": ns, "line-ew": ew}[base]
    else:  # circle and anything unknown
        d = f"M{_n(r)},0A{_n(r)},{_n(r)} 0 1,1 0,{_n(-r)}A{_n(r)},{_n(r)} 0 0,1 {_n(r)},0Z"
    return d, open_


def stroke_path(d: str, color: str, width: float, dash: str) -> str:
    """An unfilled <path> stroked in `color`, dashed by `dash` (an SVG dasharray, "" for solid)."""
    da = f' stroke-dasharray="{dash}"' if dash else ""
    return f'<path d="{d}" fill="none" stroke="{_attr(color)}" stroke-width="{_n(width)}"{da}/>'


PATTERN_SIZE = 8


def pattern_body(shape: str, color: str) -> str:
    """The content of an 8×8 <pattern> tile for a plotly bar pattern shape, drawn in the bar colour."""
    s = PATTERN_SIZE
    stroke = f' stroke="{_attr(color)}" stroke-width="1.5" fill="none"'
    diag = f"M0,{s}L{s},0M{-s / 4},{s / 4}L{s / 4},{-s / 4}M{s * 3 / 4},{s * 5 / 4}L{s * 5 / 4},{s * 3 / 4}"
    anti = f"M0,0L{s},{s}M{-s / 4},{s * 3 / 4}L{s / 4},{s * 5 / 4}M{s * 3 / 4},{-s / 4}L{s * 5 / 4},{s / 4}"
    if shape == ".":
        return f'<circle cx="{s / 2}" cy="{s / 2}" r="2.2" fill="{_attr(color)}"/>'
    paths = {
        "/": diag,
        "\\": anti,
        "x": diag + anti,
        "-": f"M0,{s / 2}H{s}",
        "|": f"M{s / 2},0V{s}",
        "+": f"M0,{s / 2}H{s}M{s / 2},0V{s}",
    }
    return f'<path d="{paths[shape]}"{stroke}/>' if shape in paths else ""


def line_path(points: list[tuple[float, float] | None], shape: str = "linear") -> str:
    """One SVG path through the points; a None breaks the line; "hv"/"vh" draw steps."""
    out: list[str] = []
    prev: tuple[str, str] | None = None
    for p in points:
        if p is None:
            prev = None
            continue
        x, y = _n(p[0]), _n(p[1])
        if prev is None:
            out.append(f"M{x},{y}")
        elif prev[0] != x and prev[1] != y:  # a step, or a diagonal (" x,y" continues an "L")
            if shape in ("hv", "vh"):
                out.append(f"H{x}V{y}" if shape == "hv" else f"V{y}H{x}")
            else:
                out.append(f" {x},{y}" if out[-1][0] in "L " else f"L{x},{y}")
        elif prev[0] != x:
            out.append(f"H{x}")
        elif prev[1] != y:
            out.append(f"V{y}")
        prev = (x, y)
    # drop lone moves (a point between two gaps draws nothing, as in plotly)
    return re.sub(r"M[-\d.]+,[-\d.]+(?=M|$)", "", "".join(out))
