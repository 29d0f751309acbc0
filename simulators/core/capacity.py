"""How many sequences fit, as vLLM counts them, and one note for simulators that cost any batch.

`held(...)` is vLLM's start-up accounting per GPU rank (vllm_memory.py through layout.rank_fit, at
`vllm serve`'s defaults for the GPU, `num_gpus` as tensor parallelism and max_model_len = the
context): the KV tokens it would log and its maximum concurrency. The KV calculator, the GPU-memory
widget and the notes below share it, so a lesson's prose, its widgets and deployment agree.

`quantization`, `sparsity` and `compression` time a decode step at any batch; when the batch asked
about is larger than what fits, their summaries say so, instead of presenting a speed-up for a
batch no GPU of that kind can hold (December 2026 review, "Operating points that do not fit").
"""

from . import costmodel as cm
from .catalog import Gpu, Model
from .layout import Layout, rank_fit

BATCH_GRID = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)  # the batches swept: powers of two to 1,024 slots


def held(
    m: Model, gpu: Gpu, context_tokens: int, *, num_gpus: int = 1, weight_dtype: str = "bf16", kv_dtype: str = "bf16"
) -> tuple[int, float]:
    """(KV tokens vLLM would log, its maximum concurrency at `context_tokens`), all GPUs together;
    (0, 0.0) when vLLM would refuse the layout (the heads do not split over num_gpus)."""
    if m.num_heads % num_gpus or cm.kv_layers(m) == 0:
        return 0, 0.0
    fit = rank_fit(m, gpu, Layout(num_gpus), weight_dtype=weight_dtype, kv_dtype=kv_dtype, context=context_tokens)
    return fit.kv_tokens, fit.max_concurrency


def most_sequences(
    m: Model, gpu: Gpu, context_tokens: int, *, num_gpus: int = 1, weight_dtype: str = "bf16", kv_dtype: str = "bf16"
) -> int:
    """Whole sequences of `context_tokens` vLLM's KV cache holds (0 when none)."""
    return int(held(m, gpu, context_tokens, num_gpus=num_gpus, weight_dtype=weight_dtype, kv_dtype=kv_dtype)[1])


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
        f"{most:,} sequences with {cm.precision(weight_dtype).name} weights in vLLM's accounting, so its figures are a roofline bound, "
        "not a batch that can run."
    )
