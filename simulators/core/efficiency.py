"""Engine profiles: the achieved fraction of peak for what actually runs, per engine.

A profile from data/engine_profiles.toml (vLLM, SGLang, TensorRT-LLM, llama.cpp) is what
costmodel.step_time prices every forward pass with (roofline.py has the formula); this module holds
the data and the few formulas that depend on the profile and the model alone, and imports nothing
from the cost model. A profile gives:

- shares of peak: memory `bandwidth`, a GEMM plateau per tensor-core path (BF16, FP8, INT8),
  `attention`, and the `w4a16` factor weight-only 4-bit GEMMs pay. With M the step's tokens per
  rank and micro-batch, gemm_efficiency = plateau(path) * M / (M + gemm_m_half);
- communication: the ring all-reduce at the share of the link's rate the engine's kernel reaches
  (`allreduce_bandwidth`) plus, under tensor parallelism, the alpha of an alpha-beta model
  (`allreduce_latency_us` per all-reduce, two per layer);
- fixed costs: the step's own and, with `layer_overhead_us`, a time per layer (a layer's kernels
  at a small batch take a time that does not fall with their bytes: launch gaps, latency floors);
- `activation_io`: the activation traffic between a layer's kernels (norms, rotary, SwiGLU, each
  GEMM's input and output: activation_values), memory-bound and serial with the GEMMs, which
  matters most in long prefills with FP8 GEMMs;
- `matvec_max_tokens`: steps up to that many tokens run matrix-vector kernels (llama.cpp's MMVQ)
  with no small-M penalty; with `matvec_bytes_per_sm_cycle` they stream at most SMs x boost clock
  x that many bytes (Little's law: each SM keeps a bounded number of bytes in flight for a roughly
  fixed latency in cycles, so a GPU whose bandwidth outgrows its SMs and clock is not filled).

`IDEAL` is the ceiling: every factor 1.0 and no overhead. A profile with `platform` and `replaces`
(llama.cpp's Metal backend on Apple silicon) prices that engine on a GPU of that platform (`on_gpu`)
and is no engine of its own in the choices; an engine with no profile for a GPU's platform does not
run there (`unsupported`): vLLM, SGLang and TensorRT-LLM need CUDA or ROCm.
"""

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from functools import cache, lru_cache
from typing import Any

from .catalog import Gpu, Model, data_file

FACTORS = ("bandwidth", "gemm_bf16", "gemm_fp8", "gemm_int8", "w4a16", "attention")
WEIGHT_ONLY_4BIT = ("int4",)
# Keys a profile may leave out, each with a `<key>_source` when given.
OPTIONAL = tuple(
    """
    allreduce_latency_us matvec_max_tokens layer_overhead_us allreduce_bandwidth activation_io matvec_bytes_per_sm_cycle
    """.split()
)
# The physical ceiling: every share of peak 1.0, every fixed cost 0 (IDEAL, ceiling).
_CEILING: dict[str, Any] = dict.fromkeys((*FACTORS, "allreduce_bandwidth"), 1.0)
_CEILING |= dict.fromkeys(("gemm_m_half", "step_overhead_us", "allreduce_latency_us", "layer_overhead_us"), 0.0)
_CEILING |= dict.fromkeys(("activation_io", "matvec_bytes_per_sm_cycle"), 0.0)


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
    platform: str = ""  # "" for CUDA / ROCm GPUs; "metal": the engine's kernels on Apple silicon
    replaces: str = ""  # the engine this profile prices on GPUs of its platform

    def gemm_efficiency(self, path: str, tokens: float) -> float:
        """Achieved share of the `path` tensor peak by a GEMM over `tokens` rows."""
        plateau = {"bf16": self.gemm_bf16, "fp8": self.gemm_fp8, "int8": self.gemm_int8}[path]
        if not self.gemm_m_half or tokens <= self.matvec_max_tokens:
            return plateau
        return plateau * tokens / (tokens + self.gemm_m_half)


IDEAL = EngineProfile(
    id="ideal", name="Ideal hardware (100% of peak)", max_num_seqs=1 << 30, max_num_batched_tokens=1 << 30, **_CEILING
)


class ProfileError(ValueError):
    pass


def _data() -> dict[str, Any]:
    return data_file("engine_profiles.toml")


# How a profile's key is read, by its field's type.
_READ: dict[str, Callable[[Any], Any]] = {"float": float, "int": int, "bool": bool, "str": str}


def _profile(pid: str, d: dict[str, Any]) -> EngineProfile:
    where = f"engine profile '{pid}'"
    for key in (*FACTORS, "gemm_m_half", "step_overhead_us", "max_num_seqs", "max_num_batched_tokens", *OPTIONAL):
        if key not in d and key not in OPTIONAL:
            raise ProfileError(f"{where}: '{key}' is required")
        if key in d and f"{key}_source" not in d:
            raise ProfileError(f"{where}: '{key}' needs a '{key}_source'")
        if key in OPTIONAL and key in d and not (isinstance(d[key], int | float) and d[key] >= 0):
            raise ProfileError(f"{where}: '{key}' must be a number >= 0, got {d[key]!r}")
    for key in (*FACTORS, "allreduce_bandwidth"):
        if key in d and not 0 < d[key] <= 1:
            raise ProfileError(f"{where}: '{key}' must be in (0, 1], got {d[key]!r}")
    if bool(d.get("platform")) != bool(d.get("replaces")):
        raise ProfileError(f"{where}: 'platform' and 'replaces' go together (a platform's profile of an engine)")
    kinds = {
        f.name: _READ.get(getattr(f.type, "__name__", str(f.type)))
        for f in fields(EngineProfile)
        if f.name not in ("id", "name")
    }
    return EngineProfile(
        id=pid,
        name=str(d["name"]),
        **{k: read(v) for k, v in d.items() if (read := kinds.get(k))},
        quantized_path=dict(d.get("quantized_path", {})),
        sources={k[: -len("_source")]: v for k, v in d.items() if k.endswith("_source")},
    )


@cache
def _all() -> dict[str, EngineProfile]:
    loaded = {pid: _profile(pid, d) for pid, d in _data().items()}
    for p in loaded.values():
        if p.replaces and (p.replaces not in loaded or loaded[p.replaces].platform):
            raise ProfileError(f"engine profile '{p.id}': replaces '{p.replaces}', which is not an engine profile")
    return loaded


@cache
def profiles() -> dict[str, EngineProfile]:
    """Every engine of data/engine_profiles.toml, in file order (not `platform_profiles`)."""
    return {pid: p for pid, p in _all().items() if not p.platform}


@cache
def platform_profiles() -> dict[str, EngineProfile]:
    """The profiles that price an engine on GPUs of another platform, by id (llama.cpp on Metal)."""
    return {pid: p for pid, p in _all().items() if p.platform}


DEFAULT = "vllm"  # the engine every time is priced with unless a simulator's choice says otherwise


def profile(name: str) -> EngineProfile:
    """A profile by id; "ideal" is the physical ceiling."""
    if name == "ideal":
        return IDEAL
    known = _all()
    if name not in known:
        raise ProfileError(f"unknown engine '{name}'; known: ideal, {', '.join(profiles())}")
    return known[name]


@lru_cache(maxsize=64)
def _for_platform(pid: str, platform: str) -> EngineProfile | None:
    """The platform's profile of engine `pid` (its ceiling for "<pid>-ideal"), or None."""
    base, ideal = (pid[: -len("-ideal")], True) if pid.endswith("-ideal") else (pid, False)
    for p in platform_profiles().values():
        if p.replaces == base and p.platform == platform:
            return ceiling(p) if ideal else p
    return None


def on_gpu(p: EngineProfile, gpu: Gpu) -> EngineProfile:
    """The profile that prices engine `p` on `gpu`: its platform's where it has one (llama.cpp on an
    Apple GPU runs Metal kernels), else `p`. The cost model applies it to every step."""
    return p if not gpu.platform or p.platform == gpu.platform else _for_platform(p.id, gpu.platform) or p


def multi_step(p: EngineProfile, runs: int) -> EngineProfile:
    """`p` under multi-step scheduling (vLLM v0.6's --num-scheduler-steps): the CPU time between
    passes (step_overhead_us) is spent once per run of `runs` decode steps."""
    return replace(p, step_overhead_us=p.step_overhead_us / runs) if runs > 1 else p


def profile_for(engine: str, gpu: Gpu) -> EngineProfile:
    """The profile that prices `engine` (an id of `profiles()`) on `gpu`."""
    return on_gpu(profile(engine), gpu)


def unsupported(engine: str, gpu: Gpu) -> str | None:
    """Why `engine` cannot run on `gpu` (None where it can): it has no profile for the GPU's platform."""
    if not gpu.platform or engine == "ideal" or _for_platform(engine, gpu.platform) is not None:
        return None
    runs = [
        f"'{p.replaces}' (priced with its {p.name} profile)"
        for p in platform_profiles().values()
        if p.platform == gpu.platform
    ]
    return (
        f"{profile(engine).name} does not run on {gpu.name}: it needs CUDA or ROCm kernels, and this GPU "
        f"runs {gpu.platform.capitalize()} ones; pick engine {' or '.join(runs) or 'none'}"
    )


def ceiling(p: EngineProfile) -> EngineProfile:
    """The physical ceiling of engine `p`: its kernel paths and schedule, every factor 1.0, no overhead."""
    return replace(p, id=f"{p.id}-ideal", **_CEILING)


def matvec_bandwidth_GBps(p: EngineProfile, gpu: Gpu, tokens: float) -> float | None:
    """SMs x boost clock x bytes per SM-cycle (GB/s): the most a matrix-vector step of `tokens` tokens
    streams on `gpu`; None where no cap applies (larger steps, no such factor, no SM count or clock)."""
    if not (p.matvec_bytes_per_sm_cycle and gpu.sm_count and gpu.boost_clock_MHz) or tokens > p.matvec_max_tokens:
        return None
    return gpu.sm_count * gpu.boost_clock_MHz * 1e-3 * p.matvec_bytes_per_sm_cycle


def allreduce_latency_s(p: EngineProfile, m: Model, tp: int) -> float:
    """Latency of one forward pass's tensor-parallel all-reduces: two per layer (Megatron-LM)."""
    return 2 * m.num_layers * p.allreduce_latency_us * 1e-6 if tp > 1 else 0.0


def fixed_overhead_s(p: EngineProfile, m: Model) -> float:
    """The time of a forward pass that no batch size changes: the step's and its layers' own."""
    return (p.step_overhead_us + m.num_layers * p.layer_overhead_us) * 1e-6


@lru_cache(maxsize=256)
def activation_values(m: Model, tp: int) -> float:
    """Activation values one token writes and reads between the kernels of a forward pass, per rank.

    Besides its GEMMs (each reads its input, writes its output), a Llama-style layer runs two fused
    residual-add + RMSNorm kernels (4 d each), rotary embedding in place on q and k, attention
    (reads q, writes its output) and SwiGLU (3 I): 12 d + (6 q + 4 kv + 6 I) / tp values, I the MLP
    width (a token's active experts'); d-wide tensors are whole on every TP rank. A GELU MLP has 4 I.
    vLLM's kernels: csrc/layernorm_kernels.cu fused_add_rms_norm, csrc/pos_encoding_kernels.cu
    rotary_embedding, csrc/activation_kernels.cu silu_and_mul; a compiled step fuses more.
    """
    q, kv = m.num_heads * m.head_dim, m.num_kv_heads * m.head_dim
    per_i = 6 if m.mlp == "swiglu" else 4
    total = 0.0
    for layer in range(m.num_layers):
        moe = m.is_moe and layer >= m.first_k_dense
        width = m.moe_intermediate_size * (m.num_experts_per_tok + m.num_shared_experts) if moe else m.intermediate_size
        total += 12 * m.hidden_size + (6 * q + 4 * kv + per_i * width) / tp
    return total
