"""The one cost model: bytes, FLOPs and time of transformer inference on a GPU.

Every time, byte and FLOP figure in the course comes from the small pure functions below, fed by
the catalogues (`catalog.py`) and an engine profile. The model is a roofline per forward pass
(Williams, Waterman and Patterson 2009): a step takes as long as the slower of its compute and its
memory traffic, then what cannot overlap them,

    time_s = max(flops / (peak_flops * gemm_efficiency(M)),
                 bytes / (peak_bandwidth * bandwidth_efficiency))
             + communication_s + activation_s + overhead_s

and both parts are reported, so a lesson can show which roof binds.

What a step moves and computes (one forward pass over a batch of sequences, each sequence i
bringing q_i new tokens on top of c_i tokens already in its KV cache):

- Weights: every matmul weight is read once per step (the input embedding table is not: a
  lookup reads one row per token). For a mixture of experts, only the experts the batch routes
  to are read: with uniform routing of k of E experts, E * (1 - (1 - k/E)^tokens) per layer.
- KV cache: each sequence reads its c_i cached tokens and writes q_i new ones.
- Matmul FLOPs: 2 per active weight per token (one multiply, one add).
- Attention FLOPs: for a query at position p, 2 * heads * (d_qk + d_v) per layer per key
  (QK^T and the weighted sum of V); summed over the causal triangle for prefill.
  MLA is counted in its absorbed form as served (d_qk = kv_lora_rank + qk_rope_head_dim,
  d_v = kv_lora_rank), per the DeepSeek-V2 paper (arXiv 2405.04434, section 2.1.3).
- Tensor parallelism over n GPUs divides weights, KV and FLOPs by n and adds two all-reduces
  per layer of tokens * hidden_size activations (Megatron-LM, Shoeybi et al. 2019,
  arXiv 1909.08053), each moving 2 (n - 1) / n of its bytes over one direction of the link
  (ring all-reduce), not overlapped with compute. KV heads fewer than n are read whole by the
  ranks that share them, and an MLA latent by every rank (kv_replication).
- Pipeline parallelism (pp stages, micro-batches as vLLM keeps pp batches in flight) and, for a
  mixture of experts, data-parallel attention with expert parallelism (all-to-all dispatch and
  combine) are costed by the formulas of parallel_time.py, with their sources.

What the hardware reaches is the engine profile's (`eff`, simulators/core/efficiency.py): a share of
peak bandwidth, a GEMM efficiency per tensor-core path that falls at small M (the block GEMMs' M
is the step's tokens, the LM head's its sequences), an attention efficiency, the activation
traffic between kernels, a fixed time per pass and per layer, and the all-reduces' latency. The
ideal ceiling sets every factor to 1.0 and every fixed cost to 0. Left out: the softmax's own
time and overlap of communication with compute. The validation page measures what the
omissions and the fitted factors cost.

Weights in a quantised format are the block matmuls only; the embedding table and the LM head
stay in bf16, as LLM Compressor's recipes do (`ignore=["lm_head"]`).

Units: bytes and FLOPs as plain counts; GB = 10^9 bytes, GiB = 2^30 bytes (the course uses GiB
for KV cache and GB for vendor memory and bandwidth figures); times in seconds (`_s`).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import efficiency as profiles
from . import parallel_time as pt
from .catalog import Gpu, Model, Precision, assumptions, precisions, serve_defaults

GB = 1e9
GiB = 2**30
BF16_BYTES = 2


# ---------------------------------------------------------------------------------------------
# Parameters and bytes


@dataclass(frozen=True)
class ParamCounts:
    # Matmul weights inside the transformer blocks: the part a quantisation scheme compresses.
    block_linear: int
    # Of those, the ones one token touches (all of them for a dense model; top-k experts for MoE).
    block_linear_active: int
    embedding: int  # input token (and learned position) embeddings: a lookup, not a matmul
    lm_head: int  # 0 when tied to the embedding
    other: int  # norms, biases, routers

    @property
    def total(self) -> int:
        return self.block_linear + self.embedding + self.lm_head + self.other

    @property
    def active(self) -> int:
        """Parameters one token uses, counting the embedding, as model cards do for MoE."""
        return self.block_linear_active + self.embedding + self.lm_head + self.other


def _attention_params(m: Model) -> tuple[int, int]:
    """(matmul weights, biases and norms) of one attention block."""
    h = m.hidden_size
    if m.kv_lora_rank:  # MLA: low-rank query and key-value projections
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = h * m.q_lora_rank + m.q_lora_rank * m.num_heads * qk if m.q_lora_rank else h * m.num_heads * qk
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv += m.kv_lora_rank * m.num_heads * (m.qk_nope_head_dim + m.v_head_dim)
        o = m.num_heads * m.v_head_dim * h
        return q + kv + o, m.q_lora_rank + m.kv_lora_rank
    q_out, kv_out = m.num_heads * m.head_dim, m.num_kv_heads * m.head_dim
    linear = h * q_out + 2 * h * kv_out + q_out * h
    bias = 0
    if m.attention_bias:
        bias = q_out + 2 * kv_out
    if m.mlp == "gelu":  # GPT-2: every projection has a bias
        bias = q_out + 2 * kv_out + h
    return linear, bias


def param_counts(m: Model) -> ParamCounts:
    """Parameter counts from the shape (checked against published totals in the tests)."""
    h = m.hidden_size
    attn_linear, attn_other = _attention_params(m)
    norms = 4 * h if m.mlp == "gelu" else 2 * h  # LayerNorm has a bias; RMSNorm does not
    if m.mlp == "gelu":
        dense_mlp, dense_other = 2 * h * m.intermediate_size, m.intermediate_size + h
    else:
        dense_mlp, dense_other = 3 * h * m.intermediate_size, 0
    moe_layers = m.num_layers - m.first_k_dense if m.is_moe else 0
    dense_layers = m.num_layers - moe_layers
    expert = 3 * h * m.moe_intermediate_size
    linear = m.num_layers * attn_linear + dense_layers * dense_mlp
    active = linear + moe_layers * (m.num_experts_per_tok + m.num_shared_experts) * expert
    linear += moe_layers * (m.num_experts + m.num_shared_experts) * expert
    other = m.num_layers * (attn_other + norms) + dense_layers * dense_other
    other += moe_layers * h * m.num_experts  # router
    other += 2 * h if m.mlp == "gelu" else h  # final norm
    embedding = m.vocab_size * h + (m.max_context_tokens * h if m.mlp == "gelu" else 0)
    lm_head = 0 if m.tie_word_embeddings else m.vocab_size * h
    return ParamCounts(linear, active, embedding, lm_head, other)


def bytes_per_value(dtype: str) -> float:
    """Stored bytes per value of a catalogue format, group scales included."""
    return precision(dtype).bytes_per_value


def precision(dtype: str) -> Precision:
    try:
        return precisions()[dtype]
    except KeyError:
        raise ValueError(f"unknown number format '{dtype}'; known: {', '.join(precisions())}") from None


def sparse24_bytes_per_value(dtype: str) -> float:
    """Stored bytes per original value of a 2:4 structured-sparse matrix in `dtype`.

    Two of every four values are kept, and each kept value carries a 2-bit index of its position
    in the group of four (NVIDIA's 2:4 format, the same for 16- and 8-bit values):
    bytes = bytes_per_value / 2 + (2 bits / 8) / 2. FP8: 0.5 + 0.125 = 0.625 B per weight.
    """
    return bytes_per_value(dtype) / 2 + 2 / 8 / 2


def block_bytes_per_value(weight_dtype: str, sparse: bool = False) -> float:
    """Bytes per block-matmul weight: dense, or 2:4 sparse with its index metadata."""
    return sparse24_bytes_per_value(weight_dtype) if sparse else bytes_per_value(weight_dtype)


def unstructured_bytes_per_value(dtype: str, sparsity: float, layout: str = "bitmask") -> float:
    """Stored bytes per original value of a matrix with a fraction `sparsity` of zeros anywhere.

    - "dense": the zeros are stored like any other value (what a dense kernel reads): b.
    - "bitmask": the kept values plus one bit per position saying kept or zero: (1 - s) b + 1/8.
    - "csr": the kept values, each with a 16-bit column index (enough for rows of up to 65,536
      values; the row pointers are negligible): (1 - s) (b + 2).
    b = bytes_per_value(dtype). At 50% in bf16: dense 2, bitmask 1.125 (as 2:4), csr 2 bytes.
    """
    if not 0 <= sparsity < 1:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")
    b = bytes_per_value(dtype)
    if layout == "dense":
        return b
    if layout == "bitmask":
        return (1 - sparsity) * b + 1 / 8
    if layout == "csr":
        return (1 - sparsity) * (b + 2)
    raise ValueError(f"unknown sparse layout '{layout}'; known: dense, bitmask, csr")


def weight_bytes(m: Model, weight_dtype: str = "bf16", *, sparse: bool = False) -> float:
    """Bytes to hold all weights: block matmuls in `weight_dtype` (2:4 sparse if asked), the rest in bf16."""
    p = param_counts(m)
    block = block_bytes_per_value(weight_dtype, sparse)
    return p.block_linear * block + (p.total - p.block_linear) * BF16_BYTES


def streamed_weight_bytes(
    m: Model, weight_dtype: str = "bf16", num_tokens: int = 1, *, sparse: bool = False, per_value: float | None = None
) -> float:
    """Weight bytes one forward pass over `num_tokens` tokens must read from memory.

    `per_value` overrides the stored bytes per block-matmul weight (e.g. unstructured_bytes_per_value).

    The embedding table is looked up, not streamed. For MoE, the expected number of distinct
    experts hit by `num_tokens` tokens under uniform routing is E * (1 - (1 - k/E)^tokens).
    """
    p = param_counts(m)
    linear = p.block_linear - routed_expert_params(m) + routed_params_read(m, num_tokens)
    rest = lm_head_params(m) + p.other  # a tied head still reads the embedding table
    block = block_bytes_per_value(weight_dtype, sparse) if per_value is None else per_value
    return linear * block + rest * BF16_BYTES


def routed_expert_params(m: Model) -> int:
    """Parameters of the routed experts, all MoE layers (0 for a dense model)."""
    if not m.is_moe:
        return 0
    return (m.num_layers - m.first_k_dense) * m.num_experts * 3 * m.hidden_size * m.moe_intermediate_size


def routed_params_read(m: Model, num_tokens: int) -> int:
    """Expected routed-expert parameters `num_tokens` tokens touch: E (1 - (1 - k/E)^tokens) experts."""
    if not m.is_moe:
        return 0
    hit = 1.0 - (1.0 - m.num_experts_per_tok / m.num_experts) ** max(num_tokens, 1)
    return round(routed_expert_params(m) * hit)  # expected count of parameters read


def kv_layers(m: Model) -> int:
    """Layers that keep a KV cache (linear-attention and state-space layers keep none)."""
    return sum(1 for kind in m.kinds if kind != "none")


def kv_bytes_per_token(m: Model, kv_dtype: str = "bf16") -> float:
    """KV-cache bytes one token adds to one sequence, all layers that keep a cache.

    Standard attention keeps a key and a value per KV head: 2 * layers * kv_heads * head_dim.
    MLA keeps one compressed latent plus the rotary key: layers * (kv_lora_rank + rope_dim).
    """
    if m.kv_lora_rank:
        values = kv_layers(m) * (m.kv_lora_rank + m.qk_rope_head_dim)
    else:
        values = 2 * kv_layers(m) * m.num_kv_heads * m.head_dim
    return values * bytes_per_value(kv_dtype)


def layer_tokens_held(m: Model, kind: str, context_tokens: int) -> int:
    """Tokens one layer of this kind keeps for a sequence of `context_tokens`."""
    if kind == "sliding" and m.sliding_window:
        return min(context_tokens, m.sliding_window)
    if kind == "chunked" and m.attention_chunk_size:
        return min(context_tokens, m.attention_chunk_size)
    return 0 if kind == "none" else context_tokens


def kv_tokens_held(m: Model, context_tokens: int) -> int:
    """Tokens a sequence keeps in cache, averaged over its KV layers: all of them, or the window
    for sliding-window layers (interleaved local/global models average the two)."""
    n = kv_layers(m)
    if n == 0:
        return 0
    held = sum(layer_tokens_held(m, kind, context_tokens) for kind in m.kinds)
    return -(-held // n)  # ceiling: never report less cache than is held


def kv_bytes_per_sequence(m: Model, context_tokens: int, kv_dtype: str = "bf16") -> float:
    n = kv_layers(m)
    held = sum(layer_tokens_held(m, kind, context_tokens) for kind in m.kinds)
    return held * kv_bytes_per_token(m, kv_dtype) / n if n else 0.0


# ---------------------------------------------------------------------------------------------
# FLOPs


def lm_head_params(m: Model) -> int:
    """The LM head is a vocab x hidden matmul whether or not it shares the embedding's weights."""
    return m.vocab_size * m.hidden_size


def attention_flops_per_key(m: Model) -> float:
    """FLOPs one query spends on one cached key, all layers: 2 * heads * (d_qk + d_v) * layers."""
    if m.kv_lora_rank:
        d_qk, d_v = m.kv_lora_rank + m.qk_rope_head_dim, m.kv_lora_rank
    else:
        d_qk = d_v = m.head_dim
    return 2.0 * m.num_heads * (d_qk + d_v) * m.num_layers


def attention_flops(m: Model, new_tokens: int, cached_tokens: int = 0) -> float:
    """Causal attention of `new_tokens` queries over `cached_tokens` plus themselves.

    Query j (1-based) sees cached_tokens + j keys: sum = T * c + T (T + 1) / 2.
    """
    t, c = new_tokens, cached_tokens
    return attention_flops_per_key(m) * (t * c + t * (t + 1) / 2)


# ---------------------------------------------------------------------------------------------
# Time


# An engine profile (simulators/core/efficiency.py, data/engine_profiles.toml) is the efficiency every
# time is priced with: achieved shares of peak per kernel path, the GEMM's small-M curve, fixed
# costs per pass and per layer, activation traffic. It is an input here; that module imports
# nothing from this one.
Efficiency = profiles.EngineProfile
IDEAL = profiles.IDEAL
DEFAULT_ENGINE = profiles.DEFAULT


def default_efficiency() -> Efficiency:
    """The default engine's (DEFAULT_ENGINE) profile: what every time a reader sees is priced with
    unless a simulator's engine choice or "ideal" says otherwise."""
    return profiles.profile(DEFAULT_ENGINE)


def efficiency(ideal: bool, engine: str = DEFAULT_ENGINE) -> Efficiency:
    """An engine's profile, or with `ideal` its ceiling: the same kernel paths, every factor 1.0
    and no fixed cost (the physical floor of that engine's times)."""
    p = profiles.profile(engine)
    return profiles.ceiling(p) if ideal else p


def roofline_s(compute_s: float, memory_s: float, communication_s: float = 0.0) -> float:
    """A step's time: the binding roof (compute or memory; they overlap) plus communication after it."""
    return (compute_s if compute_s > memory_s else memory_s) + communication_s


def speculative_tokens_per_pass(acceptance_rate: float, num_draft_tokens: int) -> float:
    """Expected tokens one target pass emits with k draft tokens, each accepted with probability a
    independently: the accepted prefix plus one, (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023, eq. 1)."""
    k, a = num_draft_tokens, acceptance_rate
    if k == 0:
        return 1.0
    return float(k + 1) if a >= 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)


def speculative_time_per_token_s(
    step_s: float, verify_s: float, num_draft_tokens: int, draft_cost_ratio: float, acceptance_rate: float
) -> float:
    """Time per emitted token with speculation: k draft steps, each draft_cost_ratio of a target
    decode step (step_s), plus one verify pass (verify_s), per expected tokens of one pass."""
    drafts_s = step_s * num_draft_tokens * draft_cost_ratio
    return (verify_s + drafts_s) / speculative_tokens_per_pass(acceptance_rate, num_draft_tokens)


@dataclass(frozen=True)
class StepTime:
    compute_s: float  # matmul + attention FLOPs at the achieved tensor throughput (0 if unknown)
    memory_s: float  # weight + KV bytes at the achieved bandwidth
    communication_s: float  # tensor-parallel all-reduces
    flops: float  # per GPU
    bytes: float  # per GPU
    compute_known: bool  # False when the GPU publishes no figure for the matmul path
    matmul_path: str  # tensor-core path the matmuls ran on: "bf16", "fp8" or "int8"
    # Of compute_s, the attention FLOPs' share (engine profiles give attention its own efficiency).
    attention_s: float = 0.0
    # The engine's fixed time per forward pass: its step overhead and a fixed time per layer
    # (efficiency.fixed_overhead_s); the all-reduces' latency is in communication_s.
    overhead_s: float = 0.0
    # Activation traffic between a layer's kernels (norms, rotary, SwiGLU, GEMM inputs and outputs):
    # memory-bound elementwise work, serial with the GEMMs (activation_s).
    activation_s: float = 0.0

    @property
    def time_s(self) -> float:
        return roofline_s(self.compute_s, self.memory_s, self.communication_s) + self.overhead_s + self.activation_s

    @property
    def serial_s(self) -> float:
        """What runs after the roofline, not overlapped: communication, activation traffic, fixed costs."""
        return self.communication_s + self.activation_s + self.overhead_s

    @property
    def bound(self) -> str:
        """Which roof binds: "compute", "memory" or "communication"."""
        if self.communication_s > max(self.compute_s, self.memory_s):
            return "communication"
        return "compute" if self.compute_s > self.memory_s else "memory"

    @property
    def intensity_flop_per_byte(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0


def matmul_path(gpu: Gpu, weight_dtype: str, activation_dtype: str | None = None) -> str:
    """Tensor-core path of the block matmuls: both operands must be in a format the GPU multiplies.

    By default FP8 and INT8 weights run with activations in the same format (W8A8); INT4 is
    weight-only (W4A16): weights are dequantised and the bf16 tensor cores do the work. Without
    a native path (FP8 on an A100) the same happens, as vLLM's weight-only FP8 (Marlin) kernels
    do on Ampere.
    """
    act = activation_dtype or (weight_dtype if weight_dtype in ("fp8", "int8") else "bf16")
    path = precision(act).tensor_core
    if precision(weight_dtype).tensor_core != path or gpu.peak_tflops(path) is None:
        return "bf16"
    return path


def missing_compute_figure(gpu: Gpu, weight_dtype: str = "bf16") -> str:
    """The tensor-throughput key a compute-bound answer on `gpu` needs and the catalogue lacks
    ("" when it has them): without it a prefill could only be priced as a memory-only floor."""
    path = matmul_path(gpu, weight_dtype)
    for p in dict.fromkeys((path, "bf16")):
        if gpu.peak_tflops(p) is None:
            return "dense_bf16_tflops" if p == "bf16" else f"dense_{p}_{'tops' if p == 'int8' else 'tflops'}"
    return ""


def link_GBps_one_way(gpu: Gpu) -> float | None:
    """One direction of the GPU-to-GPU link (catalogues give both directions added)."""
    both = gpu.interconnect_GBps or gpu.host_link_GBps
    return None if both is None else both / 2


def step_time(
    m: Model,
    gpu: Gpu,
    seqs: list[tuple[int, int]],
    *,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    activation_dtype: str | None = None,
    eff: Efficiency | None = None,
    tp: int = 1,
    sparse: bool = False,
    weight_bytes_per_value: float | None = None,
    pp: int = 1,
    dp: int = 1,
    ep: bool = False,
) -> StepTime:
    """Time of one forward pass over `seqs`, a list of (new_tokens, cached_tokens) per sequence.

    The layout is `tp` tensor-parallel ranks, `pp` pipeline stages (the pass is then a round in
    which every sequence gains a token: parallel_time.py) and, for a mixture of experts, `dp`
    data-parallel attention ranks, with the experts spread over tp x dp ranks when `ep`.

    `sparse` uses the 2:4 structured-sparse tensor rate for the block matmuls and halves their
    weight bytes (plus 2 bits of metadata per kept value: sparse24_bytes_per_value).
    `weight_bytes_per_value` overrides only the stored bytes per block-matmul weight, e.g. an
    unstructured-sparse layout (unstructured_bytes_per_value): GPUs have no tensor-core path for
    unstructured sparsity, so the matmuls still run at the dense rate.
    """
    # attention_flops(m, q, c) inlined: the same float operations in the same order, without a
    # call per sequence (steps of thousands of sequences are costed in inner loops).
    per_key = attention_flops_per_key(m)
    attention = sum([per_key * (q * c + q * (q + 1) / 2) for q, c in seqs])
    held: dict[int, int] = {}  # kv_tokens_held walks every layer: once per distinct context
    kv_tokens = 0
    for q, c in seqs:
        h = held.get(c)
        if h is None:
            h = held[c] = kv_tokens_held(m, c)
        kv_tokens += h + q
    return _step_time(
        m,
        gpu,
        tokens=sum(q for q, _ in seqs),
        num_seqs=len(seqs),
        attention_flops=attention,
        kv_tokens=kv_tokens,
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
        activation_dtype=activation_dtype,
        eff=eff,
        tp=tp,
        sparse=sparse,
        weight_bytes_per_value=weight_bytes_per_value,
        pp=pp,
        dp=dp,
        ep=ep,
    )


def kv_replication(m: Model, tp: int) -> float:
    """How many times over tp ranks hold a sequence's KV cache: 1 when the KV heads split evenly;
    tp / kv_heads when there are fewer heads than ranks (each keeps one); tp for an MLA latent,
    which every rank copies (vLLM; simulators/core/vllm_memory.py)."""
    if m.kv_lora_rank:
        return float(tp)
    return tp / m.num_kv_heads if m.num_kv_heads < tp else 1


def _step_time(
    m: Model,
    gpu: Gpu,
    *,
    tokens: int,
    num_seqs: int,
    attention_flops: float,
    kv_tokens: int,
    weight_dtype: str,
    kv_dtype: str,
    activation_dtype: str | None,
    eff: Efficiency | None,
    tp: int,
    sparse: bool,
    weight_bytes_per_value: float | None,
    pp: int = 1,
    dp: int = 1,
    ep: bool = False,
) -> StepTime:
    """step_time from the batch's totals: new tokens, sequences, attention FLOPs and KV tokens read.

    Per GPU, with n = tp x dp ranks side by side and m = micro_batches(sequences / dp, pp):
    compute = F / (n m); memory = W_dense / tp + W_experts(ceil(tokens / m)) / n + KV x replication / (n m);
    communication = (all-reduces + all-to-alls) / m + the pipeline's sends (parallel_time.py).
    """
    if sparse and weight_bytes_per_value is not None:
        raise ValueError("give either sparse (2:4) or weight_bytes_per_value, not both")
    eff = profiles.on_gpu(eff or default_efficiency(), gpu)  # an engine's kernels on the GPU's platform
    path = matmul_path(gpu, weight_dtype, activation_dtype)
    p = param_counts(m)
    ranks = tp * dp
    mb = pt.micro_batches(-(-num_seqs // dp), pp)
    per_token_block = 2.0 * p.block_linear_active
    head = 2.0 * lm_head_params(m)
    # Only the last token of a prefill chunk needs logits; every decode token does.
    logits_tokens = num_seqs
    block_flops = per_token_block * tokens
    other_flops = head * logits_tokens + attention_flops
    w_tokens = -(-tokens // mb)  # the largest micro-batch's tokens (each reads its own experts)
    w_bytes = streamed_weight_bytes(m, weight_dtype, w_tokens, sparse=sparse, per_value=weight_bytes_per_value)
    if dp > 1:  # each attention rank reads its own copy of the non-expert weights
        block = (
            block_bytes_per_value(weight_dtype, sparse) if weight_bytes_per_value is None else weight_bytes_per_value
        )
        experts = routed_params_read(m, w_tokens) * block
        w_bytes = (w_bytes - experts) * dp + experts
    kv_bytes = kv_bytes_per_token(m, kv_dtype) * kv_tokens * kv_replication(m, tp) / mb
    total_bytes = (w_bytes + kv_bytes) / ranks
    block_peak = gpu.peak_tflops(path, sparse=sparse) or gpu.peak_tflops(path)
    bf16_peak = gpu.peak_tflops("bf16")
    known = block_peak is not None and bf16_peak is not None
    # The M of one rank's GEMMs in one micro-batch: every new token for the block GEMMs, one row
    # per sequence for the LM head (only a chunk's last token needs logits).
    local_tokens, local_seqs = tokens / (dp * mb), logits_tokens / (dp * mb)
    compute_s = attention_s = 0.0
    if block_peak is not None and bf16_peak is not None:
        kernel_path = _kernel_path(eff, gpu, weight_dtype, path)
        # The engine's kernels may run another path than the formats imply (quantized_path).
        block_peak *= _kernel_peak(eff, gpu, kernel_path) / (gpu.peak_tflops(path) or 1.0)
        block_eff = eff.gemm_efficiency(kernel_path, local_tokens)
        if weight_dtype in profiles.WEIGHT_ONLY_4BIT:
            block_eff *= eff.w4a16
        head_eff = eff.gemm_efficiency("bf16", local_seqs)
        per_rank = 1e12 * ranks * mb
        attention_s = attention_flops / (bf16_peak * per_rank) / eff.attention
        compute_s = (
            block_flops / (block_peak * per_rank * block_eff)
            + head * logits_tokens / (_kernel_peak(eff, gpu, "bf16") * per_rank * head_eff)
            + attention_s
        )
    ideal_memory_s = total_bytes / (gpu.hbm_bandwidth_GBps * GB)
    memory_s = ideal_memory_s / eff.bandwidth
    cap = profiles.matvec_bandwidth_GBps(eff, gpu, local_tokens)
    if cap is not None:  # matrix-vector kernels that cannot fill the bandwidth
        memory_s = max(memory_s, ideal_memory_s * gpu.hbm_bandwidth_GBps / cap)
    comm_s = 0.0
    if tp * pp * dp > 1:
        link = link_GBps_one_way(gpu)
        if link is None:
            raise ValueError(f"{gpu.name} has no GPU-to-GPU or host link figure for a multi-GPU layout")
        moe_layers = m.num_layers - m.first_k_dense if m.is_moe else 0
        local = tokens / dp  # the tokens of one attention rank
        if dp > 1 and ep:
            comm_s = pt.tp_allreduce_s(local, m.hidden_size, m.num_layers, tp, link)
            comm_s -= pt.tp_allreduce_s(local, m.hidden_size, moe_layers, tp, link) / 2  # MoE: no all-reduce
            comm_s += pt.all_to_all_s(local / tp, m.hidden_size, moe_layers, m.num_experts_per_tok, ranks, link)
        elif dp > 1:  # the experts are tensor-parallel over all tp x dp ranks: one all-reduce of every token
            comm_s = pt.tp_allreduce_s(local, m.hidden_size, m.num_layers, tp, link)
            comm_s -= pt.tp_allreduce_s(local, m.hidden_size, moe_layers, tp, link) / 2
            comm_s += pt.tp_allreduce_s(tokens, m.hidden_size, moe_layers, ranks, link) / 2
        else:
            comm_s = pt.tp_allreduce_s(tokens, m.hidden_size, m.num_layers, tp, link)
        # The collectives at the share of the link the engine's kernels reach, and their latency;
        # the pipeline's point-to-point sends at the link's rate.
        comm_s = comm_s / (mb * eff.allreduce_bandwidth) + profiles.allreduce_latency_s(eff, m, tp)
        comm_s += pt.pp_send_s(local / mb, m.hidden_size, pp, link)
    return StepTime(
        compute_s=compute_s,
        memory_s=memory_s,
        communication_s=comm_s,
        flops=(block_flops + other_flops) / (ranks * mb),
        bytes=total_bytes,
        compute_known=known,
        matmul_path=path,
        attention_s=attention_s,
        overhead_s=profiles.fixed_overhead_s(eff, m),
        activation_s=activation_s(eff, m, gpu, local_tokens, tp),
    )


def _kernel_path(p: Efficiency, gpu: Gpu, weight_dtype: str, path: str) -> str:
    """The tensor-core path the engine's kernels use for these weights (falls back to `path`)."""
    kernel = p.quantized_path.get(weight_dtype, path)
    return kernel if gpu.peak_tflops(kernel) is not None else path


def _kernel_peak(p: Efficiency, gpu: Gpu, path: str) -> float:
    if path == "bf16" and p.fp16_accumulate and gpu.dense_fp16_acc_tflops:
        return gpu.dense_fp16_acc_tflops
    return gpu.peak_tflops(path) or 0.0


ACTIVATION_BYTES = 2  # activations pass between kernels in BF16


def activation_s(p: Efficiency, m: Model, gpu: Gpu, tokens: float, tp: int) -> float:
    """Time of a step's activation traffic between kernels (efficiency.activation_values per token):
    serial with the GEMMs, at the profile's bandwidth share; none in the ceiling (perfect fusion)."""
    if not p.activation_io:
        return 0.0
    moved = p.activation_io * profiles.activation_values(m, tp) * ACTIVATION_BYTES * tokens
    return moved / (gpu.hbm_bandwidth_GBps * GB * p.bandwidth)


def prefill_time(m: Model, gpu: Gpu, prompt_tokens: int, **kw: object) -> StepTime:
    """One prefill pass over the whole prompt (no chunking)."""
    return step_time(m, gpu, [(prompt_tokens, 0)], **kw)  # type: ignore[arg-type]


def decode_step_time(m: Model, gpu: Gpu, context_lens: list[int], **kw: object) -> StepTime:
    """One decode step: each sequence adds one token on top of its cached context."""
    if _all_equal(context_lens):
        return uniform_decode_step_time(m, gpu, context_lens[0], len(context_lens), **kw)
    return step_time(m, gpu, [(1, c) for c in context_lens], **kw)  # type: ignore[arg-type]


def _all_equal(values: list[int]) -> bool:
    return bool(values) and values.count(values[0]) == len(values)


def uniform_decode_step_time(m: Model, gpu: Gpu, context_tokens: int, batch_size: int, **kw: object) -> StepTime:
    """decode_step_time of `batch_size` sequences all at `context_tokens`, in O(1) Python steps.

    Bit for bit the same StepTime: the per-sequence attention FLOPs are still added one by one in
    the same order (by the built-in sum, in C), and the integer totals are exact.
    """
    per_seq = attention_flops_per_key(m) * (1 * context_tokens + 1 * (1 + 1) / 2)
    return _step_time(
        m,
        gpu,
        tokens=batch_size,
        num_seqs=batch_size,
        attention_flops=sum([per_seq] * batch_size),
        kv_tokens=(kv_tokens_held(m, context_tokens) + 1) * batch_size,
        **_step_kw(kw),  # type: ignore[arg-type]
    )


def _step_kw(kw: dict[str, object]) -> dict[str, object]:
    """step_time's keyword defaults, for callers of _step_time."""
    return {
        "weight_dtype": "bf16",
        "kv_dtype": "bf16",
        "activation_dtype": None,
        "eff": None,
        "tp": 1,
        "sparse": False,
        "weight_bytes_per_value": None,
        "pp": 1,
        "dp": 1,
        "ep": False,
        **kw,
    }


@dataclass(frozen=True)
class DecodeLine:
    """A decode step's parts as affine functions of S, the sum of cached context lengths.

    For a fixed batch, compute_s = compute_base_s + compute_per_token_s * S and likewise for
    memory, because attention FLOPs and KV bytes are linear in each context length. The serving
    engine uses this to advance a run of decode steps in one closed-form stride.
    """

    compute_base_s: float
    compute_per_token_s: float
    memory_base_s: float
    memory_per_token_s: float
    communication_s: float
    overhead_s: float = 0.0

    def time_s(self, sum_context: float) -> float:
        c = self.compute_base_s + self.compute_per_token_s * sum_context
        mem = self.memory_base_s + self.memory_per_token_s * sum_context
        return roofline_s(c, mem, self.communication_s) + self.overhead_s


def decode_line(m: Model, gpu: Gpu, batch_size: int, **kw: object) -> DecodeLine:
    """The affine decode step of `batch_size` sequences (exact unless a sliding window caps KV)."""
    base = decode_step_time(m, gpu, [0] * batch_size, **kw)
    one = decode_step_time(m, gpu, [1] + [0] * (batch_size - 1), **kw)
    return DecodeLine(
        compute_base_s=base.compute_s,
        compute_per_token_s=one.compute_s - base.compute_s,
        memory_base_s=base.memory_s,
        memory_per_token_s=one.memory_s - base.memory_s,
        communication_s=base.communication_s + base.activation_s,
        overhead_s=base.overhead_s,
    )


# ---------------------------------------------------------------------------------------------
# Rooflines and memory fit


def ridge_point(gpu: Gpu, tensor_core: str = "bf16", *, sparse: bool = False) -> float | None:
    """FLOPs per byte where compute and bandwidth take equal time: peak FLOP/s over peak B/s."""
    peak = gpu.peak_tflops(tensor_core, sparse=sparse)
    return None if peak is None else peak * 1e12 / (gpu.hbm_bandwidth_GBps * GB)


def decode_compute_bound_batch(
    m: Model, gpu: Gpu, context_tokens: int, *, limit: int = 1 << 16, **kw: object
) -> int | None:
    """Smallest decode batch (all at `context_tokens`) whose step is compute-bound, or None."""

    def compute_bound(b: int) -> bool:
        t = uniform_decode_step_time(m, gpu, context_tokens, b, **kw)
        return t.compute_known and t.compute_s >= t.memory_s

    if not compute_bound(limit):
        return None
    lo, hi = 0, limit  # compute_bound(lo) is False (or lo == 0), compute_bound(hi) is True
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if compute_bound(mid):
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class MemoryFit:
    capacity_bytes: float  # all GPUs' memory
    usable_bytes: float  # after gpu_memory_utilization
    weight_bytes: float
    activation_bytes: float
    kv_bytes: float  # what is left for the KV cache (negative: does not fit)
    kv_token_capacity: int  # tokens of KV cache that fit, all sequences together

    @property
    def fits(self) -> bool:
        return self.kv_bytes > 0


def activation_bytes(m: Model, max_num_batched_tokens: int, max_num_seqs: int = 256) -> float:
    """Rough peak activation workspace of the largest forward pass (per replica).

    Live at once in one layer: the residual stream and attention output (about 4 * hidden per
    token) and the MLP's gate and up outputs (2 * intermediate per token) in bf16, plus fp32
    logits for up to `max_num_seqs` sequences. An estimate, not a profile: vLLM measures this
    by running a dummy forward pass at start-up.
    """
    a = assumptions()["activations"]
    inter = m.moe_intermediate_size * m.num_experts_per_tok if m.is_moe else m.intermediate_size
    per_token = (4 * m.hidden_size + 2 * max(inter, m.intermediate_size)) * a["activation_bytes_per_value"]
    return float(max_num_batched_tokens * per_token + max_num_seqs * m.vocab_size * a["logit_bytes_per_value"])


def memory_fit(
    m: Model,
    gpu: Gpu,
    *,
    num_gpus: int = 1,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    gpu_memory_utilization: float | None = None,
    max_num_batched_tokens: int | None = None,
    sparse: bool = False,
) -> MemoryFit:
    """Weights + activations + KV cache against the memory of `num_gpus` GPUs (tensor-parallel).

    Per GPU rank: each holds 1/num_gpus of the weights, its own activation workspace and its
    share of every token's KV cache, which is a whole KV head when there are fewer heads than
    GPUs and the whole latent for MLA (kv_replication), so replicated KV counts on every rank.
    `sparse` stores the block matmuls 2:4 sparse (weight_bytes(..., sparse=True)).
    """
    d = serve_defaults(gpu)  # vLLM's defaults, one place (assumptions.toml [vllm_defaults])
    util = d["gpu_memory_utilization"] if gpu_memory_utilization is None else gpu_memory_utilization
    tokens = int(d["max_num_batched_tokens"]) if max_num_batched_tokens is None else max_num_batched_tokens
    capacity = gpu.memory_GiB * GiB * num_gpus
    usable = capacity * util
    w = weight_bytes(m, weight_dtype, sparse=sparse)
    act = activation_bytes(m, tokens) * num_gpus  # each GPU holds its own workspace (upper bound)
    kv = usable - w - act
    per_token = kv_bytes_per_token(m, kv_dtype) * kv_replication(m, num_gpus)
    return MemoryFit(capacity, usable, w, act, kv, max(0, int(kv // per_token)))


def generation_flops(m: Model, prompt_tokens: int, output_tokens: int, *, kv_cache: bool) -> float:
    """FLOPs to produce `output_tokens` after a prompt, with or without a KV cache.

    With a cache: one prefill of the prompt, then one token per step over the cached context.
    Without: every step reruns the whole sequence so far (prompt + tokens generated), so the
    matmul work grows with the square of the length and attention with its cube. Closed forms
    of the sums over steps t = 0 .. output_tokens - 1 of a pass over n = prompt + t tokens.
    """
    p, n_out = prompt_tokens, output_tokens
    per_tok = 2.0 * param_counts(m).block_linear_active
    head = 2.0 * lm_head_params(m)
    a = attention_flops_per_key(m)
    if kv_cache:
        prefill = per_tok * p + head + attention_flops(m, p, 0)
        # Decode step t = 1 .. n_out - 1 runs one token over p + t - 1 cached tokens: p + t keys.
        steps = n_out - 1
        return prefill + (per_tok + head) * steps + a * (steps * p + steps * (steps + 1) / 2)
    # Without a cache, pass t processes n = p + t tokens: sum n and sum n(n+1)/2 over t.
    first, last = p, p + n_out - 1
    sum_n = (first + last) * n_out / 2
    sum_sq = (last * (last + 1) * (2 * last + 1) - (first - 1) * first * (2 * first - 1)) / 6
    return per_tok * sum_n + head * n_out + a * (sum_sq + sum_n) / 2
