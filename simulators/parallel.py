"""Parallel layouts shared by the serving simulators: one definition of the fields, one set of checks.

Every serving simulator declares its layout with the field makers below (the names are vLLM's
flags), reads it back with `layout_of(params)` and checks it with `check_layout`, which raises a
field error naming the field, never an exception:

- tensor_parallel_size must divide the attention heads (vLLM splits them evenly);
- pipeline_parallel_size at most the layers;
- data_parallel_size > 1 (data-parallel attention) and enable_expert_parallel need a mixture
  of experts: for a dense model, more copies are replicas (the cluster simulator);
- a layout of more than one GPU needs a link to time (the Apple M2 Ultra publishes none);
- the model and the requests must fit each GPU rank as vLLM accounts for it (vllm_memory.py):
  weights per rank, the profile run's activation peak and non-torch memory leave the KV blocks.
  With experts spread over tp x dp ranks, each rank holds 1 / (tp x dp) of the routed experts.

How a layout changes a step's time is costmodel.step_time's (parallel_time.py has the formulas).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import costmodel as cm
from . import vllm_memory as vm
from .catalog import Gpu, Model, resolve_gpu, serve_defaults
from .params import ParamError, param


def tensor_parallel_param() -> Any:
    """GPUs one layer's matmuls and KV heads are split over (--tensor-parallel-size)."""
    return param(1, label="Tensor parallel", unit="GPUs", min=1, max=64, step=1, help="--tensor-parallel-size")


def pipeline_parallel_param() -> Any:
    """Stages the layers are split into, one GPU group each (--pipeline-parallel-size)."""
    return param(1, label="Pipeline parallel", unit="stages", min=1, max=16, step=1, help="--pipeline-parallel-size")


def data_parallel_param() -> Any:
    """Attention ranks of a mixture of experts, each with its own requests (--data-parallel-size)."""
    return param(
        1, label="Data parallel (MoE attention)", unit="ranks", min=1, max=64, step=1, help="--data-parallel-size"
    )


def expert_parallel_param() -> Any:
    """Whole experts spread over tp x dp ranks instead of every expert split (--enable-expert-parallel)."""
    return param(False, label="Expert parallel (MoE)", help="--enable-expert-parallel")


@dataclass(frozen=True)
class Layout:
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: bool = False

    @property
    def num_gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def cost_kw(self) -> dict[str, Any]:
        """The layout as costmodel.step_time's keywords."""
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "ep": self.ep}

    def describe(self) -> str:
        parts = [f"TP {self.tp}"] + [f"PP {self.pp}"] * (self.pp > 1) + [f"DP {self.dp}"] * (self.dp > 1)
        return f"{self.num_gpus} GPU{'s' if self.num_gpus > 1 else ''} ({', '.join(parts)}{', EP' if self.ep else ''})"


def layout_of(p: Any) -> Layout:
    """The layout of a Params that declares any of the four fields (1 GPU for those it lacks)."""
    return Layout(
        int(getattr(p, "tensor_parallel_size", 1)),
        int(getattr(p, "pipeline_parallel_size", 1)),
        int(getattr(p, "data_parallel_size", 1)),
        bool(getattr(p, "enable_expert_parallel", False)),
    )


def check_link(gpu: Any, num_gpus: int, field: str) -> None:
    """Raise a field error when `num_gpus` > 1 GPUs of this kind have no link to time."""
    g = gpu if isinstance(gpu, Gpu) else resolve_gpu(gpu)
    if num_gpus > 1 and cm.link_GBps_one_way(g) is None:
        raise ParamError(field, f"{g.name} publishes no GPU-to-GPU or host link figure; use 1 GPU")


def check_shape(m: Model, gpu: Gpu, lay: Layout) -> None:
    """Field errors for a layout vLLM would refuse whatever the memory."""
    if m.num_heads % lay.tp:
        raise ParamError("tensor_parallel_size", f"must divide {m.name}'s {m.num_heads} attention heads")
    if lay.pp > m.num_layers:
        raise ParamError("pipeline_parallel_size", f"must be at most {m.name}'s {m.num_layers} layers")
    if lay.dp > 1 and not m.is_moe:
        raise ParamError("data_parallel_size", f"{m.name} has no experts: more copies of it are replicas (cluster)")
    if lay.ep and not m.is_moe:
        raise ParamError("enable_expert_parallel", f"{m.name} has no experts to spread")
    if lay.ep and lay.tp * lay.dp > m.num_experts:
        raise ParamError("data_parallel_size", f"tp x dp ranks exceed {m.name}'s {m.num_experts} experts")
    check_link(gpu, lay.num_gpus, grow_field(lay))


def grow_field(lay: Layout, alone: str = "tensor_parallel_size") -> str:
    """The field to raise when the layout holds too little: the parallelism in use (`alone` on 1 GPU)."""
    if lay.num_gpus == 1:
        return alone
    return "pipeline_parallel_size" if lay.pp > 1 else "data_parallel_size" if lay.tp == 1 else "tensor_parallel_size"


@dataclass(frozen=True)
class RankFit:
    """What one GPU rank holds, vLLM's accounting, and the requests the whole layout holds."""

    memory: vm.VllmMemory
    weight_bytes: float  # the fullest rank's
    kv_blocks: int  # per attention rank
    max_concurrency: float  # requests of the context, all dp attention ranks together


def rank_fit(
    m: Model,
    gpu: Gpu,
    lay: Layout,
    *,
    weight_dtype: str,
    kv_dtype: str,
    context: int,
    sparse: bool = False,
    **vllm: Any,
) -> RankFit:
    """vLLM's per-rank accounting for this layout (experts over tp x dp ranks: vm.account); a 2:4
    sparse checkpoint frees more memory for KV (its block matmuls at sparse24_bytes_per_value)."""
    a = vm.account(
        m,
        gpu,
        tp=lay.tp,
        pp=lay.pp,
        dp=lay.dp,
        ep=lay.ep,
        max_model_len=context,
        kv_dtype=kv_dtype,
        weight_dtype=weight_dtype,
        **vllm,
    )
    stage_share = max(s.num_layers for s in a.stages) / m.num_layers
    per_value = cm.block_bytes_per_value(weight_dtype)
    spread = 0.0
    if sparse:
        saved = per_value - cm.block_bytes_per_value(weight_dtype, sparse=True)
        spread += cm.param_counts(m).block_linear * saved * stage_share / lay.tp
    worst = min(a.stages, key=lambda s: s.kv_bytes)
    blocks = max(0, int((worst.kv_bytes + spread) // (a.page_bytes * a.group_size)))
    if not spread:
        blocks = a.num_blocks
    return RankFit(a, worst.weight_bytes - spread, blocks, lay.dp * blocks / a.blocks_per_request)


def check_layout(
    m: Model,
    gpu: Gpu,
    lay: Layout,
    *,
    weight_dtype: str,
    kv_dtype: str,
    context: int,
    batch: int = 1,
    batch_field: str = "batch_size",
) -> RankFit:
    """Raise a field error when the layout is refused or `batch` requests of `context` tokens do not fit."""
    check_shape(m, gpu, lay)
    fit = rank_fit(m, gpu, lay, weight_dtype=weight_dtype, kv_dtype=kv_dtype, context=context)
    if fit.kv_blocks <= 0:
        raise ParamError(
            grow_field(lay),
            f"{m.name}'s {weight_dtype} weights ({fit.weight_bytes / cm.GiB:.1f} GiB per GPU on {lay.describe()}) and "
            f"the activation peak leave no KV cache on {gpu.name}; use more GPUs or a smaller format",
        )
    if fit.max_concurrency < batch:
        raise ParamError(
            batch_field,
            f"{lay.describe()} x {gpu.name} hold {fit.max_concurrency:.1f} requests of {context:,} tokens, "
            f"fewer than {batch:,}",
        )
    return fit


def check_fit(m: Model, gpu: Gpu, tp: int, *, weight_dtype: str, kv_dtype: str, context: int, batch: int) -> None:
    """check_layout for a tensor-parallel layout alone (kept for callers that know only tp)."""
    check_layout(m, gpu, Layout(tp), weight_dtype=weight_dtype, kv_dtype=kv_dtype, context=context, batch=batch)


def kv_token_capacity(m: Model, gpu: Gpu, lay: Layout, *, weight_dtype: str, kv_dtype: str, context: int) -> int:
    """KV tokens the layout holds, all attention ranks together, in vLLM's 16-token blocks."""
    fit = rank_fit(m, gpu, lay, weight_dtype=weight_dtype, kv_dtype=kv_dtype, context=context)
    return lay.dp * (fit.kv_blocks // fit.memory.num_groups) * 16


def pooled_kv_tokens(
    m: Model, gpu: Gpu, lay: Layout, *, weight_dtype: str, kv_dtype: str, max_num_batched_tokens: int | None = None
) -> int:
    """KV tokens by the course's byte arithmetic (costmodel.memory_fit), taken per GPU rank.

    One GPU: memory_fit itself. More: each rank's memory x utilisation, less the fullest rank's
    weights and one activation workspace, holds its share of every token's KV (replicated KV
    heads and MLA latents count on every rank); dp attention ranks hold their own requests.
    """
    if lay.num_gpus == 1:
        return cm.memory_fit(
            m, gpu, weight_dtype=weight_dtype, kv_dtype=kv_dtype, max_num_batched_tokens=max_num_batched_tokens
        ).kv_token_capacity
    d = serve_defaults(gpu)  # vLLM's defaults, one place (assumptions.toml [vllm_defaults])
    tokens = int(d["max_num_batched_tokens"]) if max_num_batched_tokens is None else max_num_batched_tokens
    usable = gpu.memory_GiB * cm.GiB * d["gpu_memory_utilization"]
    counts = vm.pp_layer_counts(m.num_layers, lay.pp)
    worst = 0
    for i, n in enumerate(counts):
        w = vm.weight_bytes(m, weight_dtype, lay.tp, n, first=i == 0, last=i == lay.pp - 1, dp=lay.dp, ep=lay.ep)
        per_token = cm.kv_bytes_per_token(m, kv_dtype) * n / m.num_layers * cm.kv_replication(m, lay.tp) / lay.tp
        kv = usable - w - cm.activation_bytes(m, tokens)
        held = int(kv // per_token) if kv > 0 and per_token else 0
        worst = held if i == 0 else min(worst, held)
    return lay.dp * worst


def check_serving(m: Model, gpu: Gpu, lay: Layout, *, weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> None:
    """Field errors for a serving simulator's layout: the shape, then room for 4,096 KV tokens."""
    check_shape(m, gpu, lay)
    tokens = pooled_kv_tokens(m, gpu, lay, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    if tokens >= 4096:
        return
    raise ParamError(
        grow_field(lay, "model"),
        f"{m.name} needs {cm.weight_bytes(m, weight_dtype) / cm.GB:,.0f} GB of weights; {lay.describe()} of "
        f"{gpu.name} leave room for only {tokens:,} tokens of KV cache. Use more GPUs (tensor or pipeline "
        "parallel), a smaller model or a larger GPU.",
    )


def vllm_defaults(gpu: Gpu) -> dict[str, Any]:
    """`vllm serve`'s limits on this GPU and the course's gpu_memory_utilization, as deployment uses them."""
    from .engine.scheduler import vllm_serve_defaults  # the engine imports this module

    tokens, seqs = vllm_serve_defaults(gpu)
    util = serve_defaults(gpu)["gpu_memory_utilization"]
    return {"gpu_memory_utilization": util, "max_num_batched_tokens": tokens, "max_num_seqs": seqs}


def vllm_kv_tokens(
    m: Model, gpu: Gpu, lay: Layout, *, weight_dtype: str = "bf16", kv_dtype: str = "bf16", sparse: bool = False
) -> int:
    """KV tokens vLLM would log for this layout ("GPU KV cache size"), all attention ranks together,
    at `vllm serve`'s defaults for the GPU (0 when the weights leave no room)."""
    if m.num_heads % lay.tp or lay.pp > m.num_layers:
        return 0
    context = min(m.max_context_tokens, 8192)
    fit = rank_fit(
        m, gpu, lay, weight_dtype=weight_dtype, kv_dtype=kv_dtype, context=context, sparse=sparse, **vllm_defaults(gpu)
    )
    return lay.dp * (fit.kv_blocks // fit.memory.num_groups) * 16
