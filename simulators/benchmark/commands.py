"""Each validation row's prediction as one public command: the public path is the validated path.

`command(entry)` gives the `python -m simulators run ...` line whose answer yields the row's
predicted figure (with the arithmetic that turns the printed metric into it), or why no simulator
can run it; tests/test_validation_commands.py runs each through simulators.api against the table.

A lesson's own simulator is preferred where one states the row: `generation` prices one step of a
stated batch and context (a batch's decode step, a batch's prefill, a llama-bench prompt test whose
micro-batch holds the whole prompt); `kv_cache` and `gpu_memory` print sizes. Every other row runs
through `published` (sims/published.py), whose parameters are the conditions a row states (its
length distribution and means, caps, request count, arrival, rate or latency bounds, scheduler caps,
micro-batch, a compiled decode) and which calls the validation's own prediction function with them.
"""

from dataclasses import dataclass
from typing import Any

from ..core import efficiency as ef
from ..core.catalog import gpus

TIMED = ("decode_tokens_per_s", "decode_step_ms", "prefill_ms", "prompt_tokens_per_s", "matvec_stream_GBps")


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
    out: dict[str, Any] = {"model": e["model"], "gpu": e.get("gpu"), "engine": engine_of(e)}
    out |= {k: e[k] for k in ("weight_dtype", "kv_dtype") if e.get(k, "bf16") != "bf16"}
    if int(e.get("tp", 1)) != 1:
        out["tensor_parallel_size"] = int(e["tp"])
    return out


def engine_of(e: dict[str, Any]) -> str:
    """The engine a simulator names for the row's profile: a platform profile's engine (llama.cpp's
    Metal profile is what `llamacpp` prices on an Apple GPU: efficiency.on_gpu)."""
    p = ef.profile(profile_of(e))
    return p.replaces or p.id


def command(e: dict[str, Any]) -> Command | str:
    """The row's command (`generation` or a size page where one states it, else `published`), or why none can."""
    if engine_of(e) not in ef.profiles():  # the simulators' engine choices
        return f"engine profile '{profile_of(e)}' is not one of the simulators' engines"
    q = e["quantity"]
    if q in TIMED + SERVED and gpus()[e["gpu"]].dense_bf16_tflops is None:
        return f"the simulators refuse {e['gpu']}: the catalogue has no BF16 tensor rate for it (the table prices a memory floor)"
    return _generation(e, q) or _size(e, q) or _published(e, q)


def _generation(e: dict[str, Any], q: str) -> Command | None:
    """The row as one step of `generation` (the module docstring's three kinds), or None."""
    if e.get("fused_layers") or e.get("activation_dtype") or e.get("batch_size") == "fit":
        return None
    b = int(e.get("batch_size", 1))
    if q in ("decode_tokens_per_s", "decode_step_ms"):
        p = _base(e) | {"prompt_tokens": int(e["context_tokens"]) - 1, "output_tokens": 2, "batch_size": b}
        if q == "decode_step_ms":
            return Command("generation", p, "itl_s", 1e3, False, "1,000 x itl_s")
        return Command("generation", p, "itl_s", float(b), True, f"{b} / itl_s")
    if q == "prefill_ms":
        p = _base(e) | {"prompt_tokens": int(e["context_tokens"]), "output_tokens": 1, "batch_size": b}
        return Command("generation", p, "ttft_s", 1e3, False, "1,000 x ttft_s")
    if q == "prompt_tokens_per_s" and int(e["ubatch"]) >= int(e["prompt_tokens"]):
        n = int(e["prompt_tokens"])
        p = _base(e) | {"prompt_tokens": n, "output_tokens": 1}
        return Command("generation", p, "ttft_s", float(n), True, f"{n:,} / ttft_s")
    return None


# What each kind of row states beyond the model, GPU and formats (published.Params' fields).
STATES = {"prompt_tokens_per_s": ("prompt_tokens", "ubatch"), "matvec_stream_GBps": ("context_tokens",)}
STATES |= {q: ("context_tokens", "batch_size") for q in ("decode_tokens_per_s", "decode_step_ms", "prefill_ms")}
SERVING = tuple(
    "lengths input_tokens output_tokens max_input_tokens max_total_tokens fixed_output requests arrival "
    "request_rate ttft_limit_ms tpot_limit_ms max_num_seqs max_num_batched_tokens per_gpu chunked_prefill "
    "num_scheduler_steps".split()
)
SERVED = ("offline_output_tokens_per_s", "median_tpot_ms", "median_ttft_ms", "batch_latency_s")
STATES |= {q: SERVING for q in SERVED}


def _published(e: dict[str, Any], q: str) -> Command:
    """The row's conditions as `published`'s parameters (the module docstring)."""
    p: dict[str, Any] = {"quantity": q, **_base(e)} if q != "params_B" else {"quantity": q, "model": e["model"]}
    p |= {k: e[k] for k in ("activation_dtype", "fused_layers") if e.get(k)}
    p |= {k: e[k] for k in STATES.get(q, ()) if k in e}
    if q in SERVED and int(e.get("num_gpus", e.get("tp", 1))) != int(e.get("tp", 1)):
        p["replicas"] = int(e["num_gpus"]) // int(e.get("tp", 1))
    if q in SERVED and "batch" in (e.get("arrival"), e.get("requests")):
        p["batch_size"] = e["batch_size"]  # the batch a static-batching benchmark runs
    if p.get("batch_size") == "fit":
        p |= {"batch_size": None, "batch_fit": True}
    if p.get("requests") == "batch":
        p |= {"requests": None, "static_batch": True}
    p = {k: v for k, v in p.items() if v is not None}
    return Command("published", p, "predicted", 1.0, False, "predicted")


def _size(e: dict[str, Any], q: str) -> Command | None:
    """Sizes and shapes: the KV cache and GPU memory pages print them."""
    model: dict[str, Any] = {"model": e.get("model")} | {k: e[k] for k in ("weight_dtype", "kv_dtype") if k in e}
    if q == "kv_bytes_per_token":
        return Command("kv_cache", model, q, 1.0, False, q)
    if q == "kv_GiB_per_sequence":
        return Command("kv_cache", model | {"context_tokens": int(e["context_tokens"])}, q, 1.0, False, q)
    if q == "weight_GiB":
        return Command("kv_cache", model, "weights_GB", 1e9 / 2**30, False, "weights_GB x 0.9313")
    if q == "ridge_flop_per_byte":
        return Command("gpu_memory", {"gpu": e["gpu"]}, q, 1.0, False, q)
    return None


def cell(e: dict[str, Any]) -> str:
    """The table cell: the command and how to read the figure off it, or why there is none."""
    return f"none: {c}" if isinstance(c := command(e), str) else f"`{c.text}` → {c.how}"
