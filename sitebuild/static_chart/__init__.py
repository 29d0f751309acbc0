"""A plotly figure dict → one static inline SVG, drawn at build time so the chart shows at first paint.

    render(figure, title_id=None) -> "<svg ...>...</svg>"

The SVG mimics plotly.js's default rendering of the same figure (plotly.js draws the live chart
later, so the two should not jump): the layout's size and margins, plotly's autorange padding and
auto ticks (1/2/5 × 10^k; decades with 2-5 or 1-9 minor labels on log axes), a centred title, axis
titles, gridlines and zero lines, and the horizontal legend below the plot with a swatch that shows
each series' colour and its dash, marker or pattern. Supported: scatter (lines, markers, text,
`line_shape` "hv"/"vh", None/NaN gaps), bar (vertical/horizontal, `base`, barmode group/stack/
overlay, patterns, text), linear/log/category axes, `range`, `autorange: "reversed"`, `tickvals`/
`ticktext`, `tickformat` (d3 subset), `rangemode`, `domain`, `anchor`, overlaying axes with
plotly's synced ticks. `check(figure)` refuses anything else (a pie, a filled area, a date axis, a
vertical legend...) with a message naming it, so the build fails instead of pre-rendering a chart
that differs from the live one; `render` itself never raises and leaves out what it cannot draw.

The page's Content-Security-Policy allows no inline styles, so text, grid and axes carry classes
(`sc-*`, styled by docs/assets/css/static-chart.css through the theme's colour variables) and only
series colours are presentation attributes. Standard library only; deterministic output.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 700, 450
MARGIN = {"l": 80, "r": 80, "t": 100, "b": 80}  # plotly.js defaults
COLORWAY = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
FONT, TITLE_FONT, AXIS_TITLE_FONT = 12, 17, 14
LEGEND_ROW = 19
PAD = 0.05  # plotly pads autoranges by 5% of the axis length

# Helvetica/Arial advance widths (1/1000 em) for printable ASCII; other characters count as 0.6 em.
# fmt: off
_WIDTHS = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556, 556,
    556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667,
    556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556,
    556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722,
    500, 500, 500, 334, 260, 334, 584,
]
# fmt: on


def text_width(text: str, size: float = FONT) -> float:
    total = 0
    for ch in text:
        o = ord(ch) - 32
        total += _WIDTHS[o] if 0 <= o < len(_WIDTHS) else 600
    return total * size / 1000


def _n(v: float) -> str:
    """A number with at most 2 decimals and no trailing zeros."""
    s = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _num(v: Any) -> float | None:
    """A finite float, or None for None/NaN/inf/non-numbers (plotly's gaps)."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None


def _is_numberish(v: Any) -> bool:
    return _num(v) is not None


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list | tuple) else []


def _text(v: Any) -> str:
    if isinstance(v, dict):
        v = v.get("text", "")
    return "" if v is None else str(v)


def _attr(v: str) -> str:
    return escape(v, {'"': "&quot;"})


def _color(v: Any, fallback: str) -> str:
    if isinstance(v, str) and re.fullmatch(r"#[0-9a-fA-F]{3,8}|[a-zA-Z]{3,20}|rgba?\([0-9., %]+\)", v.strip()):
        return v.strip()
    return fallback


# ----------------------------------------------------------------------------------------------- numbers

_SI = {-15: "f", -12: "p", -9: "n", -6: "μ", -3: "m", 0: "", 3: "k", 6: "M", 9: "B", 12: "T"}
MINUS = "\u2212"


def _sep_thousands(int_part: str, force: bool) -> str:
    if not force and len(int_part) <= 4:
        return int_part
    out = []
    while len(int_part) > 3:
        out.insert(0, int_part[-3:])
        int_part = int_part[:-3]
    out.insert(0, int_part)
    return ",".join(out)


def _trim(s: str) -> str:
    return s.rstrip("0").rstrip(".") if "." in s else s


def format_default(v: float, dtick: float, exponent: int = 0) -> str:
    """plotly's default tick label: decimals from dtick, SI suffix from the axis exponent, − sign."""
    scaled, dt = v / 10**exponent, dtick / 10**exponent
    decimals = max(0, -math.floor(math.log10(dt) + 0.01)) if dt > 0 else 0
    s = _trim(f"{abs(scaled):.{min(decimals, 15)}f}")
    if s == "0":
        return "0"
    int_part, _, frac = s.partition(".")
    s = _sep_thousands(int_part, False) + ("." + frac if frac else "")
    return (MINUS if scaled < 0 else "") + s + _SI.get(exponent, f"e{exponent:+d}" if exponent else "")


def axis_exponent(lo: float, hi: float) -> int:
    """plotly's tick exponent: SI steps once the range's largest end passes 10^±3."""
    maxend = max(abs(lo), abs(hi))
    if maxend <= 0:
        return 0
    rangeexp = math.floor(math.log10(maxend) + 0.01)
    if abs(rangeexp) <= 3:
        return 0
    exp = 3 * round((rangeexp - 1) / 3)
    return exp if exp in _SI else rangeexp


_D3 = re.compile(r"^(?P<comma>,)?(?:\.(?P<prec>\d+))?(?P<trim>~)?(?P<type>[%dfsegr])?$")


def format_d3(v: float, spec: str) -> str | None:
    """The subset of d3-format that the simulators use; None for an unsupported spec."""
    m = _D3.match(spec.replace("~", "") if spec.endswith("~") else spec)
    if not m or not spec:
        return None
    comma, prec, kind = bool(m["comma"]), m["prec"], m["type"] or "g"
    p = int(prec) if prec is not None else None
    if kind == "%":
        s = f"{abs(v) * 100:.{6 if p is None else p}f}"
        suffix = "%"
    elif kind == "d":
        s, suffix = f"{abs(round(v))}", ""
    elif kind == "f":
        s, suffix = f"{abs(v):.{6 if p is None else p}f}", ""
    elif kind == "e":
        s, suffix = f"{abs(v):.{6 if p is None else p}e}", ""
    elif kind == "s":
        if v == 0:
            s, suffix = "0", ""
        else:
            sig = 6 if p is None else max(1, p)
            e3 = max(-15, min(12, 3 * math.floor(math.log10(abs(v)) / 3)))
            digits = max(0, sig - 1 - math.floor(math.log10(abs(v) / 10**e3)))
            s = f"{abs(v) / 10**e3:.{digits}f}"
            suffix = {**_SI, 9: "G"}.get(e3, "")
    else:  # g / r
        s, suffix = f"{abs(v):.{6 if p is None else max(1, p)}g}", ""
    if m["trim"] or spec.endswith("~"):
        s = _trim(s)
    if comma:
        int_part, dot, frac = s.partition(".")
        s = _sep_thousands(int_part, True) + dot + frac
    negative = v < 0 and any(c not in "0.," for c in s)
    return (MINUS if negative else "") + s + suffix


# ----------------------------------------------------------------------------------------------- ticks


def nice_step(rough: float) -> float:
    """plotly's roundDTick: the first of 2, 5, 10 × 10^k that is at least `rough`."""
    if rough <= 0 or not math.isfinite(rough):
        return 1.0
    base = 10 ** math.floor(math.log10(rough))
    for m in (2, 5, 10):
        if rough / base <= m * (1 + 1e-9):
            return base * m
    return base * 10


def linear_ticks(lo: float, hi: float, length_px: float, vertical: bool) -> tuple[list[float], float]:
    """plotly's auto ticks for a linear axis: about one per 40 px (y) or 80 px (x), 4 to 9 (+1)."""
    if lo > hi:
        lo, hi = hi, lo
    nt = max(4.0, min(9.0, length_px / (40 if vertical else 80))) + 1
    dtick = nice_step((hi - lo) / nt) if hi > lo else 1.0
    first = math.ceil(lo / dtick - 1e-9)
    ticks = []
    k = first
    while k * dtick <= hi + dtick * 1e-9 and len(ticks) < 100:
        ticks.append(round(k * dtick, 12))
        k += 1
    return ticks, dtick


def log_ticks(lo: float, hi: float, length_px: float, vertical: bool) -> list[tuple[float, str, bool]]:
    """Ticks of a log axis (range in log10 units): (log10 value, label, minor?) as plotly draws them."""
    if lo > hi:
        lo, hi = hi, lo
    nt = max(4.0, min(9.0, length_px / (40 if vertical else 80))) + 1
    rough = (hi - lo) / nt
    out: list[tuple[float, str, bool]] = []
    if rough > 0.7:  # powers of ten only, every ceil(rough) decades
        step = math.ceil(rough)
        k = math.ceil(lo / step - 1e-9) * step
        while k <= hi + 1e-9:
            out.append((float(k), _log_label(k), False))
            k += step
    elif hi - lo < 1:  # within one decade: linear ticks labelled in full
        v_lo, v_hi = 10**lo, 10**hi
        ticks, dtick = linear_ticks(v_lo, v_hi, length_px * 1.5, vertical)
        for v in ticks:
            if v > 0:
                out.append((math.log10(v), format_default(v, dtick, axis_exponent(v_lo, v_hi)), False))
    else:
        digits = (1, 2, 5) if rough > 0.3 else tuple(range(1, 10))
        for k in range(math.floor(lo) - 1, math.ceil(hi) + 1):
            for d in digits:
                x = k + math.log10(d)
                if lo - 1e-9 <= x <= hi + 1e-9:
                    out.append((x, _log_label(k) if d == 1 else str(d), d != 1))
    return out


def _log_label(k: float) -> str:
    p = round(k)
    if abs(p) > 15:
        return f"1e{p:+d}".replace("-", MINUS)
    if abs(p) <= 3:
        return _trim(f"{10.0**p:.{max(0, -p)}f}")
    exp = 3 * round((p - 1) / 3)
    if exp not in _SI:
        return f"1e{p:+d}".replace("-", MINUS)
    return f"{10 ** (p - exp):g}" + _SI[exp]


# ----------------------------------------------------------------------------------------------- axes


class Axis:
    def __init__(self, name: str, spec: dict[str, Any]) -> None:
        self.name = name  # "xaxis", "yaxis2"...
        self.id = name[0] + name[5:]  # "x", "y2"
        self.spec = spec
        self.vertical = name.startswith("y")
        self.type = str(spec.get("type", "-"))
        self.categories: list[str] = []
        self.cat_index: dict[str, int] = {}
        self.entries: list[tuple[float, float, float]] = []  # (value, pad px below, pad px above)
        self.overlaying = spec.get("overlaying") if isinstance(spec.get("overlaying"), str) else None
        self.side = spec.get("side") or ("left" if self.vertical else "bottom")
        dom = _list(spec.get("domain"))
        self.domain = (
            (float(dom[0]), float(dom[1])) if len(dom) == 2 and all(_is_numberish(d) for d in dom) else (0.0, 1.0)
        )
        self.lo, self.hi = 0.0, 1.0
        self.p0, self.p1 = 0.0, 1.0  # pixel positions of lo and hi
        self.used = False
        self.ticks: list[tuple[float, str, bool]] = []

    # values ------------------------------------------------------------------------------------
    def to_linear(self, v: Any) -> float | None:
        """A data value → axis units (log10 for log axes, index for categories)."""
        if self.type == "category":
            if v is None or (isinstance(v, float) and not math.isfinite(v)):
                return None
            key = str(v)
            if key not in self.cat_index:
                self.cat_index[key] = len(self.categories)
                self.categories.append(key)
            return float(self.cat_index[key])
        f = _num(v)
        if f is None:
            return None
        if self.type == "log":
            return math.log10(f) if f > 0 else None
        return f

    def px(self, u: float) -> float:
        if self.hi == self.lo:
            return (self.p0 + self.p1) / 2
        return self.p0 + (u - self.lo) * (self.p1 - self.p0) / (self.hi - self.lo)

    def length(self) -> float:
        return abs(self.p1 - self.p0)

    def expand(self, u: float, pad_lo: float = 0.0, pad_hi: float = 0.0) -> None:
        self.entries.append((u, pad_lo, pad_hi))

    def autorange(self) -> None:
        """plotly's autorange: the smallest range that holds every value with its pixel padding."""
        rng = _list(self.spec.get("range"))
        if len(rng) == 2 and all(_is_numberish(r) for r in rng):  # log ranges are in log10 units, as plotly's
            self.lo, self.hi = float(rng[0]), float(rng[1])
        else:
            entries = list(self.entries)
            if self.spec.get("rangemode") in ("tozero", "nonnegative") and self.type == "linear":
                entries.append((0.0, 0.0, 0.0))
            if not entries:
                self.lo, self.hi = (-1.0, 6.0) if self.type != "log" else (0.0, 1.0)
            else:
                length = max(self.length(), 1.0)
                best = None
                for v_lo, p_lo, _ in entries:
                    for v_hi, _, p_hi in entries:
                        dv = v_hi - v_lo
                        dp = length - p_lo - p_hi
                        if dv <= 0 or dp <= 0:
                            continue
                        ratio = dv / dp
                        if best is None or ratio > best[0]:
                            best = (ratio, v_lo - p_lo * ratio, v_hi + p_hi * ratio)
                if best is None:  # one value (or all equal)
                    v = entries[0][0]
                    if self.type == "category":
                        self.lo, self.hi = v - 0.5, v + 0.5
                    else:
                        half = abs(v) * 0.1 if v else 1.0
                        self.lo, self.hi = v - half, v + half
                else:
                    self.lo, self.hi = best[1], best[2]
                if self.spec.get("rangemode") == "nonnegative" and self.lo < 0:
                    self.lo = 0.0
        if self.spec.get("autorange") == "reversed" and not rng:
            self.lo, self.hi = self.hi, self.lo

    def make_ticks(self, sync_with: Axis | None = None) -> None:
        lo, hi = min(self.lo, self.hi), max(self.lo, self.hi)
        fmt = self.spec.get("tickformat") if isinstance(self.spec.get("tickformat"), str) else ""
        tickvals = _list(self.spec.get("tickvals"))
        if tickvals:
            texts = _list(self.spec.get("ticktext"))
            for i, tv in enumerate(tickvals):
                u = self.to_linear(tv)
                if u is None or not lo - 1e-9 <= u <= hi + 1e-9:
                    continue
                label = str(texts[i]) if i < len(texts) else self._label(u, 1.0, fmt)
                self.ticks.append((u, label, False))
            return
        if self.type == "category":
            step = max(1, math.ceil(len(self.categories) / max(1.0, self.length() / 15)))
            for i, c in enumerate(self.categories):
                if lo - 1e-9 <= i <= hi + 1e-9 and i % step == 0:
                    self.ticks.append((float(i), c, False))
            return
        if sync_with is not None and sync_with.ticks and sync_with.hi != sync_with.lo:
            _, own = linear_ticks(lo, hi, self.length(), self.vertical)
            for u, _, minor in sync_with.ticks:
                frac = (u - sync_with.lo) / (sync_with.hi - sync_with.lo)
                v = self.lo + frac * (self.hi - self.lo)
                self.ticks.append((v, self._label(v, own / 100, fmt), minor))
            return
        if self.type == "log":
            self.ticks = log_ticks(lo, hi, self.length(), self.vertical)
            if self.spec.get("minorloglabels") == "none":  # decades labelled; ticks between them bare
                self.ticks = [(u, "" if minor else lab, minor) for u, lab, minor in self.ticks]
            if fmt:
                self.ticks = [(u, format_d3(10**u, fmt) or lab, m) for u, lab, m in self.ticks]
            return
        values, dtick = linear_ticks(lo, hi, self.length(), self.vertical)
        for v in values:
            self.ticks.append((v, self._label(v, dtick, fmt), False))

    def _label(self, v: float, dtick: float, fmt: str) -> str:
        if fmt:
            out = format_d3(v, fmt)
            if out is not None:
                return out
        lo, hi = self.lo, self.hi
        if self.type == "log":
            return format_default(10**v, 10 ** math.floor(v) / 100)
        return format_default(v, dtick, axis_exponent(lo, hi))


# ----------------------------------------------------------------------------------------------- shapes

DASHES = {"dot": (1, 1), "dash": (3, 3), "longdash": (5, 5), "dashdot": (3, 1, 1, 1), "longdashdot": (5, 2, 1, 2)}


def dasharray(dash: Any, width: float) -> str:
    """plotly's dash names (scaled by the line width, at least 3) or a list of px lengths → SVG."""
    if not isinstance(dash, str) or dash in ("", "solid"):
        return ""
    dlw = max(width, 3)
    if dash in DASHES:
        return ",".join(_n(k * dlw) for k in DASHES[dash])
    parts = [p.strip() for p in dash.split(",")]
    out = []
    for p in parts:
        if p.endswith("%"):
            f = _num(p[:-1])
            out.append(_n(f * width / 100) if f is not None else "")
        else:
            f = _num(p[:-2] if p.endswith("px") else p)
            out.append(_n(f) if f is not None and f >= 0 else "")
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
        pts = [
            (rt, rc),
            (rc, rc),
            (rc, rt),
            (-rc, rt),
            (-rc, rc),
            (-rt, rc),
            (-rt, -rc),
            (-rc, -rc),
            (-rc, -rt),
            (rc, -rt),
            (rc, -rc),
            (rt, -rc),
        ]
        if base == "x":
            c = math.sqrt(0.5)
            pts = [((x - y) * c, (x + y) * c) for x, y in pts]
        d = poly(pts)
    elif base == "x-thin":
        rx = r * 0.8
        d = f"M{_n(rx)},{_n(rx)}L{_n(-rx)},{_n(-rx)}M{_n(rx)},{_n(-rx)}L{_n(-rx)},{_n(rx)}"
    elif base == "cross-thin":
        d = f"M0,{_n(r * 1.4)}V{_n(-r * 1.4)}M{_n(r * 1.4)},0H{_n(-r * 1.4)}"
    elif base == "line-ns":
        d = f"M0,{_n(r * 1.4)}V{_n(-r * 1.4)}"
    elif base == "line-ew":
        d = f"M{_n(r * 1.4)},0H{_n(-r * 1.4)}"
    else:  # circle and anything unknown
        d = f"M{_n(r)},0A{_n(r)},{_n(r)} 0 1,1 0,{_n(-r)}A{_n(r)},{_n(r)} 0 0,1 {_n(r)},0Z"
    return d, open_


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


def _luminance(color: str) -> float:
    m = re.fullmatch(r"#([0-9a-fA-F]{6})", color)
    if not m:
        return 0.0
    r, g, b = (int(m[1][i : i + 2], 16) / 255 for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


# ----------------------------------------------------------------------------------------------- the chart


class _Chart:
    def __init__(self, figure: Any, prefix: str) -> None:
        fig = _dict(figure)
        self.layout = _dict(fig.get("layout"))
        self.data = [t for t in _list(fig.get("data")) if isinstance(t, dict)]
        self.prefix = prefix
        self.width = _num(self.layout.get("width")) or WIDTH
        self.height = _num(self.layout.get("height")) or HEIGHT
        margin = _dict(self.layout.get("margin"))
        self.margin = {k: (_num(margin.get(k)) if _num(margin.get(k)) is not None else v) for k, v in MARGIN.items()}
        self.defs: list[str] = []
        self.def_ids: dict[tuple[Any, ...], str] = {}
        self.axes: dict[str, Axis] = {}
        self.traces: list[dict[str, Any]] = []  # the drawable traces with their resolved style

    # setup -------------------------------------------------------------------------------------
    def axis(self, ref: str) -> Axis:
        name = ("xaxis" if ref.startswith("x") else "yaxis") + ref[1:]
        if name not in self.axes:
            self.axes[name] = Axis(name, _dict(self.layout.get(name)))
        return self.axes[name]

    def def_id(self, key: tuple[Any, ...], body: str) -> str:
        if key not in self.def_ids:
            ident = f"{self.prefix}-{len(self.def_ids)}"
            self.def_ids[key] = ident
            self.defs.append(body.replace("{id}", ident))
        return self.def_ids[key]

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
            if kind == "bar" and not xs and ys and not horizontal:
                xs = list(range(len(ys)))
            if kind == "bar" and not ys and xs and horizontal:
                ys = list(range(len(xs)))
            if kind == "scatter" and not xs and ys:
                xs = list(range(len(ys)))
            n = min(len(xs), len(ys))
            color_i = len(self.traces)
            self.traces.append(
                {
                    "index": index,
                    "trace": trace,
                    "kind": kind,
                    "xa": xa,
                    "ya": ya,
                    "x": xs[:n],
                    "y": ys[:n],
                    "horizontal": horizontal,
                    "default_color": COLORWAY[color_i % len(COLORWAY)],
                }
            )
        # axis types: explicit, else category when the values are mostly strings
        values: dict[str, list[Any]] = {}
        for t in self.traces:
            values.setdefault(t["xa"].name, []).extend(t["x"])
            values.setdefault(t["ya"].name, []).extend(t["y"])
        for name, ax in self.axes.items():
            if ax.type not in ("linear", "log", "category"):
                vals = [v for v in values.get(name, []) if v is not None]
                strings = sum(1 for v in vals if isinstance(v, str) and not _is_numberish(v))
                ax.type = "category" if vals and strings * 2 >= len(vals) and strings else "linear"
        for ax in list(self.axes.values()):
            if ax.overlaying:
                base = self.axis(ax.overlaying)
                ax.domain = base.domain
        self.barmode = barmode if barmode in ("group", "stack", "overlay", "relative") else "group"

    # layout --------------------------------------------------------------------------------------
    def legend_items(self) -> list[dict[str, Any]]:
        items = [t for t in self.traces if t["trace"].get("showlegend") is not False]
        shown = self.layout.get("showlegend")
        if shown is False or (shown is not True and len(items) < 2):
            return []
        reverse = self.barmode in ("stack", "relative") and any(t["kind"] == "bar" for t in self.traces)
        return list(reversed(items)) if reverse else items

    def place(self) -> None:
        m = self.margin
        w, h = self.width, self.height
        self.legend = self.legend_items()
        # automargin for the left axis: room for its tick labels (measured after a first tick pass)
        left = m["l"]
        for ax in self.axes.values():
            if ax.vertical and ax.side == "left" and ax.spec.get("automargin"):
                widest = self._widest_label(ax)
                need = widest + (33 if _text(ax.spec.get("title")) else 27)
                left = max(left, need)
        right = m["r"]
        for ax in self.axes.values():
            if ax.vertical and ax.side == "right" and ax.spec.get("automargin"):
                right = max(right, self._widest_label(ax) + (33 if _text(ax.spec.get("title")) else 27))
        self.left, self.right = left, w - right
        plot_w = max(self.right - self.left, 10)
        # legend rows: one line if the items fit, else a grid of equal columns
        self.legend_cols: list[float] = []
        self.legend_rows = 0
        if self.legend:
            widths = [text_width(_text(t["trace"].get("name", ""))) + 45 for t in self.legend]
            avail = plot_w  # plotly wraps a horizontal legend at the plot area's width
            if sum(widths) <= avail:
                x = 0.0
                for wd in widths:
                    self.legend_cols.append(x)
                    x += wd
                self.legend_rows = 1
                self.legend_positions = [(x0, 0) for x0 in self.legend_cols]
            else:
                col_w = max(widths)
                cols = max(1, int((avail + 5) // col_w))  # the last column's item gap may overhang
                self.legend_rows = math.ceil(len(widths) / cols)
                self.legend_positions = [((i % cols) * col_w, i // cols) for i in range(len(widths))]
        top = m["t"]
        self.x_space = self._x_label_space()
        plot_h = h - top - max(m["b"], self.x_space)  # automargin: room for the x tick labels and title
        if self.legend:  # plotly puts the legend 25% of the plot height below it, and fits it in
            legend_h = LEGEND_ROW * self.legend_rows + 22
            plot_h = min(plot_h, (h - top - legend_h) / 1.25, h - top - legend_h - self.x_space - 5)
        plot_h = max(plot_h, 20.0)
        self.top, self.bottom = top, top + plot_h
        self.plot_w, self.plot_h = plot_w, plot_h
        for ax in self.axes.values():
            d0, d1 = ax.domain
            if ax.vertical:
                ax.p0, ax.p1 = self.bottom - d0 * plot_h, self.bottom - d1 * plot_h
            else:
                ax.p0, ax.p1 = self.left + d0 * plot_w, self.left + d1 * plot_w

    def _widest_label(self, ax: Axis) -> float:
        labels = [lab for _, lab, _ in ax.ticks] or ["0"]
        return max(text_width(lab) for lab in labels)

    def _x_label_space(self) -> float:
        space = 0.0
        for ax in self.axes.values():
            if not ax.vertical and ax.used:
                space = max(space, 22 + (30 if _text(ax.spec.get("title")) else 0) + self._x_rotation_drop(ax))
        return space

    def _x_rotation_drop(self, ax: Axis) -> float:
        """How much lower rotated (30°) tick labels reach than upright ones."""
        if not ax.ticks or len(ax.ticks) < 2:
            return 0.0
        spacing = abs(ax.px(ax.ticks[1][0]) - ax.px(ax.ticks[0][0])) if ax.hi != ax.lo else 0
        widest = self._widest_label(ax)
        if spacing and widest > spacing * 0.95:  # plotly turns crowded labels by 30°
            ax.rotate = True  # type: ignore[attr-defined]
            return widest * 0.5 + 4
        return 0.0

    # autorange ---------------------------------------------------------------------------------
    def expand_axes(self) -> None:
        bar_w = 1 - (_num(self.layout.get("bargap")) if _num(self.layout.get("bargap")) is not None else 0.2)
        self.bar_geometry: dict[int, list[tuple[float, float, float, float, int]]] = {}
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for t in self.traces:
            if t["kind"] == "bar":
                key = (t["xa"].name, t["ya"].name)
                if self.barmode == "group" and t["trace"].get("offsetgroup") is not None:
                    # plotly puts bars with offset groups side by side across overlaying axes
                    key = ("offsetgroup", (t["ya"] if t["horizontal"] else t["xa"]).name)
                groups.setdefault(key, []).append(t)
        # bars: position (slot) and size (base..end), stacked or grouped per subplot
        for members in groups.values():
            n = len(members) if self.barmode == "group" else 1
            width = bar_w / n
            stacks: dict[tuple[float, bool], float] = {}
            for gi, t in enumerate(members):
                pos_ax, size_ax = (t["ya"], t["xa"]) if t["horizontal"] else (t["xa"], t["ya"])
                positions, sizes = (t["y"], t["x"]) if t["horizontal"] else (t["x"], t["y"])
                bases = t["trace"].get("base")
                offset = (gi - (n - 1) / 2) * width if self.barmode == "group" else 0.0
                geometry = []
                for i, (p, s) in enumerate(zip(positions, sizes, strict=False)):
                    pu = pos_ax.to_linear(p)
                    sv = _num(s)
                    if pu is None or sv is None:
                        continue
                    if isinstance(bases, list):
                        b = _num(bases[i]) if i < len(bases) else None
                        base = b if b is not None else 0.0
                    else:
                        b = _num(bases)
                        base = b if b is not None else 0.0
                    if self.barmode in ("stack", "relative") and bases is None:
                        key = (pu, sv < 0)
                        base = stacks.get(key, 0.0)
                        stacks[key] = base + sv
                    end = base + sv
                    geometry.append((pu + offset, width, base, end, i))
                self.bar_geometry[t["index"]] = geometry
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
                    for v, is_base in ((base, True), (end, False)):
                        u = size_ax.to_linear(v) if size_ax.type != "category" else v
                        if u is None:
                            continue
                        if is_base:
                            size_ax.expand(u)
                        else:  # padded away from the base only, as plotly's tozero bars
                            size_ax.expand(u, sp if v < base else 0, sp if v > base else 0)
        for t in self.traces:
            if t["kind"] != "scatter":
                continue
            mode = str(t["trace"].get("mode", "lines+markers" if len(t["x"]) < 20 else "lines"))
            t["mode"] = mode
            has_markers, has_text = "markers" in mode, "text" in mode
            size = _num(_dict(t["trace"].get("marker")).get("size")) or 6
            ppad = max(size / 1.6, 3) if has_markers else 0  # plotly's markerTrans (sizeref 1.6)
            for ax, vals in ((t["xa"], t["x"]), (t["ya"], t["y"])):
                padded = ax.vertical or has_markers or has_text
                if ax.type == "category":
                    padded = has_markers or has_text
                pad = (PAD * ax.length() if padded else 0.0) + ppad
                us = [u for u in (ax.to_linear(v) for v in vals) if u is not None]
                if us:
                    ax.expand(min(us), pad, pad)
                    ax.expand(max(us), pad, pad)

    # drawing -----------------------------------------------------------------------------------
    def build(self) -> str:
        self.prepare()
        # a first pass with provisional geometry gives tick labels for automargins, then the real one
        for final in (False, True):
            if final:
                self.place()  # needs the first pass's tick labels
            for ax in self.axes.values():
                ax.entries, ax.ticks = [], []
            if not final:
                self.left, self.right = self.margin["l"], self.width - self.margin["r"]
                self.top, self.bottom = self.margin["t"], self.height - self.margin["b"]
                for ax in self.axes.values():
                    d0, d1 = ax.domain
                    if ax.vertical:
                        span = self.bottom - self.top
                        ax.p0, ax.p1 = self.bottom - d0 * span, self.bottom - d1 * span
                    else:
                        span = self.right - self.left
                        ax.p0, ax.p1 = self.left + d0 * span, self.left + d1 * span
            self.expand_axes()
            for ax in self.axes.values():
                ax.autorange()
            for ax in sorted(self.axes.values(), key=lambda a: a.overlaying is not None):
                ax.make_ticks(self.axes.get(_axis_name(ax.overlaying)) if ax.overlaying else None)
        return self.svg()

    def svg(self) -> str:
        parts: list[str] = []
        parts.append(f'<rect class="sc-bg" width="{_n(self.width)}" height="{_n(self.height)}"/>')
        parts.extend(self.draw_grid())
        clip_ids: dict[tuple[float, float], str] = {}
        series: list[str] = []
        for t in self.traces:
            domain = t["ya"].domain
            if domain not in clip_ids:
                y0 = self.bottom - domain[1] * self.plot_h
                y1 = self.bottom - domain[0] * self.plot_h
                body = (
                    f'<clipPath id="{{id}}"><rect x="{_n(self.left)}" y="{_n(y0)}" '
                    f'width="{_n(self.plot_w)}" height="{_n(y1 - y0)}"/></clipPath>'
                )
                clip_ids[domain] = self.def_id(("clip", domain), body)
            drawn = self.draw_bar(t) if t["kind"] == "bar" else self.draw_scatter(t)
            series.append(
                f'<g class="sc-series" data-trace="{t["index"]}" clip-path="url(#{clip_ids[domain]})">{drawn}</g>'
            )
        parts.append(f'<g class="sc-data">{"".join(series)}</g>')
        parts.extend(self.draw_axes_text())
        parts.extend(self.draw_titles())
        parts.extend(self.draw_legend())
        return "".join(parts)

    def draw_grid(self) -> list[str]:
        grid, zero = [], []
        for ax in self.axes.values():
            if ax.overlaying or not ax.used or ax.spec.get("showgrid") is False:
                continue
            spans = self._cross_spans(ax)
            for u, _, _ in ax.ticks:
                p = ax.px(u)
                for a, b in spans:
                    grid.append(f"M{_n(a)},{_n(p)}H{_n(b)}" if ax.vertical else f"M{_n(p)},{_n(a)}V{_n(b)}")
            lo, hi = min(ax.lo, ax.hi), max(ax.lo, ax.hi)
            bar_position = any(t.get("pos_ax") is ax for t in self.traces)  # plotly draws none there
            if ax.type == "linear" and lo <= 0 <= hi and ax.spec.get("zeroline") is not False and not bar_position:
                p = ax.px(0.0)
                for a, b in spans:
                    zero.append(f"M{_n(a)},{_n(p)}H{_n(b)}" if ax.vertical else f"M{_n(p)},{_n(a)}V{_n(b)}")
        out = []
        if grid:
            out.append(f'<path class="sc-grid" d="{"".join(grid)}"/>')
        if zero:
            out.append(f'<path class="sc-zero" d="{"".join(zero)}"/>')
        return out

    def _cross_spans(self, ax: Axis) -> list[tuple[float, float]]:
        """The pixel extents of the counter axes that share a subplot with `ax` (for its gridlines)."""
        spans = set()
        for t in self.traces:
            if t["xa"] is ax:
                spans.add(tuple(sorted((t["ya"].p0, t["ya"].p1))))
            if t["ya"] is ax:
                spans.add(tuple(sorted((t["xa"].p0, t["xa"].p1))))
        if not spans:
            spans.add((self.top, self.bottom) if not ax.vertical else (self.left, self.right))
        return sorted(spans)  # type: ignore[arg-type]

    def _style(self, t: dict[str, Any]) -> tuple[str, float, str]:
        trace = t["trace"]
        line, marker = _dict(trace.get("line")), _dict(trace.get("marker"))
        color = marker.get("color") if t["kind"] == "bar" or not isinstance(line.get("color"), str) else line["color"]
        if not isinstance(color, str):
            color = line.get("color") if isinstance(line.get("color"), str) else marker.get("color")
        width = _num(line.get("width"))
        return _color(color, t["default_color"]), 2.0 if width is None else width, str(line.get("dash", "solid"))

    def draw_scatter(self, t: dict[str, Any]) -> str:
        trace = t["trace"]
        color, width, dash = self._style(t)
        mode = t["mode"]
        xa, ya = t["xa"], t["ya"]
        points = []
        for xv, yv in zip(t["x"], t["y"], strict=False):
            xu, yu = xa.to_linear(xv), ya.to_linear(yv)
            points.append(None if xu is None or yu is None else (xa.px(xu), ya.px(yu)))
        out = []
        if "lines" in mode:
            d = line_path(points, str(_dict(trace.get("line")).get("shape") or trace.get("line_shape") or "linear"))
            if d:
                da = dasharray(dash, width)
                out.append(
                    f'<path d="{d}" fill="none" stroke="{_attr(color)}" stroke-width="{_n(width)}"'
                    + (f' stroke-dasharray="{da}"' if da else "")
                    + "/>"
                )
        if "markers" in mode:
            out.append(self._markers(trace, points, color))
        if "text" in mode:
            out.append(self._point_text(trace, points))
        return "".join(out)

    def _marker_def(self, trace: dict[str, Any], color: str, scale: float = 1.0) -> tuple[str, str]:
        """The id of the marker's <defs> path and the fill/stroke attributes of its <use>s."""
        marker = _dict(trace.get("marker"))
        symbol = marker.get("symbol") if isinstance(marker.get("symbol"), str) else "circle"
        size = (_num(marker.get("size")) or 6) * scale
        d, open_ = marker_path(symbol, size)
        ident = self.def_id(("marker", symbol, _n(size)), f'<path id="{{id}}" d="{d}"/>')
        mline = _dict(marker.get("line"))
        lw = _num(mline.get("width"))
        if open_:
            attrs = f'fill="none" stroke="{_attr(color)}" stroke-width="{_n(lw if lw is not None else 2)}"'
        else:
            lc = _color(mline.get("color"), "")
            attrs = f'fill="{_attr(color)}"' + (f' stroke="{_attr(lc)}" stroke-width="{_n(lw or 1)}"' if lc else "")
        return ident, attrs

    def _markers(self, trace: dict[str, Any], points: list[tuple[float, float] | None], color: str) -> str:
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
        ident, attrs = self._marker_def(trace, color)
        uses = "".join(f'<use xlink:href="#{ident}" x="{_n(p[0])}" y="{_n(p[1])}"/>' for p in points if p is not None)
        return f'<g class="sc-markers" {attrs}>{uses}</g>'

    def _point_text(self, trace: dict[str, Any], points: list[tuple[float, float] | None]) -> str:
        texts = trace.get("text")
        if texts is None:
            return ""
        position = str(trace.get("textposition", "middle center"))
        size = _num(_dict(trace.get("marker")).get("size")) or 6
        out = []
        for i, p in enumerate(points):
            label = (
                texts[i] if isinstance(texts, list) and i < len(texts) else (texts if isinstance(texts, str) else "")
            )
            if p is None or label in (None, ""):
                continue
            x, y = p
            anchor = "middle"
            if position.startswith("top"):
                y -= size / 2 + 4
            elif position.startswith("bottom"):
                y += size / 2 + 4 + FONT * 0.7
            else:
                y += FONT * 0.35
            if position.endswith("left"):
                anchor, x = "end", x - size / 2 - 2
            elif position.endswith("right"):
                anchor, x = "start", x + size / 2 + 2
            out.append(f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}">{escape(str(label))}</text>')
        return f'<g class="sc-text sc-label">{"".join(out)}</g>' if out else ""

    def _bar_fill(self, trace: dict[str, Any], color: str) -> str:
        shape = _dict(_dict(trace.get("marker")).get("pattern")).get("shape")
        if isinstance(shape, str) and shape and pattern_body(shape, color):
            s = PATTERN_SIZE
            body = (
                f'<pattern id="{{id}}" patternUnits="userSpaceOnUse" width="{s}" height="{s}">'
                f"{pattern_body(shape, color)}</pattern>"
            )
            return f"url(#{self.def_id(('pattern', shape, color), body)})"
        return _attr(color)

    def draw_bar(self, t: dict[str, Any]) -> str:
        trace = t["trace"]
        color, _, _ = self._style(t)
        fill = self._bar_fill(trace, color)
        mline = _dict(_dict(trace.get("marker")).get("line"))
        lc, lw = _color(mline.get("color"), ""), _num(mline.get("width"))
        stroke = f' stroke="{_attr(lc)}" stroke-width="{_n(lw if lw is not None else 1)}"' if lc and lw != 0 else ""
        pos_ax, size_ax = t["pos_ax"], t["size_ax"]
        rects, labels = [], []
        texts = trace.get("text")
        position = str(trace.get("textposition", "auto"))
        for pu, wd, base, end, i in self.bar_geometry.get(t["index"], []):
            b, e = (size_ax.to_linear(base), size_ax.to_linear(end)) if size_ax.type != "category" else (base, end)
            if size_ax.type == "log":
                floor = min(size_ax.lo, size_ax.hi) - 1
                b = b if b is not None else floor
                e = e if e is not None else floor
            if b is None or e is None:
                continue
            p0, p1 = pos_ax.px(pu - wd / 2), pos_ax.px(pu + wd / 2)
            lo_px, hi_px = sorted((size_ax.p0, size_ax.p1))
            s0 = min(max(size_ax.px(b), lo_px - 1), hi_px + 1)
            s1 = min(max(size_ax.px(e), lo_px - 1), hi_px + 1)
            if t["horizontal"]:
                x, y, w, h = min(s0, s1), min(p0, p1), abs(s1 - s0), abs(p1 - p0)
            else:
                x, y, w, h = min(p0, p1), min(s0, s1), abs(p1 - p0), abs(s1 - s0)
            rects.append(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}"/>')
            label = (
                texts[i] if isinstance(texts, list) and i < len(texts) else (texts if isinstance(texts, str) else None)
            )
            if label not in (None, "") and position != "none":
                on = None if fill.startswith("url(") else color  # text on a pattern takes the theme's colour
                labels.append(self._bar_text(str(label), position, on, t["horizontal"], x, y, w, h, s1 < s0))
        group = f'<g class="sc-bars" fill="{fill}"{stroke}>{"".join(rects)}</g>'
        if any(labels):
            group += f'<g class="sc-text sc-label">{"".join(lab for lab in labels if lab)}</g>'
        return group

    def _bar_text(
        self,
        label: str,
        position: str,
        color: str | None,
        horizontal: bool,
        x: float,
        y: float,
        w: float,
        h: float,
        grows_up: bool,
    ) -> str:
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
            return (
                f'<text x="{_n(x + w / 2)}" y="{_n(ty)}" text-anchor="middle" font-size="{_n(size)}" {fill}>{e}</text>'
            )
        size = min(FONT, (h - 6) * FONT / natural if natural else FONT, w - 2)
        if size < 5:
            return ""
        cx, cy = x + w / 2 + size * 0.35, y + 3 if grows_up else y + h - 3
        return f'<text transform="translate({_n(cx)},{_n(cy)}) rotate(90)" font-size="{_n(size)}" {fill}>{e}</text>'

    def draw_axes_text(self) -> list[str]:
        out = []
        for ax in self.axes.values():
            if not ax.used and not ax.overlaying:
                continue
            if ax.overlaying and not any(t["ya"] is ax or t["xa"] is ax for t in self.traces):
                continue
            labels = []
            if ax.vertical:
                right = ax.side == "right"
                x = self.right + 3 if right else self.left - 3
                anchor = "start" if right else "end"
                for u, lab, minor in ax.ticks:
                    size = f' font-size="{_n(FONT * 0.75)}"' if minor else ""
                    fs = FONT * (0.75 if minor else 1)
                    labels.append(f'<text x="{_n(x)}" y="{_n(ax.px(u) + fs * 0.35)}"{size}>{escape(lab)}</text>')
                out.append(f'<g class="sc-text sc-tick" text-anchor="{anchor}">{"".join(labels)}</g>')
                title = _text(ax.spec.get("title"))
                if title:
                    widest = self._widest_label(ax)
                    mid = (ax.p0 + ax.p1) / 2
                    if right:
                        tx = self.right + widest + 20
                        rot = f"translate({_n(tx)},{_n(mid)}) rotate(90)"
                    else:
                        tx = max(AXIS_TITLE_FONT, self.left - widest - 20)
                        rot = f"translate({_n(tx)},{_n(mid)}) rotate(-90)"
                    out.append(
                        f'<text class="sc-text sc-axis-title" transform="{rot}" text-anchor="middle">'
                        f"{escape(title)}</text>"
                    )
            else:
                y_axis = (
                    self.axis(ax.spec["anchor"])
                    if isinstance(ax.spec.get("anchor"), str) and ax.spec["anchor"].startswith("y")
                    else None
                )
                base = max(y_axis.p0, y_axis.p1) if y_axis is not None else self.bottom
                rotate = getattr(ax, "rotate", False)
                for u, lab, minor in ax.ticks:
                    px = ax.px(u)
                    size = f' font-size="{_n(FONT * 0.75)}"' if minor else ""
                    if rotate:
                        labels.append(
                            f'<text transform="translate({_n(px - 4)},{_n(base + 12)}) rotate(30)" '
                            f'text-anchor="start">{escape(lab)}</text>'
                        )
                    else:
                        labels.append(f'<text x="{_n(px)}" y="{_n(base + 17)}"{size}>{escape(lab)}</text>')
                out.append(f'<g class="sc-text sc-tick" text-anchor="middle">{"".join(labels)}</g>')
                title = _text(ax.spec.get("title"))
                if title:
                    drop = self._widest_label(ax) * 0.5 if rotate else 0
                    out.append(
                        f'<text class="sc-text sc-axis-title" x="{_n((ax.p0 + ax.p1) / 2)}" '
                        f'y="{_n(base + 47 + drop)}" text-anchor="middle">{escape(title)}</text>'
                    )
        return out

    def draw_titles(self) -> list[str]:
        title = _dict(self.layout.get("title")) if isinstance(self.layout.get("title"), dict) else {}
        text = _text(self.layout.get("title"))
        sub = _text(title.get("subtitle"))
        out = []
        if text:
            y = self.top / 2 + TITLE_FONT * 0.35 - (8 if sub else 0)  # a subtitle goes under a raised title
            out.append(
                f'<text class="sc-text sc-title" x="{_n(self.width / 2)}" y="{_n(y)}" '
                f'text-anchor="middle">{escape(text)}</text>'
            )
        if sub:
            out.append(
                f'<text class="sc-text sc-subtitle" x="{_n(self.width / 2)}" y="{_n(self.top / 2 + 16)}" '
                f'text-anchor="middle">{escape(sub)}</text>'
            )
        return out

    def draw_legend(self) -> list[str]:
        if not self.legend:
            return []
        top = self.bottom + max(0.25 * self.plot_h, self.x_space + 5)
        entries = []
        for t, (x0, row) in zip(self.legend, self.legend_positions, strict=False):
            x = self.left + x0
            y = top + 14.5 + row * LEGEND_ROW
            entries.append(
                f'<g class="sc-legend-item" data-trace="{t["index"]}" transform="translate({_n(x)},{_n(y)})">'
                f'{self.swatch(t)}<text class="sc-text" x="40" y="{_n(FONT * 0.35)}">'
                f"{escape(_text(t['trace'].get('name', '')))}</text></g>"
            )
        return [f'<g class="sc-legend">{"".join(entries)}</g>']

    def swatch(self, t: dict[str, Any]) -> str:
        color, width, dash = self._style(t)
        trace = t["trace"]
        if t["kind"] == "bar":
            fill = self._bar_fill(trace, color)
            return f'<rect x="14" y="-6" width="12" height="12" fill="{fill}"/>'
        out = ""
        mode = t["mode"]
        if "lines" in mode:
            da = dasharray(dash, width)
            out += (
                f'<path d="M5,0H35" fill="none" stroke="{_attr(color)}" stroke-width="{_n(min(width, 5))}"'
                + (f' stroke-dasharray="{da}"' if da else "")
                + "/>"
            )
        if "markers" in mode:
            size = _num(_dict(trace.get("marker")).get("size")) or 6
            ident, attrs = self._marker_def(trace, color, min(1.0, 12 / size))
            out += f'<use xlink:href="#{ident}" x="20" y="0" {attrs}/>'
        if not out:
            out = f'<path d="M5,0H35" stroke="{_attr(color)}" stroke-width="2"/>'
        return out


def _axis_name(ref: str | None) -> str:
    if not ref:
        return ""
    return ("xaxis" if ref.startswith("x") else "yaxis") + ref[1:]


def line_path(points: list[tuple[float, float] | None], shape: str = "linear") -> str:
    """One SVG path through the points; a None breaks the line; "hv"/"vh" draw steps."""
    out: list[str] = []
    prev: tuple[str, str] | None = None
    last_cmd = ""
    for p in points:
        if p is None:
            prev, last_cmd = None, ""
            continue
        x, y = _n(p[0]), _n(p[1])
        if prev is None:
            out.append(f"M{x},{y}")
            last_cmd = "M"
        else:
            px, py = prev
            if shape in ("hv", "vh") and px != x and py != y:
                if shape == "hv":
                    out.append(f"H{x}V{y}")
                else:
                    out.append(f"V{y}H{x}")
                last_cmd = ""
            elif py == y and px != x:
                out.append(f"H{x}")
                last_cmd = "H"
            elif px == x and py != y:
                out.append(f"V{y}")
                last_cmd = "V"
            elif px == x and py == y:
                pass
            else:
                out.append(f" {x},{y}" if last_cmd == "L" else f"L{x},{y}")
                last_cmd = "L"
        prev = (x, y)
    # drop lone moves (a point between two gaps draws nothing, as in plotly)
    text = "".join(out)
    return re.sub(r"M[-\d.]+,[-\d.]+(?=M|$)", "", text)


# What render() draws, and keys that change nothing in a static picture (hover text, data kept
# for the data table); check() refuses every other trace type, key or value.
TRACE_TYPES = ("scatter", "bar")
TRACE_KEYS = frozenset(
    {"type", "x", "y", "name", "mode", "line", "line_shape", "marker", "text", "textposition", "base",
     "orientation", "offsetgroup", "xaxis", "yaxis", "showlegend", "visible",
     "hovertemplate", "hoverinfo", "hovertext", "customdata"}
)  # fmt: skip
LAYOUT_KEYS = frozenset(
    {"title", "width", "height", "margin", "barmode", "bargap", "showlegend", "legend", "hovermode"}
)  # fmt: skip
AXIS_KEYS = frozenset(
    {"type", "title", "range", "autorange", "rangemode", "domain", "anchor", "overlaying", "side", "automargin",
     "tickformat", "tickvals", "ticktext", "showgrid", "zeroline", "minorloglabels"}
)  # fmt: skip
AXIS_TYPES = ("-", "linear", "log", "category")
MODES = ("lines", "markers", "text", "none")
LINE_SHAPES = ("linear", "hv", "vh")
AXIS_NAME = re.compile(r"^[xy]axis\d*$")


class UnsupportedFigure(ValueError):
    """A figure with something the static renderer does not draw as plotly.js would."""


def unsupported(figure: Any) -> list[str]:
    """What in `figure` the static SVG would not draw as plotly.js does (empty: all of it is drawn)."""
    problems: list[str] = []
    layout = _dict(_dict(figure).get("layout"))
    for key, value in layout.items():
        if AXIS_NAME.match(key):
            axis = _dict(value)
            problems += [f"layout.{key}.{k}" for k in axis if k not in AXIS_KEYS]
            if str(axis.get("type", "-")) not in AXIS_TYPES:
                problems.append(f"layout.{key}.type {axis['type']!r} (drawn: {', '.join(AXIS_TYPES[1:])})")
        elif key not in LAYOUT_KEYS:
            problems.append(f"layout.{key}")
    legend = _dict(layout.get("legend"))
    if legend.get("orientation", "h") != "h" or set(legend) - {"orientation", "y"}:
        problems.append("layout.legend other than {orientation: 'h', y: ...} (drawn: below the plot, in rows)")
    for i, trace in enumerate(_list(_dict(figure).get("data"))):
        kind = _dict(trace).get("type", "scatter")
        if kind not in TRACE_TYPES:
            problems.append(f"data[{i}].type {kind!r} (drawn: {', '.join(TRACE_TYPES)})")
            continue
        problems += [f"data[{i}].{k}" for k in _dict(trace) if k not in TRACE_KEYS]
        mode = str(_dict(trace).get("mode", "lines"))
        if any(part not in MODES for part in mode.split("+")):
            problems.append(f"data[{i}].mode {mode!r}")
        shape = _dict(_dict(trace).get("line")).get("shape", _dict(trace).get("line_shape", "linear"))
        if shape not in LINE_SHAPES:
            problems.append(f"data[{i}].line.shape {shape!r} (drawn: {', '.join(LINE_SHAPES)})")
    return problems


def check(figure: Any) -> None:
    """UnsupportedFigure naming each part of `figure` that render() does not draw as plotly.js does."""
    problems = unsupported(figure)
    if problems:
        raise UnsupportedFigure(
            "the pre-rendered chart cannot draw " + "; ".join(problems) + ": change the figure, or teach "
            "sitebuild/static_chart.py to draw it (and add it to its TRACE_KEYS / LAYOUT_KEYS / AXIS_KEYS)"
        )


def geometry(figure: dict[str, Any]) -> dict[str, Any]:
    """Where render() puts things, to compare with plotly.js's drawing of the same figure: the chart's
    size, the plot area (plotly's `_fullLayout._size`: l, t, w, h in px), each drawn axis's range
    (log axes in log10 units, categories by index, as plotly's `range`) and the traces drawn."""
    chart = _Chart(figure, "geometry")
    chart.build()
    return {
        "width": chart.width,
        "height": chart.height,
        "plot": {"l": chart.left, "t": chart.top, "w": chart.plot_w, "h": chart.plot_h},
        "axes": {name: [ax.lo, ax.hi] for name, ax in chart.axes.items() if ax.used or ax.overlaying},
        "traces": len(chart.traces),
    }


def figure_id(figure: Any) -> str:
    """A short id derived from the figure, for charts rendered without a caller-supplied id."""
    blob = json.dumps(figure, sort_keys=True, default=str, allow_nan=True)
    return "sc" + hashlib.sha1(blob.encode()).hexdigest()[:8]


def render(figure: dict[str, Any], title_id: str | None = None) -> str:
    """The figure as one `<svg>` string; `title_id` (unique on the page) names its <title> and
    prefixes every id inside it. Never raises on a malformed figure: what cannot be drawn is left out."""
    prefix = (
        title_id if isinstance(title_id, str) and re.fullmatch(r"[A-Za-z][\w.:-]*", title_id) else figure_id(figure)
    )
    chart = _Chart(figure, prefix)
    try:
        body = chart.build()
        defs = f"<defs>{''.join(chart.defs)}</defs>" if chart.defs else ""
    except Exception:  # a figure this renderer cannot read: an empty frame rather than a failed build
        chart = _Chart({}, prefix)
        body, defs = "", ""
    title = _text(_dict(figure).get("layout", {}).get("title") if isinstance(_dict(figure).get("layout"), dict) else "")
    title = title or "Chart"
    labelled = f' aria-labelledby="{_attr(title_id)}"' if title_id else ""
    title_attr = f' id="{_attr(title_id)}"' if title_id else ""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" class="sim-static-chart" viewBox="0 0 {_n(chart.width)} '
        f'{_n(chart.height)}" width="100%" preserveAspectRatio="xMidYMid meet" role="img" focusable="false"'
        f"{labelled}><title{title_attr}>{escape(title)}</title>{defs}{body}</svg>"
    )
