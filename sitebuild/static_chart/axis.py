"""An axis: its type, plotly's autorange with pixel padding, its pixel mapping, and where plotly puts
its ticks (linear or log) and how it labels them."""

from __future__ import annotations

import math
from typing import Any

from sitebuild.static_chart.text import _is_numberish, _list, _log_label, _num, axis_exponent, format_d3, format_default

PAD = 0.05  # plotly pads autoranges by 5% of the axis length


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
        if tickvals := _list(self.spec.get("tickvals")):
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


def _axis_name(ref: str | None) -> str:
    if not ref:
        return ""
    return ("xaxis" if ref.startswith("x") else "yaxis") + ref[1:]
