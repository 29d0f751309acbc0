"""Plain plotly figure dicts, shared by every simulator so charts look and read alike.

Figures are JSON-able dicts (no plotly import): `{"data": [...], "layout": {...}}`. Titles use
the `{"text": ...}` form that plotly.js 4 requires. Colours come from one palette that stays
distinguishable for common colour-vision deficiencies (Okabe and Ito 2008), and every series
also differs by dash or marker, so colour never carries meaning alone. The seventh colour, black,
marks reference lines; the live and static charts draw it in the text colour, so it stays visible
in the dark palette (docs/assets/js/charts.js, docs/assets/css/static-chart.css).

Axes read the same everywhere: a share is shown as a percentage (pass `yaxis=PERCENT`), and a log
axis labels its decades only (plotly's "small digits" 2…9 between them read as values of their
own), keeping the ticks and gridlines in between.
"""

import math
from collections.abc import Callable
from typing import Any

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
# One dash per palette colour, so that the i-th series differs from every other by more than colour
# (the seventh, black, is the reference lines'; plotly takes a list of dash lengths too).
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "8px,3px,2px,3px,2px,3px", "2px,8px")
# An axis whose values are shares (0-1): ticks read "25%".
PERCENT: dict[str, Any] = {"tickformat": ".0%"}
LOG: dict[str, Any] = {"type": "log"}
MARKERS = ("circle", "square", "diamond", "triangle-up", "x", "cross")


def _trace(
    kind: str, x: list[Any], y: list[Any], name: str, style: dict[str, Any], extra: dict[str, Any]
) -> dict[str, Any]:
    return {"type": kind, "x": x, "y": y, "name": name, **style, **extra}  # `extra` overrides the style


def line(x: list[Any], y: list[Any], name: str, i: int = 0, shape: str = "linear", **extra: Any) -> dict[str, Any]:
    """`shape="hv"` draws steps (a value holds until the next x), as for counts over time."""
    style = {"color": PALETTE[i % len(PALETTE)], "dash": DASHES[i % len(DASHES)], "width": 2.5}
    if shape != "linear":
        style["shape"] = shape  # plotly.js reads line.shape; a top-level line_shape is ignored
    mode = "lines" if len(x) != 1 else "lines+markers"  # one point draws no line: a marker shows it
    return _trace("scatter", x, y, name, {"mode": mode, "line": style}, extra)


# A level across a whole category axis: a line between two categories stops at their centres, half a
# group short at each end, so a level is drawn on a hidden x axis from 0 to 1 laid over the plot
# (the chart passes xaxis2=ACROSS).
ACROSS: dict[str, Any] = {"overlaying": "x", "range": [0, 1], "visible": False}


def level(y: float, name: str, i: int = 6) -> dict[str, Any]:
    return line([0, 1], [y, y], name, i, xaxis="x2", hoverinfo="name+y")


def sweep(points: list[dict[str, Any]], x: str, y: str, name: str, i: int = 0, **extra: Any) -> dict[str, Any]:
    """A sweep's points (dicts) as lines and markers: each point's `x` against its `y`."""
    return line([p[x] for p in points], [p[y] for p in points], name, i, mode="lines+markers", **extra)


def markers(x: list[Any], y: list[Any], name: str, i: int = 0, **extra: Any) -> dict[str, Any]:
    marker = {"color": PALETTE[i % len(PALETTE)], "symbol": MARKERS[i % len(MARKERS)], "size": 11}
    style = {"mode": "markers+text", "marker": marker, "textposition": "top center"}
    return _trace("scatter", x, y, name, style, extra)


def bar(x: list[Any], y: list[Any], name: str, i: int = 0, **extra: Any) -> dict[str, Any]:
    patterns = ("", "/", "x", ".", "\\", "+")
    marker = {"color": PALETTE[i % len(PALETTE)], "pattern": {"shape": patterns[i % len(patterns)]}}
    return _trace("bar", x, y, name, {"marker": marker}, extra)


def right_axis(title: str, **extra: Any) -> dict[str, Any]:
    """A second y axis on the right, over the first, with ticks at round values of its own (plotly
    would put them at the first axis's gridlines: 0.0873 s) and no gridlines of its own."""
    return {
        "title": {"text": title},
        "overlaying": "y",
        "side": "right",
        "automargin": True,
        "tickmode": "auto",
        "showgrid": False,
        **extra,
    }


def layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "title": {"text": title},
        "xaxis": {"title": {"text": x_title}, "automargin": True},
        "yaxis": {"title": {"text": y_title}, "automargin": True},
        "legend": {"orientation": "h", "y": -0.25},
        "margin": {"l": 60, "r": 20, "t": 50, "b": 60},
        "hovermode": "closest",
    }
    for key, value in extra.items():  # a dict merges into the default's
        out[key] = {**out[key], **value} if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    for key, axis in out.items():
        if key[1:5] == "axis" and isinstance(axis, dict) and axis.get("type") == "log":
            out[key] = {"minorloglabels": "none", **axis}
    return out


def figure(data: list[dict[str, Any]], lay: dict[str, Any]) -> dict[str, Any]:
    for key, axis in lay.items():
        if key[1:5] == "axis" and isinstance(axis, dict) and axis.get("type") == "log" and "tickvals" not in axis:
            lay[key] = {**axis, **_log_ticks([v for t in data if _on(t, key) for v in t.get(key[0]) or []])}
    return {"data": data, "layout": lay}


def _on(trace: dict[str, Any], axis: str) -> bool:
    """Whether `trace` is drawn against `axis` ("yaxis2" for a trace's yaxis "y2")."""
    return str(trace.get(axis[0] + "axis", axis[0])).replace(axis[0], axis[0] + "axis") == axis


def _log_ticks(values: list[Any]) -> dict[str, Any]:
    """A log axis over less than a decade or two labels its decades alone, so one label or none shows
    (learner review: "1" on an axis from 0.15 to 6.8 s): it is given 1-2-5 ticks, labelled in full."""
    shown = [float(v) for v in values if isinstance(v, (int, float)) and v > 0]
    if not shown:
        return {}
    lo, hi = math.log10(min(shown)), math.log10(max(shown))
    if math.floor(hi) - math.ceil(lo) >= 1:  # two powers of ten or more inside: they label it
        return {}
    ticks = [d * 10.0**k for k in range(math.floor(lo) - 1, math.ceil(hi) + 2) for d in (1, 2, 5)]
    return {"tickvals": ticks, "ticktext": [f"{v:,.{max(0, -math.floor(math.log10(v)))}f}" for v in ticks]}


def chart(data: list[dict[str, Any]], title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    """figure(data, layout(...)) in one call."""
    return figure(data, layout(title, x_title, y_title, **extra))


def running(fig: dict[str, Any], r: dict[str, Any]) -> dict[str, Any]:
    """A chart drawn while its first run is still going (r["running"]: requests finished, of how many;
    engine.cluster.serve_shown), as api draws every partial chart: the title says so, and its traces
    (that run on the requests finished so far) are named "(so far)", so no finished point is revised."""
    if "running" in r:
        done, n = r["running"]
        fig["layout"]["title"]["text"] += f" (simulating: {done:,} of {n:,} requests done)"
        for trace in fig["data"]:
            trace["name"] += " (so far)"
    return fig


def so_far(
    part: dict[str, Any], name: str, n: int, pick: Callable[[Any], Any] | None = None
) -> Callable[[Any, int], Any]:
    """The `show` of a run drawn while it goes (engine.cluster.serve_shown): the result so far, `part`
    with the run (or pick(run)) as `name`, marked "running" (requests done, of n) for running()."""
    return lambda run, done: {**part, name: pick(run) if pick else run, "running": [done, n]}
