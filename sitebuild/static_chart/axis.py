"""An axis: its type, plotly's autorange with pixel padding, its pixel mapping, its ticks (linear, log) and labels."""

import math
from typing import Any

from sitebuild.static_chart.text import _list, _log_label, _num, axis_exponent, format_d3, format_default

PAD = 0.05  # plotly pads autoranges by 5% of the axis length


def nice_step(rough: float) -> float:
    """plotly's roundDTick: the first of 2, 5, 10 × 10^k that is at least `rough`."""
    if rough <= 0 or not math.isfinite(rough):
        return 1.0
    base = 10 ** math.floor(math.log10(rough))
    return base * next((m for m in (2, 5) if rough / base <= m * (1 + 1e-9)), 10)


def _tick_count(length_px: float, vertical: bool) -> float:
    return max(4.0, min(9.0, length_px / (40 if vertical else 80))) + 1


def linear_ticks(lo: float, hi: float, length_px: float, vertical: bool) -> tuple[list[float], float]:
    """plotly's auto ticks for a linear axis: about one per 40 px (y) or 80 px (x), 4 to 9 (+1)."""
    lo, hi = (hi, lo) if lo > hi else (lo, hi)
    dtick = nice_step((hi - lo) / _tick_count(length_px, vertical)) if hi > lo else 1.0
    first = math.ceil(lo / dtick - 1e-9)
    return [round(k * dtick, 12) for k in range(first, first + 100) if k * dtick <= hi + dtick * 1e-9], dtick


def log_ticks(lo: float, hi: float, length_px: float, vertical: bool) -> list[tuple[float, str, bool]]:
    """Ticks of a log axis (range in log10 units): (log10 value, label, minor?) as plotly draws them."""
    lo, hi = (hi, lo) if lo > hi else (lo, hi)
    rough = (hi - lo) / _tick_count(length_px, vertical)
    out: list[tuple[float, str, bool]] = []
    if rough > 0.7:  # powers of ten only, every ceil(rough) decades
        step = math.ceil(rough)
        decades = range(math.ceil(lo / step - 1e-9) * step, math.floor(hi + 1e-9) + 1, step)
        out = [(float(k), _log_label(k), False) for k in decades]
    elif hi - lo < 1:  # within one decade: linear ticks labelled in full
        v_lo, v_hi = 10**lo, 10**hi
        ticks, dtick = linear_ticks(v_lo, v_hi, length_px * 1.5, vertical)
        out = [(math.log10(v), format_default(v, dtick, axis_exponent(v_lo, v_hi)), False) for v in ticks if v > 0]
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
        self.spec = spec
        self.vertical = name.startswith("y")
        self.type = str(spec.get("type", "-"))
        self.categories: dict[str, int] = {}  # category -> index, in order of appearance
        self.entries: list[tuple[float, float, float]] = []  # (value, pad px below, pad px above)
        self.overlaying = spec.get("overlaying") if isinstance(spec.get("overlaying"), str) else None
        self.side = spec.get("side") or ("left" if self.vertical else "bottom")
        dom = [_num(d) for d in _list(spec.get("domain"))]
        self.domain = (dom[0], dom[1]) if len(dom) == 2 and dom[0] is not None and dom[1] is not None else (0.0, 1.0)
        self.lo, self.hi = 0.0, 1.0
        self.p0, self.p1 = 0.0, 1.0  # pixel positions of lo and hi
        self.used = False
        self.ticks: list[tuple[float, str, bool]] = []

    def to_linear(self, v: Any) -> float | None:
        """A data value → axis units (log10 for log axes, index for categories)."""
        if self.type == "category":
            if v is None or (isinstance(v, float) and not math.isfinite(v)):
                return None
            return float(self.categories.setdefault(str(v), len(self.categories)))
        f = _num(v)
        if self.type == "log" and f is not None:
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
        rng = [_num(r) for r in _list(self.spec.get("range"))]
        if len(rng) == 2 and rng[0] is not None and rng[1] is not None:  # log ranges in log10 units, as plotly's
            self.lo, self.hi = rng[0], rng[1]
        else:
            self.lo, self.hi = self._fit()
        if self.spec.get("autorange") == "reversed" and not rng:
            self.lo, self.hi = self.hi, self.lo

    def _fit(self) -> tuple[float, float]:
        entries = list(self.entries)
        if self.spec.get("rangemode") in ("tozero", "nonnegative") and self.type == "linear":
            entries.append((0.0, 0.0, 0.0))
        if not entries:
            return (-1.0, 6.0) if self.type != "log" else (0.0, 1.0)
        length = max(self.length(), 1.0)
        best = None
        for v_lo, p_lo, _ in entries:
            for v_hi, _, p_hi in entries:
                dv, dp = v_hi - v_lo, length - p_lo - p_hi
                if dv <= 0 or dp <= 0:
                    continue
                ratio = dv / dp
                if best is None or ratio > best[0]:
                    best = (ratio, v_lo - p_lo * ratio, v_hi + p_hi * ratio)
        if best is None:  # one value (or all equal)
            v = entries[0][0]
            half = 0.5 if self.type == "category" else abs(v) * 0.1 if v else 1.0
            best = (0.0, v - half, v + half)
        return (0.0 if self.spec.get("rangemode") == "nonnegative" and best[1] < 0 else best[1]), best[2]

    def make_ticks(self, sync_with: "Axis | None" = None) -> None:
        lo, hi = min(self.lo, self.hi), max(self.lo, self.hi)
        fmt = self.spec.get("tickformat") if isinstance(self.spec.get("tickformat"), str) else ""
        if tickvals := _list(self.spec.get("tickvals")):
            texts = _list(self.spec.get("ticktext"))
            for i, u in enumerate(map(self.to_linear, tickvals)):
                if u is not None and lo - 1e-9 <= u <= hi + 1e-9:
                    self.ticks.append((u, str(texts[i]) if i < len(texts) else self._label(u, 1.0, fmt), False))
            return
        if self.type == "category":
            step = max(1, math.ceil(len(self.categories) / max(1.0, self.length() / 15)))
            self.ticks = [
                (float(i), c, False)
                for i, c in enumerate(self.categories)
                if lo - 1e-9 <= i <= hi + 1e-9 and i % step == 0
            ]
            return
        synced = sync_with is not None and self.spec.get("tickmode", "sync") == "sync"  # plotly's default
        if synced and sync_with.ticks and sync_with.hi != sync_with.lo:  # type: ignore[union-attr]
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
        self.ticks = [(v, self._label(v, dtick, fmt), False) for v in values]

    def _label(self, v: float, dtick: float, fmt: str) -> str:
        if fmt and (out := format_d3(v, fmt)) is not None:
            return out
        if self.type == "log":
            return format_default(10**v, 10 ** math.floor(v) / 100)
        return format_default(v, dtick, axis_exponent(self.lo, self.hi))


def _axis_name(ref: str | None) -> str:
    return ("xaxis" if ref.startswith("x") else "yaxis") + ref[1:] if ref else ""
