"""Parallel layouts shared by the serving simulators: one definition of the fields, one set of checks.

Every serving simulator declares its layout with the field makers below (vLLM's flag names), reads
it back with `layout_of(params)` and checks it with `check_layout` or `check_serving`: a field error,
never an exception, for a layout vLLM would refuse (check_shape; more copies of a dense model are
replicas, the cluster simulator's), for several GPUs with no link to time (the Apple M2 Ultra
publishes none), and for a model and requests that do not fit each GPU rank as vLLM accounts for it
(vllm_memory.py: each rank holds 1 / (tp x dp) of the routed experts). How a layout changes a step's
time is costmodel.step_time's (parallel_time.py has the formulas).
"""

from typing import Any

from .core import costmodel as cm
from .core.catalog import Gpu, Model, resolve_gpu
from .core.layout import Layout, RankFit, rank_fit
from .engine.cluster import fit_error
from .params import ParamError, param


def tensor_parallel_param() -> Any:
    """GPUs one layer's matmuls and KV heads are split over (--tensor-parallel-size)."""
    return param(1, label="Tensor parallel", unit="GPUs", min=1, max=64, step=1, help="--tensor-parallel-size")


def pipeline_parallel_param() -> Any:
    """Stages the layers are split into, one GPU group each (--pipeline-parallel-size)."""
    return param(1, label="Pipeline parallel", unit="stages", min=1, max=16, step=1, help="--pipeline-parallel-size")


def data_parallel_param(label: str = "Data parallel (MoE attention)", help: str = "--data-parallel-size") -> Any:
    """Attention ranks of a mixture of experts, each with its own requests (--data-parallel-size);
    a simulator whose ranks mean more than that says so in `label` and `help`."""
    return param(1, label=label, unit="ranks", min=1, max=64, step=1, help=help)


def expert_parallel_param(help: str = "--enable-expert-parallel") -> Any:
    """Whole experts spread over tp x dp ranks instead of every expert split (--enable-expert-parallel)."""
    return param(False, label="Expert parallel (MoE)", help=help)


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


def check_layout(
    m: Model, gpu: Gpu, lay: Layout, *, batch: int = 1, batch_field: str = "batch_size", **fit: Any
) -> RankFit:
    """Raise a field error when the layout is refused or `batch` requests of the context do not fit;
    `fit`: rank_fit's weight_dtype, kv_dtype and context."""
    check_shape(m, gpu, lay)
    got = rank_fit(m, gpu, lay, **fit)
    if got.kv_blocks <= 0:
        raise ParamError(
            grow_field(lay),
            f"{m.name}'s {fit['weight_dtype']} weights ({got.weight_bytes / cm.GiB:.1f} GiB per GPU on {lay.describe()}) "
            f"and the activation peak leave no KV cache on {gpu.name}; use more GPUs or a smaller format",
        )
    if got.max_concurrency < batch:
        raise ParamError(
            batch_field,
            f"{lay.describe(gpu.name)} hold{'s' * (lay.num_gpus == 1)} {int(got.max_concurrency):,} whole requests of "
            f"{fit['context']:,} tokens (vLLM's maximum concurrency {got.max_concurrency:,.2f}x), fewer than {batch:,}",
        )
    return got


def check_serving(m: Model, gpu: Gpu, lay: Layout, *, weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> None:
    """Field errors for a serving simulator's layout: the shape, then room for 4,096 KV tokens."""
    check_shape(m, gpu, lay)
    if why := fit_error(m, gpu, layout=lay, weight_dtype=weight_dtype, kv_dtype=kv_dtype):
        raise ParamError(grow_field(lay, "model"), why)
