"""The one boundary between the page (or the CLI) and the simulators.

    run_json(name, params_json) -> str
        {"ok": true, "metrics": {...}, "result": {...}, "figure": {...}, "summary": "..."}
        {"ok": false, "errors": [{"field": ..., "message": ...}]}

Only JSON crosses: no Python object reaches JavaScript. The dispatch table below is the whole
registry: adding a simulator is one module and one line here.

Every simulator module provides `TITLE`, `DESCRIPTION`, `METRICS` ({name: (label, unit)}),
a frozen `Params` dataclass, `run(params, *, seed) -> dict` (with a flat "metrics" dict),
`figure(result) -> dict` (plotly) and `summary(result) -> str` (the chart in words).
"""

from __future__ import annotations

import json
import math
from types import ModuleType
from typing import Any

from . import (
    batching,
    cluster,
    compare_benchmark,
    compression,
    engine_explorer,
    evaluation,
    generation,
    gpu_memory,
    kv_cache,
    load_test,
    paged_kv,
    prefix_cache,
    quantization,
    reasoning,
    slo,
    sparsity,
    speculative,
)
from .catalog import CatalogError
from .params import ParamErrors, parse, schema_fields

SIMULATORS: dict[str, ModuleType] = {
    "batching": batching,
    "cluster": cluster,
    "compare_benchmark": compare_benchmark,
    "compression": compression,
    "engine": engine_explorer,
    "evaluation": evaluation,
    "generation": generation,
    "gpu_memory": gpu_memory,
    "kv_cache": kv_cache,
    "load_test": load_test,
    "paged_kv": paged_kv,
    "prefix_cache": prefix_cache,
    "quantization": quantization,
    "reasoning": reasoning,
    "slo": slo,
    "sparsity": sparsity,
    "speculative": speculative,
}

# Floats are rounded to 10 significant digits so that CPython and Pyodide print byte-identical
# JSON: their libm (exp, log) can differ in the last bit, which 12 digits could still show.
_DIGITS = 10


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number {value!r} in a simulator result")
        return float(f"{value:.{_DIGITS}g}")
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def dumps(value: Any) -> str:
    return json.dumps(_clean(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def schema(name: str) -> dict[str, Any]:
    mod = _module(name)
    return {
        "name": name,
        "title": mod.TITLE,
        "description": mod.DESCRIPTION,
        "params": schema_fields(mod.Params),
        "metrics": [{"name": k, "label": label, "unit": unit} for k, (label, unit) in mod.METRICS.items()],
    }


def schemas() -> dict[str, dict[str, Any]]:
    return {name: schema(name) for name in SIMULATORS}


class UnknownSimulator(KeyError):
    pass


def _module(name: str) -> ModuleType:
    try:
        return SIMULATORS[name]
    except KeyError:
        raise UnknownSimulator(f"unknown simulator '{name}'; known: {', '.join(SIMULATORS)}") from None


def run(name: str, params: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """Validate, run and draw; the answer run_json serialises. Never raises on bad input."""
    try:
        mod = _module(name)
    except UnknownSimulator as e:
        return {"ok": False, "errors": [{"field": "", "message": e.args[0]}]}
    try:
        p = parse(mod.Params, params)
    except ParamErrors as e:
        return {"ok": False, "errors": e.errors}
    try:
        result = mod.run(p, seed=seed)
    except CatalogError as e:
        return {"ok": False, "errors": [{"field": "", "message": str(e)}]}
    return {
        "ok": True,
        "metrics": result["metrics"],
        "result": result,
        "figure": mod.figure(result),
        "summary": mod.summary(result),
    }


def run_json(name: str, params_json: str, seed: int = 0) -> str:
    """The browser's entry point: JSON in, JSON out."""
    try:
        params = json.loads(params_json) if params_json.strip() else {}
    except json.JSONDecodeError as e:
        return dumps({"ok": False, "errors": [{"field": "", "message": f"parameters are not valid JSON: {e}"}]})
    return dumps(run(name, params, seed))


def evaluate(name: str, seed: int = 0, **params: Any) -> dict[str, Any]:
    """For build-time numbers: the cleaned answer, or ValueError naming every bad field."""
    answer: dict[str, Any] = json.loads(dumps(run(name, params, seed)))
    if not answer["ok"]:
        raise ValueError("; ".join(f"{e['field'] or name}: {e['message']}" for e in answer["errors"]))
    return answer
