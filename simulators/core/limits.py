"""What limits a model on a GPU: which roof binds, what the catalogue lacks, whether it fits.

The ridge point and the smallest decode batch whose step is compute-bound (the roofline lesson),
the tensor-throughput figure a compute-bound answer needs, and memory_fit: weights, activation
workspace and KV cache against the GPUs' memory by the course's byte arithmetic, with vLLM's
default settings (vllm_memory.py follows vLLM's own start-up accounting instead).
"""

from dataclasses import dataclass

from .bytes_flops import GB, GiB, kv_bytes_per_token, kv_replication, weight_bytes
from .catalog import Gpu, Model, assumptions, serve_defaults
from .roofline import matmul_path, uniform_decode_step_time


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
        lo, hi = (lo, mid) if compute_bound(mid) else (mid, hi)
    return hi


def missing_compute_figure(gpu: Gpu, weight_dtype: str = "bf16") -> str:
    """The tensor-throughput key a compute-bound answer on `gpu` needs and the catalogue lacks
    ("" when it has them): without it a prefill could only be priced as a memory-only floor."""
    path = matmul_path(gpu, weight_dtype)
    for p in dict.fromkeys((path, "bf16")):
        if gpu.peak_tflops(p) is None:
            return f"dense_{p}_{'tops' if p == 'int8' else 'tflops'}"
    return ""


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
    """Rough peak activation workspace of the largest forward pass (per replica): live at once in one
    layer, the residual stream and attention output (4 hidden per token) and the MLP's gate and up
    outputs (2 intermediate), plus fp32 logits for `max_num_seqs` sequences. vLLM measures it instead."""
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
    max_num_batched_tokens: int | None = None,
    sparse: bool = False,
) -> MemoryFit:
    """Weights + activations + KV cache against the memory of `num_gpus` tensor-parallel GPUs: each
    holds 1/num_gpus of the weights, its own activation workspace and its share of every token's KV
    (replicated KV heads and MLA latents on every rank: kv_replication). `sparse`: 2:4 block matmuls."""
    d = serve_defaults(gpu)  # vLLM's defaults, one place (assumptions.toml [vllm_defaults])
    tokens = int(d["max_num_batched_tokens"]) if max_num_batched_tokens is None else max_num_batched_tokens
    capacity = gpu.memory_GiB * GiB * num_gpus
    usable = capacity * d["gpu_memory_utilization"]
    w = weight_bytes(m, weight_dtype, sparse=sparse)
    act = activation_bytes(m, tokens) * num_gpus  # each GPU holds its own workspace (upper bound)
    kv = usable - w - act
    per_token = kv_bytes_per_token(m, kv_dtype) * kv_replication(m, num_gpus)
    return MemoryFit(capacity, usable, w, act, kv, max(0, int(kv // per_token)))
