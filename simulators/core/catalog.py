"""The catalogues: GPUs, models, number formats and sourced assumptions, read from data/*.toml.

Everything here is data with a source. A model is described by the keys of its Hugging Face
`config.json`, so a reader can paste their own; a GPU by the keys of `data/gpus.toml`, so a
reader can describe their own. Both are validated with messages that name the offending key.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from . import model_config


class CatalogError(ValueError):
    """A catalogue entry, a pasted config.json or a custom GPU is invalid."""


@cache
def data_file(name: str) -> dict[str, Any]:
    """A data file of simulators/data (a TOML catalogue), parsed; read once per process."""
    text = resources.files("simulators").joinpath("data").joinpath(name).read_text(encoding="utf-8")
    return tomllib.loads(text)


# ---------------------------------------------------------------------------------------------
# GPUs

GPU_NUMBER_KEYS = (
    "memory_GiB",
    "cuda_total_GiB",
    "hbm_bandwidth_GBps",
    "dense_bf16_tflops",
    "sparse_bf16_tflops",
    "dense_fp16_acc_tflops",
    "dense_fp8_tflops",
    "sparse_fp8_tflops",
    "dense_int8_tops",
    "sparse_int8_tops",
    "interconnect_GBps",
    "host_link_GBps",
    "tdp_W",
    "sm_count",
    "boost_clock_MHz",
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


def _number(where: str, key: str, value: Any, *, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CatalogError(f"{where}: '{key}' must be a number, got {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise CatalogError(f"{where}: '{key}' must be finite, got {value!r}")
    if positive and value <= 0:
        raise CatalogError(f"{where}: '{key}' must be greater than 0, got {value!r}")
    return float(value)


def gpu_from_dict(data: dict[str, Any], gpu_id: str = "custom") -> Gpu:
    """Build a GPU from catalogue keys; `memory_GiB` and `hbm_bandwidth_GBps` are required."""
    where = f"GPU '{gpu_id}'"
    if not isinstance(data, dict):
        raise CatalogError(f"{where}: expected an object of GPU keys, got {type(data).__name__}")
    unknown = sorted(set(data) - set(GPU_NUMBER_KEYS) - set(GPU_TEXT_KEYS) - {"id"})
    if unknown:
        raise CatalogError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: " + ", ".join(GPU_NUMBER_KEYS + GPU_TEXT_KEYS)
        )
    for key in ("memory_GiB", "hbm_bandwidth_GBps"):
        if key not in data:
            raise CatalogError(f"{where}: '{key}' is required")
    fields: dict[str, Any] = {}
    for key in GPU_NUMBER_KEYS:
        if key in data:
            fields[key] = _number(where, key, data[key])
    for key in GPU_TEXT_KEYS:
        if key in data:
            if not isinstance(data[key], str):
                raise CatalogError(f"{where}: '{key}' must be text")
            fields[key] = data[key]
    if fields.get("platform", "") not in GPU_PLATFORMS:
        raise CatalogError(f"{where}: 'platform' must be one of {', '.join(repr(x) for x in GPU_PLATFORMS)}")
    fields.setdefault("name", str(data.get("id", gpu_id)))
    return Gpu(id=str(data.get("id", gpu_id)), **fields)


def serve_defaults(gpu: Gpu) -> dict[str, float]:
    """What `vllm serve` (the version in assumptions.toml [vllm_defaults]) picks on this GPU.

    gpu_memory_utilization, block_size, and max_num_batched_tokens / max_num_seqs by GPU as
    EngineArgs chooses them for the API server (larger on GPUs of 70 GiB or more, the A100 excepted).
    """
    d = assumptions()["vllm_defaults"]
    large = gpu.visible_GiB >= d["large_gpu_min_GiB"] and "a100" not in gpu.name.lower()
    size = "large" if large else "small"
    return {
        "gpu_memory_utilization": float(d["gpu_memory_utilization"]),
        "block_size": int(d["block_size"]),
        "max_num_batched_tokens": int(d[f"max_num_batched_tokens_{size}"]),
        "max_num_seqs": int(d[f"max_num_seqs_{size}"]),
    }


@cache
def gpus() -> dict[str, Gpu]:
    """Every catalogue GPU by id, in file order; an entry without a `source` is refused."""
    entries = data_file("gpus.toml")
    _sourced("gpus.toml", "GPU", entries)
    return {gid: gpu_from_dict(entry, gid) for gid, entry in entries.items()}


def _sourced(file: str, kind: str, entries: dict[str, Any]) -> None:
    """Every catalogue entry names where its figures come from (a reader's custom one need not)."""
    for eid, entry in entries.items():
        if not str(entry.get("source", "")).strip():
            raise CatalogError(f"{file}: {kind} '{eid}' has no 'source': say where its figures come from")


# ---------------------------------------------------------------------------------------------
# Models


@dataclass(frozen=True)
class Model:
    id: str
    name: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_context_tokens: int
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    # "swiglu": gate, up and down projections (Llama family); "gelu": two matrices with biases
    # and LayerNorm (GPT-2).
    mlp: str = "swiglu"
    sliding_window: int | None = None
    # Mixture of experts: 0 experts means a dense MLP in every layer.
    num_experts: int = 0
    num_experts_per_tok: int = 0
    num_shared_experts: int = 0
    moe_intermediate_size: int = 0
    first_k_dense: int = 0
    # Multi-head latent attention (DeepSeek-V2/V3): 0 kv_lora_rank means ordinary attention.
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    published_params_B: float | None = None
    source: str = ""
    # Attention kind of each layer ("full", "sliding", "chunked", "none" = no KV cache), or ()
    # when all layers are alike (all "sliding" if sliding_window is set, else all "full").
    layer_kinds: tuple[str, ...] = ()
    # Llama 4's chunked local attention: tokens per chunk.
    attention_chunk_size: int | None = None
    # Keys of the pasted config.json that no simulator reads, listed rather than refused.
    ignored_keys: tuple[str, ...] = ()
    # What reading the config left out or assumed (vision tower, layers without KV cache...).
    notes: tuple[str, ...] = ()
    # Number format of the checkpoint's weights per its quantization_config ("" = bf16).
    weight_format: str = ""
    # Parameters of a vision tower (vision_config), which vLLM loads beside the language model.
    vision_params: int = 0

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every layer's attention kind, spelled out."""
        if self.layer_kinds:
            return self.layer_kinds
        return ("sliding" if self.sliding_window else "full",) * self.num_layers

    @property
    def attention(self) -> str:
        """MHA, GQA, MQA or MLA, read from the shape."""
        if self.kv_lora_rank:
            return "MLA"
        if self.num_kv_heads == self.num_heads:
            return "MHA"
        return "MQA" if self.num_kv_heads == 1 else "GQA"

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0


# config.json keys the cost model reads, with the aliases other model families use.
_ALIASES = {
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_attention_heads": ("num_attention_heads", "n_head"),
    "num_key_value_heads": ("num_key_value_heads", "num_kv_heads"),
    "intermediate_size": ("intermediate_size", "n_inner", "ffn_dim"),
    "max_position_embeddings": ("max_position_embeddings", "n_positions", "max_seq_len"),
    "num_local_experts": ("num_local_experts", "n_routed_experts", "num_experts"),
    "num_experts_per_tok": ("num_experts_per_tok", "experts_per_token"),
}
_REQUIRED = ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size")
_OPTIONAL_INT = (
    "head_dim",
    "sliding_window",
    "num_experts_per_tok",
    "n_shared_experts",
    "moe_intermediate_size",
    "first_k_dense_replace",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
)
# Keys of a real config.json that do not change cost (tokenizer ids, rope settings, dtype...).
_IGNORED = {
    "architectures",
    "model_type",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "torch_dtype",
    "transformers_version",
    "rope_theta",
    "rope_scaling",
    "rms_norm_eps",
    "layer_norm_epsilon",
    "initializer_range",
    "attention_dropout",
    "use_cache",
    "pretraining_tp",
    "mlp_bias",
    "max_window_layers",
    "use_sliding_window",
    "bos_token",
    "eos_token",
    "activation_function",
    "resid_pdrop",
    "embd_pdrop",
    "attn_pdrop",
    "summary_type",
    "summary_use_proj",
    "summary_activation",
    "summary_proj_to_labels",
    "summary_first_dropout",
    "n_ctx",
    "task_specific_params",
    "auto_map",
    "quantization_config",
    "routed_scaling_factor",
    "scoring_func",
    "topk_method",
    "n_group",
    "topk_group",
    "norm_topk_prob",
    "aux_loss_alpha",
    "seq_aux",
    "num_nextn_predict_layers",
    "moe_layer_freq",
    "ep_size",
    "output_router_logits",
    "router_aux_loss_coef",
    "router_jitter_noise",
    "rope_interleave",
    "hidden_dropout",
    "attention_probs_dropout_prob",
    "scale_attn_weights",
    "reorder_and_upcast_attn",
    "scale_attn_by_inverse_layer_idx",
    "id2label",
    "label2id",
    "_name_or_path",
    "dtype",
    "layer_types",
    "tie_embeddings",
    "bias",
    "sliding_window_pattern",
    "attention_chunk_size",
    "no_rope_layers",
    "shared_expert_intermediate_size",
    "text_config",
    "vision_config",
}
_PLAIN_MLP_TYPES = {"gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon"}
_CATALOGUE_ONLY = {"name", "source", "published_params_B", "id", "hf_ids"}


def _int(where: str, key: str, value: Any, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise CatalogError(f"{where}: '{key}' must be a whole number, got {value!r}")
    if value < minimum:
        raise CatalogError(f"{where}: '{key}' must be at least {minimum}, got {value!r}")
    return int(value)


def model_from_config(config: dict[str, Any], model_id: str = "custom") -> Model:
    """Build a model from Hugging Face config.json keys (dense, GQA, MoE and MLA shapes)."""
    where = f"model '{model_id}'"
    if not isinstance(config, dict):
        raise CatalogError(f"{where}: expected a config.json object, got {type(config).__name__}")
    vision = model_config.vision_params(config)
    config, notes = model_config.flatten(config)
    known = {a for names in _ALIASES.values() for a in names}
    known |= set(_REQUIRED) | set(_OPTIONAL_INT) | _IGNORED | _CATALOGUE_ONLY
    known |= {"tie_word_embeddings", "attention_bias", "hidden_act", "vocab_size"}
    # A real config.json carries keys no simulator reads: listed on the model, never refused.
    unknown = tuple(sorted(set(config) - known))

    def get(key: str) -> Any:
        for alias in _ALIASES.get(key, (key,)):
            if config.get(alias) is not None:
                return config[alias]
        return None

    for key in _REQUIRED:
        if get(key) is None:
            raise CatalogError(f"{where}: '{key}' is required")
    layers = _int(where, "num_hidden_layers", get("num_hidden_layers"))
    hidden = _int(where, "hidden_size", get("hidden_size"))
    heads = _int(where, "num_attention_heads", get("num_attention_heads"))
    kv_heads = _int(where, "num_key_value_heads", get("num_key_value_heads") or heads)
    if heads % kv_heads:
        raise CatalogError(
            f"{where}: num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv_heads})"
        )
    head_dim = _int(where, "head_dim", get("head_dim") or hidden // heads)
    act = str(config.get("hidden_act", config.get("activation_function", "silu")))
    # GPT-2-style blocks (two MLP matrices with biases, LayerNorm) vs gated SwiGLU blocks.
    plain = config.get("model_type") in _PLAIN_MLP_TYPES or "n_embd" in config or act == "gelu_new"
    mlp = "gelu" if plain else "swiglu"
    intermediate = _int(where, "intermediate_size", get("intermediate_size") or 4 * hidden)
    opt = {k: _int(where, k, get(k), minimum=0) for k in _OPTIONAL_INT if get(k) is not None}
    experts = _int(where, "num_local_experts", get("num_local_experts") or 0, minimum=0)
    top_k = opt.get("num_experts_per_tok", 0)
    if experts and not 1 <= top_k <= experts:
        raise CatalogError(f"{where}: 'num_experts_per_tok' must be between 1 and {experts}, got {top_k}")
    mla = opt.get("kv_lora_rank", 0)
    if mla and not (opt.get("qk_rope_head_dim") and opt.get("qk_nope_head_dim") and opt.get("v_head_dim")):
        raise CatalogError(f"{where}: MLA needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim")
    published = config.get("published_params_B")
    try:
        kinds, kind_notes = model_config.layer_kinds(config, layers)
    except ValueError as e:
        raise CatalogError(f"{where}: {e}") from None
    shared = opt.get("n_shared_experts", 0)
    shared_size = config.get("shared_expert_intermediate_size")
    moe_size = opt.get("moe_intermediate_size", 0) or (intermediate if experts else 0)
    if experts and isinstance(shared_size, int) and shared_size > 0 and moe_size:
        shared = max(1, round(shared_size / moe_size))  # Qwen2-MoE: one wide shared expert
    if experts and config.get("model_type") in ("llama4", "llama4_text"):
        shared = shared or 1  # Llama 4 MoE layers add one shared expert (HF Llama4TextMoe)
    chunk = config.get("attention_chunk_size")
    return Model(
        id=model_id,
        name=str(config.get("name", model_id)),
        num_layers=layers,
        hidden_size=hidden,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
        vocab_size=_int(where, "vocab_size", get("vocab_size")),
        max_context_tokens=_int(where, "max_position_embeddings", get("max_position_embeddings") or 2048),
        tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
        attention_bias=bool(config.get("attention_bias", False)),
        mlp=mlp,
        sliding_window=model_config.sliding_window(config) if "sliding_window" in opt else None,
        num_experts=experts,
        num_experts_per_tok=top_k,
        num_shared_experts=shared,
        moe_intermediate_size=moe_size,
        first_k_dense=opt.get("first_k_dense_replace", 0),
        kv_lora_rank=mla,
        q_lora_rank=opt.get("q_lora_rank", 0),
        qk_rope_head_dim=opt.get("qk_rope_head_dim", 0),
        qk_nope_head_dim=opt.get("qk_nope_head_dim", 0),
        v_head_dim=opt.get("v_head_dim", 0),
        published_params_B=None if published is None else float(published),
        source=str(config.get("source", "")),
        layer_kinds=kinds,
        attention_chunk_size=int(chunk) if isinstance(chunk, int) and chunk > 0 else None,
        ignored_keys=unknown,
        notes=tuple(notes + kind_notes),
        weight_format=model_config.weight_format(config),
        vision_params=vision,
    )


@cache
def models() -> dict[str, Model]:
    """Every catalogue model by id, in file order; a catalogue entry may not carry unread keys."""
    entries = data_file("models.toml")
    _sourced("models.toml", "model", entries)
    out = {mid: model_from_config(entry, mid) for mid, entry in entries.items()}
    for mid, m in out.items():
        if m.ignored_keys:
            raise CatalogError(
                f"model '{mid}': unknown key(s) {', '.join(m.ignored_keys)} (not read by the cost model)"
            )
    return out


@cache
def hf_repos() -> dict[str, str]:
    """Hugging Face repository (lower case) -> catalogue model id, from each entry's `hf_ids`."""
    out: dict[str, str] = {}
    for mid, entry in data_file("models.toml").items():
        for repo in entry.get("hf_ids", []):
            if repo.lower() in out:
                raise CatalogError(f"model '{mid}': hf_ids repeats '{repo}' (also in '{out[repo.lower()]}')")
            out[repo.lower()] = mid
    return out


def model_for_repo(repo: str) -> Model | None:
    """The catalogue entry a Hugging Face repository id (or a local path ending in it) names; None if none."""
    key = repo.strip().rstrip("/").lower()
    by_name = {r.split("/")[-1]: mid for r, mid in hf_repos().items()}  # a local copy keeps the name
    mid = hf_repos().get("/".join(key.split("/")[-2:])) or by_name.get(key.split("/")[-1])
    return models()[mid] if mid else models().get(key)


# ---------------------------------------------------------------------------------------------
# Number formats, assumptions and the running example


@dataclass(frozen=True)
class Precision:
    id: str
    name: str
    bits: int
    group_size: int
    scale_bits: int
    tensor_core: str
    source: str
    # Average stored bits per weight of a mixed format (GGUF k-quant mixes), where one block
    # layout does not describe it; overrides bits + scales.
    bits_per_weight: float | None = None

    @property
    def bytes_per_value(self) -> float:
        """Stored bytes per value, group scales included: int4 g128 = (4 + 16/128) / 8."""
        if self.bits_per_weight is not None:
            return self.bits_per_weight / 8
        overhead = self.scale_bits / self.group_size if self.group_size else 0.0
        return (self.bits + overhead) / 8


@cache
def precisions() -> dict[str, Precision]:
    return {pid: Precision(id=pid, **entry) for pid, entry in data_file("precisions.toml").items()}


@cache
def assumptions() -> dict[str, Any]:
    return data_file("assumptions.toml")


@cache
def running_example() -> dict[str, Any]:
    return data_file("running_example.toml")


def resolve_gpu(value: str | dict[str, Any]) -> Gpu:
    """A catalogue id, or a dict describing a custom GPU."""
    if isinstance(value, dict):
        return gpu_from_dict(value, str(value.get("id", "custom")))
    try:
        return gpus()[value]
    except KeyError:
        raise CatalogError(f"unknown GPU '{value}'; known: {', '.join(gpus())}") from None


def resolve_model(value: str | dict[str, Any]) -> Model:
    """A catalogue id, or a Hugging Face config.json dict."""
    if isinstance(value, dict):
        return model_from_config(value, str(value.get("id", value.get("name", "custom"))))
    try:
        return models()[value]
    except KeyError:
        raise CatalogError(f"unknown model '{value}'; known: {', '.join(models())}") from None
