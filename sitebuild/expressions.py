"""Numbers in prose, computed at build time: `{{ kv_cache.kv_bytes_per_token(model="llama-3-8b") :,.0f }}`.

Grammar (a strict subset of Python, read with `ast`, never `eval`):

    expression := term [ ("*" | "/" | "+" | "-" | "**") term ]... [ " :" format_spec ]
    term       := number | call | SCENARIO "." PARAM | "heldout" "." STATISTIC | "profile" "." CONSTANT
    call       := SIMULATOR "." METRIC "(" [ arg { "," arg } ] ")"
    arg        := param "=" literal | "**" SCENARIO

The call runs the simulator through `run_json` with those parameters (defaults for the rest) and
takes one metric; arithmetic with plain numbers converts units (`/ 2**30` for GiB); the format spec
is Python's (`,.0f`, `.1%`, `.3g`). A scenario is a named set of parameters from the lesson's front
matter (`scenarios:`): `**peak` passes all of them (parameters after it override one),
`peak.batch_size` prints one, so a sentence's stated condition and its figure share one source.

`spread(EXPRESSION, seeds=N)` evaluates the expression under seeds 0 to N-1 (N from 2 to 20) and
prints the lowest and highest value, "0.22–0.75" (each with the format spec): a figure read off a
run near capacity moves with the seed (queued requests are not independent samples), so a sentence
quotes its range, never one seed's value (DESIGN.md, contract 7).

`heldout.STATISTIC` is the validation page's held-out band (simulators.benchmark.validation.band), computed
at build time from data/measurements.toml: `median_error` (median |error| of the held-out speed
points), `within_35` (their share within ±35%), `points`, `engines`, `gpus`. A time predicted as
T was measured between T × (1 - e) and T × (1 + e) for a point of |error| e, so a lesson quotes a
default time with its band as `{{ generation.ttft_s() * (1 - heldout.median_error) * 1000 :.0f }}`
to `{{ generation.ttft_s() * (1 + heldout.median_error) * 1000 :.0f }}` ms.

`profile.CONSTANT` is a constant of the default engine profile (data/engine_profiles.toml, e.g.
`profile.gemm_fp8`, `profile.layer_overhead_us`), so a sentence that names a factor quotes the one
the simulators use. "heldout" and "profile" are reserved: a scenario cannot take those names.
"""

import ast
import operator
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from simulators import api
from sitebuild.sims import SimulatorRunError, Simulators

EXPRESSION = re.compile(r"\{\{(.*?)\}\}")
FORMAT_SPEC = re.compile(r"\s:([^:'\"()]*)$")
# A format spec written without its colon, at the end of an expression: " .1f", " ,.0f", " .0%".
STRAY_FORMAT = re.compile(r"\s([,_]?\.\d+[a-z%]|,\.?\d*[a-z%]?)\s*$")
OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
Scenarios = dict[str, dict[str, Any]]
# (simulator, metric, the parameters passed, scenario ones included) for every call of an expression.
Calls = list[tuple[str, str, dict[str, Any]]]
RESERVED = {"heldout": cache(api.held_out_band), "profile": cache(api.profile_constants)}


@dataclass(frozen=True)
class Spread:
    """The lowest and highest value of an expression over its seeds (`spread(…)`)."""

    low: float
    high: float

    def __format__(self, spec: str) -> str:
        return f"{format(self.low, spec)}–{format(self.high, spec)}"


SPREAD_SEEDS = (2, 20)


@dataclass
class Figure:
    """One evaluated `{{ … }}`: its text, raw value, format spec and the simulator runs behind it."""

    source: str
    text: str
    value: Any
    spec: str
    calls: Calls = field(default_factory=list)


def expand(text: str, sims: Simulators, scenarios: Scenarios | None = None) -> str:
    """Replace every `{{ … }}` in one line of prose by its formatted value; ValueError explains."""
    return expand_figures(text, sims, scenarios)[0]


def expand_figures(text: str, sims: Simulators, scenarios: Scenarios | None = None) -> tuple[str, list[Figure]]:
    """The line with its numbers filled in, and each number's `Figure` (for sitebuild/figure_checks.py)."""
    figures: list[Figure] = []

    def one(match: re.Match[str]) -> str:
        figures.append(figure(match.group(1), sims, scenarios))
        return figures[-1].text

    return EXPRESSION.sub(one, text), figures


def figure(source: str, sims: Simulators, scenarios: Scenarios | None = None) -> Figure:
    source, spec = source.strip(), ""
    calls: Calls = []
    if match := FORMAT_SPEC.search(source):
        spec, source = match.group(1).strip(), source[: match.start()]
    value = raw_value(source, sims, scenarios, calls)
    try:
        text = format(value, spec)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"format spec {spec!r} does not apply to {value!r}: {exc}") from None
    return Figure(source, text, value, spec, calls)


def raw_value(source: str, sims: Simulators, scenarios: Scenarios | None = None, calls: Calls | None = None) -> Any:
    """The unformatted value of an expression (no format spec): used for scenario parameters."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        # `x * 100 .1f`: Python reads ".1f" as a broken number ("invalid decimal literal")
        stray = STRAY_FORMAT.search(source)
        hint = (
            f" (a format goes after a colon: {{{{ {source[: stray.start()].strip()} :{stray.group(1)} }}}})"
            if stray
            else ""
        )
        raise ValueError(f"cannot read expression {{{{ {source.strip()} }}}}: {exc.msg}{hint}") from None
    return _value(tree.body, sims, scenarios or {}, calls if calls is not None else [])


def _value(node: ast.expr, sims: Simulators, scenarios: Scenarios, calls: Calls, seed: int = 0) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        left = _value(node.left, sims, scenarios, calls, seed)
        right = _value(node.right, sims, scenarios, calls, seed)
        if isinstance(left, Spread) or isinstance(right, Spread):
            raise ValueError("spread(…) is a whole figure: put the arithmetic inside it")
        return OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "spread":
        return _spread(node, sims, scenarios, calls)
    owner = node.value.id if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) else ""
    if isinstance(node, ast.Attribute) and owner in {*RESERVED, *scenarios}:
        if owner in RESERVED:
            table, missing = RESERVED[owner](), f"{owner} has no figure {node.attr!r}"
        else:
            table, missing = scenarios[owner], f"scenario {owner!r} has no parameter {node.attr!r}"
        if node.attr not in table:
            raise ValueError(f"{missing} (it has: {', '.join(table)})")
        return table[node.attr]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and not node.args
    ):
        return _metric(node, sims, scenarios, calls, seed)
    raise ValueError(
        f"unsupported expression {ast.unparse(node)!r}: write simulator.metric(param=value, …), "
        "optionally with arithmetic on plain numbers"
    )


def _spread(node: ast.Call, sims: Simulators, scenarios: Scenarios, calls: Calls) -> Spread:
    seeds = [k for k in node.keywords if k.arg == "seeds"]
    n = seeds[0].value.value if seeds and isinstance(seeds[0].value, ast.Constant) else None
    low, high = SPREAD_SEEDS
    nested = any(isinstance(x, ast.Name) and x.id == "spread" for x in ast.walk(node.args[0])) if node.args else False
    if len(node.args) != 1 or len(node.keywords) != 1 or not isinstance(n, int) or not low <= n <= high or nested:
        raise ValueError(f"write spread(simulator.metric(…), seeds=N) with N from {low} to {high}, not nested")
    values = [float(_value(node.args[0], sims, scenarios, calls, s)) for s in range(n)]
    return Spread(min(values), max(values))


def _metric(call: ast.Call, sims: Simulators, scenarios: Scenarios, calls: Calls, seed: int) -> Any:
    name, metric = ast.unparse(call.func).split(".")  # simulator.metric(…)
    keywords = call.keywords
    if name not in sims.schemas:
        raise ValueError(f"unknown simulator {name!r} (known: {', '.join(sorted(sims.schemas))})")
    params: dict[str, Any] = {}
    # A scenario comes first (`**busy`); parameters written after it override its values, so a
    # variant reads as "the same scenario, with 4 GiB" (`**busy, kv_budget_GiB=4`).
    if any(k.arg is None for k in keywords[1:]):
        raise ValueError(f"{name}: one **scenario at most, and before the other parameters")
    for keyword in keywords:
        if keyword.arg is None:  # **scenario
            scenario = keyword.value.id if isinstance(keyword.value, ast.Name) else None
            if scenario not in scenarios:
                known = ", ".join(scenarios) or "none in this page's front matter"
                raise ValueError(f"{name}: unknown scenario {ast.unparse(keyword.value)!r} (scenarios: {known})")
            params.update(scenarios[scenario])
            continue
        try:
            params[str(keyword.arg)] = ast.literal_eval(keyword.value)
        except ValueError:
            raise ValueError(f"{name}: value of {keyword.arg!r} must be a literal") from None
    try:
        metrics = sims.run(name, params, seed)["metrics"]
    except SimulatorRunError as exc:
        raise ValueError(f"{name}: {exc}") from None
    if metric not in metrics:
        raise ValueError(f"{name} has no metric {metric!r} (metrics: {', '.join(metrics)})")
    if not seed:  # the figure checks read each run once
        calls.append((name, metric, params))
    return metrics[metric]
