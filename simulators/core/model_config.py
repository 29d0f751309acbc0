"""Reading a real Hugging Face config.json: nested text configs, layer kinds, keys left unread.

A config.json describes more than the cost model needs (tokenizer ids, rope settings, vision
towers). This module turns one into the flat dict of keys `model.model_from_config` reads:

- multimodal configs (Gemma 3, Llama 4) keep the language model under `text_config`; its keys
  are lifted to the top and the vision tower is noted and left out;
- each layer gets a kind: "full" (attention over the whole context), "sliding" (a window of
  `sliding_window` tokens), "chunked" (Llama 4's chunked local attention, `attention_chunk_size`)
  or "none" (a layer with no KV cache: linear attention or a state-space block);
- keys no simulator reads are listed, never refused, so a real file loads unchanged.

Layer kinds follow the model code: an explicit `layer_types` list (gpt-oss, Qwen3-Next, recent
Gemma); Gemma 2 alternates sliding and full layers, starting with sliding (HF
`Gemma2DecoderLayer`: `is_sliding = not bool(layer_idx % 2)`); Gemma 3 makes every
`sliding_window_pattern`-th layer full (`is_sliding = bool((layer_idx + 1) % pattern)`); Llama 4
makes every `no_rope_layers` zero a full layer and the rest chunked; Qwen 2/3 ignore their
`sliding_window` unless `use_sliding_window` is true.

References: 1) huggingface/transformers, models/gemma2, gemma3, llama4, gpt_oss, qwen3_next
configuration files; 2) vllm-project/vllm vllm/v1/kv_cache_interface.py (FullAttentionSpec,
SlidingWindowSpec, ChunkedLocalAttentionSpec).
"""

from typing import Any

# `layer_types` values in Hugging Face configs, mapped to the four kinds above.
_LAYER_TYPE_KINDS = {"full_attention": "full", "attention": "full", "sliding_attention": "sliding"}
_LAYER_TYPE_KINDS |= {"sliding_window_attention": "sliding", "chunked_attention": "chunked"}
_LAYER_TYPE_KINDS |= dict.fromkeys(("linear_attention", "mamba", "mamba2", "recurrent", "conv"), "none")


# Defaults the Hugging Face config classes fill in for keys a family's config.json leaves out
# (transformers configuration_gemma2.py, configuration_gemma3.py: Gemma ties its embeddings;
# Gemma3TextConfig: vocab_size 262,208, max_position_embeddings 131,072, sliding_window_pattern 6).
_FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma": {"tie_word_embeddings": True},
    "gemma2": {"tie_word_embeddings": True},
    "gemma3": {
        "tie_word_embeddings": True,
        "vocab_size": 262_208,
        "max_position_embeddings": 131_072,
        "sliding_window_pattern": 6,
        "head_dim": 256,
    },
}
# Llama 4: every fourth layer has no RoPE and attends globally (HF Llama4TextConfig
# no_rope_layer_interval = 4, used when the config's no_rope_layers list is empty).
LLAMA4_NOPE_INTERVAL = 4


def flatten(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The language model's keys at the top level, and notes on what was left out."""
    notes: list[str] = []
    text = config.get("text_config")
    flat = dict(config)
    if isinstance(text, dict):
        flat = {k: v for k, v in config.items() if k not in ("text_config", "vision_config")} | text
        if "vision_config" in config:
            notes.append("vision tower left out: only the language model is costed")
        if "model_type" in config:  # the outer type names the family (gemma3, llama4)
            flat["model_type"] = config["model_type"]
    family = str(flat.get("model_type", "")).removesuffix("_text")
    return _FAMILY_DEFAULTS.get(family, {}) | flat, notes


def layer_kinds(config: dict[str, Any], num_layers: int) -> tuple[tuple[str, ...], list[str]]:
    """Each layer's attention kind, or () when every layer is the same; notes on the choice."""
    model_type = str(config.get("model_type", ""))
    types = config.get("layer_types")
    if isinstance(types, list) and types:
        if len(types) != num_layers:
            raise ValueError(f"'layer_types' lists {len(types)} layers, num_hidden_layers is {num_layers}")
        if unknown := [t for t in types if str(t) not in _LAYER_TYPE_KINDS]:
            raise ValueError(
                f"'layer_types' has an unknown layer type {unknown[0]!r}; known: {', '.join(_LAYER_TYPE_KINDS)}"
            )
        kinds = [_LAYER_TYPE_KINDS[str(t)] for t in types]
        none = kinds.count("none")
        notes = [f"{none} of {num_layers} layers keep no KV cache (linear attention or state space)"] if none else []
        return (() if set(kinds) == {"full"} else tuple(kinds)), notes
    if model_type.startswith("gemma2") and config.get("sliding_window"):
        return tuple("full" if i % 2 else "sliding" for i in range(num_layers)), []
    pattern = config.get("sliding_window_pattern")
    if model_type.startswith("gemma3") and config.get("sliding_window") and isinstance(pattern, int) and pattern > 0:
        return tuple("sliding" if (i + 1) % pattern else "full" for i in range(num_layers)), []
    nope = config.get("no_rope_layers")
    if model_type.startswith("llama4") and config.get("attention_chunk_size") and nope == []:
        nope = [int((i + 1) % LLAMA4_NOPE_INTERVAL != 0) for i in range(num_layers)]
    if config.get("attention_chunk_size") and isinstance(nope, list) and len(nope) == num_layers:
        note = "chunked local attention on the RoPE layers, full attention on the NoPE layers"
        return tuple("chunked" if flag else "full" for flag in nope), [note]
    return (), []


def sliding_window(config: dict[str, Any]) -> int | None:
    """The window, or None where the config carries one its model does not use."""
    window = config.get("sliding_window")  # Qwen 2 / 3 ship a window switched off
    return None if not window or config.get("use_sliding_window") is False else int(window)


def weight_format(config: dict[str, Any]) -> str:
    """The catalogue number format a checkpoint's `quantization_config` names: fp8 (DeepSeek-V3,
    Qwen3-FP8), mxfp4 (gpt-oss), NVFP4 (ModelOpt `quant_algo`) or 4-bit AWQ/GPTQ (int4 group 128);
    else "" (bf16, or a format left to the reader to choose)."""
    q = config.get("quantization_config")
    if not isinstance(q, dict):
        return ""
    method = str(q.get("quant_method", "")).lower()
    algo = str(q.get("quant_algo", "")).lower()
    if method == "mxfp4":
        return "mxfp4"
    if "nvfp4" in (method, algo):
        return "nvfp4"
    if method == "fp8" or algo == "fp8":
        return "fp8"
    return "int4" if method in ("awq", "gptq") and q.get("bits") == 4 else ""


def vision_params(config: dict[str, Any]) -> int:
    """Parameters of a ViT-style vision tower from its vision_config, or 0: per layer attention q, k,
    v, o (4 hidden^2) and a two-matrix MLP (2 hidden x intermediate); norms, patch embedding and the
    projector are left out. vLLM loads the tower with the model."""
    vision = config.get("vision_config")
    if not isinstance(vision, dict):
        return 0
    h, inter, layers = (vision.get(k) for k in ("hidden_size", "intermediate_size", "num_hidden_layers"))
    if not (isinstance(h, int) and isinstance(inter, int) and isinstance(layers, int)) or min(h, inter, layers) <= 0:
        return 0
    return layers * (4 * h**2 + 2 * h * inter)
