"""What a forward pass holds, reads and computes: parameter counts, bytes and FLOPs.

Counts from the model's shape and the number formats' catalogue (data/precisions.toml), no time
(roofline.py prices them). One forward pass over a batch, sequence i bringing q_i new tokens on
top of c_i tokens already in its KV cache:

- Weights: every matmul weight is read once per step (not the input embedding table: a lookup
  reads one row per token). A mixture of experts reads only the experts the batch routes to: with
  uniform routing of k of E experts, E * (1 - (1 - k/E)^tokens) per layer.
- KV cache: each sequence reads its c_i cached tokens and writes q_i new ones.
- Matmul FLOPs: 2 per active weight per token (one multiply, one add).
- Attention FLOPs: for a query at position p, 2 * heads * (d_qk + d_v) per layer per key
  (QK^T and the weighted sum of V); summed over the causal triangle for prefill. MLA is counted
  in its absorbed form as served (d_qk = kv_lora_rank + qk_rope_head_dim, d_v = kv_lora_rank),
  per the DeepSeek-V2 paper (arXiv 2405.04434, section 2.1.3).
- Tensor parallelism over n GPUs divides weights, KV and FLOPs by n; KV heads fewer than n are
  read whole by the ranks that share them, and an MLA latent by every rank (kv_replication).

Quantised weights are the block matmuls only; the embedding table and the LM head stay in bf16,
as LLM Compressor's recipes do (`ignore=["lm_head"]`).

Units: bytes and FLOPs as plain counts; GB = 10^9 bytes, GiB = 2^30 bytes (the course uses GiB
for KV cache and GB for vendor memory and bandwidth figures).
"""

from dataclasses import dataclass

from .catalog import Model, Precision, precisions

GB = 1e9
GiB = 2**30
BF16_BYTES = 2


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
    bias = q_out + 2 * kv_out if m.attention_bias or m.mlp == "gelu" else 0
    if m.mlp == "gelu":  # GPT-2: every projection has a bias
        bias += h
    return linear, bias


def param_counts(m: Model) -> ParamCounts:
    """Parameter counts from the shape (checked against published totals in the tests)."""
    h = m.hidden_size
    attn_linear, attn_other = _attention_params(m)
    gelu = m.mlp == "gelu"  # GPT-2: LayerNorm (with a bias; RMSNorm has none), two MLP matrices with biases
    norms = 4 * h if gelu else 2 * h
    dense_mlp = (2 if gelu else 3) * h * m.intermediate_size
    dense_other = m.intermediate_size + h if gelu else 0
    moe_layers, dense_layers = m.num_moe_layers, m.num_layers - m.num_moe_layers
    expert = 3 * h * m.moe_intermediate_size
    linear = m.num_layers * attn_linear + dense_layers * dense_mlp
    active = linear + moe_layers * (m.num_experts_per_tok + m.num_shared_experts) * expert
    linear += moe_layers * (m.num_experts + m.num_shared_experts) * expert
    other = m.num_layers * (attn_other + norms) + dense_layers * dense_other
    other += moe_layers * h * m.num_experts  # router
    other += 2 * h if gelu else h  # final norm
    embedding = m.vocab_size * h + (m.max_context_tokens * h if gelu else 0)
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
    """Stored bytes per original value of a 2:4 structured-sparse matrix in `dtype`: two of four values
    kept, each with a 2-bit position index (NVIDIA's format): bytes_per_value / 2 + (2 bits / 8) / 2.
    FP8: 0.5 + 0.125 = 0.625 B per weight."""
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
    stored = {"dense": b, "bitmask": (1 - sparsity) * b + 1 / 8, "csr": (1 - sparsity) * (b + 2)}
    if layout not in stored:
        raise ValueError(f"unknown sparse layout '{layout}'; known: dense, bitmask, csr")
    return stored[layout]


def weight_bytes(m: Model, weight_dtype: str = "bf16", *, sparse: bool = False) -> float:
    """Bytes to hold all weights: block matmuls in `weight_dtype` (2:4 sparse if asked), the rest in bf16."""
    p = param_counts(m)
    block = block_bytes_per_value(weight_dtype, sparse)
    return p.block_linear * block + (p.total - p.block_linear) * BF16_BYTES


def streamed_weight_bytes(
    m: Model, weight_dtype: str = "bf16", num_tokens: int = 1, *, sparse: bool = False, per_value: float | None = None
) -> float:
    """Weight bytes one forward pass over `num_tokens` tokens reads (only the experts they route to);
    `per_value` overrides the stored bytes per block-matmul weight (e.g. unstructured_bytes_per_value)."""
    p = param_counts(m)
    linear = p.block_linear - routed_expert_params(m) + routed_params_read(m, num_tokens)
    rest = lm_head_params(m) + p.other  # a tied head still reads the embedding table
    block = block_bytes_per_value(weight_dtype, sparse) if per_value is None else per_value
    return linear * block + rest * BF16_BYTES


def routed_expert_params(m: Model) -> int:
    """Parameters of the routed experts, all MoE layers (0 for a dense model)."""
    return m.num_moe_layers * m.num_experts * 3 * m.hidden_size * m.moe_intermediate_size


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
    """KV-cache bytes one token adds to one sequence, all layers that keep a cache: a key and a value
    per KV head (2 * layers * kv_heads * head_dim), or MLA's one compressed latent plus the rotary
    key (layers * (kv_lora_rank + rope_dim))."""
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
    """Tokens a sequence keeps in cache, averaged (rounded up) over its KV layers."""
    n = kv_layers(m)
    if n == 0:
        return 0
    held = sum(layer_tokens_held(m, kind, context_tokens) for kind in m.kinds)
    return -(-held // n)  # ceiling: never report less cache than is held


def kv_bytes_per_sequence(m: Model, context_tokens: int, kv_dtype: str = "bf16") -> float:
    n = kv_layers(m)
    held = sum(layer_tokens_held(m, kind, context_tokens) for kind in m.kinds)
    return held * kv_bytes_per_token(m, kv_dtype) / n if n else 0.0


def kv_replication(m: Model, tp: int) -> float:
    """How many times over tp ranks hold a sequence's KV cache: 1 when the KV heads split evenly,
    tp / kv_heads with fewer heads than ranks (each keeps one), tp for an MLA latent (every rank's)."""
    if m.kv_lora_rank:
        return float(tp)
    return tp / m.num_kv_heads if m.num_kv_heads < tp else 1


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
    """Causal attention of `new_tokens` queries over `cached_tokens` plus themselves: query j
    (1-based) sees cached_tokens + j keys, T * c + T (T + 1) / 2 in all."""
    t, c = new_tokens, cached_tokens
    return attention_flops_per_key(m) * (t * c + t * (t + 1) / 2)


def generation_flops(m: Model, prompt_tokens: int, output_tokens: int, *, kv_cache: bool) -> float:
    """FLOPs to produce `output_tokens` after a prompt, with a KV cache (one prefill, then one token
    per step) or without (every step reruns the whole sequence: matmuls grow with the square of the
    length, attention with its cube). Closed forms of the sums over the steps."""
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
