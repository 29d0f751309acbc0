"""The chart's state, which every drawing module reads: the figure as read, its axes and traces, the
plot area once laid out (chart._Chart), and the <defs> its drawing collects."""

from typing import Any

from sitebuild.static_chart.axis import Axis, _axis_name
from sitebuild.static_chart.text import _color, _dict, _list, _num

WIDTH, HEIGHT = 700, 450
MARGIN = {"l": 80, "r": 80, "t": 100, "b": 80}  # plotly.js defaults


class Canvas:
    # laid out by chart._Chart (prepare, place; bar_geometry by bars.expand_bars) before anything is drawn
    barmode: str
    left: float
    right: float
    top: float
    bottom: float
    plot_w: float
    plot_h: float
    x_space: float
    legend: list[dict[str, Any]]
    legend_rows: int
    legend_positions: list[tuple[float, int]]
    bar_geometry: dict[int, list[tuple[float, float, float, float, int]]]

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

    def axis(self, ref: str) -> Axis:
        name = _axis_name(ref)
        if name not in self.axes:
            self.axes[name] = Axis(name, _dict(self.layout.get(name)))
        return self.axes[name]

    def def_id(self, key: tuple[Any, ...], body: str) -> str:
        if key not in self.def_ids:
            ident = self.def_ids[key] = f"{self.prefix}-{len(self.def_ids)}"
            self.defs.append(body.replace("{id}", ident))
        return self.def_ids[key]

    def _style(self, t: dict[str, Any]) -> tuple[str, float, str]:
        trace = t["trace"]
        line, marker = _dict(trace.get("line")), _dict(trace.get("marker"))
        colors = (marker.get("color"), line.get("color"))  # a bar's own colour first, a line's for a scatter
        color = next((c for c in (colors if t["kind"] == "bar" else colors[::-1]) if isinstance(c, str)), None)
        width = _num(line.get("width"))
        return _color(color, t["default_color"]), 2.0 if width is None else width, str(line.get("dash", "solid"))
