"""A GPU: its catalogue keys (data/gpus.toml) and a reader's own, checked key by key.

Memory, bandwidth and tensor throughput from data sheets, each entry with its source; a reader
may describe their own GPU with the same keys (gpu_from_dict), and any bad key gets a message
that names it.
"""

from dataclasses import dataclass
from typing import Any

from .data_files import CatalogError

GPU_NUMBER_KEYS = tuple(
    """
    memory_GiB cuda_total_GiB hbm_bandwidth_GBps dense_bf16_tflops sparse_bf16_tflops dense_fp16_acc_tflops
    dense_fp8_tflops sparse_fp8_tflops dense_int8_tops sparse_int8_tops interconnect_GBps host_link_GBps tdp_W
    sm_count boost_clock_MHz
    """.split()
)
GPU_TEXT_KEYS = ("name", "memory_type", "interconnect", "note", "source", "cuda_total_source", "platform")
GPU_PLATFORMS = ("", "metal")  # "": CUDA or ROCm; "metal": Apple silicon, whose engines differ (efficiency.on_gpu)


@dataclass(frozen=True)
class Gpu:
    id: str
    name: str
    # Memory capacity in GiB (2^30 bytes, see data/gpus.toml) and peak memory bandwidth in 10^9 bytes/s.
    memory_GiB: float
    hbm_bandwidth_GBps: float
    # Peak tensor throughput, 10^12 ops/s; None where the part has no such path or no figure.
    dense_bf16_tflops: float | None = None
    sparse_bf16_tflops: float | None = None
    # FP16 inputs with FP16 accumulation: twice the FP32-accumulate rate on GeForce parts (only
    # where the data sheet lists it separately); engines that accumulate in FP16 use it.
    dense_fp16_acc_tflops: float | None = None
    dense_fp8_tflops: float | None = None
    sparse_fp8_tflops: float | None = None
    dense_int8_tops: float | None = None
    sparse_int8_tops: float | None = None
    # GPU-to-GPU link, both directions added, 10^9 bytes/s; None without a direct link.
    interconnect_GBps: float | None = None
    host_link_GBps: float | None = None
    tdp_W: float | None = None
    memory_type: str = ""
    interconnect: str = ""
    note: str = ""
    source: str = ""
    # Memory CUDA reports as total (torch.cuda.mem_get_info()[1]), 2^30 bytes: a little below
    # memory_GiB (ECC, firmware and driver reservations). None: not measured, memory_GiB is used.
    cuda_total_GiB: float | None = None
    cuda_total_source: str = ""
    # Streaming multiprocessors and their maximum boost clock (MHz); None where not catalogued.
    # Engines whose batch-1 kernels stream a fixed number of bytes per SM and cycle use them
    # (efficiency.matvec_bandwidth_GBps).
    sm_count: float | None = None
    boost_clock_MHz: float | None = None
    # The GPU programming platform when it is not CUDA / ROCm: "metal" for Apple silicon, where
    # llama.cpp runs its Metal kernels and vLLM, SGLang and TensorRT-LLM do not run.
    platform: str = ""

    @property
    def cuda_total_derived(self) -> bool:
        """True where no published log gives the CUDA total and a stated rule derived it."""
        return self.cuda_total_source.startswith("Derived")

    @property
    def visible_GiB(self) -> float:
        """What vLLM sees as this GPU's total memory."""
        return self.cuda_total_GiB if self.cuda_total_GiB is not None else self.memory_GiB

    def peak_tflops(self, tensor_core: str, *, sparse: bool = False) -> float | None:
        """Peak matmul throughput for a tensor-core path ("bf16", "fp8", "int8"), or None."""
        kind = "sparse" if sparse else "dense"
        unit = "tops" if tensor_core == "int8" else "tflops"
        value = getattr(self, f"{kind}_{tensor_core}_{unit}")
        return None if value is None else float(value)


def _number(where: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CatalogError(f"{where}: '{key}' must be a number, got {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise CatalogError(f"{where}: '{key}' must be finite, got {value!r}")
    if value <= 0:
        raise CatalogError(f"{where}: '{key}' must be greater than 0, got {value!r}")
    return float(value)


def gpu_from_dict(data: dict[str, Any], gpu_id: str = "custom") -> Gpu:
    """Build a GPU from catalogue keys; `memory_GiB` and `hbm_bandwidth_GBps` are required."""
    where = f"GPU '{gpu_id}'"
    if not isinstance(data, dict):
        raise CatalogError(f"{where}: expected an object of GPU keys, got {type(data).__name__}")
    if unknown := sorted(set(data) - set(GPU_NUMBER_KEYS) - set(GPU_TEXT_KEYS) - {"id"}):
        raise CatalogError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: " + ", ".join(GPU_NUMBER_KEYS + GPU_TEXT_KEYS)
        )
    for key in ("memory_GiB", "hbm_bandwidth_GBps"):
        if key not in data:
            raise CatalogError(f"{where}: '{key}' is required")
    fields: dict[str, Any] = {key: _number(where, key, data[key]) for key in GPU_NUMBER_KEYS if key in data}
    for key in GPU_TEXT_KEYS:
        if key in data and not isinstance(data[key], str):
            raise CatalogError(f"{where}: '{key}' must be text")
    fields |= {key: data[key] for key in GPU_TEXT_KEYS if key in data}
    if fields.get("platform", "") not in GPU_PLATFORMS:
        raise CatalogError(f"{where}: 'platform' must be one of {', '.join(repr(x) for x in GPU_PLATFORMS)}")
    fields.setdefault("name", str(data.get("id", gpu_id)))
    return Gpu(id=str(data.get("id", gpu_id)), **fields)
