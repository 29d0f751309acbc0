"""Numbers in prose, computed at build time: `{{ kv_cache.kv_bytes_per_token(model="llama-3-8b") :,.0f }}`.

Grammar (a strict subset of Python, read with `ast`, never `eval`):

    expression := call [ ("*" | "/" | "+" | "-") number ]... [ " :" format_spec ]
    call       := SIMULATOR "." METRIC "(" [ param "=" literal { "," param "=" literal } ] ")"

The call runs the simulator through `run_json` with those parameters (defaults for the rest) and
takes one metric; arithmetic with plain numbers converts units (`/ 2**30` for GiB); the format spec
is Python's (`,.0f`, `.1%`, `.3g`).
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Any

from sitebuild.sims import SimulatorRunError, Simulators

EXPRESSION = re.compile(r"\{\{(.*?)\}\}")
FORMAT_SPEC = re.compile(r"\s:([^:'\"()]*)$")
OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


def expand(text: str, sims: Simulators) -> str:
    """Replace every `{{ … }}` in one line of prose by its formatted value; ValueError explains."""
    return EXPRESSION.sub(lambda m: evaluate(m.group(1), sims), text)


def evaluate(source: str, sims: Simulators) -> str:
    source = source.strip()
    spec = ""
    match = FORMAT_SPEC.search(source)
    if match:
        spec, source = match.group(1).strip(), source[: match.start()]
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"cannot read expression {{{{ {source} }}}}: {exc.msg}") from None
    value = _value(tree.body, sims)
    try:
        return format(value, spec)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"format spec {spec!r} does not apply to {value!r}: {exc}") from None


def _value(node: ast.expr, sims: Simulators) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](_value(node.left, sims), _value(node.right, sims))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and not node.args
    ):
        return _metric(node.func.value.id, node.func.attr, node.keywords, sims)
    raise ValueError(
        f"unsupported expression {ast.unparse(node)!r}: write simulator.metric(param=value, …), "
        "optionally with arithmetic on plain numbers"
    )


def _metric(name: str, metric: str, keywords: list[ast.keyword], sims: Simulators) -> Any:
    if name not in sims.schemas:
        raise ValueError(f"unknown simulator {name!r} (known: {', '.join(sorted(sims.schemas))})")
    params: dict[str, Any] = {}
    for keyword in keywords:
        try:
            params[str(keyword.arg)] = ast.literal_eval(keyword.value)
        except ValueError:
            raise ValueError(f"{name}: value of {keyword.arg!r} must be a literal") from None
    try:
        metrics = sims.run(name, params)["metrics"]
    except SimulatorRunError as exc:
        raise ValueError(f"{name}: {exc}") from None
    if metric not in metrics:
        raise ValueError(f"{name} has no metric {metric!r} (metrics: {', '.join(metrics)})")
    return metrics[metric]
