"""Each validation row's prediction as one public command: the public path is the validated path.

`command(entry)` gives the `python -m simulators run ...` line whose answer yields the row's
predicted figure (with the arithmetic that turns the printed metric into it), or the reason no
simulator can express the row's conditions. tests/test_validation_commands.py runs them through
simulators.api and checks they reproduce the table's predictions.

Only `generation` prices one step of a stated batch and context with a chosen engine, so the
rows it can state are single-step ones: a batch's decode step, a batch's prefill, a llama-bench
prompt test whose micro-batch holds the whole prompt. Sizes come from `kv_cache` and `gpu_memory`. Serving-level rows (offline, server,
a rate) run the event engine under a benchmark's own length distribution, request count and caps,
which no simulator's parameters state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core import efficiency as ef
from ..core.catalog import gpus

ENGINES = ("vllm", "sglang", "trtllm", "llamacpp")  # generation's engine choices
TIMED = ("decode_tokens_per_s", "decode_step_ms", "prefill_ms", "prompt_tokens_per_s")  # through generation


@dataclass(frozen=True)
class Command:
    simulator: str
    params: dict[str, Any]
    metric: str  # the printed metric the figure is read from
    scale: float  # figure = scale / metric (inverse) or scale * metric
    inverse: bool
    how: str  # the arithmetic, in words, e.g. "8 / itl_s"

    @property
    def text(self) -> str:
        sets = " ".join(f"--set {k}={v}" for k, v in self.params.items())
        return f"python -m simulators run {self.simulator} {sets}"

    def figure(self, metrics: dict[str, float]) -> float:
        x = float(metrics[self.metric])
        return self.scale / x if self.inverse else self.scale * x


def profile_of(e: dict[str, Any]) -> str:
    """The engine profile a speed row is predicted with: `profile`, else `engine`, else the default."""
    return str(e.get("profile") or e.get("engine") or ef.DEFAULT)


def _base(e: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"model": e["model"], "gpu": e["gpu"], "engine": profile_of(e)}
    for key, default in (("weight_dtype", "bf16"), ("kv_dtype", "bf16")):
        if e.get(key, default) != default:
            out[key] = e[key]
    if int(e.get("tp", 1)) != 1:
        out["tensor_parallel_size"] = int(e["tp"])
    return out


def command(e: dict[str, Any]) -> Command | str:
    """The row's command, or why no simulator states its conditions."""
    q = e["quantity"]
    if profile_of(e) not in ENGINES:
        return f"engine profile '{profile_of(e)}' is not one of generation's engines"
    if e.get("fused_layers"):
        return "a compiled whole-step decode (no per-layer time): no simulator switches the layer time off"
    if e.get("activation_dtype"):
        return f"{e['activation_dtype']} activations: no simulator takes an activation format"
    if any(k in e for k in ("max_num_seqs", "max_num_batched_tokens")):
        return "the benchmark's own scheduler caps: generation has none"
    if q in TIMED and gpus()[e["gpu"]].dense_bf16_tflops is None:
        return f"generation refuses {e['gpu']}: the catalogue has no BF16 tensor rate for it (the table prices a memory floor)"
    batch = e.get("batch_size", 1)
    if q in ("decode_tokens_per_s", "decode_step_ms"):
        if batch == "fit":
            return "a batch of as many sequences as the KV cache holds: generation takes a stated batch"
        b = int(batch)
        p = _base(e) | {"prompt_tokens": int(e["context_tokens"]) - 1, "output_tokens": 2, "batch_size": b}
        if q == "decode_step_ms":
            return Command("generation", p, "itl_s", 1e3, False, "1,000 x itl_s")
        return Command("generation", p, "itl_s", float(b), True, f"{b} / itl_s")
    if q == "prefill_ms":
        p = _base(e) | {"prompt_tokens": int(e["context_tokens"]), "output_tokens": 1, "batch_size": int(batch)}
        return Command("generation", p, "ttft_s", 1e3, False, "1,000 x ttft_s")
    if q == "prompt_tokens_per_s":
        n = int(e["prompt_tokens"])
        if int(e["ubatch"]) < n:
            return "a prompt split into micro-batches (llama-bench -ub): generation prefills in one step"
        p = _base(e) | {"prompt_tokens": n, "output_tokens": 1}
        return Command("generation", p, "ttft_s", float(n), True, f"{n:,} / ttft_s")
    if q == "matvec_stream_GBps":
        return "the bytes a decode step streams per second: no simulator reports it"
    if q in ("offline_output_tokens_per_s", "median_tpot_ms", "median_ttft_ms", "batch_latency_s"):
        return "a serving benchmark's length distribution, request count and caps: no simulator states them"
    return _size(e, q)


def _size(e: dict[str, Any], q: str) -> Command | str:
    """Sizes and shapes: the KV cache and GPU memory pages print them."""
    dtypes: dict[str, Any] = {k: e[k] for k in ("weight_dtype", "kv_dtype") if k in e}
    if q == "kv_bytes_per_token":
        return Command(
            "kv_cache", {"model": e["model"], **dtypes}, "kv_bytes_per_token", 1.0, False, "kv_bytes_per_token"
        )
    if q == "kv_GiB_per_sequence":
        p = {"model": e["model"], **dtypes, "context_tokens": int(e["context_tokens"])}
        return Command("kv_cache", p, "kv_GiB_per_sequence", 1.0, False, "kv_GiB_per_sequence")
    if q == "weight_GiB":
        return Command(
            "kv_cache", {"model": e["model"], **dtypes}, "weights_GB", 1e9 / 2**30, False, "weights_GB x 0.9313"
        )
    if q == "ridge_flop_per_byte":
        return Command("gpu_memory", {"gpu": e["gpu"]}, "ridge_flop_per_byte", 1.0, False, "ridge_flop_per_byte")
    return "a parameter count: no simulator prints it (python -m simulators describe kv_cache for the shapes)"


def cell(e: dict[str, Any]) -> str:
    """The table cell: the command and how to read the figure off it, or why there is none."""
    c = command(e)
    if isinstance(c, str):
        return f"none: {c}"
    return f"`{c.text}` → {c.how}"
