"""The step-time function: the time of one forward pass on a GPU under an engine profile.

A roofline per forward pass (Williams, Waterman and Patterson 2009) over the counts of
bytes_flops.py: a step takes as long as the slower of its compute and its memory traffic, then
what cannot overlap them (communication: parallel_time.py),

    time_s = max(flops / (peak_flops * gemm_efficiency(M)),
                 bytes / (peak_bandwidth * bandwidth_efficiency))
             + communication_s + activation_s + overhead_s

and both parts are reported, so a lesson can show which roof binds.

What the hardware reaches is the engine profile's (`eff`, simulators/core/efficiency.py): a share of
peak bandwidth, a GEMM efficiency per tensor-core path that falls at small M (the block GEMMs' M
is the step's tokens, the LM head's its sequences), an attention efficiency, the activation
traffic between kernels, a fixed time per pass and per layer, and the all-reduces' latency. The
ideal ceiling sets every factor to 1.0 and every fixed cost to 0. Left out: the softmax's own
time and overlap of communication with compute. The validation page measures what the
omissions and the fitted factors cost. This is the one module that reads a profile's factors.
"""

from dataclasses import dataclass

from . import bytes_flops as bf
from . import efficiency as profiles
from . import parallel_time as pt
from .catalog import Gpu, Model

# An engine profile (efficiency.py) is what every time is priced with; that module imports nothing from this one.
Efficiency = profiles.EngineProfile
IDEAL = profiles.IDEAL
DEFAULT_ENGINE = profiles.DEFAULT
# How a summary says why a step of a few rows is compute-bound: the profile's small-M GEMM efficiency,
# not the roofline at peak (a batch-1 decode of INT4 weights on an A100 or a T4).
SMALL_BATCH_COMPUTE = "at the profile's small-batch matmul efficiency its arithmetic outlasts its memory reads"


def default_efficiency() -> Efficiency:
    """DEFAULT_ENGINE's profile: what every time is priced with unless a simulator's choice says otherwise."""
    return profiles.profile(DEFAULT_ENGINE)


def efficiency(ideal: bool, engine: str = DEFAULT_ENGINE) -> Efficiency:
    """An engine's profile, or with `ideal` its ceiling (efficiency.ceiling)."""
    p = profiles.profile(engine)
    return profiles.ceiling(p) if ideal else p


def roofline_s(compute_s: float, memory_s: float, communication_s: float = 0.0) -> float:
    """The binding roof (compute and memory overlap) plus communication after it."""
    return (compute_s if compute_s > memory_s else memory_s) + communication_s


def speculative_tokens_per_pass(acceptance_rate: float, num_draft_tokens: int) -> float:
    """Expected tokens one target pass emits with k draft tokens, each accepted with probability a
    independently: the accepted prefix plus one, (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023, eq. 1)."""
    k, a = num_draft_tokens, acceptance_rate
    return float(k + 1) if a >= 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)


def speculative_time_per_token_s(
    step_s: float, verify_s: float, num_draft_tokens: int, draft_cost_ratio: float, acceptance_rate: float
) -> float:
    """(verify_s + k draft steps of draft_cost_ratio x step_s) per expected tokens of one pass."""
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
    # The engine's fixed time per pass and per layer (efficiency.fixed_overhead_s).
    overhead_s: float = 0.0
    # Activation traffic between a layer's kernels, serial with the GEMMs (activation_s).
    activation_s: float = 0.0

    @property
    def time_s(self) -> float:
        return roofline_s(self.compute_s, self.memory_s, self.communication_s) + self.overhead_s + self.activation_s

    @property
    def serial_s(self) -> float:
        """What runs after the roofline, not overlapped."""
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
    FP8 and INT8 weights run W8A8 by default; INT4 is weight-only (W4A16: dequantised onto the bf16
    tensor cores), as is FP8 without a native path (vLLM's Marlin kernels on an A100)."""
    act = activation_dtype or (weight_dtype if weight_dtype in ("fp8", "int8") else "bf16")
    path = bf.precision(act).tensor_core
    return "bf16" if bf.precision(weight_dtype).tensor_core != path or gpu.peak_tflops(path) is None else path


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

    The layout is `tp` tensor-parallel ranks, `pp` pipeline stages (a pass is then a round in which
    every sequence gains a token) and `dp` data-parallel attention ranks, experts spread when `ep`.
    `sparse` uses the 2:4 sparse tensor rate and bytes (sparse24_bytes_per_value);
    `weight_bytes_per_value` overrides only the stored bytes per block-matmul weight (e.g.
    unstructured_bytes_per_value: no tensor-core path, so the dense rate).
    """
    # attention_flops(m, q, c) inlined (the same float operations): steps of thousands of sequences.
    per_key = bf.attention_flops_per_key(m)
    num_seqs = len(seqs)
    if seqs and seqs.count(seqs[0]) == num_seqs:  # one shape (a uniform decode step): O(1) Python steps
        q, c = seqs[0]
        tokens = q * num_seqs
        attention_flops = sum([per_key * (q * c + q * (q + 1) / 2)] * num_seqs)  # still added one by one
        kv_tokens = (bf.kv_tokens_held(m, c) + q) * num_seqs
    else:
        tokens = sum(q for q, _ in seqs)
        attention_flops = sum([per_key * (q * c + q * (q + 1) / 2) for q, c in seqs])
        held = {c: bf.kv_tokens_held(m, c) for c in {c for _, c in seqs}}  # it walks every layer: once per context
        kv_tokens = sum(held[c] + q for q, c in seqs)
    # Per GPU, with n = tp x dp ranks and m = micro_batches(seqs / dp, pp):
    # compute = F / (n m); memory = W_dense / tp + W_experts(ceil(tokens / m)) / n + KV x replication / (n m);
    # communication = (all-reduces + all-to-alls) / m + the pipeline's sends (parallel_time.py).
    if sparse and weight_bytes_per_value is not None:
        raise ValueError("give either sparse (2:4) or weight_bytes_per_value, not both")
    eff = profiles.on_gpu(eff or default_efficiency(), gpu)  # an engine's kernels on the GPU's platform
    path = matmul_path(gpu, weight_dtype, activation_dtype)
    ranks = tp * dp
    mb = pt.micro_batches(-(-num_seqs // dp), pp)
    head = 2.0 * bf.lm_head_params(m)
    logits_tokens = num_seqs  # only the last token of a prefill chunk needs logits; every decode token does
    block_flops = 2.0 * bf.param_counts(m).block_linear_active * tokens
    w_tokens = -(-tokens // mb)  # the largest micro-batch's tokens (each reads its own experts)
    block = bf.block_bytes_per_value(weight_dtype, sparse) if weight_bytes_per_value is None else weight_bytes_per_value
    w_bytes = bf.streamed_weight_bytes(m, weight_dtype, w_tokens, per_value=block)
    if dp > 1:  # each attention rank reads its own copy of the non-expert weights
        experts = bf.routed_params_read(m, w_tokens) * block
        w_bytes = (w_bytes - experts) * dp + experts
    kv_bytes = bf.kv_bytes_per_token(m, kv_dtype) * kv_tokens * bf.kv_replication(m, tp) / mb
    total_bytes = (w_bytes + kv_bytes) / ranks
    block_peak = gpu.peak_tflops(path, sparse=sparse) or gpu.peak_tflops(path)
    bf16_peak = gpu.peak_tflops("bf16")
    known = block_peak is not None and bf16_peak is not None
    # The M of one rank's GEMMs in one micro-batch: new tokens for the blocks, sequences for the LM head.
    local_tokens, local_seqs = tokens / (dp * mb), logits_tokens / (dp * mb)
    compute_s = attention_s = 0.0
    if block_peak is not None and bf16_peak is not None:
        # The engine's kernels may run another path than the formats imply (quantized_path), where the GPU has it.
        kernel_path = eff.quantized_path.get(weight_dtype, path)
        kernel_path = kernel_path if gpu.peak_tflops(kernel_path) is not None else path
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
    ideal_memory_s = total_bytes / (gpu.hbm_bandwidth_GBps * bf.GB)
    memory_s = ideal_memory_s / eff.bandwidth
    cap = profiles.matvec_bandwidth_GBps(eff, gpu, local_tokens)
    if cap is not None:  # matrix-vector kernels that cannot fill the bandwidth
        memory_s = max(memory_s, ideal_memory_s * gpu.hbm_bandwidth_GBps / cap)
    comm_s = 0.0
    if tp * pp * dp > 1:
        link = pt.link_GBps_one_way(gpu)
        if link is None:
            raise ValueError(f"{gpu.name} has no GPU-to-GPU or host link figure for a multi-GPU layout")
        # Collectives at the engine's share of the link, plus their latency; pipeline sends at its rate.
        comm_s = pt.collectives_s(m, tokens, tp, dp, ep, link) / (mb * eff.allreduce_bandwidth)
        comm_s += profiles.allreduce_latency_s(eff, m, tp)
        comm_s += pt.pp_send_s(tokens / dp / mb, m.hidden_size, pp, link)
    return StepTime(
        compute_s=compute_s,
        memory_s=memory_s,
        communication_s=comm_s,
        flops=(block_flops + (head * logits_tokens + attention_flops)) / (ranks * mb),
        bytes=total_bytes,
        compute_known=known,
        matmul_path=path,
        attention_s=attention_s,
        overhead_s=profiles.fixed_overhead_s(eff, m),
        activation_s=activation_s(eff, m, gpu, local_tokens, tp),
    )


def _kernel_peak(p: Efficiency, gpu: Gpu, path: str) -> float:
    if path == "bf16" and p.fp16_accumulate and gpu.dense_fp16_acc_tflops:
        return gpu.dense_fp16_acc_tflops
    return gpu.peak_tflops(path) or 0.0


ACTIVATION_BYTES = bf.BF16_BYTES  # activations pass between kernels in BF16


def activation_s(p: Efficiency, m: Model, gpu: Gpu, tokens: float, tp: int) -> float:
    """Activation traffic between kernels (efficiency.activation_values) at the profile's bandwidth
    share; none in the ceiling (perfect fusion)."""
    if not p.activation_io:
        return 0.0
    moved = p.activation_io * profiles.activation_values(m, tp) * ACTIVATION_BYTES * tokens
    return moved / (gpu.hbm_bandwidth_GBps * bf.GB * p.bandwidth)


def prefill_time(m: Model, gpu: Gpu, prompt_tokens: int, **kw: object) -> StepTime:
    """One prefill pass over the whole prompt (no chunking)."""
    return step_time(m, gpu, [(prompt_tokens, 0)], **kw)  # type: ignore[arg-type]


def decode_step_time(m: Model, gpu: Gpu, context_lens: list[int], **kw: object) -> StepTime:
    """One decode step: each sequence adds one token on top of its cached context."""
    return step_time(m, gpu, [(1, c) for c in context_lens], **kw)  # type: ignore[arg-type]


def uniform_decode_step_time(m: Model, gpu: Gpu, context_tokens: int, batch_size: int, **kw: object) -> StepTime:
    """decode_step_time of `batch_size` sequences all at `context_tokens`, in O(1) Python steps."""
    return step_time(m, gpu, [(1, context_tokens)] * batch_size, **kw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class DecodeLine:
    """A decode step's parts as affine functions of S, the sum of cached context lengths: for a fixed
    batch compute_s = compute_base_s + compute_per_token_s * S, likewise memory (attention FLOPs and
    KV bytes are linear in each context). The engine advances runs of decode steps with it."""

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
