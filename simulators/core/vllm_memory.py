"""vLLM's start-up memory accounting, per GPU rank: what it profiles, what it leaves for KV.

Model (vLLM V1, `vllm/v1/worker/gpu_worker.py` determine_available_memory and
`vllm/v1/core/kv_cache_utils.py`, the releases of 2025-2026):

    requested = total CUDA memory x gpu_memory_utilization           (per GPU, what CUDA reports)
    kv_memory = requested - weights - activation peak - non-torch    (per rank)
    num_blocks = kv_memory // (page_bytes x group_size)              (min over ranks)
    "GPU KV cache size: {num_blocks // num_groups x block_size:,} tokens"
    "Maximum concurrency for {max_model_len:,} tokens per request: {num_blocks / blocks_per_request:.2f}x"

- Weights per rank: tensor parallelism (TP) splits every matmul and the vocabulary; pipeline
  parallelism (PP) gives each stage a run of layers (vLLM's get_pp_indices: the remainder goes
  to the stages before the last), the embedding to the first and the LM head to the last.
- KV per rank: TP splits the KV heads; with fewer KV heads than ranks each rank keeps one
  (replicated). MLA keeps one latent per token, which every rank copies.
- Expert parallelism and data-parallel attention (a mixture of experts; FusedMoEParallelConfig.make
  in vllm/model_executor/layers/fused_moe/config.py): a MoE layer is sharded over all tp x dp
  ranks, every expert split that many ways, or whole experts per rank with --enable-expert-parallel
  (expert_share); attention, dense layers, shared experts, embedding and head are split over TP and
  copied on each dp rank, which is its own engine with its own requests and KV cache (so an MLA
  latent is no longer copied).
- Activation peak: the profile run is one forward pass of `max_num_batched_tokens` tokens and a
  sampler pass over min(max_num_seqs, max_num_batched_tokens) rows of fp32 logits (gpu_model_runner
  profile_run). vLLM measures it; we estimate it with constants fitted to v0.19.0's logs; non-torch
  memory (cuBLAS/NCCL workspaces grown during the profile run) likewise. CUDA graphs are captured
  after the KV cache is allocated, so these versions do not subtract them: they must fit in the
  (1 - gpu_memory_utilization) margin, and we report them.
- Layers of several kinds (sliding window and full, as gpt-oss and Gemma) are split into KV
  groups of `group_size` layers that share one block pool (_get_kv_cache_groups_uniform_page_size).

References: 1) vllm-project/vllm, vllm/v1/worker/gpu_worker.py, vllm/v1/core/kv_cache_utils.py,
vllm/v1/kv_cache_interface.py, vllm/distributed/utils.py (get_pp_indices); 2) vLLM PR #10511
(memory profiling, logged breakdowns).
"""

from collections import Counter
from dataclasses import dataclass

from . import costmodel as cm
from .catalog import Gpu, Model, assumptions, serve_defaults

GiB = cm.GiB


@dataclass(frozen=True)
class StageMemory:
    """One pipeline stage; its tensor-parallel ranks are alike. Bytes per GPU."""

    stage: int
    num_layers: int
    total_bytes: float  # what CUDA reports for the GPU
    requested_bytes: float  # total x gpu_memory_utilization
    weight_bytes: float
    activation_bytes: float
    non_torch_bytes: float
    kv_bytes: float  # requested - the three above; negative: does not fit
    num_blocks: int  # blocks this rank could hold (before the minimum over ranks)


@dataclass(frozen=True)
class VllmMemory:
    stages: list[StageMemory]
    kv_heads_per_rank: int  # MLA: 1 latent "head"
    kv_heads_replicated: bool  # fewer KV heads than TP ranks: each rank keeps a copy
    page_bytes: int  # one block of one layer on one rank
    group_size: int  # layers sharing one block of the pool
    groups: list[str]  # the attention kind of each KV cache group (one group for a uniform model)
    num_blocks: int  # the minimum over ranks: what the scheduler uses
    kv_tokens: int  # as logged
    blocks_per_request: int  # blocks a request of max_model_len takes, all groups
    max_concurrency: float  # as logged
    one_request_bytes: float  # KV one request of max_model_len needs on a rank
    cudagraph_bytes: float  # reported, not subtracted
    log_lines: list[str]

    @property
    def num_groups(self) -> int:
        return len(self.groups)

    @property
    def fits(self) -> bool:
        return all(s.kv_bytes > 0 for s in self.stages) and self.num_blocks >= self.blocks_per_request


def pp_layer_counts(num_layers: int, pp: int) -> list[int]:
    """Layers per stage as vLLM's get_pp_indices splits them (extra layers before the last stage)."""
    counts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        counts[-i] += 1
    return counts


def kv_heads_per_rank(m: Model, tp: int) -> tuple[int, bool]:
    """KV heads each rank stores, and whether they are replicated copies."""
    return (1, tp > 1) if m.kv_lora_rank else (max(1, m.num_kv_heads // tp), m.num_kv_heads < tp)


def page_bytes(m: Model, tp: int, kv_dtype: str, block_size: int) -> int:
    """Bytes of one block of one layer on one rank (vllm AttentionSpec.page_size_bytes)."""
    per_value = cm.bytes_per_value(kv_dtype)
    if m.kv_lora_rank:  # MLASpec: one latent + rotary key, no separate value
        return int(block_size * (m.kv_lora_rank + m.qk_rope_head_dim) * per_value)
    heads, _ = kv_heads_per_rank(m, tp)
    return int(2 * block_size * heads * m.head_dim * per_value)


def expert_share(m: Model, tp: int, dp: int, ep: bool) -> float:
    """Share of the routed experts the fullest rank holds: 1 / (tp x dp) (flatten_tp_size = dp x tp),
    or with `ep` whole experts, E // ep_size and one more on the first E % ep_size ranks
    (determine_expert_map). Shared experts are built outside FusedMoE (deepseek_v2.py): TP only."""
    return -(-m.num_experts // (tp * dp)) / m.num_experts if ep and m.is_moe else 1 / (tp * dp)


def weight_bytes(
    m: Model, weight_dtype: str, tp: int, layers: int, *, first: bool, last: bool, dp: int = 1, ep: bool = False
) -> float:
    """Weights one rank of a stage of `layers` layers holds (expert_share; a vision tower on the first
    stage). MXFP4 checkpoints (gpt-oss) quantise only the routed experts (modules_to_not_convert)."""
    p = cm.param_counts(m)
    share = layers / m.num_layers
    per_value = cm.block_bytes_per_value(weight_dtype)
    routed = cm.routed_expert_params(m)
    rest_value = cm.BF16_BYTES if weight_dtype == "mxfp4" and m.is_moe else per_value
    experts = routed * per_value * expert_share(m, tp, dp, ep)
    block = (experts + (p.block_linear - routed) * rest_value / tp) * share
    embed = (p.embedding + m.vision_params) * cm.BF16_BYTES / tp if first else 0.0
    head = cm.lm_head_params(m) * cm.BF16_BYTES / tp if last and (not m.tie_word_embeddings or not first) else 0.0
    return block + embed + head + p.other * share * cm.BF16_BYTES + rope_cache_bytes(m)


def rope_cache_bytes(m: Model) -> float:
    """The rotary cos/sin table every rank builds: max_position_embeddings x rotary_dim values in the
    model dtype, shared by the layers, not split by TP (vllm/model_executor/layers/rotary_embedding/
    base.py, _compute_cos_sin_cache). In "Model loading took": 32 MiB for Llama 3.1, 2.5 GiB for
    Llama 4 Scout (10,485,760 positions)."""
    rotary_dim = m.qk_rope_head_dim if m.kv_lora_rank else m.head_dim
    return float(m.max_context_tokens * rotary_dim * cm.BF16_BYTES)


def activation_bytes(m: Model, pp: int, max_num_batched_tokens: int, max_num_seqs: int, *, last: bool) -> float:
    """Peak of the profile run on one rank, fitted to vLLM v0.19.0's "torch peak memory increase"
    (assumptions.toml [vllm_memory]): a forward part per batched token (plus the routed experts'
    workspace, pipeline buffers) and fp32 logits on the last stage. The logs show no change with TP."""
    a = assumptions()["vllm_memory"]
    tokens = max_num_batched_tokens
    forward = tokens * a["forward_bytes_per_token"]
    if m.is_moe:
        forward += tokens * m.num_experts_per_tok * m.moe_intermediate_size * a["moe_bytes_per_routed_value"]
    if pp > 1:
        forward += tokens * m.hidden_size * a["pp_bytes_per_hidden_value"]
    rows = min(max_num_seqs, max_num_batched_tokens)
    sampler = rows * m.vocab_size * a["sampler_bytes_per_logit"] if last else 0.0
    return float(forward + sampler)


def non_torch_bytes(tp: int, pp: int) -> float:
    """Memory the profile run grows outside PyTorch (NCCL buffers), per GPU; `tp` is the ranks a
    collective spans (tp x dp for a MoE: an assumption, the fitted logs have no data parallelism)."""
    a = assumptions()["vllm_memory"]
    gib = a["non_torch_tp_GiB"] if tp > 1 else a["non_torch_pp_GiB"] if pp > 1 else a["non_torch_GiB"]
    return float(gib) * GiB


def _groups(kinds: list[str]) -> tuple[int, list[str]]:
    """(group_size, kind of each group), as vLLM groups layers of several kinds."""
    by_kind = Counter(kinds)
    smallest, largest = min(by_kind.values()), max(by_kind.values())
    size = largest if largest < smallest * 1.25 else smallest
    return size, [kind for kind, n in by_kind.items() for _ in range(-(-n // size))]


def blocks_per_request(m: Model, kind: str, max_model_len: int, batched: int, block_size: int) -> int:
    """Blocks one request of max_model_len keeps in a group of this kind (spec max_memory_usage)."""
    if kind == "sliding" and m.sliding_window:  # SlidingWindowSpec: window - 1 + a chunk, + 1 block
        tokens = min(m.sliding_window - 1 + batched, max_model_len)
        return -(-tokens // block_size) + 1
    if kind == "chunked" and m.attention_chunk_size:
        tokens = min(m.attention_chunk_size + batched, max_model_len)
        return -(-tokens // block_size)
    return -(-max_model_len // block_size)


def account(
    m: Model,
    gpu: Gpu,
    *,
    tp: int = 1,
    pp: int = 1,
    gpu_memory_utilization: float | None = None,
    max_model_len: int = 8192,
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    kv_dtype: str = "bf16",
    weight_dtype: str = "bf16",
    block_size: int | None = None,
    dp: int = 1,
    ep: bool = False,
) -> VllmMemory:
    """vLLM's accounting for one deployment (ValueError for a layout vLLM would refuse); a setting
    left None takes `vllm serve`'s default (serve_defaults). The figures and log lines are one DP
    rank's engine's (each has its own requests and KV cache); the layout holds `dp` times its requests."""
    d = serve_defaults(gpu)
    utilization = d["gpu_memory_utilization"] if gpu_memory_utilization is None else gpu_memory_utilization
    batched = int(d["max_num_batched_tokens"]) if max_num_batched_tokens is None else max_num_batched_tokens
    seqs = int(d["max_num_seqs"]) if max_num_seqs is None else max_num_seqs
    block_size = int(d["block_size"]) if block_size is None else block_size
    if m.num_heads % tp:
        raise ValueError(f"{m.num_heads} attention heads are not divisible by tensor_parallel_size {tp}")
    if pp > m.num_layers:
        raise ValueError(f"pipeline_parallel_size {pp} exceeds the model's {m.num_layers} layers")
    if dp < 1:
        raise ValueError(f"data_parallel_size must be at least 1, got {dp}")
    if ep and not m.is_moe:
        raise ValueError(f"{m.name} has no experts: --enable-expert-parallel needs a mixture of experts")
    if ep and tp * dp > m.num_experts:
        raise ValueError(f"tp x dp = {tp * dp} ranks exceed the model's {m.num_experts} experts")
    total = gpu.visible_GiB * GiB
    requested = total * utilization
    non_torch = non_torch_bytes(tp * dp if m.is_moe else tp, pp)
    page = page_bytes(m, tp, kv_dtype, block_size)
    stages: list[StageMemory] = []
    start = 0
    size, groups = 1, ["full"]
    for i, n in enumerate(pp_layer_counts(m.num_layers, pp)):
        kinds = [k for k in m.kinds[start : start + n] if k != "none"]
        start += n
        w = weight_bytes(m, weight_dtype, tp, n, first=i == 0, last=i == pp - 1, dp=dp, ep=ep)
        act = activation_bytes(m, pp, batched, seqs, last=i == pp - 1)
        kv = requested - w - act - non_torch
        if kinds:
            size, groups = _groups(kinds)
        blocks = max(0, int(kv // (page * size))) if kinds else 0
        stages.append(StageMemory(i, n, total, requested, w, act, non_torch, kv, blocks))
    num_blocks = min(s.num_blocks for s in stages)
    kv_tokens = num_blocks // len(groups) * block_size
    per_request = sum(blocks_per_request(m, g, max_model_len, batched, block_size) for g in groups)
    concurrency = num_blocks / per_request
    one_request = per_request * page * size
    heads, replicated = kv_heads_per_rank(m, tp)
    graphs = assumptions()["vllm_memory"]["cudagraph_GiB"] * GiB
    lines = [
        f"Model loading took {max(s.weight_bytes for s in stages) / GiB:.4f} GiB",
        f"Available KV cache memory: {min(s.kv_bytes for s in stages) / GiB:.2f} GiB",
        f"GPU KV cache size: {kv_tokens:,} tokens",
        f"Maximum concurrency for {max_model_len:,} tokens per request: {concurrency:.2f}x",
    ]
    return VllmMemory(
        stages, heads, replicated, page, size, groups, num_blocks, kv_tokens, per_request,
        concurrency, one_request, graphs, lines,
    )  # fmt: skip
