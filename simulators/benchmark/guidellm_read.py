"""Read a GuideLLM benchmark report of any schema from 0.2 to 0.8 into one plain shape.

GuideLLM's own loader reads only its current layout (0.8.1 refuses older files). The layouts:
- 0.2-0.3 (no `metadata`): `benchmarks[].args.strategy`, `request_totals` beside `metrics`,
  percentiles without p50 (the `median` field carries it);
- 0.4-0.7 (`metadata.version` 1, top-level `args`): `benchmarks[].config.strategy`,
  `metrics.request_totals`, p50 in the percentiles;
- 0.7-0.8 (`metadata.version` 2, top-level `config`): as above.
Every metric is `{successful, incomplete, errored, total}` of DistributionSummary dicts in all
of them. `read` returns `{"guidellm_version", "schema", "benchmarks": [{"strategy", "rate",
"streams", "request_totals", "metrics": {name: {"mean", "median", "p50", "p90", "p95", "p99",
"count"}}}]}` with GuideLLM's metric names and units, taken from the successful requests.
A damaged or foreign file raises ReportError with one line saying what is wrong.

Sources: vllm-project/guidellm src/guidellm/benchmark/schemas/ (0.8.1) and the report files
under tests/data/guidellm/ (tests/data/guidellm/README.md cites where each comes from).
"""

import json
from typing import Any

from ..core import mini_yaml

STATS = ("mean", "median", "p50", "p90", "p95", "p99", "count")


class ReportError(ValueError):
    pass


def read(text: str) -> dict[str, Any]:
    """A report as JSON, or else GuideLLM's YAML; a ReportError names what could not be read."""
    stripped = text.lstrip()
    if not stripped:
        raise ReportError("the file is empty")
    if stripped[0] in "{[":
        try:
            return normalize(json.loads(text))
        except json.JSONDecodeError as e:
            raise ReportError(f"not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    try:
        doc = mini_yaml.loads(text)
    except (mini_yaml.YamlError, ValueError) as e:
        raise ReportError(f"neither JSON nor YAML this reader knows: {e}") from None
    return normalize(doc)


def normalize(doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ReportError("not a GuideLLM report: no top-level 'benchmarks' list")
    if not doc["benchmarks"]:
        raise ReportError("the report holds no benchmarks")
    meta: dict[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
    version = str(meta.get("guidellm_version") or "")
    schema = f"metadata {meta['version']}" if "version" in meta else "0.2-0.3 (no metadata)"
    out = [_benchmark(b, i) for i, b in enumerate(doc["benchmarks"])]
    return {"guidellm_version": version or "before 0.4", "schema": schema, "benchmarks": out}


def _benchmark(b: Any, i: int) -> dict[str, Any]:
    where = f"benchmarks[{i}]"
    if not isinstance(b, dict) or not isinstance(b.get("metrics"), dict):
        raise ReportError(f"{where} has no 'metrics' mapping")
    holder = b.get("config") if isinstance(b.get("config"), dict) else b.get("args")
    strategy = holder.get("strategy") if isinstance(holder, dict) else None
    if not isinstance(strategy, dict) or "type_" not in strategy:
        raise ReportError(f"{where} names no strategy (config.strategy.type_ or args.strategy.type_)")
    m = b["metrics"]
    totals = m.get("request_totals", b.get("request_totals"))
    if not isinstance(totals, dict):
        raise ReportError(f"{where} has no request_totals")
    metrics = {}
    for name, value in m.items():
        if isinstance(value, dict) and isinstance(value.get("successful"), dict):
            metrics[name] = _stats(value["successful"], f"{where}.metrics.{name}")
    if lacks := [k for k in ("requests_per_second", "time_to_first_token_ms", "request_latency") if k not in metrics]:
        raise ReportError(f"{where} lacks the metric '{lacks[0]}'")
    rate = strategy.get("rate")
    streams = strategy.get("streams", strategy.get("max_concurrency"))
    return {
        "strategy": str(strategy["type_"]),
        "rate": float(rate) if isinstance(rate, int | float) and rate > 0 else None,
        "streams": int(streams) if isinstance(streams, int | float) else None,
        "request_totals": {k: int(totals.get(k) or 0) for k in ("successful", "incomplete", "errored", "total")},
        "metrics": metrics,
    }


def _stats(s: dict[str, Any], where: str) -> dict[str, float]:
    pct = s.get("percentiles")
    if not isinstance(pct, dict):
        raise ReportError(f"{where}.successful has no percentiles")
    try:
        median = float(s["median"])
        out = {"mean": float(s["mean"]), "median": median, "p50": float(pct.get("p50", median))}  # 0.2-0.3: no p50
        return out | {k: float(pct[k]) for k in ("p90", "p95", "p99")} | {"count": int(s["count"])}
    except (KeyError, TypeError, ValueError) as e:
        raise ReportError(f"{where}.successful: missing or non-numeric {e}") from None
