"""A model: its shape as the cost model reads it, built from a Hugging Face config.json.

A model is described by the keys of its `config.json`, so a reader can paste their own:
model_from_config reads the keys (with the aliases other families use), checks them with
messages that name the offending key, and lists the keys no simulator reads instead of refusing
them. Reading a real file's quirks (nested text configs, layer kinds, quantization) is
model_config.py's.
"""

from dataclasses import dataclass
from typing import Any

from . import model_config
from .data_files import CatalogError


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
        return self.layer_kinds or ("sliding" if self.sliding_window else "full",) * self.num_layers

    @property
    def attention(self) -> str:
        """MHA, GQA, MQA or MLA, read from the shape."""
        if self.kv_lora_rank:
            return "MLA"
        if self.num_kv_heads == self.num_heads:
            return "MHA"
        return "MQA" if self.num_kv_heads == 1 else "GQA"

    def beyond_context(self, tokens: int) -> list[str]:
        """A note when `tokens` of context pass what the model was trained for (costed at the same shape)."""
        note = f"{self.name} was trained for {self.max_context_tokens:,} tokens of context; longer contexts assume a long-context variant of the same shape."
        return [note] if tokens > self.max_context_tokens else []

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def num_moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts (the first `first_k_dense` stay dense)."""
        return self.num_layers - self.first_k_dense if self.is_moe else 0


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
_OPTIONAL_INT = tuple(
    """
    head_dim sliding_window num_experts_per_tok n_shared_experts moe_intermediate_size first_k_dense_replace
    kv_lora_rank q_lora_rank qk_rope_head_dim qk_nope_head_dim v_head_dim
    """.split()
)
# Keys of a real config.json that do not change cost (tokenizer ids, rope settings, dtype...).
_IGNORED = set(
    """
    architectures model_type bos_token_id eos_token_id pad_token_id torch_dtype transformers_version rope_theta
    rope_scaling rms_norm_eps layer_norm_epsilon initializer_range attention_dropout use_cache pretraining_tp
    mlp_bias max_window_layers use_sliding_window bos_token eos_token activation_function resid_pdrop embd_pdrop
    attn_pdrop summary_type summary_use_proj summary_activation summary_proj_to_labels summary_first_dropout
    n_ctx task_specific_params auto_map quantization_config routed_scaling_factor scoring_func topk_method
    n_group topk_group norm_topk_prob aux_loss_alpha seq_aux num_nextn_predict_layers moe_layer_freq ep_size
    output_router_logits router_aux_loss_coef router_jitter_noise rope_interleave hidden_dropout
    attention_probs_dropout_prob scale_attn_weights reorder_and_upcast_attn scale_attn_by_inverse_layer_idx
    id2label label2id _name_or_path dtype layer_types tie_embeddings bias sliding_window_pattern
    attention_chunk_size no_rope_layers shared_expert_intermediate_size text_config vision_config
    """.split()
)
# Multi-head latent attention's keys, named as the Model fields: its two ranks, then the three dimensions it needs.
_MLA = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
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
    if opt.get("kv_lora_rank") and not all(opt.get(k) for k in _MLA[2:]):
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
        vocab_size=_int(where, "vocab_size", get("vocab_size")),
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
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
        **{k: opt.get(k, 0) for k in _MLA},
        published_params_B=None if published is None else float(published),
        source=str(config.get("source", "")),
        layer_kinds=kinds,
        attention_chunk_size=int(chunk) if isinstance(chunk, int) and chunk > 0 else None,
        ignored_keys=unknown,
        notes=tuple(notes + kind_notes),
        weight_format=model_config.weight_format(config),
        vision_params=vision,
    )
