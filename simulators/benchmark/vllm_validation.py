"""Validation of vLLM's memory accounting against vLLM's own start-up logs.

Each [[vllm_log]] of data/measurements.toml is a published vLLM start-up with its full settings
and the two lines it logged. For each we run the same accounting as the deployment simulator
(vllm_memory.account) and compare the predicted "GPU KV cache size" and "Maximum concurrency"
with the logged ones. Every row says its `split`: "calibration" rows come from the sweep the
activation and non-torch constants (assumptions.toml [vllm_memory]) were fitted to; "held_out"
rows were never used to set a constant. `summary(split)` gives the median and largest |error| of
one set; `render_markdown()` the two tables of the validation page (docs/validation.md, section
"KV capacity against vLLM's logs").

References: 1) the logs named in each row's `source`; 2) vllm-project/vllm,
vllm/v1/core/kv_cache_utils.py (the two log lines).
"""

import statistics
from dataclasses import dataclass
from typing import Any

from ..core import vllm_memory as vm
from ..core.catalog import data_file, gpus, models


@dataclass(frozen=True)
class LogRow:
    id: str
    what: str
    model: str
    layout: str  # "TP 2, PP 1, fp8 KV"
    split: str  # "calibration" or "held_out"
    vllm_version: str
    predicted_tokens: int
    logged_tokens: int
    predicted_concurrency: float
    logged_concurrency: float
    predicted_available_GiB: float
    logged_available_GiB: float
    source: str

    @property
    def error(self) -> float:
        """(predicted - logged) / logged, of the KV tokens."""
        return (self.predicted_tokens - self.logged_tokens) / self.logged_tokens


SPLITS = ("calibration", "held_out")


def logs() -> list[dict[str, Any]]:
    """Every published vLLM start-up, in file order."""
    entries = list(data_file("measurements.toml").get("vllm_log", []))
    for e in entries:
        if e.get("split") not in SPLITS:
            raise ValueError(f"[[vllm_log]] {e.get('id')}: split must be one of {SPLITS}, got {e.get('split')!r}")
    return entries


def predict(entry: dict[str, Any]) -> vm.VllmMemory:
    m = models()[entry["model"]]
    kw = {k: entry[k] for k in ("gpu_memory_utilization", "max_model_len", "max_num_batched_tokens", "max_num_seqs")}
    kw |= {"tp": entry["tensor_parallel_size"], "pp": entry["pipeline_parallel_size"]}
    kw |= {"dp": entry.get("data_parallel_size", 1), "ep": entry.get("enable_expert_parallel", False)}
    kw["kv_dtype"] = "bf16" if entry["kv_cache_dtype"] == "auto" else entry["kv_cache_dtype"]
    weight = (m.weight_format or "bf16") if entry["weight_dtype"] == "auto" else entry["weight_dtype"]
    return vm.account(m, gpus()[entry["gpu"]], weight_dtype=weight, **kw)


def rows() -> list[LogRow]:
    out = []
    for e in logs():
        a = predict(e)
        dp, kv = e.get("data_parallel_size", 1), e["kv_cache_dtype"]
        extra = [f"DP {dp}"] * (dp > 1) + ["EP"] * bool(e.get("enable_expert_parallel")) + [f"{kv} KV"] * (kv != "auto")
        layout = ", ".join([f"TP {e['tensor_parallel_size']}", f"PP {e['pipeline_parallel_size']}", *extra])
        out.append(
            LogRow(
                **{k: e[k] for k in ("id", "what", "split", "vllm_version", "source")},
                model=models()[e["model"]].name,
                layout=layout,
                predicted_tokens=a.kv_tokens,
                logged_tokens=e["logged_kv_tokens"],
                predicted_concurrency=a.max_concurrency,
                logged_concurrency=e["logged_max_concurrency"],
                predicted_available_GiB=min(s.kv_bytes for s in a.stages) / vm.GiB,
                logged_available_GiB=e["logged_available_GiB"],
            )
        )
    return out


def summary(split: str | None = None) -> dict[str, float]:
    """Median and largest |error| of the KV tokens of one split (or all), and how many are within 10%."""
    errors = [abs(r.error) for r in rows() if split is None or r.split == split]
    return {
        "points": len(errors),
        "median_abs_error": statistics.median(errors),
        "max_abs_error": max(errors),
        "within_10_percent": sum(e <= 0.10 for e in errors),
    }


HEADER = [
    "| Model | Layout | vLLM | What it checks | Predicted KV tokens | Logged | Error | Predicted concurrency | Logged | Available KV GiB, predicted / logged | Log |",
    "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|",
]
TITLES = {
    "calibration": "Calibration: the v0.19.0 sweep the activation and non-torch constants were fitted to",
    "held_out": "Held out: never used to set a constant",
}


def _table(split: str) -> list[str]:
    chosen = [r for r in rows() if r.split == split]
    s = summary(split)
    worst = max(chosen, key=lambda r: abs(r.error))
    lines = [f"**{TITLES[split]}**", "", *HEADER]
    for r in chosen:
        # a link to the log, or for a public file found without its repository's name, where to read it
        link = (
            f"[log]({r.source})" if r.source.startswith("https://") else "public file, no address (measurements.toml)"
        )
        lines.append(
            f"| {r.model} | {r.layout} | {r.vllm_version} | {r.what} | {r.predicted_tokens:,} | {r.logged_tokens:,} | "
            f"{r.error:+.1%} | {r.predicted_concurrency:.2f} | {r.logged_concurrency:.2f} | "
            f"{r.predicted_available_GiB:.2f} / {r.logged_available_GiB:.2f} | {link} |"
        )
    lines += [
        "",
        f"{s['points']:.0f} start-ups: median |error| of the KV token count {s['median_abs_error']:.1%}, largest "
        f"{s['max_abs_error']:.1%} ({worst.model}, {worst.layout}, vLLM {worst.vllm_version}); "
        f"{s['within_10_percent']:.0f} of {s['points']:.0f} within 10%.",
    ]
    return lines


def render_markdown() -> str:
    return "\n".join([*_table("calibration"), "", *_table("held_out")])
