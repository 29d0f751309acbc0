"""static_chart.check: the build refuses a figure the pre-rendered SVG would not draw as plotly.js.

Before, a pie (or any trace type the renderer skips) was pre-rendered as an empty frame and the
build passed. Every simulator's figure, for every chart, must pass; each broken example must be
refused with a message naming what is not drawn.
"""

import json

import pytest

from simulators import api
from sitebuild import sim_block, static_chart
from sitebuild.block_yaml import BlockError

LINE = {"type": "scatter", "mode": "lines", "x": [1, 2], "y": [3, 4], "name": "a"}


def _figure(trace=None, **layout):
    return {"data": [trace or LINE], "layout": {"title": {"text": "T"}, **layout}}


@pytest.mark.parametrize("name", sorted(api.SIMULATORS))
def test_every_chart_of_every_simulator_is_drawn_by_the_static_renderer(name):
    view = next((p for p in api.schema(name)["params"] if p["name"] == "view"), None)
    for chart in [None] if view is None else [c["value"] for c in view["choices"]]:
        answer = json.loads(api.run_json(name, "{}", 0, chart))
        assert static_chart.unsupported(answer["figure"]) == [], (name, chart)


BROKEN = [
    ("pie", _figure({"type": "pie", "labels": ["a", "b"], "values": [1, 2]}), "data[0].type 'pie'"),
    ("filled area", _figure({**LINE, "fill": "tozeroy"}), "data[0].fill"),
    ("error bars", _figure({**LINE, "error_y": {"array": [1, 1]}}), "data[0].error_y"),
    ("spline", _figure({**LINE, "line": {"shape": "spline"}}), "data[0].line.shape 'spline'"),
    ("lines with fill mode", _figure({**LINE, "mode": "lines+fill"}), "data[0].mode 'lines+fill'"),
    ("date axis", _figure(xaxis={"type": "date"}), "layout.xaxis.type 'date'"),
    ("axis option", _figure(yaxis={"dtick": 5}), "layout.yaxis.dtick"),
    ("annotation", _figure(annotations=[{"text": "note"}]), "layout.annotations"),
    ("vertical legend", _figure(legend={"orientation": "v"}), "layout.legend other than"),
]


@pytest.mark.parametrize(("case", "figure", "words"), BROKEN, ids=[b[0] for b in BROKEN])
def test_an_unsupported_figure_is_refused_with_what_is_not_drawn(case, figure, words):
    with pytest.raises(static_chart.UnsupportedFigure) as caught:
        static_chart.check(figure)
    assert words in str(caught.value) and "sitebuild/static_chart/" in str(caught.value)


def test_a_supported_figure_passes():
    static_chart.check(_figure(xaxis={"type": "log", "title": {"text": "x"}}, legend={"orientation": "h", "y": -0.25}))


class _PieSimulator:
    """The build's Simulators interface, answering a pie: what a new simulator might draw."""

    schemas = {"pie": {"params": []}}

    def run(self, name, params):
        return {"ok": True, "figure": _figure({"type": "pie", "labels": ["a"], "values": [1]}), "metrics": {}}


def test_a_sim_block_whose_figure_cannot_be_pre_rendered_fails_at_the_block():
    with pytest.raises(BlockError) as caught:
        sim_block.render("sim: pie\n", _PieSimulator(), {})
    assert caught.value.offset == 0 and "data[0].type 'pie'" in str(caught.value)
