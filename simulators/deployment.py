"""Deployment: will this model fit on these GPUs under vLLM, and how many requests will it hold?

Model: vLLM's own start-up accounting, per GPU rank (simulators/vllm_memory.py): the memory CUDA
reports times gpu_memory_utilization, less the weights each rank holds under tensor (TP) and
pipeline (PP) parallelism, the activation peak of a profile run of max_num_batched_tokens and
the non-torch memory; what is left becomes KV blocks of block_size tokens. The answer is the two
lines vLLM logs, "GPU KV cache size: N tokens" and "Maximum concurrency for L tokens per request:
X", and a per-GPU memory bar. TP shards weights and KV heads (a rank keeps one KV head when there
are fewer heads than ranks, and every rank copies an MLA latent); PP splits the layers. A layout
that does not fit, or that vLLM would refuse, is a field error naming what to change.

References: 1) vllm-project/vllm, vllm/v1/worker/gpu_worker.py (determine_available_memory),
vllm/v1/core/kv_cache_utils.py (get_kv_cache_config, the two log lines); 2) Kwon et al. 2023,
PagedAttention (arXiv 2309.06180).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import costmodel as cm
from . import vllm_memory as vm
from .catalog import Gpu, Model, gpus, resolve_gpu, resolve_model, running_example, serve_defaults
from .parallel import check_link, pipeline_parallel_param, tensor_parallel_param
from .params import ParamError, dtype_choices, gpu_param, model_param, param
from .plotting import bar, layout
from .plotting import figure as make_figure

TITLE = "Deployment: vLLM's memory per GPU"
DESCRIPTION = "Weights, activations and KV cache on each GPU as vLLM accounts for them, and the two lines it logs."
METRICS = {
    "weights_GiB_per_gpu": ("Weights per GPU", "GiB"),
    "activation_GiB_per_gpu": ("Activation peak per GPU (profile run)", "GiB"),
    "kv_cache_GiB_per_gpu": ("KV cache per GPU", "GiB"),
    "kv_cache_tokens": ("GPU KV cache size (as logged)", "tokens"),
    "max_concurrency": ("Requests of max_model_len held at once (as logged)", "x"),
    "num_gpus": ("GPUs (tensor x pipeline)", "GPUs"),
}
BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)
TABLE_CONTEXTS = (2048, 4096, 8192, 16384, 32768, 65536, 131072)


def _weight_choices() -> list[tuple[str, str]]:
    return [("auto", "As the checkpoint (quantization_config), else BF16"), *dtype_choices()()]


# vLLM's defaults on the running example's GPU (assumptions.toml [vllm_defaults], the one place).
DEFAULTS = serve_defaults(gpus()[running_example()["gpu"]])

# The charts: memory per GPU, or requests held at each context length.
VIEWS = [("memory", "Memory per GPU"), ("concurrency", "Requests held by context length")]


@dataclass(frozen=True)
class Params:
    model: Any = model_param()
    gpu: Any = gpu_param()
    # Ranks a layer's matmuls and KV heads are split over, and stages the layers are split into:
    # the fields every serving simulator shares (simulators/parallel.py).
    tensor_parallel_size: int = tensor_parallel_param()
    pipeline_parallel_size: int = pipeline_parallel_param()
    # Share of what CUDA reports that vLLM may use (--gpu-memory-utilization).
    gpu_memory_utilization: float = param(
        DEFAULTS["gpu_memory_utilization"], label="GPU memory utilization", min=0.05, max=1.0, step=0.01
    )
    # Longest request, prompt plus output (--max-model-len).
    max_model_len: int = param(8192, label="Max model length", unit="tokens", min=16, max=10_485_760, step=1, log=True)
    # Tokens in the largest forward pass; sizes the profiled activation peak (--max-num-batched-tokens).
    max_num_batched_tokens: int = param(
        int(DEFAULTS["max_num_batched_tokens"]),
        label="Max batched tokens",
        unit="tokens",
        min=16,
        max=1_048_576,
        step=16,
        log=True,
    )
    # Requests in one batch; sizes the sampler's logits (--max-num-seqs). The default is what `vllm
    # serve` picks on the running example's GPU (1,024 on GPUs of 70 GiB or more, 256 below).
    max_num_seqs: int = param(
        int(DEFAULTS["max_num_seqs"]), label="Max sequences", unit="sequences", min=1, max=4096, step=1, log=True
    )
    # "auto" stores K and V in the model's dtype (bf16); fp8 halves them (--kv-cache-dtype).
    kv_cache_dtype: str = param("auto", label="KV cache format", choices=[("auto", "auto (bf16)"), ("fp8", "fp8")])
    weight_dtype: str = param("auto", label="Weight format", choices=_weight_choices)
    # Tokens per KV block (--block-size).
    block_size: int = param(int(DEFAULTS["block_size"]), label="Block size", unit="tokens", min=1, max=256, step=1)

    def check(self) -> None:
        m, gpu = resolve_model(self.model), resolve_gpu(self.gpu)
        if self.block_size not in BLOCK_SIZES:
            raise ParamError("block_size", f"must be one of {', '.join(map(str, BLOCK_SIZES))}")
        if m.num_heads % self.tensor_parallel_size:
            raise ParamError(
                "tensor_parallel_size",
                f"must divide {m.name}'s {m.num_heads} attention heads (vLLM splits them evenly)",
            )
        if self.pipeline_parallel_size > m.num_layers:
            raise ParamError("pipeline_parallel_size", f"must be at most {m.name}'s {m.num_layers} layers")
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ParamError("max_num_batched_tokens", f"must be at least max_num_seqs ({self.max_num_seqs})")
        if self.max_model_len > m.max_context_tokens:
            raise ParamError("max_model_len", f"must be at most {m.name}'s {m.max_context_tokens:,} positions")
        check_link(gpu, self.tensor_parallel_size * self.pipeline_parallel_size, "tensor_parallel_size")
        fit_problem(m, gpu, self)


def _dtypes(m: Model, p: Params) -> tuple[str, str]:
    weight = (m.weight_format or "bf16") if p.weight_dtype == "auto" else p.weight_dtype
    return weight, "bf16" if p.kv_cache_dtype == "auto" else "fp8"


def _account(m: Model, gpu: Gpu, p: Params) -> vm.VllmMemory:
    weight, kv = _dtypes(m, p)
    return vm.account(
        m,
        gpu,
        tp=p.tensor_parallel_size,
        pp=p.pipeline_parallel_size,
        gpu_memory_utilization=p.gpu_memory_utilization,
        max_model_len=p.max_model_len,
        max_num_batched_tokens=p.max_num_batched_tokens,
        max_num_seqs=p.max_num_seqs,
        kv_dtype=kv,
        weight_dtype=weight,
        block_size=p.block_size,
    )


def held_requests(m: Model, gpu: Gpu, context_tokens: int, **settings: Any) -> float:
    """Requests of `context_tokens` one GPU holds at once in vLLM's accounting, at this
    simulator's defaults unless `settings` (Params fields) say otherwise; 0 when nothing fits."""
    p = Params(model=m, gpu=gpu, max_model_len=context_tokens, **settings)
    return _account(m, gpu, p).max_concurrency


def fit_problem(m: Model, gpu: Gpu, p: Params) -> None:
    """Raise a field error when vLLM would refuse to start with this layout."""
    a = _account(m, gpu, p)
    worst = min(a.stages, key=lambda s: s.kv_bytes)
    if worst.kv_bytes <= 0:
        raise ParamError(
            "tensor_parallel_size",
            f"does not fit: weights {worst.weight_bytes / cm.GiB:.1f} GiB + activations "
            f"{worst.activation_bytes / cm.GiB:.1f} GiB + non-torch {worst.non_torch_bytes / cm.GiB:.1f} GiB "
            f"exceed {p.gpu_memory_utilization:g} x {gpu.visible_GiB:.2f} GiB = {worst.requested_bytes / cm.GiB:.1f} GiB "
            "per GPU; use more GPUs, a smaller weight format or a higher gpu_memory_utilization",
        )
    if a.num_blocks < a.blocks_per_request:
        kv_bytes = a.num_blocks * a.page_bytes * a.group_size
        raise ParamError(
            "max_model_len",
            f"one request of {p.max_model_len:,} tokens needs {a.one_request_bytes / cm.GiB:.2f} GiB of KV cache, "
            f"more than the {kv_bytes / cm.GiB:.2f} GiB available (vLLM refuses to start); lower max_model_len",
        )


def run(p: Params, *, seed: int = 0) -> dict[str, Any]:
    m, gpu = resolve_model(p.model), resolve_gpu(p.gpu)
    weight, kv = _dtypes(m, p)
    a = _account(m, gpu, p)
    kv_bytes = a.num_blocks * a.page_bytes * a.group_size
    per_context = [vm_concurrency(m, a, c, p) for c in TABLE_CONTEXTS if c <= m.max_context_tokens]
    notes = list(m.notes)
    if a.kv_heads_replicated:
        what = "the MLA latent" if m.kv_lora_rank else f"{m.num_kv_heads} KV heads"
        notes.append(f"{what} cannot be split over {p.tensor_parallel_size} ranks: each rank keeps its own copy")
    if m.ignored_keys:
        notes.append("config keys not read: " + ", ".join(m.ignored_keys))
    if gpu.cuda_total_GiB is None:
        notes.append(
            f"{gpu.name}: no published log gives the memory CUDA reports; the data-sheet {gpu.memory_GiB:g} GiB is used"
        )
    elif gpu.cuda_total_derived:
        notes.append(f"{gpu.name}: the {gpu.cuda_total_GiB:g} GiB CUDA reports is derived, not read from a log")
    gib = cm.GiB
    stages = [
        {
            "stage": s.stage,
            "num_layers": s.num_layers,
            "total_GiB": s.total_bytes / gib,
            "requested_GiB": s.requested_bytes / gib,
            "weights_GiB": s.weight_bytes / gib,
            "activation_GiB": s.activation_bytes / gib,
            "non_torch_GiB": s.non_torch_bytes / gib,
            "kv_GiB": kv_bytes / gib,
        }
        for s in a.stages
    ]
    return {
        "model": m.name,
        "gpu": gpu.name,
        "tensor_parallel_size": p.tensor_parallel_size,
        "pipeline_parallel_size": p.pipeline_parallel_size,
        "weight_dtype": weight,
        "kv_cache_dtype": kv,
        "max_model_len": p.max_model_len,
        "gpu_memory_utilization": p.gpu_memory_utilization,
        "stages": stages,
        "cudagraph_GiB": a.cudagraph_bytes / gib,
        "kv_heads_per_rank": a.kv_heads_per_rank,
        "kv_groups": a.num_groups,
        "num_blocks": a.num_blocks,
        "log_lines": a.log_lines,
        "concurrency_by_context": per_context,
        "notes": notes,
        "metrics": {
            "weights_GiB_per_gpu": max(s.weight_bytes for s in a.stages) / gib,
            "activation_GiB_per_gpu": max(s.activation_bytes for s in a.stages) / gib,
            "kv_cache_GiB_per_gpu": kv_bytes / gib,
            "kv_cache_tokens": a.kv_tokens,
            "max_concurrency": a.max_concurrency,
            "num_gpus": p.tensor_parallel_size * p.pipeline_parallel_size,
        },
    }


def vm_concurrency(m: Model, a: vm.VllmMemory, context: int, p: Params) -> dict[str, Any]:
    """Requests of `context` tokens the same pool holds (the block count does not depend on it)."""
    per_request = sum(vm.blocks_per_request(m, g, context, p.max_num_batched_tokens, p.block_size) for g in a.groups)
    return {"context_tokens": context, "max_concurrency": a.num_blocks / per_request}


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    if view == "concurrency":
        rows = r["concurrency_by_context"]
        data = [bar([f"{x['context_tokens']:,}" for x in rows], [x["max_concurrency"] for x in rows], "Requests held")]
        title = f"{r['model']}: requests of each length the KV cache holds at once"
        # Category axis: plotly would read "1,024" as the number 1024 and space the bars by value.
        return make_figure(
            data, layout(title, "Tokens per request (prompt + output)", "Requests at once", xaxis={"type": "category"})
        )
    tp = r["tensor_parallel_size"]
    names = [f"Stage {s['stage']} ({tp} GPU{'s' if tp > 1 else ''} alike)" for s in r["stages"]]
    parts = [
        ("Weights", "weights_GiB"),
        ("Activation peak", "activation_GiB"),
        ("Non-torch", "non_torch_GiB"),
        ("KV cache", "kv_GiB"),
    ]
    data = [bar(names, [s[key] for s in r["stages"]], label, i) for i, (label, key) in enumerate(parts)]
    spare = [
        s["requested_GiB"] - s["weights_GiB"] - s["activation_GiB"] - s["non_torch_GiB"] - s["kv_GiB"]
        for s in r["stages"]
    ]
    data.append(bar(names, spare, "Requested, less than one block", 4))
    data.append(
        bar(names, [s["total_GiB"] - s["requested_GiB"] for s in r["stages"]], "Left to CUDA graphs and others", 5)
    )
    title = f"{r['model']} on {tp * len(r['stages'])} x {r['gpu']}: memory per GPU"
    return make_figure(data, layout(title, "", "GiB per GPU", barmode="stack"))


def summary(r: dict[str, Any], view: str) -> str:
    x = r["metrics"]
    return (
        f"{r['model']} on {x['num_gpus']} x {r['gpu']} (TP {r['tensor_parallel_size']}, PP "
        f"{r['pipeline_parallel_size']}): each GPU holds {x['weights_GiB_per_gpu']:.2f} GiB of {r['weight_dtype']} "
        f"weights, a {x['activation_GiB_per_gpu']:.2f} GiB activation peak and {x['kv_cache_GiB_per_gpu']:.2f} GiB "
        f"of KV cache. vLLM would log: "
        + "; ".join(r["log_lines"][2:])
        + ". Requests held at once by length: "
        + ", ".join(f"{x['context_tokens']:,} tokens {x['max_concurrency']:,.1f}" for x in r["concurrency_by_context"])
        + "."
    )
