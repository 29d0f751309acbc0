"""check(): the build refuses a figure with anything render() does not draw as plotly.js does."""

import re
from typing import Any

from sitebuild.static_chart.text import _dict, _list

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
     "tickformat", "tickvals", "ticktext", "showgrid", "zeroline", "minorloglabels", "tickmode", "visible"}
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
            if axis.get("tickmode", "auto") not in ("auto", "sync"):
                problems.append(f"layout.{key}.tickmode {axis['tickmode']!r} (drawn: auto, sync)")
            if str(axis.get("type", "-")) not in AXIS_TYPES:
                problems.append(f"layout.{key}.type {axis['type']!r} (drawn: {', '.join(AXIS_TYPES[1:])})")
        elif key not in LAYOUT_KEYS:
            problems.append(f"layout.{key}")
    legend = _dict(layout.get("legend"))
    if legend.get("orientation", "h") != "h" or set(legend) - {"orientation", "y"}:
        problems.append("layout.legend other than {orientation: 'h', y: ...} (drawn: below the plot, in rows)")
    for i, trace in enumerate(map(_dict, _list(_dict(figure).get("data")))):
        kind = trace.get("type", "scatter")
        if kind not in TRACE_TYPES:
            problems.append(f"data[{i}].type {kind!r} (drawn: {', '.join(TRACE_TYPES)})")
            continue
        problems += [f"data[{i}].{k}" for k in trace if k not in TRACE_KEYS]
        mode = str(trace.get("mode", "lines"))
        if any(part not in MODES for part in mode.split("+")):
            problems.append(f"data[{i}].mode {mode!r}")
        shape = _dict(trace.get("line")).get("shape", trace.get("line_shape", "linear"))
        if shape not in LINE_SHAPES:
            problems.append(f"data[{i}].line.shape {shape!r} (drawn: {', '.join(LINE_SHAPES)})")
    return problems


def check(figure: Any) -> None:
    """UnsupportedFigure naming each part of `figure` that render() does not draw as plotly.js does."""
    if problems := unsupported(figure):
        raise UnsupportedFigure(
            "the pre-rendered chart cannot draw " + "; ".join(problems) + ": change the figure, or teach "
            "sitebuild/static_chart/ to draw it (and add it to the TRACE_KEYS / LAYOUT_KEYS / AXIS_KEYS of its check.py)"
        )
