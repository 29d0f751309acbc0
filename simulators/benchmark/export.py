"""A load run in GuideLLM's vocabulary: one record per benchmark with GuideLLM's metric names and
units, and the sweep as CSV with those names as columns (the page's download).

Reference: vllm-project/guidellm 0.8.1, src/guidellm/benchmark/schemas/ (metric names).
"""

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
        out[name] = m[ours] * scale if ours in m else {g: m[f"{ours}_{s}"] * scale for g, s in GUIDELLM_STATS.items()}
    return out


def to_csv(runs: list[LoadRun]) -> str:
    """The sweep as CSV: one row per benchmark, GuideLLM's metric names as columns."""
    rows = []
    for run in runs:
        flat: dict[str, Any] = {}  # a metric's statistics as NAME_STAT columns
        for k, v in guidellm_record(run).items():
            flat |= {f"{k}_{g}": x for g, x in v.items()} if isinstance(v, dict) else {k: v}
        rows.append(flat)
    lines = [",".join(rows[0])]
    lines += [",".join(f"{x:.6g}" if isinstance(x, float) else str(x) for x in row.values()) for row in rows]
    return "\n".join(lines) + "\n"
