"""Parallel layouts shared by the serving simulators: the checks every one of them makes.

A tensor-parallel layout of more than one GPU needs a link between them: the cost model times
the all-reduces of each layer on the catalogue's GPU-to-GPU (or host) link
(costmodel.link_GBps_one_way). A GPU that publishes neither link figure (the Apple M2 Ultra)
can only be used alone; asking for more is a field error naming the field, never an exception.
"""

from __future__ import annotations

from typing import Any

from . import costmodel as cm
from . import vllm_memory as vm
from .catalog import Gpu, Model, resolve_gpu
from .params import ParamError, param


def tensor_parallel_param() -> Any:
    """The shared field: GPUs one model replica is split over by tensor parallelism."""
    return param(1, label="Tensor parallel", unit="GPUs", min=1, max=64, step=1, help="--tensor-parallel-size")


def check_link(gpu: Any, num_gpus: int, field: str) -> None:
    """Raise a field error when `num_gpus` > 1 GPUs of this kind have no link to time."""
    g = gpu if isinstance(gpu, Gpu) else resolve_gpu(gpu)
    if num_gpus > 1 and cm.link_GBps_one_way(g) is None:
        raise ParamError(field, f"{g.name} publishes no GPU-to-GPU or host link figure; use 1 GPU")


def check_fit(m: Model, gpu: Gpu, tp: int, *, weight_dtype: str, kv_dtype: str, context: int, batch: int) -> None:
    """Raise a field error when `batch` requests of `context` tokens do not fit `tp` GPUs.

    The fit is vLLM's (vllm_memory.account): weights per rank, the profile run's activation
    peak and the non-torch memory leave the KV blocks; the batch must fit in them.
    """
    if m.num_heads % tp:
        raise ParamError("tensor_parallel_size", f"must divide {m.name}'s {m.num_heads} attention heads")
    a = vm.account(m, gpu, tp=tp, max_model_len=context, kv_dtype=kv_dtype, weight_dtype=weight_dtype)
    stage = min(a.stages, key=lambda s: s.kv_bytes)
    if stage.kv_bytes <= 0:
        raise ParamError(
            "tensor_parallel_size",
            f"{m.name}'s {weight_dtype} weights ({stage.weight_bytes / cm.GiB:.1f} GiB per GPU on {tp}) and the "
            f"activation peak leave no KV cache on {gpu.name}; use more GPUs or a smaller format",
        )
    if a.max_concurrency < batch:
        raise ParamError(
            "batch_size",
            f"{tp} x {gpu.name} hold {a.max_concurrency:.1f} requests of {context:,} tokens, fewer than {batch:,}",
        )
