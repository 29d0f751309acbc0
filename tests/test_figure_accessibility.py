"""Colour is never the only carrier of meaning: in every view of every simulator, the series a
legend names differ by dash, marker, bar pattern, mode or panel, not by colour alone."""

import json

import pytest

from simulators import api


def views() -> list[tuple[str, dict]]:
    found = []
    for name, schema in api.schemas().items():
        view = next((p for p in schema["params"] if p["name"] == "view"), None)
        choices = [c["value"] for c in view["choices"]] if view else [None]
        found += [(name, {} if v is None else {"view": v}) for v in choices]
    return found


def look(trace: dict) -> tuple:
    """Everything that tells a series apart without colour."""
    line, marker = trace.get("line") or {}, trace.get("marker") or {}
    kind = trace.get("type", "scatter")
    mode = trace.get("mode", "lines" if kind == "scatter" else None)
    return (
        kind,
        mode,
        line.get("dash", "solid") if kind == "scatter" and "lines" in (mode or "") else None,
        line.get("width") if kind == "scatter" and "lines" in (mode or "") else None,
        marker.get("symbol", "circle") if "markers" in (mode or "") else None,
        (marker.get("pattern") or {}).get("shape", "") if kind == "bar" else None,
        trace.get("fill"),
        trace.get("xaxis", "x"),
        trace.get("yaxis", "y"),
    )


@pytest.mark.parametrize(("name", "params"), views(), ids=lambda v: v if isinstance(v, str) else json.dumps(v))
def test_series_differ_by_more_than_colour(name: str, params: dict) -> None:
    answer = api.evaluate(name, **params)
    named = [t for t in answer["figure"]["data"] if t.get("showlegend", True) and t.get("name")]
    seen: dict[tuple, str] = {}
    for trace in named:
        key = look(trace)
        assert key not in seen, f"{trace['name']!r} and {seen[key]!r} differ only by colour"
        seen[key] = trace["name"]


def test_reduced_motion_leaves_no_transition_in_any_figure() -> None:
    """Figures carry no animated transition of their own (charts.js turns plotly's off when the
    reader asks for reduced motion)."""
    for name, params in views():
        layout = api.evaluate(name, **params)["figure"]["layout"]
        assert (layout.get("transition") or {}).get("duration", 0) == 0, name
