"""Engine profiles: the achieved fraction of peak for what actually runs, per engine.

costmodel.step_time is a roofline with one bandwidth and one compute efficiency. A profile from
data/engine_profiles.toml refines it for one engine (vLLM, SGLang, TensorRT-LLM, llama.cpp):

    compute = GEMM time / gemm_efficiency(path, M) + attention time / attention
    memory  = bytes / (peak bandwidth * bandwidth)
    step    = max(compute, memory) + communication + step_overhead + activation traffic

communication is the cost model's ring all-reduce bandwidth term (at the share of the link's rate
the engine's all-reduce kernel reaches, `allreduce_bandwidth`) plus, under tensor parallelism,
a latency per all-reduce (`allreduce_latency_us`, two all-reduces per layer: the alpha of an
alpha-beta model). overhead is the step's fixed cost plus, where a profile sets
`layer_overhead_us`, a fixed time per layer (the kernels of one layer at a small batch take a time
that does not fall with their bytes: launch gaps and latency floors) and, where a profile sets
`activation_io`, the activation traffic between a layer's kernels (norms, rotary, SwiGLU and each
GEMM's input and output, per token: activation_values), memory-bound and serial with the GEMMs,
which matters most in long prefills with FP8 GEMMs. A step of at most
`matvec_max_tokens` tokens runs matrix-vector kernels (llama.cpp's MMVQ) that stream the weights
without tensor-core tiles, so it pays no small-M penalty; where a profile sets
`matvec_bytes_per_sm_cycle` and the GPU lists its SM count and boost clock, such a step streams at
most SMs x clock x that many bytes (Little's law: each SM keeps a bounded number of bytes in flight
for a memory latency of a roughly fixed number of cycles, so a GPU whose bandwidth outgrows its SMs
and clock is not filled).

where M is the step's token count: gemm_efficiency = plateau(path) * M / (M + gemm_m_half), the
plateau depends on the tensor-core path (BF16, FP8, INT8) and weight-only 4-bit GEMMs pay the
`w4a16` factor. The times come from costmodel.step_time at ideal efficiency (every factor 1.0),
so no formula of the cost model is restated here. `IDEAL` is the ceiling: every factor 1.0 and no
overhead. `linear_efficiency(profile)` gives the plateau factors as a costmodel.Efficiency for the
simulators whose engine needs a step time linear in the batch (simulators/engine).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any

from . import costmodel as cm
from .catalog import Gpu, Model

FACTORS = ("bandwidth", "gemm_bf16", "gemm_fp8", "gemm_int8", "w4a16", "attention")
WEIGHT_ONLY_4BIT = ("int4",)
OPTIONAL = (
    "allreduce_latency_us",
    "matvec_max_tokens",
    "layer_overhead_us",
    "allreduce_bandwidth",
    "activation_io",
    "matvec_bytes_per_sm_cycle",
)  # each with a `<key>_source` when given


@dataclass(frozen=True)
class EngineProfile:
    id: str
    name: str
    bandwidth: float
    gemm_bf16: float
    gemm_fp8: float
    gemm_int8: float
    gemm_m_half: float
    w4a16: float
    attention: float
    step_overhead_us: float
    max_num_seqs: int
    max_num_batched_tokens: int
    cuda_graphs: bool = True
    fp16_accumulate: bool = False
    allreduce_latency_us: float = 0.0  # per tensor-parallel all-reduce, on top of its bandwidth term
    matvec_max_tokens: int = 0  # steps of at most this many tokens run matrix-vector kernels
    layer_overhead_us: float = 0.0  # fixed time per transformer layer per forward pass
    allreduce_bandwidth: float = 1.0  # share of the link's one-way rate the engine's collectives reach
    activation_io: float = 0.0  # passes of activation traffic between a layer's kernels (0: none counted)
    matvec_bytes_per_sm_cycle: float = 0.0  # most a matrix-vector step streams per SM and cycle (0: no cap)
    quantized_path: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def gemm_efficiency(self, path: str, tokens: int) -> float:
        """Achieved share of the `path` tensor peak by a GEMM over `tokens` rows."""
        plateau = {"bf16": self.gemm_bf16, "fp8": self.gemm_fp8, "int8": self.gemm_int8}[path]
        if not self.gemm_m_half or tokens <= self.matvec_max_tokens:
            return plateau
        return plateau * tokens / (tokens + self.gemm_m_half)


IDEAL = EngineProfile(
    id="ideal",
    name="Ideal hardware (100% of peak)",
    bandwidth=1.0,
    gemm_bf16=1.0,
    gemm_fp8=1.0,
    gemm_int8=1.0,
    gemm_m_half=0.0,
    w4a16=1.0,
    attention=1.0,
    step_overhead_us=0.0,
    max_num_seqs=1 << 30,
    max_num_batched_tokens=1 << 30,
)


class ProfileError(ValueError):
    pass


@cache
def _data() -> dict[str, Any]:
    text = resources.files("simulators").joinpath("data").joinpath("engine_profiles.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def _profile(pid: str, d: dict[str, Any]) -> EngineProfile:
    where = f"engine profile '{pid}'"
    for key in (*FACTORS, "gemm_m_half", "step_overhead_us", "max_num_seqs", "max_num_batched_tokens"):
        if key not in d:
            raise ProfileError(f"{where}: '{key}' is required")
        if f"{key}_source" not in d:
            raise ProfileError(f"{where}: '{key}' needs a '{key}_source'")
    for key in FACTORS:
        if not 0 < d[key] <= 1:
            raise ProfileError(f"{where}: '{key}' must be in (0, 1], got {d[key]!r}")
    for key in OPTIONAL:
        if key in d and f"{key}_source" not in d:
            raise ProfileError(f"{where}: '{key}' needs a '{key}_source'")
        if key in d and not (isinstance(d[key], int | float) and d[key] >= 0):
            raise ProfileError(f"{where}: '{key}' must be a number >= 0, got {d[key]!r}")
    if "allreduce_bandwidth" in d and not 0 < d["allreduce_bandwidth"] <= 1:
        raise ProfileError(f"{where}: 'allreduce_bandwidth' must be in (0, 1], got {d['allreduce_bandwidth']!r}")
    return EngineProfile(
        id=pid,
        name=str(d["name"]),
        **{k: float(d[k]) for k in (*FACTORS, "gemm_m_half", "step_overhead_us")},
        max_num_seqs=int(d["max_num_seqs"]),
        max_num_batched_tokens=int(d["max_num_batched_tokens"]),
        cuda_graphs=bool(d.get("cuda_graphs", True)),
        fp16_accumulate=bool(d.get("fp16_accumulate", False)),
        allreduce_latency_us=float(d.get("allreduce_latency_us", 0.0)),
        matvec_max_tokens=int(d.get("matvec_max_tokens", 0)),
        layer_overhead_us=float(d.get("layer_overhead_us", 0.0)),
        allreduce_bandwidth=float(d.get("allreduce_bandwidth", 1.0)),
        activation_io=float(d.get("activation_io", 0.0)),
        matvec_bytes_per_sm_cycle=float(d.get("matvec_bytes_per_sm_cycle", 0.0)),
        quantized_path=dict(d.get("quantized_path", {})),
        sources={k[: -len("_source")]: v for k, v in d.items() if k.endswith("_source")},
    )


@cache
def profiles() -> dict[str, EngineProfile]:
    """Every engine profile of data/engine_profiles.toml, in file order."""
    return {pid: _profile(pid, d) for pid, d in _data().items()}


DEFAULT = cm.DEFAULT_ENGINE


def profile(name: str) -> EngineProfile:
    """A profile by id; "ideal" is the physical ceiling."""
    if name == "ideal":
        return IDEAL
    known = profiles()
    if name not in known:
        raise ProfileError(f"unknown engine '{name}'; known: ideal, {', '.join(known)}")
    return known[name]


def ceiling(p: EngineProfile) -> EngineProfile:
    """The physical ceiling of engine `p`: its kernel paths and schedule, every factor 1.0, no overhead."""
    return replace(
        p,
        id=f"{p.id}-ideal",
        bandwidth=1.0,
        gemm_bf16=1.0,
        gemm_fp8=1.0,
        gemm_int8=1.0,
        w4a16=1.0,
        attention=1.0,
        gemm_m_half=0.0,
        step_overhead_us=0.0,
        allreduce_latency_us=0.0,
        layer_overhead_us=0.0,
        allreduce_bandwidth=1.0,
        activation_io=0.0,
        matvec_bytes_per_sm_cycle=0.0,
    )


def matvec_bandwidth_GBps(p: EngineProfile, gpu: Gpu, tokens: int) -> float | None:
    """The most a step of `tokens` tokens streams on `gpu` (GB/s) when it runs matrix-vector kernels
    that keep a bounded number of bytes in flight per SM: SMs x boost clock x bytes per SM-cycle.
    None where no cap applies (larger steps, no such factor, no SM count or clock for the GPU)."""
    if not p.matvec_bytes_per_sm_cycle or tokens > p.matvec_max_tokens:
        return None
    if not gpu.sm_count or not gpu.boost_clock_MHz:
        return None
    return gpu.sm_count * gpu.boost_clock_MHz * 1e-3 * p.matvec_bytes_per_sm_cycle


def allreduce_latency_s(p: EngineProfile, m: Model, tp: int) -> float:
    """Latency of one forward pass's tensor-parallel all-reduces: two per layer (Megatron-LM)."""
    return 2 * m.num_layers * p.allreduce_latency_us * 1e-6 if tp > 1 else 0.0


def fixed_overhead_s(p: EngineProfile, m: Model) -> float:
    """The time of a forward pass that no batch size changes: the step's and its layers' own."""
    return (p.step_overhead_us + m.num_layers * p.layer_overhead_us) * 1e-6


ACTIVATION_BYTES = 2  # activations pass between kernels in BF16


def activation_values(m: Model, tp: int) -> float:
    """Activation values one token writes and reads between the kernels of a forward pass, per rank.

    A Llama-style layer runs, besides its GEMMs: two fused residual-add + RMSNorm kernels (each
    reads the token's hidden state and residual and writes both: 4 d), rotary embedding in place
    on q and k (read and write), attention (reads q, writes its output; the KV cache is counted
    elsewhere) and the SwiGLU activation (reads gate and up, writes their product: 3 I); each GEMM
    reads its input and writes its output. That is 12 d + (6 q + 4 kv + 6 I) / tp values, where
    q and kv are the query and key-value widths and I the MLP width (a token's active experts' for
    a mixture of experts); d-wide tensors are whole on every tensor-parallel rank, the others split.
    A two-matrix GELU MLP has 4 I instead of 6 I. The kernels are vLLM's own
    (csrc/layernorm_kernels.cu fused_add_rms_norm, csrc/pos_encoding_kernels.cu rotary_embedding,
    csrc/activation_kernels.cu silu_and_mul); fusing more of them, as a compiled step does, moves less.
    """
    q, kv = m.num_heads * m.head_dim, m.num_kv_heads * m.head_dim
    per_i = 6 if m.mlp == "swiglu" else 4
    total = 0.0
    for layer in range(m.num_layers):
        moe = m.is_moe and layer >= m.first_k_dense
        width = m.moe_intermediate_size * (m.num_experts_per_tok + m.num_shared_experts) if moe else m.intermediate_size
        total += 12 * m.hidden_size + (6 * q + 4 * kv + per_i * width) / tp
    return total


def activation_s(p: EngineProfile, m: Model, gpu: Gpu, tokens: int, tp: int) -> float:
    """Time of a step's activation traffic between kernels: serial with the GEMMs, at the profile's
    bandwidth share (memory-bound elementwise kernels); none in the ceiling (perfect fusion)."""
    if not p.activation_io:
        return 0.0
    moved = p.activation_io * activation_values(m, tp) * ACTIVATION_BYTES * tokens
    return moved / (gpu.hbm_bandwidth_GBps * cm.GB * p.bandwidth)


def linear_efficiency(p: EngineProfile) -> cm.Efficiency:
    """The profile's plateau factors (BF16 GEMM plateau) and step overhead as a cost-model Efficiency."""
    return cm.Efficiency(p.bandwidth, p.gemm_bf16, p.step_overhead_us * 1e-6)


@dataclass(frozen=True)
class ProfileStep:
    compute_s: float
    memory_s: float
    communication_s: float
    overhead_s: float
    activation_s: float = 0.0  # activation traffic between kernels (activation_s()), serial

    @property
    def time_s(self) -> float:
        return max(self.compute_s, self.memory_s) + self.communication_s + self.overhead_s + self.activation_s


def _path(p: EngineProfile, gpu: Gpu, weight_dtype: str, base_path: str) -> str:
    """The tensor-core path the profile's kernels use for these weights (falls back to the cost model's)."""
    path = p.quantized_path.get(weight_dtype, base_path)
    return path if gpu.peak_tflops(path) is not None else base_path


def _peak(p: EngineProfile, gpu: Gpu, path: str) -> float:
    if path == "bf16" and p.fp16_accumulate and gpu.dense_fp16_acc_tflops:
        return gpu.dense_fp16_acc_tflops
    return gpu.peak_tflops(path) or 0.0


def step_time(
    p: EngineProfile,
    m: Model,
    gpu: Gpu,
    seqs: list[tuple[int, int]],
    *,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    activation_dtype: str | None = None,
    tp: int = 1,
) -> ProfileStep:
    """One forward pass over `seqs` ((new, cached) tokens per sequence) as engine `p` runs it."""
    base = cm.step_time(
        m,
        gpu,
        seqs,
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
        activation_dtype=activation_dtype,
        eff=cm.IDEAL,
        tp=tp,
    )
    tokens = sum(q for q, _ in seqs)
    gemm_s = base.compute_s - base.attention_s
    path = _path(p, gpu, weight_dtype, base.matmul_path)
    if base.compute_known:
        gemm_s *= (gpu.peak_tflops(base.matmul_path) or 1.0) / (_peak(p, gpu, path) or 1.0)
    eff = p.gemm_efficiency(path, tokens)
    if weight_dtype in WEIGHT_ONLY_4BIT:
        eff *= p.w4a16
    memory_s = base.memory_s / p.bandwidth
    cap = matvec_bandwidth_GBps(p, gpu, tokens)
    if cap is not None:  # base.memory_s is the bytes at peak bandwidth
        memory_s = max(memory_s, base.memory_s * gpu.hbm_bandwidth_GBps / cap)
    return ProfileStep(
        compute_s=gemm_s / eff + base.attention_s / p.attention,
        memory_s=memory_s,
        communication_s=base.communication_s / p.allreduce_bandwidth + allreduce_latency_s(p, m, tp),
        overhead_s=fixed_overhead_s(p, m),
        activation_s=activation_s(p, m, gpu, tokens, tp),
    )
