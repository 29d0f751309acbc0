"""One capacity note for simulators that cost a batch without holding it in memory.

`quantization`, `sparsity` and `compression` time a decode step at any batch; the cost model's
memory budget (costmodel.memory_fit) says how many sequences of a given context actually fit. When
the batch asked about is larger, their summaries say so, instead of presenting a speed-up for a
batch no GPU of that kind can hold (December 2026 review, "Operating points that do not fit").
"""

from __future__ import annotations

from . import costmodel as cm
from .catalog import Gpu, Model


def most_sequences(
    m: Model, gpu: Gpu, context_tokens: int, *, num_gpus: int = 1, weight_dtype: str = "bf16", kv_dtype: str = "bf16"
) -> int:
    """Sequences of `context_tokens` whose KV cache fits beside the weights (0 when none)."""
    fit = cm.memory_fit(m, gpu, num_gpus=num_gpus, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    return max(0, fit.kv_token_capacity) // cm.kv_tokens_held(m, context_tokens)


def batch_note(
    what: str,
    batch: int,
    m: Model,
    gpu: Gpu,
    context_tokens: int,
    *,
    num_gpus: int = 1,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
) -> str | None:
    """A sentence when `batch` sequences of this context do not fit, else None."""
    most = most_sequences(m, gpu, context_tokens, num_gpus=num_gpus, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    if batch <= most:
        return None
    return (
        f"{what} {batch:,} does not fit: at {context_tokens:,} tokens of context, {num_gpus} x {gpu.name} holds at most "
        f"{most:,} sequences with {weight_dtype} weights, so its figures are a roofline bound, not a batch that can run."
    )
