"""GPU memory and the roofline: does the model fit, and which roof binds each phase.

Fit: weights, the activation workspace and the KV cache of `batch_size` sequences of
`context_tokens` against the memory of 1 to 8 GPUs (tensor parallel), as costmodel.memory_fit
counts them: usable = capacity * gpu_memory_utilization (the rest is the reserve left to the CUDA
context), and the KV budget is what weights and activations leave of it. The batch fits when its
KV cache fits in that budget.

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

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import costmodel as cm
from .catalog import resolve_gpu, resolve_model, running_example
from .params import dtype_choices, gpu_param, model_param, param
from .plotting import bar, layout, line, markers
from .plotting import figure as make_figure

TITLE = "GPU memory and the roofline"
DESCRIPTION = (
    "Weights, activations and KV cache against the memory of 1 to 8 GPUs; and the roofline with the "
    "prefill and decode operating points."
)
METRICS = {
    "weights_GB": ("Weights", "GB"),
    "activations_GB": ("Activation workspace", "GB"),
    "reserve_GB": ("Memory left unused (reserve)", "GB"),
    "kv_budget_GB": ("Memory left for the KV cache (negative: weights do not fit)", "GB"),
    "kv_demand_GB": ("KV cache of the batch", "GB"),
    "kv_token_capacity": ("KV tokens that fit", "tokens"),
    "max_batch_at_context": ("Sequences that fit at this context", "sequences"),
    "fits": ("The batch fits (1 yes, 0 no)", ""),
    "min_gpus_to_fit": ("Fewest GPUs (1-8) that fit the batch; 0: none", "GPUs"),
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


# The charts figure() draws, (value, label): the first is the default.
VIEWS = [("fit", "Memory fit on 1-8 GPUs"), ("roofline", "Roofline")]


@dataclass(frozen=True)
class Params:
    model: Any = model_param()
    gpu: Any = gpu_param()
    weight_dtype: str = param(running_example()["weight_dtype"], label="Weight format", choices=dtype_choices())
    kv_dtype: str = param(
        running_example()["kv_dtype"], label="KV cache format", choices=dtype_choices("bf16", "fp8", "int8", "int4")
    )
    # Tokens of context per sequence: the prompt of the prefill point, the cache of each decoding one.
    context_tokens: int = param(
        running_example()["prompt_tokens"], label="Context", unit="tokens", min=1, max=1_048_576, log=True
    )
    # Sequences decoding together (the decode point, and the KV cache the fit check needs).
    batch_size: int = param(32, label="Batch size", unit="sequences", min=1, max=4096, step=1, log=True)
    # GPUs the model is split over (tensor parallel); the fit chart shows 1 to 8 either way.
    num_gpus: int = param(1, label="GPUs", min=1, max=MAX_GPUS, step=1)


def _point(t: cm.StepTime) -> tuple[float, float]:
    """(FLOP per byte, attainable TFLOP/s) of a step timed at peak."""
    return t.intensity_flop_per_byte, t.flops / t.time_s / 1e12


def run(p: Params, *, seed: int = 0) -> dict[str, Any]:
    m, gpu = resolve_model(p.model), resolve_gpu(p.gpu)
    per_seq = cm.kv_bytes_per_sequence(m, p.context_tokens, p.kv_dtype)
    demand = p.batch_size * per_seq
    bars = []
    for n in range(1, MAX_GPUS + 1):
        f = cm.memory_fit(m, gpu, num_gpus=n, weight_dtype=p.weight_dtype, kv_dtype=p.kv_dtype)
        bars.append(
            {
                "capacity": f.capacity_bytes,
                "weights": f.weight_bytes,
                "activations": f.activation_bytes,
                "kv_budget": f.kv_bytes,
                "reserve": f.capacity_bytes - f.usable_bytes,
                "fits": f.fits and demand <= f.kv_bytes,
                "kv_token_capacity": f.kv_token_capacity,
            }
        )
    chosen = bars[p.num_gpus - 1]
    kw: dict[str, Any] = {"weight_dtype": p.weight_dtype, "kv_dtype": p.kv_dtype, "eff": cm.IDEAL}
    path = cm.matmul_path(gpu, p.weight_dtype)
    ridge = cm.ridge_point(gpu, path)
    prefill = cm.prefill_time(m, gpu, p.context_tokens, **kw)
    decode = cm.decode_step_time(m, gpu, [p.context_tokens] * p.batch_size, **kw)
    trail = [_point(cm.decode_step_time(m, gpu, [p.context_tokens] * b, **kw)) for b in DECODE_TRAIL]
    bound_batch = cm.decode_compute_bound_batch(m, gpu, p.context_tokens, **kw) if ridge else None
    peak = gpu.peak_tflops(path)
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
    if fewest and m.num_heads % fewest:
        splits = [n for n in range(fewest, MAX_GPUS + 1) if m.num_heads % n == 0]
        notes.append(
            f"Tensor parallelism splits the {m.num_heads} attention heads evenly, so an engine would use "
            + (f"{splits[0]} GPUs rather than {fewest}." if splits else f"a split other than {fewest} GPUs.")
        )
    if path != cm.precision(p.weight_dtype).tensor_core:
        notes.append(f"{gpu.name} has no {p.weight_dtype} tensor-core path: the matmuls run on its bf16 tensor cores.")
    return {
        "model": m.name,
        "gpu": gpu.name,
        "weight_dtype": p.weight_dtype,
        "matmul_path": path,
        "batch_size": p.batch_size,
        "context_tokens": p.context_tokens,
        "num_gpus": p.num_gpus,
        "bandwidth_GBps": gpu.hbm_bandwidth_GBps,
        "peak_tflops": peak or 0.0,
        "bars": bars,
        "prefill_point": _point(prefill),
        "decode_point": _point(decode),
        "prefill_bound": prefill.bound,
        "decode_bound": decode.bound,
        "decode_trail": trail,
        "decode_trail_batches": list(DECODE_TRAIL),
        "notes": notes,
        "metrics": {
            "weights_GB": chosen["weights"] / cm.GB,
            "activations_GB": chosen["activations"] / cm.GB,
            "reserve_GB": chosen["reserve"] / cm.GB,
            "kv_budget_GB": chosen["kv_budget"] / cm.GB,
            "kv_demand_GB": demand / cm.GB,
            "kv_token_capacity": chosen["kv_token_capacity"],
            "max_batch_at_context": chosen["kv_token_capacity"] // cm.kv_tokens_held(m, p.context_tokens),
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


def _fit_figure(r: dict[str, Any]) -> dict[str, Any]:
    x = [f"{n} GPU{'s' if n > 1 else ''}" for n in range(1, len(r["bars"]) + 1)]
    demand = r["metrics"]["kv_demand_GB"]
    parts = [
        ("Weights", [b["weights"] / cm.GB for b in r["bars"]]),
        ("Activations", [b["activations"] / cm.GB for b in r["bars"]]),
        (f"KV cache of {r['batch_size']:,} x {r['context_tokens']:,} tokens", [demand] * len(x)),
        ("KV room left", [max(0.0, b["kv_budget"] / cm.GB - demand) for b in r["bars"]]),
        ("Reserve (not used)", [b["reserve"] / cm.GB for b in r["bars"]]),
    ]
    data = [bar(x, y, name, i) for i, (name, y) in enumerate(parts)]
    data.append(markers(x, [b["capacity"] / cm.GB for b in r["bars"]], "GPU memory", 6, mode="markers"))
    title = f"{r['model']} ({r['weight_dtype']}) on {r['gpu']}: fits from {r['metrics']['min_gpus_to_fit']} GPU(s)"
    if not r["metrics"]["min_gpus_to_fit"]:
        title = f"{r['model']} ({r['weight_dtype']}) on {r['gpu']}: does not fit on 8 GPUs"
    return make_figure(data, layout(title, "Tensor-parallel GPUs", "GB (all GPUs together)", barmode="stack"))


def _roofline_figure(r: dict[str, Any]) -> dict[str, Any]:
    bw, peak, ridge = r["bandwidth_GBps"] * cm.GB / 1e12, r["peak_tflops"], r["metrics"]["ridge_flop_per_byte"]
    points = [r["prefill_point"], r["decode_point"], *r["decode_trail"]]
    lo = min(0.5, min(i for i, _ in points) / 2)
    hi = max(1e4, max(i for i, _ in points) * 2, ridge * 4)
    data = [
        line([lo, ridge or hi], [bw * lo, bw * (ridge or hi)], f"Bandwidth slope: {r['bandwidth_GBps']:,.0f} GB/s", 0)
    ]
    if ridge:
        data.append(line([ridge, hi], [peak, peak], f"Compute roof: {peak:,.0f} TFLOP/s ({r['matmul_path']})", 1))
    data += [
        line(
            [i for i, _ in r["decode_trail"]],
            [t for _, t in r["decode_trail"]],
            "Decode, batch 1 to 4,096",
            2,
            mode="lines+markers",
            text=[f"batch {b:,}" for b in r["decode_trail_batches"]],
        ),
        markers([r["decode_point"][0]], [r["decode_point"][1]], f"Decode, batch {r['batch_size']:,}", 3),
        markers([r["prefill_point"][0]], [r["prefill_point"][1]], f"Prefill, {r['context_tokens']:,} tokens", 4),
    ]
    title = f"Roofline of {r['gpu']}" + (f": ridge at {ridge:,.1f} FLOP/B" if ridge else ": no published FLOPs")
    return make_figure(
        data,
        layout(
            title,
            "Arithmetic intensity (FLOP per byte moved)",
            "Attainable TFLOP/s",
            xaxis={"type": "log"},
            yaxis={"type": "log"},
        ),
    )


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    return _roofline_figure(r) if view == "roofline" else _fit_figure(r)


def summary(r: dict[str, Any], view: str) -> str:
    m = r["metrics"]
    n = r["num_gpus"]
    text = f"{r['model']} needs {m['weights_GB']:.1f} GB of {r['weight_dtype']} weights and {m['activations_GB']:.1f} GB of activations; "
    if m["kv_budget_GB"] > 0:
        text += (
            f"on {n} x {r['gpu']} that leaves {m['kv_budget_GB']:.1f} GB for the KV cache "
            f"({m['kv_token_capacity']:,} tokens, {m['max_batch_at_context']:,} sequences of {r['context_tokens']:,}). "
        )
    else:
        text += f"on {n} x {r['gpu']} they exceed the usable memory by {-m['kv_budget_GB']:.1f} GB. "
    text += f"A batch of {r['batch_size']:,} needs {m['kv_demand_GB']:.1f} GB of KV cache: it " + (
        "fits" if m["fits"] else "does not fit"
    )
    text += (
        f"; the fewest GPUs that fit it: {m['min_gpus_to_fit']}." if m["min_gpus_to_fit"] else "; not even on 8 GPUs."
    )
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
