"""The build-time SVG chart (sitebuild/static_chart/): every simulator figure draws, safely and
accessibly, and the drawing maps data where plotly would.

The expected pixels, ticks and labels below are worked out by hand from the margins and ranges (and
plotly's and d3-format's documented rules), not copied from the renderer's output.
"""

import json
import math
import multiprocessing
import re
import xml.etree.ElementTree as ET
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
import yaml

from simulators import api, plotting
from sitebuild import fences, static_chart
from sitebuild.static_chart import format_d3, format_default, linear_ticks, log_ticks, render

ROOT = Path(__file__).resolve().parent.parent
SVG = "{http://www.w3.org/2000/svg}"


def _sim_blocks():
    """(name, params) of every ```sim block in the lessons and docs, nested ones included."""
    paths = sorted(ROOT.glob("lessons/*.md")) + sorted(ROOT.glob("docs/**/*.md"))
    for path in paths:
        for item in fences.scan(path.read_text().splitlines(keepends=True)):
            if isinstance(item, fences.Fence) and item.lang == "sim":
                spec = yaml.safe_load("".join(item.content))
                yield f"{path.relative_to(ROOT)}:{item.start + 1}", spec["sim"], spec.get("params") or {}


def _scenarios():
    for name in api.SIMULATORS:
        yield f"{name} defaults", name, {}
        for p in api.schema(name)["params"]:
            if p["type"] == "choice":
                for choice in p["choices"]:
                    yield f"{name} {p['name']}={choice['value']}", name, {p["name"]: choice["value"]}
    yield from _sim_blocks()


def _answers(jobs: list[tuple[str, str]]) -> list[str]:
    """run_json of each (simulator, params JSON), in a fresh process's api.Session (a chart
    switch re-draws from the kept result, as in the browser)."""
    session = api.Session()
    return [session.run_json(name, params, 0) for name, params in jobs]


@pytest.fixture(scope="module")
def figures():
    scenarios = list(_scenarios())
    jobs = [(name, json.dumps(params)) for _, name, params in scenarios]
    # About a thousand runs, a minute on one core: split over two processes, each simulator's
    # scenarios in one of them (its views then share that session's kept results).
    by_sim: dict[str, list[tuple[str, str]]] = {}
    for job in jobs:
        by_sim.setdefault(job[0], []).append(job)
    halves: tuple[list[tuple[str, str]], list[tuple[str, str]]] = ([], [])
    for group in sorted(by_sim.values(), key=len, reverse=True):
        min(halves, key=len).extend(group)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        answers = [a for part in pool.map(_answers, halves) for a in part]
    answered = dict(zip(halves[0] + halves[1], answers, strict=True))
    out = []
    refused = 0
    for (label, _, _), job in zip(scenarios, jobs, strict=True):
        answer = json.loads(answered[job])
        if not answer["ok"]:  # a cross-field check may refuse one choice with the other defaults
            refused += 1
            continue
        out.append((label, answer["figure"]))
    # Models too large for one GPU at the defaults (405B, DeepSeek-V3, Llama 4 Scout...) are refused
    # with a field error in every serving simulator, as is a deployment vLLM would not start (diagnose
    # on a 16 GB GPU): 200 of 1,198 scenarios, one in six.
    assert len(out) > 4 * refused, (len(out), refused)
    assert any(label.startswith("lessons/") for label, _ in out)
    return out


@pytest.fixture(scope="module")
def rendered(figures):
    svgs = [render(fig, f"chart-{i}") for i, (_, fig) in enumerate(figures)]
    return [(label, fig, svg) for (label, fig), svg in zip(figures, svgs, strict=True)]


def _visible_traces(fig):
    return [
        (i, t)
        for i, t in enumerate(fig["data"])
        if t.get("type", "scatter") in ("scatter", "bar") and t.get("visible", True) is True
    ]


def _finite(v):
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def test_every_simulator_figure_renders_as_safe_accessible_svg(rendered):
    results = rendered
    for label, fig, svg in results:
        root = ET.fromstring(svg)
        assert root.tag == SVG + "svg", label
        assert root.get("role") == "img" and root.get("focusable") == "false", label
        assert root.get("viewBox") and root.get("width") == "100%", label
        title = root.find(SVG + "title")
        assert title is not None and title.text == fig["layout"]["title"]["text"], label
        i = results.index((label, fig, svg))
        assert root.get("aria-labelledby") == f"chart-{i}" == title.get("id"), label
        for el in root.iter():
            assert el.tag not in (SVG + "style", SVG + "script", SVG + "foreignObject"), (label, el.tag)
            assert "style" not in el.attrib, (label, el.tag)
            assert not any(a.lower().startswith("on") for a in el.attrib), (label, el.attrib)
            for key, value in el.attrib.items():
                if key.endswith("href"):
                    assert value.startswith("#"), (label, value)
                    # mkdocs-material's instant navigation assigns el.href on every [href] element,
                    # which throws on SVG's read-only href: only xlink:href is safe in the page.
                    assert key == "{http://www.w3.org/1999/xlink}href", (label, key)
                if key == "id":
                    assert value.startswith(f"chart-{i}"), (label, value)
                if "url(" in value:
                    assert re.fullmatch(rf"url\(#chart-{i}-\d+\)", value), (label, value)
        assert len(svg.encode()) < 30 * 1024, (label, len(svg.encode()))


def test_one_series_per_trace_with_every_point_drawn(rendered):
    results = rendered
    for label, fig, svg in results:
        root = ET.fromstring(svg)
        groups = {int(g.get("data-trace")): g for g in root.iter(SVG + "g") if g.get("class") == "sc-series"}
        visible = _visible_traces(fig)
        assert sorted(groups) == [i for i, _ in visible], label
        for i, trace in visible:
            g = groups[i]
            pairs = [(x, y) for x, y in zip(trace["x"], trace["y"], strict=False) if x is not None and y is not None]
            if trace.get("type") == "bar":
                rects = g.findall(f"{SVG}g/{SVG}rect")
                assert len(rects) == len(pairs), (label, trace["name"])
                continue
            mode = trace.get("mode", "lines")
            if "lines" in mode:  # a line needs two consecutive distinct points (plotly draws none otherwise)
                runs = list(zip(trace["x"], trace["y"], strict=False))
                drawable = any(a != b and None not in a + b for a, b in zip(runs, runs[1:], strict=False))
                lines = [p for p in g.findall(SVG + "path") if p.get("class") != "sc-dots"]
                assert len(lines) == (1 if drawable else 0), (label, trace["name"])
            if "markers" in mode:
                assert _marker_count(g) == len(pairs), (label, trace["name"])


def _marker_count(series):
    """Markers are <use>s of a <defs> shape, or zero-length strokes in one path for plain dots."""
    uses = len(series.findall(f"{SVG}g/{SVG}use"))
    dots = sum(p.get("d").count("M") for p in series.findall(SVG + "path") if p.get("class") == "sc-dots")
    return uses + dots


def test_legend_has_an_entry_with_a_swatch_for_every_named_trace(rendered):
    results = rendered
    for label, fig, svg in results:
        root = ET.fromstring(svg)
        named = [i for i, t in _visible_traces(fig) if t.get("name") and t.get("showlegend") is not False]
        items = [g for g in root.iter(SVG + "g") if g.get("class") == "sc-legend-item"]
        if len(named) < 2:  # plotly shows no legend for a lone series; the title names it
            assert not items, label
            continue
        assert sorted(int(g.get("data-trace")) for g in items) == named, label
        for g in items:
            trace = fig["data"][int(g.get("data-trace"))]
            assert "".join(g.find(SVG + "text").itertext()) == trace["name"], label
            swatch = [el for el in g if el.tag != SVG + "text"]
            assert swatch, (label, trace["name"])
            if trace.get("type") == "bar" and trace["marker"].get("pattern", {}).get("shape"):
                assert swatch[0].get("fill", "").startswith("url(#"), (label, trace["name"])
            elif trace.get("type") == "bar":
                assert swatch[0].get("fill") == trace["marker"]["color"], (label, trace["name"])
            else:
                mode = trace.get("mode", "lines")
                if "lines" in mode:
                    line = swatch[0]
                    assert line.get("stroke") == trace["line"]["color"], (label, trace["name"])
                    dashed = trace["line"].get("dash", "solid") != "solid"
                    assert bool(line.get("stroke-dasharray")) == dashed, (label, trace["name"])
                if "markers" in mode:
                    assert any(el.tag == SVG + "use" for el in swatch), (label, trace["name"])


def test_every_scenario_renders(rendered):
    # How long rendering takes is printed by scripts/bench_static_chart.py, never asserted here.
    assert len(rendered) > 100


def test_the_stylesheet_styles_the_classes_the_svg_uses(rendered):
    css = (ROOT / "docs/assets/css/static-chart.css").read_text()
    used = set()
    for _, _, svg in rendered:
        used |= {c for value in re.findall(r'class="([^"]+)"', svg) for c in value.split()}
    for cls in ("sim-static-chart", "sc-text", "sc-grid", "sc-zero", "sc-title", "sc-axis-title", "sc-bg"):
        assert cls in used and f".{cls}" in css, cls
    assert "var(--md-default-fg-color" in css and "font-family" in css


# ---------------------------------------------------------------------------------------------- geometry

BOX = {"width": 500, "height": 300, "margin": {"l": 50, "r": 30, "t": 40, "b": 60}, "showlegend": False}
# The plot area those margins leave: x from 50 to 500 - 30, y from 40 to 300 - 60.
LEFT, RIGHT, TOP, BOTTOM = 50, 470, 40, 240


def _path_points(d):
    """M/L/H/V (and h) path data → list of subpaths, each a list of (x, y)."""
    subpaths, x, y, cmd, pending = [], 0.0, 0.0, "", []
    for token in re.findall(r"[MLHVh]|-?\d+(?:\.\d+)?", d):
        if token in "MLHVh":
            cmd = token
            continue
        value = float(token)
        if cmd == "h":
            if value == 0:  # a dot: the zero-length stroke adds no new point
                continue
            x += value
        elif cmd == "H":
            x = value
        elif cmd == "V":
            y = value
        else:
            pending.append(value)
            if len(pending) < 2:
                continue
            (x, y), pending = pending, []
            if cmd == "M":
                subpaths.append([])
                cmd = "L"  # pairs after a move are lines
        subpaths[-1].append((x, y))
    return subpaths


def _svg_root(fig, title_id="t"):
    return ET.fromstring(render(fig, title_id))


def _series(root, index=0):
    return next(g for g in root.iter(SVG + "g") if g.get("class") == "sc-series" and g.get("data-trace") == str(index))


def _layout(**extra):
    out = {**BOX, "title": {"text": "T"}}
    out.update(extra)
    return out


def test_a_line_runs_from_the_bottom_left_to_the_top_right_of_the_plot_area():
    fig = {
        "data": [{"type": "scatter", "mode": "lines", "x": [0, 10], "y": [0, 100], "name": "a"}],
        "layout": _layout(xaxis={"range": [0, 10]}, yaxis={"range": [0, 100]}),
    }
    path = _series(_svg_root(fig)).find(SVG + "path")
    [[start, end]] = _path_points(path.get("d"))
    assert start == pytest.approx((LEFT, BOTTOM), abs=0.01)
    assert end == pytest.approx((RIGHT, TOP), abs=0.01)


def test_a_level_on_a_hidden_overlaying_axis_spans_a_category_plot_and_labels_nothing():
    """plotting.level: a 1x line over bars runs the plot's whole width (a line between two categories
    stops at their centres), on an x axis laid over the first and hidden, whose 0 and 1 show nowhere."""
    bars = {"type": "bar", "x": ["a", "b", "c"], "y": [0.5, 1.5, 2], "name": "bars"}
    fig = {"data": [bars, plotting.level(1, "1x")], "layout": _layout(yaxis={"range": [0, 2]}, xaxis2=plotting.ACROSS)}
    root = _svg_root(fig)
    [[start, end]] = _path_points(_series(root, 1).find(SVG + "path").get("d"))
    assert start == pytest.approx((LEFT, (TOP + BOTTOM) / 2), abs=0.01)
    assert end == pytest.approx((RIGHT, (TOP + BOTTOM) / 2), abs=0.01)
    ticks = [t.text for g in root.iter(SVG + "g") if "sc-tick" in (g.get("class") or "") for t in g]
    assert set(ticks) == {"a", "b", "c", "0", "0.5", "1", "1.5", "2"}


def test_a_point_in_the_middle_maps_to_the_middle():
    fig = {
        "data": [{"type": "scatter", "mode": "markers", "x": [5], "y": [25], "name": "a"}],
        "layout": _layout(xaxis={"range": [0, 10]}, yaxis={"range": [0, 100]}),
    }
    dots = _series(_svg_root(fig)).find(SVG + "path")
    [[(x, y)]] = _path_points(dots.get("d"))
    assert x == pytest.approx((LEFT + RIGHT) / 2, abs=0.01)
    assert y == pytest.approx(BOTTOM - (BOTTOM - TOP) / 4, abs=0.01)


def test_a_log_axis_puts_each_decade_the_same_distance_apart():
    # range in log10 units, as plotly takes it: 10^0 to 10^3 over the 420 px plot width
    fig = {
        "data": [
            {
                "type": "scatter",
                "mode": "markers",
                "x": [1, 10, 100, 1000],
                "y": [1, 1, 1, 1],
                "name": "a",
                "marker": {"symbol": "diamond"},
            }
        ],
        "layout": _layout(xaxis={"type": "log", "range": [0, 3]}, yaxis={"range": [0, 2]}),
    }
    root = _svg_root(fig)
    xs = [float(u.get("x")) for u in _series(root).find(SVG + "g").findall(SVG + "use")]
    assert xs == pytest.approx([LEFT, LEFT + 140, LEFT + 280, RIGHT], abs=0.01)
    ticks = {"".join(t.itertext()) for t in root.iter(SVG + "text")}
    assert {"1", "10", "100", "1000"} <= ticks


def test_a_log_autorange_keeps_decades_equal():
    fig = {
        "data": [{"type": "scatter", "mode": "lines", "x": [10, 100, 1000], "y": [3, 2, 1], "name": "a"}],
        "layout": _layout(xaxis={"type": "log"}),
    }
    [[a, b, c]] = _path_points(_series(_svg_root(fig)).find(SVG + "path").get("d"))
    assert b[0] - a[0] == pytest.approx(c[0] - b[0], abs=0.02)
    assert a[0] == pytest.approx(LEFT, abs=0.01) and c[0] == pytest.approx(RIGHT, abs=0.01)  # lines: no x padding


def _rects(root, index):
    return [
        {k: float(r.get(k)) for k in ("x", "y", "width", "height")} for r in _series(root, index).iter(SVG + "rect")
    ]


def test_a_stacked_bar_starts_where_the_one_below_ends():
    fig = {
        "data": [
            {"type": "bar", "x": ["a", "b"], "y": [30, 10], "name": "low"},
            {"type": "bar", "x": ["a", "b"], "y": [20, 50], "name": "high"},
        ],
        "layout": _layout(barmode="stack", yaxis={"range": [0, 100]}),
    }
    root = _svg_root(fig)
    low, high = _rects(root, 0), _rects(root, 1)
    per_unit = (BOTTOM - TOP) / 100
    for lo, hi, lv, hv in zip(low, high, (30, 10), (20, 50), strict=True):
        assert lo["y"] + lo["height"] == pytest.approx(BOTTOM, abs=0.01)
        assert lo["height"] == pytest.approx(lv * per_unit, abs=0.01)
        assert hi["y"] + hi["height"] == pytest.approx(lo["y"], abs=0.01)
        assert hi["height"] == pytest.approx(hv * per_unit, abs=0.01)
        assert hi["x"] == lo["x"] and hi["width"] == lo["width"]
    # two categories over the 420 px: slots of 210 px, bars 80% of a slot (plotly's bargap 0.2)
    assert low[0]["width"] == pytest.approx(0.8 * 210, abs=0.01)
    assert low[0]["x"] == pytest.approx(LEFT + 0.1 * 210, abs=0.01)


def test_grouped_bars_share_a_slot_and_horizontal_bars_grow_from_their_base():
    fig = {
        "data": [
            {"type": "bar", "x": ["a"], "y": [1], "name": "one"},
            {"type": "bar", "x": ["a"], "y": [2], "name": "two"},
        ],
        "layout": _layout(barmode="group", yaxis={"range": [0, 4]}),
    }
    root = _svg_root(fig)
    [one], [two] = _rects(root, 0), _rects(root, 1)
    assert one["width"] == two["width"] == pytest.approx(0.4 * 420, abs=0.01)
    assert one["x"] + one["width"] == pytest.approx(two["x"], abs=0.01)
    fig = {
        "data": [{"type": "bar", "orientation": "h", "y": ["r"], "x": [3], "base": [2], "name": "span"}],
        "layout": _layout(xaxis={"range": [0, 10]}),
    }
    [bar] = _rects(_svg_root(fig), 0)
    assert bar["x"] == pytest.approx(LEFT + 0.2 * 420, abs=0.01)
    assert bar["width"] == pytest.approx(0.3 * 420, abs=0.01)


def test_an_hv_line_is_made_of_horizontal_and_vertical_steps():
    fig = {
        "data": [
            {
                "type": "scatter",
                "mode": "lines",
                "line_shape": "hv",
                "x": [0, 1, 2, 4],
                "y": [0, 2, 1, 2],
                "name": "steps",
            }
        ],
        "layout": _layout(xaxis={"range": [0, 4]}, yaxis={"range": [0, 2]}),
    }
    [points] = _path_points(_series(_svg_root(fig)).find(SVG + "path").get("d"))
    segments = list(zip(points, points[1:], strict=False))
    assert all(a[0] == b[0] or a[1] == b[1] for a, b in segments), points
    # the step from (0, 0) to (1, 2) goes across first: through (1, 0)
    assert points[1] == pytest.approx((LEFT + 105, BOTTOM), abs=0.01)
    assert len(points) == 7


def test_gaps_break_the_line_and_bad_values_are_skipped():
    fig = {
        "data": [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": [0, 1, 2, 3, 4, 5],
                "y": [1, 2, None, 3, float("nan"), "x"],
                "name": "gappy",
            }
        ],
        "layout": _layout(xaxis={"range": [0, 5]}, yaxis={"range": [0, 4]}),
    }
    svg = render(fig)
    series = _series(ET.fromstring(svg))
    subpaths = _path_points(series.find(SVG + "path").get("d"))
    assert [len(s) for s in subpaths] == [2]  # the lone point 3 draws no line, as in plotly
    assert _marker_count(series) == 3
    assert "NaN" not in svg and "nan" not in svg


@pytest.mark.parametrize(
    "figure",
    [
        {},
        None,
        {"data": None, "layout": None},
        {"layout": {"title": {"text": "no data"}}},
        {"data": [{"type": "scatter", "x": [1, 2, 3], "y": [1, 2]}]},
        {"data": [{"type": "bar", "x": [1, 2], "y": [1, 2, 3, 4], "marker": {"pattern": {"shape": "?"}}}]},
        {"data": [{"type": "pie", "values": [1, 2]}, {"type": "heatmap", "z": [[1]]}, "junk", 3]},
        {"data": [{"type": "scatter", "x": [], "y": []}], "layout": {"xaxis": {"type": "log", "range": "wide"}}},
        {
            "data": [{"type": "scatter", "x": [0, -1, None], "y": [float("inf"), None, 2]}],
            "layout": {"xaxis": {"type": "log"}, "yaxis": {"tickformat": "%Y-%m", "autorange": "reversed"}},
        },
        {
            "data": [
                {
                    "type": "scatter",
                    "x": [1, 1],
                    "y": [5, 5],
                    "marker": {"symbol": "star-square-dot", "size": "big"},
                    "line": {"dash": "1px,bad", "color": "url(javascript:alert(1))"},
                }
            ],
            "layout": {"margin": "no"},
        },
        {
            "data": [{"type": "scatter", "x": ["<b>", "&"], "y": [1, 2], "name": "</text><script>"}],
            "layout": {"title": {"text": "a < b & c"}, "showlegend": True},
        },
    ],
)
def test_a_malformed_figure_still_renders(figure):
    svg = render(figure)
    root = ET.fromstring(svg)
    assert root.get("role") == "img" and root.find(SVG + "title") is not None
    assert not any(el.tag == SVG + "script" for el in root.iter())
    assert "javascript" not in svg


def test_unknown_trace_types_are_skipped():
    fig = {
        "data": [{"type": "pie", "values": [1]}, {"type": "scatter", "x": [1, 2], "y": [1, 2], "name": "s"}],
        "layout": _layout(),
    }
    root = _svg_root(fig)
    assert [g.get("data-trace") for g in root.iter(SVG + "g") if g.get("class") == "sc-series"] == ["1"]


def test_output_is_deterministic_and_ids_are_scoped_to_the_chart(figures):
    label, fig = next((lab, f) for lab, f in figures if any(t.get("type") == "bar" for t in f["data"]))
    assert render(fig, "a") == render(fig, "a")
    assert render(fig) == render(fig)

    def ids(svg):
        return set(re.findall(r'id="([^"]+)"', svg))

    a, b = ids(render(fig, "chart-a")), ids(render(fig, "chart-b"))
    assert a and b and not a & b, label
    other = next(f for _, f in figures if f["layout"]["title"] != fig["layout"]["title"])
    plain_a, plain_b = ids(render(fig)), ids(render(other))
    assert plain_a and plain_b and not plain_a & plain_b
    assert "aria-labelledby" not in render(fig)


def test_title_and_text_are_escaped():
    fig = {
        "data": [{"type": "scatter", "x": [1, 2], "y": [1, 2], "name": "x < y"}],
        "layout": _layout(title={"text": 'Tom & "Jerry" <3'}, showlegend=True),
    }
    root = _svg_root(fig)
    assert root.find(SVG + "title").text == 'Tom & "Jerry" <3'
    assert "x < y" in {"".join(t.itertext()) for t in root.iter(SVG + "text")}


# ---------------------------------------------------------------------------------------------- ticks


@pytest.mark.parametrize(
    ("lo", "hi", "length", "vertical"),
    [
        (0, 1, 300, True),
        (0, 7.3, 300, True),
        (-3.24, 61.59, 257, True),
        (1, 8192, 620, False),
        (0.0013, 0.0571, 200, True),
        (100, 100000, 600, False),
        (-5, 5, 400, False),
        (3.11, 5.31, 587, False),
        (0, 0.578, 287, True),
        (0, 1.05, 300, True),
    ],
)
def test_linear_ticks_are_nice_inside_the_range_and_not_too_many(lo, hi, length, vertical):
    ticks, step = linear_ticks(lo, hi, length, vertical)
    mantissa = step / 10 ** math.floor(math.log10(step) + 1e-9)
    assert round(mantissa, 9) in (1, 2, 5), step
    assert 4 <= len(ticks) <= 10, ticks
    assert all(lo - 1e-9 <= t <= hi + 1e-9 for t in ticks), ticks
    assert all(abs(b - a - step) < step * 1e-6 for a, b in zip(ticks, ticks[1:], strict=False))
    assert all(abs(t / step - round(t / step)) < 1e-6 for t in ticks)  # multiples of the step


def test_ticks_match_plotly_for_known_axes():
    # plotly: about one tick per 40 px on y (80 on x) plus one, rounded up to 2, 5 or 10 × 10^k
    assert linear_ticks(-3.24, 61.59, 257, True) == ([0, 10, 20, 30, 40, 50, 60], 10)
    assert linear_ticks(1, 8192, 620, False)[1] == 1000
    assert linear_ticks(3.111, 5.312, 587, False) == ([3.5, 4, 4.5, 5], 0.5)
    # a short axis (158 px, the lower subplot of the engine timeline) gets plotly's minimum of 4+1 slots
    assert linear_ticks(0, 1.05, 158, True) == ([0, 0.5, 1], 0.5)


def test_a_right_axis_syncs_to_the_left_gridlines_unless_its_ticks_are_auto():
    """plotly.js 4 gives an overlaying axis tickmode "sync" (ticks at the first axis's gridlines, so
    0.0873 s); plotting.right_axis asks for "auto", round values of its own, as the static chart draws."""
    from simulators.plotting import bar, chart, right_axis
    from sitebuild.static_chart.chart import _Chart

    def right_ticks(y2: dict) -> list[str]:
        data = [bar(["a", "b"], [1.0, 0.7], "left", 0), bar(["a", "b"], [0.4365, 0.2], "right", 1, yaxis="y2")]
        c = _Chart(chart(data, "t", "x", "y", yaxis2=y2), "t")
        c.build()
        return [label for _, label, _ in c.axes["yaxis2"].ticks]

    synced = right_ticks({"overlaying": "y", "side": "right"})
    auto = right_ticks(right_axis("right"))
    assert len(synced) == len(right_ticks({"overlaying": "y", "side": "right", "tickmode": "sync"}))
    assert any(len(t.split(".")[-1]) >= 3 for t in synced if "." in t)  # odd values at the left's gridlines
    assert all(float(t) * 100 == round(float(t) * 100) for t in auto) and "0.1" in auto


def test_a_log_axis_over_less_than_two_decades_gets_labelled_1_2_5_ticks_on_both_renderers():
    """Learner review: log axes from 0.15 to 6.8 s (load test) or 19 to 60 ms (lesson 12) showed one
    label, or none; plotting.figure gives such an axis 1-2-5 ticks, which the SVG draws as plotly."""
    from simulators.plotting import LOG, chart, line, right_axis

    fig = chart([line([1, 2], [0.15, 6.8], "a"), line([1, 2], [10, 5000], "b", yaxis="y2")], "t", "x", "s", yaxis=LOG,
                yaxis2=right_axis("b", type="log"))  # fmt: skip
    short, wide = fig["layout"]["yaxis"], fig["layout"]["yaxis2"]
    assert "tickvals" not in wide  # 100 and 1,000 inside: its decades label it
    shown = [t for v, t in zip(short["tickvals"], short["ticktext"], strict=True) if 0.15 <= v <= 6.8]
    assert shown == ["0.2", "0.5", "1", "2", "5"]
    svg = render(fig)
    assert all(f">{t}<" in svg for t in shown)


def test_log_ticks_label_decades_like_plotly():
    majors = [label for _, label, minor in log_ticks(0, 6, 600, False) if not minor]
    assert majors == ["1", "10", "100", "1000", "10k", "100k", "1M"]
    minors = [label for _, label, minor in log_ticks(0, 2, 300, True) if minor]
    assert set(minors) <= {"2", "3", "4", "5", "6", "7", "8", "9"} and minors
    wide = log_ticks(-2, 20, 300, True)
    assert all(not minor for _, _, minor in wide)
    assert all(abs(u - round(u)) < 1e-9 for u, _, _ in wide)
    assert "1e+20" in {label for _, label, _ in wide} or "1e\u221220" not in {label for _, label, _ in wide}
    assert [lab for _, lab, m in log_ticks(-3, 0, 300, True) if not m] == ["0.001", "0.01", "0.1", "1"]


def test_numbers_are_compact_like_plotly_and_d3():
    assert format_default(0.5, 0.1) == "0.5"
    assert format_default(2, 0.5) == "2"
    assert format_default(1500, 500, 3) == "1.5k"
    assert format_default(2e6, 1e6, 6) == "2M"
    assert format_default(-20, 10) == "\u221220"
    assert format_d3(0.25, ".0%") == "25%"
    assert format_d3(0.256, ".1%") == "25.6%"
    assert format_d3(0.5, "%") == "50.000000%"
    assert format_d3(12345.6, ",d") == "12,346"
    assert format_d3(6.5, ",d") == "7" or format_d3(6.5, ",d") == "6"  # d3 rounds half to even in JS? either
    assert format_d3(1500, ".2s") == "1.5k"
    assert format_d3(2_000_000, ".2s") == "2.0M"
    assert format_d3(3, "no-such-spec") is None
    # d3's sign flag "+" (diagnose's change axis): a plus for zero and above, the minus sign below
    assert [format_d3(v, "+.0%") for v in (0.2, 0.0, -0.35)] == ["+20%", "+0%", "\u221235%"]


def test_dashes_scale_with_the_line_width_like_plotly():
    assert static_chart.dasharray("solid", 2.5) == ""
    assert static_chart.dasharray("dash", 2.5) == "9,9"  # 3 × max(width, 3)
    assert static_chart.dasharray("dot", 4) == "4,4"
    assert static_chart.dasharray("8px,3px,2px", 2.5) == "8,3,2"
