"""A deployment's layout over GPUs and what each rank holds: tensor, pipeline and data parallel
ranks with optional expert parallelism (Layout), vLLM's per-rank accounting for it (rank_fit) and
the KV tokens it holds. The widget fields and field checks built on it are simulators/parallel.py."""

from dataclasses import dataclass
from typing import Any

from . import costmodel as cm
from . import vllm_memory as vm
from .catalog import Gpu, Model, serve_defaults


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
        """The layout as the keywords of costmodel.step_time, EngineSpec and vllm_memory.account."""
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "ep": self.ep}

    def describe(self, gpu: str = "") -> str:
        """ "2 x H100 SXM (TP 2)", or with no GPU named "2 GPUs (TP 2)"."""
        parts = [f"TP {self.tp}"] + [f"PP {self.pp}"] * (self.pp > 1) + [f"DP {self.dp}"] * (self.dp > 1)
        shape = f"({', '.join(parts)}{', EP' if self.ep else ''})"
        return f"{self.num_gpus} x {gpu} {shape}" if gpu else f"{self.num_gpus} GPU{'s' * (self.num_gpus > 1)} {shape}"


@dataclass(frozen=True)
class RankFit:
    """What one GPU rank holds, vLLM's accounting, and the requests the whole layout holds."""

    memory: vm.VllmMemory
    weight_bytes: float  # the fullest rank's
    kv_blocks: int  # per attention rank
    max_concurrency: float  # requests of the context, all dp attention ranks together
    kv_tokens: int  # per attention rank, as vLLM logs them ("GPU KV cache size")


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
    a = vm.account(m, gpu, **lay.cost_kw(), max_model_len=context, kv_dtype=kv_dtype, weight_dtype=weight_dtype, **vllm)
    stage_share = max(s.num_layers for s in a.stages) / m.num_layers
    saved = cm.block_bytes_per_value(weight_dtype) - cm.block_bytes_per_value(weight_dtype, sparse=True)
    spread = cm.param_counts(m).block_linear * saved * stage_share / lay.tp if sparse else 0.0
    worst = min(a.stages, key=lambda s: s.kv_bytes)
    blocks = max(0, int((worst.kv_bytes + spread) // (a.page_bytes * a.group_size))) if spread else a.num_blocks
    block_size = int(vllm.get("block_size") or serve_defaults(gpu)["block_size"])  # as vm.account reads it
    tokens = blocks // a.num_groups * block_size
    return RankFit(a, worst.weight_bytes - spread, blocks, lay.dp * blocks / a.blocks_per_request, tokens)


def pooled_kv_tokens(
    m: Model, gpu: Gpu, lay: Layout, *, weight_dtype: str, kv_dtype: str, max_num_batched_tokens: int | None = None
) -> int:
    """KV tokens by the course's byte arithmetic (costmodel.memory_fit), per GPU rank: its memory x
    utilisation, less its weights and one activation workspace, holds its share of every token's KV
    (replicated KV heads and MLA latents on every rank); dp attention ranks hold their own requests."""
    if lay.num_gpus == 1:
        return cm.memory_fit(
            m, gpu, weight_dtype=weight_dtype, kv_dtype=kv_dtype, max_num_batched_tokens=max_num_batched_tokens
        ).kv_token_capacity
    d = serve_defaults(gpu)  # vLLM's defaults, one place (assumptions.toml [vllm_defaults])
    tokens = int(d["max_num_batched_tokens"]) if max_num_batched_tokens is None else max_num_batched_tokens
    usable = gpu.memory_GiB * cm.GiB * d["gpu_memory_utilization"]
    held = []
    for i, n in enumerate(vm.pp_layer_counts(m.num_layers, lay.pp)):
        w = vm.weight_bytes(m, weight_dtype, lay.tp, n, first=i == 0, last=i == lay.pp - 1, dp=lay.dp, ep=lay.ep)
        per_token = cm.kv_bytes_per_token(m, kv_dtype) * n / m.num_layers * cm.kv_replication(m, lay.tp) / lay.tp
        kv = usable - w - cm.activation_bytes(m, tokens)
        held.append(int(kv // per_token) if kv > 0 and per_token else 0)
    return lay.dp * min(held)


def vllm_defaults(gpu: Gpu) -> dict[str, Any]:
    """`vllm serve`'s limits on this GPU and the course's gpu_memory_utilization (serve_defaults but block_size)."""
    return {k: v for k, v in serve_defaults(gpu).items() if k != "block_size"}


def vllm_kv_tokens(
    m: Model, gpu: Gpu, lay: Layout, *, weight_dtype: str = "bf16", kv_dtype: str = "bf16", sparse: bool = False
) -> int:
    """KV tokens vLLM would log for this layout ("GPU KV cache size"), all attention ranks together,
    at `vllm serve`'s defaults for the GPU (0 when the weights leave no room)."""
    if m.num_heads % lay.tp or lay.pp > m.num_layers:
        return 0
    context = min(m.max_context_tokens, 8192)
    fit = rank_fit(m, gpu, lay, weight_dtype=weight_dtype, kv_dtype=kv_dtype, context=context, sparse=sparse)
    return lay.dp * fit.kv_tokens
