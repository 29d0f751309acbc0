"""GPU memory and the roofline: does the model fit, and which roof binds each phase.

Fit: weights, the activation peak, non-torch memory and the KV cache of `batch_size` sequences of
`context_tokens` on each GPU of 1 to 8, as vLLM accounts for them at start-up
(simulators/core/vllm_memory.py, at `vllm serve`'s defaults for the GPU, max_model_len = the context):
the memory CUDA reports times gpu_memory_utilization, less the weights of the fullest rank, the
profile run's activation peak (max_num_batched_tokens) and the non-torch memory; the rest is cut
into KV blocks. The rest of the memory, (1 - utilisation), is the reserve (CUDA graphs, the CUDA
context). N GPUs run tensor-parallel when N divides the attention heads, else with the largest TP
size that does and pipeline stages for the rest (vLLM refuses an uneven head split). The batch
fits when it is at most vLLM's maximum concurrency at that context.

Roofline (Williams, Waterman and Patterson 2009): a step that does F FLOPs and moves B bytes
cannot go faster than min(peak FLOP/s, bandwidth * F / B). The ridge point is peak / bandwidth
(costmodel.ridge_point): below it a step is memory-bound, above it compute-bound. The roofs are
drawn at peak for the tensor-core path the weights run on (costmodel.matmul_path), and the two
operating points come from costmodel.step_time at 100% of peak on one GPU: the prefill of one
`context_tokens` prompt, and one decode step of `batch_size` sequences at `context_tokens` each.
Decode's intensity grows with the batch (the weights are read once for all sequences) but each
sequence also reads its own KV cache, so with long contexts a GQA model's decode never reaches
the ridge: costmodel.decode_compute_bound_batch then finds no batch, and this is physics, not a
bug. A GPU that publishes no tensor throughput (Apple M2 Ultra) has no compute roof.

References: 1) Williams, Waterman and Patterson 2009, Roofline (Communications of the ACM 52(4));
2) vLLM engine arguments, --gpu-memory-utilization; 3) Pope et al. 2022 (arXiv 2211.05102).
"""

from dataclasses import dataclass
from typing import Any

from ..core import costmodel as cm
from ..core import vllm_memory as vm
from ..core.catalog import Gpu, Model, running_example
from ..core.layout import vllm_defaults
from ..params import ModelGpu, context_param, dtype_choices, kv_dtype_param, param
from ..plotting import LOG, bar, chart, line, markers
from ..results_cache import Keep

TITLE = "GPU memory and the roofline"
DESCRIPTION = (
    "Weights, activations and KV cache against the memory of 1 to 8 GPUs; and the roofline with the "
    "prefill and decode operating points."
)
METRICS = {
    "weights_GB": ("Weights per GPU (the fullest)", "GB"),
    "activations_GB": ("Activation peak per GPU (vLLM's profile run)", "GB"),
    "non_torch_GB": ("Non-torch memory per GPU (NCCL, cuBLAS)", "GB"),
    "kv_budget_GB": ("Memory left for the KV cache per GPU (negative: weights do not fit)", "GB"),
    "kv_token_capacity": ("GPU KV cache size, as vLLM would log it", "tokens"),
    "max_concurrency": ("Maximum concurrency at this context, as vLLM would log it", "x"),
    "max_batch_at_context": ("Whole sequences of this context that fit (vLLM's accounting)", "sequences"),
    "kv_demand_GB": ("KV cache of the batch per GPU", "GB"),
    "fits": ("The batch fits (1 yes, 0 no)", ""),
    "min_gpus_to_fit": ("Fewest GPUs (1-8) that fit the batch; 0: none", "GPUs"),
    "reserve_GB": ("Memory vLLM leaves unused per GPU (1 - utilisation)", "GB"),
    "ridge_flop_per_byte": ("Ridge point; 0 when the GPU publishes no FLOPs", "FLOP/B"),
    "compute_roof_known": ("The GPU publishes its tensor throughput (1 yes, 0 no)", ""),
    "prefill_intensity": ("Prefill arithmetic intensity", "FLOP/B"),
    "decode_intensity": ("Decode arithmetic intensity", "FLOP/B"),
    "prefill_tflops": ("Prefill attainable throughput (bandwidth bound only without a compute roof)", "TFLOP/s"),
    "decode_tflops": ("Decode attainable throughput (bandwidth bound only without a compute roof)", "TFLOP/s"),
    "decode_compute_bound_batch": ("Smallest compute-bound decode batch; 0: never", "sequences"),
    "decode_ever_compute_bound": ("Decode can become compute-bound at this context (1 yes, 0 no)", ""),
}
MAX_GPUS = 8
DECODE_TRAIL = (1, 4, 16, 64, 256, 1024, 4096)
BYTES = ("weights", "activations", "non_torch", "reserve", "kv_budget", "kv_demand")  # a bar's bytes per GPU

VIEWS = [("fit", "Memory fit on 1-8 GPUs"), ("roofline", "Roofline")]


@dataclass(frozen=True)
class Params(ModelGpu):
    weight_dtype: str = param(running_example()["weight_dtype"], label="Weight format", choices=dtype_choices())
    kv_dtype: str = kv_dtype_param(running_example()["kv_dtype"])
    # Tokens of context per sequence: the prompt of the prefill point, the cache of each decoding one.
    context_tokens: int = context_param(max=1_048_576)
    # Sequences decoding together (the decode point, and the KV cache the fit check needs).
    batch_size: int = param(32, label="Batch size", unit="sequences", min=1, max=4096, step=1, log=True)
    # GPUs the model is split over (tensor parallel); the fit chart shows 1 to 8 either way.
    num_gpus: int = param(1, label="GPUs", min=1, max=MAX_GPUS, step=1)


def _point(t: cm.StepTime) -> tuple[float, float]:
    """(FLOP per byte, attainable TFLOP/s) of a step timed at peak."""
    return t.intensity_flop_per_byte, t.flops / t.time_s / 1e12


def _bar(m: Model, gpu: Gpu, p: Params, n: int) -> dict[str, Any]:
    """vLLM's accounting on n GPUs, per GPU (the rank with the least KV room); None-free plain data."""
    # The largest TP size dividing both n and the heads, pipeline stages for the rest.
    tp = max(t for t in range(1, n + 1) if n % t == 0 and m.num_heads % t == 0)
    pp = n // tp
    row: dict[str, Any] = {"num_gpus": n, "tp": tp, "pp": pp, "capacity": gpu.visible_GiB * cm.GiB}
    if pp > m.num_layers:
        zero = dict.fromkeys(BYTES, 0.0)
        return {**row, **zero, "refused": True, "fits": False, "kv_token_capacity": 0, "max_concurrency": 0.0}
    a = vm.account(
        m, gpu, tp=tp, pp=pp, max_model_len=p.context_tokens, weight_dtype=p.weight_dtype, kv_dtype=p.kv_dtype,
        **vllm_defaults(gpu),
    )  # fmt: skip
    worst = min(a.stages, key=lambda s: s.kv_bytes)
    return {
        **row,
        "refused": False,
        "weights": worst.weight_bytes,
        "activations": worst.activation_bytes,
        "non_torch": worst.non_torch_bytes,
        "kv_budget": worst.kv_bytes,
        "kv_demand": p.batch_size * a.one_request_bytes,  # the batch's blocks, in the pool's page and group size
        "reserve": worst.total_bytes - worst.requested_bytes,
        "kv_token_capacity": a.kv_tokens,
        "max_concurrency": a.max_concurrency,
        "fits": worst.kv_bytes > 0 and p.batch_size <= a.max_concurrency,
    }


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> dict[str, Any]:
    m, gpu = p.resolved()
    bars = [_bar(m, gpu, p, n) for n in range(1, MAX_GPUS + 1)]
    chosen = bars[p.num_gpus - 1]
    kw: dict[str, Any] = {"weight_dtype": p.weight_dtype, "kv_dtype": p.kv_dtype, "eff": cm.IDEAL}
    path = cm.matmul_path(gpu, p.weight_dtype)
    ridge = cm.ridge_point(gpu, path)
    prefill = cm.prefill_time(m, gpu, p.context_tokens, **kw)
    decode = cm.decode_step_time(m, gpu, [p.context_tokens] * p.batch_size, **kw)
    trail = [_point(cm.decode_step_time(m, gpu, [p.context_tokens] * b, **kw)) for b in DECODE_TRAIL]
    bound_batch = cm.decode_compute_bound_batch(m, gpu, p.context_tokens, **kw) if ridge else None
    notes = []
    if ridge is None:
        notes.append(
            f"{gpu.name} publishes no tensor throughput: there is no compute roof and no ridge point, "
            "so only the bandwidth slope is drawn and every step is costed as memory-bound."
        )
    elif bound_batch is None:
        notes.append(
            f"At {p.context_tokens:,} tokens of context no decode batch becomes compute-bound: each sequence reads "
            "its own KV cache, so bytes grow with the batch as fast as FLOPs do."
        )
    fewest = next((n for n, b in enumerate(bars, 1) if b["fits"]), 0)
    if chosen["pp"] > 1:
        notes.append(
            f"vLLM splits the {m.num_heads} attention heads evenly, so {p.num_gpus} GPUs run as "
            f"TP {chosen['tp']} x PP {chosen['pp']} (pipeline stages)."
        )
    if fewest and m.num_heads % fewest:
        tp_alone = next((f"{n}." for n in range(fewest, MAX_GPUS + 1) if m.num_heads % n == 0), "more than 8.")
        notes.append(
            f"The fewest GPUs that fit, {fewest}, need pipeline stages; tensor parallelism alone needs {tp_alone}"
        )
    if path != cm.precision(p.weight_dtype).tensor_core:
        notes.append(f"{gpu.name} has no {p.weight_dtype} tensor-core path: the matmuls run on its bf16 tensor cores.")
    return {
        **p.stated("weight_dtype", "batch_size", "context_tokens", "num_gpus"),
        "matmul_path": path,
        "bandwidth_GBps": gpu.hbm_bandwidth_GBps,
        "peak_tflops": gpu.peak_tflops(path) or 0.0,
        "bars": bars,
        "prefill_point": _point(prefill),
        "decode_point": _point(decode),
        "prefill_bound": prefill.bound,
        "decode_bound": decode.bound,
        "decode_trail": trail,
        "decode_trail_batches": list(DECODE_TRAIL),
        "notes": notes,
        "metrics": {
            **{f"{k}_GB": chosen[k] / cm.GB for k in BYTES},
            "kv_token_capacity": chosen["kv_token_capacity"],
            "max_concurrency": chosen["max_concurrency"],
            "max_batch_at_context": int(chosen["max_concurrency"]),
            "fits": int(chosen["fits"]),
            "min_gpus_to_fit": fewest,
            "ridge_flop_per_byte": ridge or 0.0,
            "compute_roof_known": int(ridge is not None),
            "prefill_intensity": prefill.intensity_flop_per_byte,
            "decode_intensity": decode.intensity_flop_per_byte,
            "prefill_tflops": _point(prefill)[1],
            "decode_tflops": _point(decode)[1],
            "decode_compute_bound_batch": bound_batch or 0,
            "decode_ever_compute_bound": int(bound_batch is not None),
        },
    }


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    if view != "roofline":
        # Category labels (plotly would read "1" as a number): "3 PP" is 3 GPUs with pipeline stages.
        bars = r["bars"]
        x = [f"{b['num_gpus']}" + (" PP" if b["pp"] > 1 else "") for b in bars]
        layouts = [f"TP {b['tp']} x PP {b['pp']}" for b in bars]
        hover = "%{x} GPUs, %{customdata}: %{y:.1f} GB<extra>%{fullData.name}</extra>"
        kv = f"KV cache of {r['batch_size']:,} x {r['context_tokens']:,} tokens"
        kv += "" if any(b["kv_budget"] > 0 for b in bars) else " (no room for any: not drawn)"
        parts = [
            ("Weights", [b["weights"] for b in bars]),
            ("Activation peak", [b["activations"] for b in bars]),
            ("Non-torch", [b["non_torch"] for b in bars]),
            (kv, [min(b["kv_demand"], max(0.0, b["kv_budget"])) for b in bars]),
            ("KV room left", [max(0.0, b["kv_budget"] - b["kv_demand"]) for b in bars]),
            ("Reserve (1 - utilisation)", [b["reserve"] for b in bars]),
        ]
        data = [
            bar(x, [v / cm.GB for v in y], name, i, customdata=layouts, hovertemplate=hover)
            for i, (name, y) in enumerate(parts)
        ]
        data.append(
            markers(
                x, [b["capacity"] / cm.GB for b in bars], "Memory CUDA reports (the GPU's capacity)", 6, mode="markers"
            )
        )
        fewest = r["metrics"]["min_gpus_to_fit"]
        title = f"{r['model']} ({r['weight_dtype']}) on {r['gpu']}: " + (
            f"fits from {fewest} GPU(s)" if fewest else "does not fit on 8 GPUs"
        )
        axes = ("GPUs (PP: with pipeline stages)", "GB per GPU")
        return chart(data, title, *axes, barmode="stack", xaxis={"type": "category"})
    bw, peak, ridge = r["bandwidth_GBps"] * cm.GB / 1e12, r["peak_tflops"], r["metrics"]["ridge_flop_per_byte"]
    points = [r["prefill_point"], r["decode_point"], *r["decode_trail"]]
    lo = min(0.5, min(i for i, _ in points) / 2)
    hi = max(1e4, max(i for i, _ in points) * 2, ridge * 4)
    data = [
        line([lo, ridge or hi], [bw * lo, bw * (ridge or hi)], f"Bandwidth slope: {r['bandwidth_GBps']:,.0f} GB/s", 0)
    ]
    if ridge:
        data.append(line([ridge, hi], [peak, peak], f"Compute roof: {peak:,.0f} TFLOP/s ({r['matmul_path']})", 1))
    batches = [f"batch {b:,}" for b in r["decode_trail_batches"]]
    xs, ys = [i for i, _ in r["decode_trail"]], [t for _, t in r["decode_trail"]]
    data += [
        line(xs, ys, "Decode, batch 1 to 4,096", 2, mode="lines+markers", text=batches),
        markers([r["decode_point"][0]], [r["decode_point"][1]], f"Decode, batch {r['batch_size']:,}", 3),
        markers([r["prefill_point"][0]], [r["prefill_point"][1]], f"Prefill, {r['context_tokens']:,} tokens", 4),
    ]
    title = f"Roofline of {r['gpu']}" + (f": ridge at {ridge:,.1f} FLOP/B" if ridge else ": no published FLOPs")
    return chart(data, title, "Arithmetic intensity (FLOP per byte moved)", "Attainable TFLOP/s", xaxis=LOG, yaxis=LOG)


def summary(r: dict[str, Any], view: str) -> str:
    m = r["metrics"]
    n = r["num_gpus"]
    text = (
        f"On {'one' if n == 1 else f'each of {n} x'} {r['gpu']}, vLLM's accounting holds {m['weights_GB']:,.1f} GB of {r['weight_dtype']} weights, "
        f"an activation peak of {m['activations_GB']:,.1f} GB and {m['non_torch_GB']:,.1f} GB outside PyTorch; "
    )
    if m["kv_budget_GB"] > 0:
        text += (
            f"that leaves {m['kv_budget_GB']:,.1f} GB per GPU for the KV cache: vLLM would log {m['kv_token_capacity']:,} "
            f"tokens and a maximum concurrency of {m['max_concurrency']:,.2f}x at {r['context_tokens']:,} tokens "
            f"({m['max_batch_at_context']:,} whole sequences). "
        )
    else:
        text += f"they exceed what vLLM may use by {-m['kv_budget_GB']:,.1f} GB per GPU. "
    fits = "fits" if m["fits"] else "does not fit"
    fewest = f"the fewest GPUs that fit it: {m['min_gpus_to_fit']}." if m["min_gpus_to_fit"] else "not even on 8 GPUs."
    text += f"A batch of {r['batch_size']:,} needs {m['kv_demand_GB']:,.1f} GB of KV cache per GPU: it {fits}; {fewest}"
    if view == "roofline":
        text += f" Prefill runs at {m['prefill_intensity']:,.0f} FLOP/B, decode at batch {r['batch_size']:,} at "
        text += f"{m['decode_intensity']:,.1f} FLOP/B."
        if m["compute_roof_known"]:
            text += (
                f" The ridge point is {m['ridge_flop_per_byte']:,.1f} FLOP/B: prefill is {r['prefill_bound']}-bound "
                f"({m['prefill_tflops']:,.0f} TFLOP/s), decode {r['decode_bound']}-bound ({m['decode_tflops']:,.1f} TFLOP/s)."
            )
        if m["decode_ever_compute_bound"]:
            text += f" Decode turns compute-bound from batch {m['decode_compute_bound_batch']:,}."
    return text + "".join(" " + s for s in r["notes"])
