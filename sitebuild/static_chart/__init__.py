"""A plotly figure dict → one static inline SVG, drawn at build time so the chart shows at first paint.

The SVG mimics plotly.js's default rendering of the same figure (plotly.js draws the live chart
later, so the two should not jump): the layout's size and margins, plotly's autorange padding and
auto ticks (1/2/5 × 10^k; decades with 2-5 or 1-9 minor labels on log axes), a centred title, axis
titles, gridlines and zero lines, and the horizontal legend below the plot with a swatch that shows
each series' colour and its dash, marker or pattern. Supported: scatter (lines, markers, text,
`line_shape` "hv"/"vh", None/NaN gaps), bar (vertical/horizontal, `base`, barmode group/stack/
overlay, patterns, text), linear/log/category axes, `range`, `autorange: "reversed"`, `tickvals`/
`ticktext`, `tickformat` (d3 subset), `rangemode`, `domain`, `anchor`, overlaying axes with
plotly's synced ticks, hidden axes (`visible: false`). `check(figure)` refuses anything else (a pie, a filled area, a date axis, a
vertical legend...) with a message naming it, so the build fails instead of pre-rendering a chart
that differs from the live one; `render` itself never raises and leaves out what it cannot draw.

The page's Content-Security-Policy allows no inline styles, so text, grid and axes carry classes
(`sc-*`, styled by docs/assets/css/static-chart.css through the theme's colour variables) and only
series colours are presentation attributes. Standard library only; deterministic output.

Modules, each importing only those before it: text (values, label widths, number formats), axis
(ticks, autorange), marks (lines, dashes, markers, patterns), check, canvas (the chart's state),
bars, scatter, frame (grid, tick labels, titles, legend), chart (layout; the SVG put together).
"""

import hashlib
import json
import re
from typing import Any
from xml.sax.saxutils import escape

from sitebuild.static_chart.axis import linear_ticks, log_ticks
from sitebuild.static_chart.chart import _Chart
from sitebuild.static_chart.check import UnsupportedFigure, check, unsupported
from sitebuild.static_chart.marks import dasharray
from sitebuild.static_chart.text import _attr, _dict, _n, _text, format_d3, format_default

__all__ = [
    "UnsupportedFigure", "check", "dasharray", "format_d3", "format_default", "geometry", "linear_ticks", "log_ticks",
    "render", "unsupported",
]  # fmt: skip


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


def render(figure: dict[str, Any], title_id: str | None = None) -> str:
    """The figure as one `<svg>`; `title_id` (unique on the page) names its <title> and prefixes its ids."""
    prefix = title_id
    if not (isinstance(title_id, str) and re.fullmatch(r"[A-Za-z][\w.:-]*", title_id)):  # an id from the figure
        prefix = "sc" + hashlib.sha1(json.dumps(figure, sort_keys=True, default=str).encode()).hexdigest()[:8]
    chart = _Chart(figure, prefix)
    try:
        body = chart.build()
        defs = f"<defs>{''.join(chart.defs)}</defs>" if chart.defs else ""
    except Exception:  # a figure this renderer cannot read: an empty frame rather than a failed build
        chart = _Chart({}, prefix)
        body, defs = "", ""
    title = _text(_dict(_dict(figure).get("layout")).get("title")) or "Chart"
    labelled = f' aria-labelledby="{_attr(title_id)}"' if title_id else ""
    title_attr = f' id="{_attr(title_id)}"' if title_id else ""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" class="sim-static-chart" viewBox="0 0 {_n(chart.width)} '
        f'{_n(chart.height)}" width="100%" preserveAspectRatio="xMidYMid meet" role="img" focusable="false"'
        f"{labelled}><title{title_attr}>{escape(title)}</title>{defs}{body}</svg>"
    )
