"""Text and values: reading a figure's loosely typed values, SVG numbers and attributes, label widths,
and numbers as plotly's default tick labels and d3-format write them."""

import math
import re
from typing import Any
from xml.sax.saxutils import escape

FONT, TITLE_FONT, AXIS_TITLE_FONT = 12, 17, 14

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
    return sum(_WIDTHS[ord(ch) - 32] if " " <= ch <= "~" else 600 for ch in text) * size / 1000


_SI = {-15: "f", -12: "p", -9: "n", -6: "μ", -3: "m", 0: "", 3: "k", 6: "M", 9: "B", 12: "T"}
MINUS = "\u2212"


def _sep_thousands(int_part: str, force: bool) -> str:
    if not force and len(int_part) <= 4:
        return int_part
    head = len(int_part) % 3 or 3  # groups of 3 from the right
    return ",".join([int_part[:head]] + [int_part[i : i + 3] for i in range(head, len(int_part), 3)])


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


def _log_label(k: float) -> str:
    p = round(k)
    if abs(p) <= 3:
        return _trim(f"{10.0**p:.{max(0, -p)}f}")
    exp = 3 * round((p - 1) / 3)
    if abs(p) > 15 or exp not in _SI:
        return f"1e{p:+d}".replace("-", MINUS)
    return f"{10 ** (p - exp):g}" + _SI[exp]


_D3 = re.compile(r"^(?P<sign>[+-])?(?P<comma>,)?(?:\.(?P<prec>\d+))?(?P<trim>~)?(?P<type>[%dfsegr])?$")


def format_d3(v: float, spec: str) -> str | None:
    """The subset of d3-format that the simulators use; None for an unsupported spec."""
    m = _D3.match(spec.replace("~", "") if spec.endswith("~") else spec)
    if not m or not spec:
        return None
    kind, p = m["type"] or "g", 6 if m["prec"] is None else int(m["prec"])
    suffix = "%" if kind == "%" else ""
    if kind in "%fe":
        s = format(abs(v) * 100 if kind == "%" else abs(v), f".{p}{'f' if kind == '%' else kind}")
    elif kind == "d":
        s = f"{abs(round(v))}"
    elif kind == "s" and v != 0:
        e3 = max(-15, min(12, 3 * math.floor(math.log10(abs(v)) / 3)))
        digits = max(0, max(1, p) - 1 - math.floor(math.log10(abs(v) / 10**e3)))
        s, suffix = f"{abs(v) / 10**e3:.{digits}f}", {**_SI, 9: "G"}.get(e3, "")
    else:  # g / r (and an "s" of 0)
        s = "0" if kind == "s" else f"{abs(v):.{max(1, p)}g}"
    if m["trim"] or spec.endswith("~"):
        s = _trim(s)
    if m["comma"]:
        int_part, dot, frac = s.partition(".")
        s = _sep_thousands(int_part, True) + dot + frac
    negative = v < 0 and any(c not in "0.," for c in s)
    plus = "+" if m["sign"] == "+" and not negative else ""  # d3's "+": a plus for zero and above
    return (MINUS if negative else plus) + s + suffix


def _n(v: float) -> str:
    """A number with at most 2 decimals and no trailing zeros."""
    s = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _num(v: Any) -> float | None:
    """A finite float, or None for None/NaN/inf/non-numbers (plotly's gaps)."""
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        return None
    try:
        f = float(v)
    except ValueError:
        return None
    return f if math.isfinite(f) else None


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
