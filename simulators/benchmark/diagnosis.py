"""The diagnosis of one deployment: its memory, its speed at an operating point, the gaps between
what it logs or measures and what the cost model predicts, and the levers that would move it.

A library of the "Why is my model slow?" simulator (simulators/sims/diagnose.py, whose docstring states
the model); every time comes from costmodel at the engine's profile, every byte of memory from
vllm_memory's accounting of vLLM's start-up.
"""

import contextlib
import json
import shlex
from dataclasses import dataclass, replace
from typing import Any

from ..core import costmodel as cm
from ..core import vllm_memory as vm
from ..core.catalog import Gpu, Model, gpus, serve_defaults
from ..core.efficiency import unsupported
from . import serve_command as sc

BAND = 0.35  # the validation page's yardstick: a gap beyond it is named
LOGGED_FLAGS = "tensor_parallel_size pipeline_parallel_size max_model_len gpu_memory_utilization kv_cache_dtype".split()
# Where to look when a measured time is well above the model's.
LOOK_AT = {
    "ttft_s": "look at queueing (a rate near capacity), a token budget that splits the prompt, or a cold prefix cache",
    "itl_s": "look at the batch (more requests in flight than stated), long contexts, preemptions or CPU time per step",
}


@dataclass(frozen=True)
class Deployment:
    serve: sc.Serve
    model: Model
    gpu: Gpu
    engine: str
    weight_dtype: str
    kv_dtype: str
    tp: int
    pp: int
    log: dict[str, Any] | None
    observed: dict[str, float]


def max_model_len(d: Deployment) -> int:
    """--max-model-len, else the model's context up to 131,072 tokens (the length the accounting assumes)."""
    return int(d.serve.settings.get("max_model_len", min(d.model.max_context_tokens, 131_072)))


def memory(d: Deployment) -> vm.VllmMemory:
    s = d.serve.settings
    return vm.account(
        d.model, d.gpu, tp=d.tp, pp=d.pp, dp=int(s.get("data_parallel_size", 1)),
        ep=bool(s.get("enable_expert_parallel", False)), gpu_memory_utilization=s.get("gpu_memory_utilization"),
        max_model_len=max_model_len(d),
        max_num_batched_tokens=s.get("max_num_batched_tokens"), max_num_seqs=s.get("max_num_seqs"),
        kv_dtype=d.kv_dtype, weight_dtype=d.weight_dtype, block_size=s.get("block_size"),
    )  # fmt: skip


def speed(d: Deployment, batch: int, prefix_cached: int = 0) -> dict[str, float]:
    """Predicted times at `batch` requests in flight (see the module docstring)."""
    prompt, out = int(d.observed["prompt_tokens"]), int(d.observed["output_tokens"])
    kw: dict[str, Any] = dict(weight_dtype=d.weight_dtype, kv_dtype=d.kv_dtype, tp=d.tp, pp=d.pp)
    kw["eff"] = cm.efficiency(False, d.engine)
    prefill = cm.step_time(d.model, d.gpu, [(prompt - prefix_cached, prefix_cached)], **kw)
    step = cm.decode_step_time(d.model, d.gpu, [prompt + out // 2] * batch, **kw)
    bare = cm.decode_step_time(d.model, d.gpu, [0] * batch, **kw)  # the same step, no KV to read
    busy = min(0.95, d.observed.get("rate_per_s", 0.0) * prefill.time_s)
    chunk = cm.step_time(d.model, d.gpu, [(min(prompt, limit(d, "max_num_batched_tokens")), 0)], **kw).time_s
    return {
        "ttft_s": prefill.time_s,
        "itl_s": step.time_s / (1 - busy),
        "step_s": step.time_s,
        "weights_s": bare.memory_s,
        "kv_s": step.memory_s - bare.memory_s,
        "compute_over_s": max(0.0, step.compute_s - step.memory_s),
        "overhead_s": step.serial_s,
        "prefill_share": busy,
        "stall_itl_s": step.time_s + chunk,  # a decode step that carries a prefill (chunk)
    }


def limit(d: Deployment, flag: str) -> int:
    """A batch limit as the server runs it: the flag, or `vllm serve`'s default on this GPU."""
    return int(d.serve.settings.get(flag) or serve_defaults(d.gpu)[flag])


def gaps(
    obs: dict[str, float], now: dict[str, float], a: vm.VllmMemory, log: dict[str, Any] | None, settings: dict[str, Any]
) -> list[str]:
    out = []
    for key, where in LOOK_AT.items():
        name, r = key[:-2].upper(), obs[key] / now[key] if obs.get(key) else 1.0  # TTFT, ITL
        if r > 1 + BAND:
            out.append(f"your {name} is {r:.1f}x the model's: {where}")
        elif r < 1 - BAND:
            out.append(
                f"your {name} is {r:.2f}x the model's, faster than it predicts: a prefix cache hit, speculative decoding or shorter requests than stated?"
            )
    if log:
        args = log.get("args", {})  # the non-default args the log states; where the command line differs, the log wins
        for flag in (f for f in LOGGED_FLAGS if f in args):
            said = settings.get(flag, "its default")
            # kv_cache_dtype left to its default on the command line, or "auto" in the log: no disagreement
            if args[flag] != said and not (flag == "kv_cache_dtype" and (flag not in settings or args[flag] == "auto")):
                out.append(
                    f"your log was started with {flag}={args[flag]!r}, your command line says {said!r}: diagnose the server the log is from"
                )
        err = a.kv_tokens / log["kv_tokens"] - 1
        if abs(err) > 0.10:  # the deployment simulator's tested error on published logs
            out.append(
                f"the KV cache differs from your log by {err:+.0%} (line {log['lines']['kv_tokens']}): check the flags, the GPU and the vLLM version ({log.get('version', '?')})"
            )
    return out


def levers(d: Deployment, b: int, now: dict[str, float], binding: str) -> list[dict[str, Any]]:
    s, m, out = d.serve.settings, d.model, []
    name = "ITL" if binding == "itl_s" else "TTFT"

    def add(lever: str, change: tuple[str, str | None] | None, after: dict[str, float], lesson: str, note: str, key: str = binding) -> None:  # fmt: skip
        """A lever: vLLM's (setting, value) written in the engine's own flags (None: the same command),
        priced at `after`; left out where the engine has no such flag."""
        made = d.serve.command_with(*change) if change else (shlex.join(d.serve.tokens), "")
        if made is None:
            return
        before = now[key]
        out.append({"lever": lever, "command": made[0], "flags": made[1], "figure": {"itl_s": "ITL", "ttft_s": "TTFT", "stall_itl_s": "ITL of a step that carries a prefill"}[key],
                    "key": key, "before_s": before, "after_s": after[key], "change": after[key] / before - 1, "lesson": lesson, "note": note,
                    "binding": name})  # fmt: skip

    if d.kv_dtype != "fp8":
        fp8kv = replace(d, kv_dtype="fp8")
        held = f"holds {memory(fp8kv).max_concurrency / max(memory(d).max_concurrency, 1e-9):.1f}x the requests"
        lever = "8-bit KV cache (q8_0)" if d.engine == "llamacpp" else "FP8 KV cache"
        add(lever, ("kv_cache_dtype", "fp8"), speed(fp8kv, b), "03-quantization", held)
    if d.weight_dtype == "bf16" and d.gpu.peak_tflops("fp8"):
        w8a8, note = replace(d, weight_dtype="fp8"), "a quality check is part of the change (lesson F3)"
        add("FP8 weights (W8A8)", ("quantization", "fp8"), speed(w8a8, b), "03-quantization", note)
    if m.num_heads % (2 * d.tp) == 0 and cm.link_GBps_one_way(d.gpu):
        tp2, n = replace(d, tp=2 * d.tp), str(2 * d.tp)
        with contextlib.suppress(ValueError):  # vLLM would refuse the layout
            memory(tp2)
            add(f"Tensor parallel {n}", ("tensor_parallel_size", n), speed(tp2, b), "02-gpu-memory", "twice the GPUs")
    if d.observed["prompt_tokens"] > 512 and limit(d, "max_num_batched_tokens") > 512:
        small = replace(d, serve=replace(d.serve, settings={**s, "max_num_batched_tokens": 512}))
        lever, note = "Token budget 512 (chunked prefill)", "TTFT grows by a step overhead per chunk"
        add(lever, ("max_num_batched_tokens", "512"), speed(small, b), "05-continuous-batching", note, "stall_itl_s")
    if s.get("enable_prefix_caching") is False:
        cached = speed(d, b, prefix_cached=int(d.observed["prompt_tokens"]) // 2)
        note = "if half of each prompt is a shared prefix"
        add("Prefix caching", ("enable_prefix_caching", None), cached, "07-prefix-caching", note, "ttft_s")
    if b <= 16 and "speculative_config" not in s:  # a small batch leaves the verify pass memory-bound
        # EAGLE, not n-gram: lesson 08's n-gram accepts near nothing unless the answer copies its prompt.
        # At acceptance 0.7 and c = 0.05 (lesson 08's good small drafter) the model gives 2.3x at batch 1,
        # under the 2.7-3.5x EAGLE reports on a chat model (lesson 08, Li et al. 2024).
        step = now["step_s"]
        spec = {"method": "eagle", "model": f"<EAGLE head for {m.name}>", "num_speculative_tokens": 4}
        per_token = cm.speculative_time_per_token_s(step, step, 4, 0.05, 0.7)
        note = (f"an EAGLE head trained for this model, at an acceptance rate of 0.7: {step / per_token:.1f}x, under the "
                "2.7-3.5x EAGLE reports on chat; n-gram gains only where answers copy the prompt")  # fmt: skip
        add("Speculative decoding (EAGLE)", ("speculative_config", json.dumps(spec)),
            {**now, "itl_s": per_token * now["itl_s"] / step}, "08-speculative-decoding", note, "itl_s")  # fmt: skip
    if other := _other_gpu(d, b, binding):
        note = f"{other[0].name}, the catalogue's fastest that fits"
        add(f"Another GPU: {other[0].name.split(' (')[0]}", None, other[1], "02-gpu-memory", note)
    if b >= 4:
        fewer = speed(replace(d, serve=replace(d.serve, settings={**s, "max_num_seqs": b // 2})), b // 2)
        lever, note = f"Fewer requests per batch ({b // 2})", "half the throughput per GPU"
        add(lever, ("max_num_seqs", str(b // 2)), fewer, "00.2-local-models-and-slos", note)
    return out


def _other_gpu(d: Deployment, b: int, binding: str) -> tuple[Gpu, dict[str, float]] | None:
    fits: list[tuple[Gpu, dict[str, float]]] = []
    for g in gpus().values():
        if (
            g.id == d.gpu.id
            or cm.missing_compute_figure(g, d.weight_dtype)
            or (d.tp * d.pp > 1 and not cm.link_GBps_one_way(g))
            or unsupported(d.engine, g)  # e.g. vLLM on an Apple GPU
        ):
            continue
        try:
            if memory(replace(d, gpu=g)).kv_tokens < b * (d.observed["prompt_tokens"] + d.observed["output_tokens"]):
                continue
        except ValueError:
            continue
        fits.append((g, speed(replace(d, gpu=g), b)))
    return min(fits, key=lambda fit: fit[1][binding], default=None)
