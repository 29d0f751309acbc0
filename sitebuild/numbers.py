"""How the widgets print a metric; `widgets.js` formats with the same rule (`formatNumber`)."""

from __future__ import annotations

from typing import Any


def format_number(value: Any) -> str:
    """Whole numbers from 1,000 up with separators; smaller ones with 4 significant digits."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, (int, float)):
        return str(value)
    if abs(value) >= 1000:
        return f"{round(value):,}"
    return f"{value:.4g}"
