"""A load run in GuideLLM's vocabulary: one record per benchmark with GuideLLM's metric names and
units, and the sweep as CSV with those names as columns (the page's download).

Reference: vllm-project/guidellm 0.8.1, src/guidellm/benchmark/schemas/ (metric names).
"""

from __future__ import annotations

from typing import Any

from .loadgen import LoadRun

# GuideLLM's names in its benchmark report, and where each comes from in our metrics.
GUIDELLM_NAMES = {
    "requests_per_second": ("request_throughput_per_s", 1.0),
    "output_tokens_per_second": ("output_tokens_per_s", 1.0),
    "request_latency": ("e2e_s", 1.0),
    "time_to_first_token_ms": ("ttft_s", 1e3),
    "inter_token_latency_ms": ("itl_s", 1e3),
    "time_per_output_token_ms": ("time_per_output_token_s", 1e3),
}
GUIDELLM_STATS = {"mean": "mean", "median": "p50", "p90": "p90", "p95": "p95", "p99": "p99"}


def guidellm_record(run: LoadRun) -> dict[str, Any]:
    """One benchmark of the run in GuideLLM's vocabulary (values in its units)."""
    m = run.metrics
    out: dict[str, Any] = {"profile": run.profile, "rate": run.rate, "request_concurrency": run.concurrency}
    for name, (ours, scale) in GUIDELLM_NAMES.items():
        if ours in m:
            out[name] = m[ours] * scale
        else:
            out[name] = {g: m[f"{ours}_{s}"] * scale for g, s in GUIDELLM_STATS.items()}
    return out


def to_csv(runs: list[LoadRun]) -> str:
    """The sweep as CSV: one row per benchmark, GuideLLM's metric names as columns."""
    rows = [guidellm_record(r) for r in runs]
    cols = ["profile", "rate", "request_concurrency"]
    for name in GUIDELLM_NAMES:
        if isinstance(rows[0][name], dict):
            cols += [f"{name}_{g}" for g in GUIDELLM_STATS]
        else:
            cols.append(name)
    lines = [",".join(cols)]
    for row in rows:
        flat: dict[str, Any] = {}
        for k, v in row.items():
            if isinstance(v, dict):
                flat.update({f"{k}_{g}": x for g, x in v.items()})
            else:
                flat[k] = v
        lines.append(",".join(f"{flat[c]:.6g}" if isinstance(flat[c], float) else str(flat[c]) for c in cols))
    return "\n".join(lines) + "\n"
