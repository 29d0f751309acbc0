"""A ```sim fence → a widget: pre-rendered chart, key figures, text alternative, live controls.

    ```sim
    sim: kv_cache                                  # a name in simulators.api.SIMULATORS
    params: {model: llama-3-8b, context_tokens: 8192}   # the scenario; omitted ones take defaults
    controls: [model, kv_dtype, context_tokens]    # parameters the reader may change (default: all)
    caption: How the cache grows with context.
    id: kv-growth                                  # optional; default: the simulator name
    ```

The scenario runs in CPython at build time; `widgets.js` takes the widget over in the browser.
"""

import html
import json
import re

from sitebuild import static_chart
from sitebuild.assets import check_trace_types
from sitebuild.block_yaml import BlockError, read_mapping
from sitebuild.expressions import Scenarios
from sitebuild.numbers import KEY_FIGURES, format_metric
from sitebuild.sims import SimulatorRunError, Simulators

KEYS = ("sim", "scenario", "params", "controls", "caption", "id")
WIDGET_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
HEAD = '<thead><tr><th scope="col">Metric</th><th scope="col">Value</th><th scope="col">Unit</th></tr></thead>'


def render(
    source: str, sims: Simulators, used_ids: dict[str, int], scenarios: Scenarios | None = None, line: int = 0
) -> str:
    """HTML for one widget; `used_ids` maps the page's ids to their blocks' lines (this one, at `line`, added)."""
    spec, lines = read_mapping(source, "sim", KEYS, "params", "sim:, params:, controls:, caption:")
    name = spec.get("sim")
    if not isinstance(name, str) or name not in sims.schemas:
        known = ", ".join(sorted(sims.schemas))
        raise BlockError(lines.get("sim", 0), f"unknown simulator {name!r} (known: {known})")
    schema = sims.schemas[name]
    param_names = [p["name"] for p in schema["params"]]
    params = spec.get("params") or {}
    if not isinstance(params, dict):
        raise BlockError(lines.get("params", 0), "'params' must be a mapping of name: value")
    if "scenario" in spec:  # a named scenario of the lesson's front matter, shared with its prose
        scenario = (scenarios or {}).get(spec["scenario"])
        if scenario is None:
            known = ", ".join(scenarios or {}) or "none in this page's front matter"
            raise BlockError(lines.get("scenario", 0), f"unknown scenario {spec['scenario']!r} (scenarios: {known})")
        params = {**scenario, **params}  # `params` override the scenario's values
    controls = spec.get("controls", param_names)
    if not isinstance(controls, list) or not all(c in param_names for c in controls):
        unknown = [c for c in controls if c not in param_names] if isinstance(controls, list) else controls
        raise BlockError(
            lines.get("controls", 0), f"unknown controls {unknown} for {name} (parameters: {', '.join(param_names)})"
        )
    try:
        answer = sims.run(name, params)
    except SimulatorRunError as exc:
        first = exc.errors[0].get("field")
        raise BlockError(lines.get(f"params.{first}", lines.get("params", 0)), f"{name}: {exc}") from None
    try:
        check_trace_types(answer["figure"])
        static_chart.check(answer["figure"])
    except ValueError as exc:
        raise BlockError(lines.get("sim", 0), f"{name}: {exc}") from None
    widget_id = spec.get("id", name)
    if not isinstance(widget_id, str) or not WIDGET_ID.match(widget_id):
        raise BlockError(lines.get("id", 0), f"id {widget_id!r} must be lower-case letters, digits, - or _")
    if widget_id in used_ids:
        if "id" in spec:
            raise BlockError(
                lines["id"], f"id {widget_id!r} is already used by the block at line {used_ids[widget_id]}"
            )
        widget_id = next(f"{name}-{n}" for n in range(2, 1000) if f"{name}-{n}" not in used_ids)
    used_ids[widget_id] = line
    caption = str(spec.get("caption", ""))
    e = html.escape
    labels = {m["name"]: m for m in schema["metrics"]}
    metrics = answer["metrics"]
    keys = [k for k in labels if k in metrics] + [k for k in metrics if k not in labels]  # METRICS order

    def row(key: str) -> str:
        label, unit = labels.get(key, {}).get("label", key), labels.get(key, {}).get("unit", "")
        text, shown = format_metric(metrics[key], unit)
        return (
            f'<tr data-metric="{e(key)}" data-unit="{e(unit)}"><th scope="row">{e(label)}</th>'
            f"<td>{e(text)}</td><td>{e(shown)}</td></tr>"
        )

    def table(name: str, caption: str, keys: list[str]) -> str:
        return (
            f'<table class="{name}"><caption>{caption}</caption>{HEAD}<tbody>{"".join(map(row, keys))}</tbody></table>'
        )

    # Past KEY_FIGURES, the figures stay one click away, under the data table's toggle.
    more = table("sim-more-figures", "More figures", keys[KEY_FIGURES:]) if keys[KEY_FIGURES:] else ""
    summary_id = f"sim-{widget_id}-summary"
    chart = static_chart.render(answer["figure"], f"sim-{widget_id}-chart-title")
    parts = [
        f'<figure class="sim" id="sim-{e(widget_id)}" data-widget="{e(widget_id)}" '
        f'data-sim="{e(schema["name"])}" data-params="{e(json.dumps(params))}" '
        # An attribute, not a <script type="application/json">: instant navigation re-creates scripts untyped.
        f'data-controls="{e(json.dumps(controls))}" data-answer="{e(json.dumps(answer, separators=(",", ":")))}">',
        f'<figcaption class="sim-caption"><strong>{e(schema["title"])}</strong>'
        + (f" — {e(caption)}" if caption else "")
        + "</figcaption>",
        '<div class="sim-controls" aria-busy="true"><p class="sim-placeholder">Controls appear here '
        "once the Python runtime has loaded; the chart below is pre-computed.</p></div>",
        '<p class="sim-status" role="status" aria-live="polite"></p>',
        # A group, not role="img": plotly puts focusable controls inside (axe: nested-interactive).
        # It opens with the chart drawn here, as static SVG: on screen at first paint, no script.
        f'<div class="sim-chart" role="group" aria-label="Chart: {e(schema["title"])}" '
        f'aria-describedby="{summary_id}">{chart}</div>',
        f'<p class="sim-summary" id="{summary_id}">{e(answer.get("summary", ""))}</p>',
        table("sim-metrics", "Key figures", keys[:KEY_FIGURES]),
        f'<details class="sim-data"><summary>Data table{" and more figures" if more else ""}</summary>{more}'
        '<div class="sim-data-table"></div></details>',
        '<div class="sim-actions"></div>',
        "</figure>",
    ]
    return "\n".join(parts)
