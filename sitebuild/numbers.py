"""How the widgets print a metric; `docs/assets/js/numbers.mjs` formats with the same rules
(`formatNumber`, `formatMetric`, `KEY_FIGURES`); tests/site/test_numbers.py runs both."""

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

# A widget's key-figures table shows the first KEY_FIGURES metrics its simulator declares (METRICS
# order: the figures its summary opens with); the rest are under its "Data table".
KEY_FIGURES = 8

_BYTES = ((1e9, "GB"), (1e6, "MB"), (1e3, "KB"))
# The unit a person would say, largest first: the largest in which the figure is ≥ 1, shown to 3 significant digits.
SCALES: dict[str, tuple[tuple[float, str], ...]] = {
    "s": ((1, "s"), (1e-3, "ms"), (1e-6, "µs")),
    "B": (*_BYTES, (1, "B")),
    "bytes": (*_BYTES, (1, "bytes")),
    "GB": ((1, "GB"), (1e-3, "MB")),
    "GiB": ((1, "GiB"), (2**-10, "MiB")),
    "FLOP": ((1e15, "PFLOP"), (1e12, "TFLOP"), (1e9, "GFLOP"), (1, "FLOP")),
}


def format_number(value: Any) -> str:
    """Whole numbers from 1,000 up with separators; smaller ones with 4 significant digits."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, (int, float)):
        return str(value)
    return _whole(value) if abs(value) >= 1000 else _significant(value, 4)


def format_metric(value: Any, unit: str) -> tuple[str, str]:
    """(text, unit) of a key figure: 0.04782 s -> ("47.8", "ms"), 58.17e9 B -> ("58.2", "GB")."""
    scales = SCALES.get(unit)
    # A ratio to 2 decimals, as vLLM logs 200.99x.
    if unit == "x" and isinstance(value, float) and math.isfinite(value) and not value.is_integer():
        return f"{Decimal(value).quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):,}", unit
    if not scales or isinstance(value, bool) or not isinstance(value, (int, float)) or value == 0:
        return format_number(value), unit
    rounded = abs(float(_significant(value, 3)))  # 0.9996 s is "1 s", not "1,000 ms"
    factor, shown = next((s for s in scales if rounded >= s[0]), scales[-1])
    x = value / factor
    # Eighths under 10 are written out: 1.125 B per weight (a bitmask's 1/8 B on 1 B), not 1.13.
    digits = 4 if abs(x) < 10 and (x * 8).is_integer() else 3
    return (_whole(x) if abs(x) >= 999.5 else _significant(x, digits)), shown


# As JavaScript rounds (Math.round, toPrecision): halves up, from the float's exact value.
def _whole(x: float) -> str:
    return f"{math.floor(x + 0.5):,}"


def _significant(x: float, digits: int) -> str:
    exact = Decimal(x)
    if not exact:
        return "0"
    kept = exact.quantize(Decimal(1).scaleb(exact.adjusted() - digits + 1), rounding=ROUND_HALF_UP)
    return f"{kept.normalize():f}"
