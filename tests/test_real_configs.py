"""Real config.json files of today's open-weight families load unchanged and cost as published."""

import json
from pathlib import Path

import pytest

from simulators import api
from simulators.core import catalog
from simulators.core import costmodel as cm

CONFIGS = Path(__file__).parent / "data" / "configs"
# Published totals, billions of parameters (model cards; vision towers excluded where noted).
PUBLISHED_B = {
    "gpt-oss-120b": 116.8,  # openai gpt-oss model card: 116.8B total
    "gpt-oss-20b": 20.9,  # 20.9B total
    "gemma-2-27b-it": 27.2,  # Gemma 2 report (arXiv 2408.00118), 27.2B
    "gemma-2-9b-it": 9.24,  # Gemma 2 report, 9.24B
    "gemma-3-27b-it": 27.0,  # Gemma 3 report (arXiv 2503.19786): 27B with a 0.4B vision encoder
    "llama-3.1-8b-instruct": 8.03,
    "llama-3.3-70b-instruct": 70.6,
    "llama-4-scout-17b-16e-instruct": 109.0,  # 109B total including the vision encoder
    "qwen2.5-7b-instruct": 7.61,
    "qwen2.5-72b-instruct": 72.7,
    "qwen3-8b": 8.2,
    "qwen3-14b": 14.8,
    "qwen3-30b-a3b": 30.5,
    "qwen3-235b-a22b": 235.0,
    "mistral-7b-instruct-v0.3": 7.25,
    "mixtral-8x7b-instruct-v0.1": 46.7,
    "deepseek-v2-lite-chat": 15.7,
    "deepseek-v3": 671.0,
    "phi-4": 14.7,
}


def load(name: str) -> catalog.Model:
    return catalog.resolve_model(json.loads((CONFIGS / f"{name}.json").read_text()))


def test_every_file_has_a_published_total():
    assert {p.stem for p in CONFIGS.glob("*.json")} == set(PUBLISHED_B)


@pytest.mark.parametrize("name", sorted(PUBLISHED_B))
def test_real_config_loads_and_counts_as_published(name):
    m = load(name)
    assert cm.param_counts(m).total / 1e9 == pytest.approx(PUBLISHED_B[name], rel=0.03)


def test_unread_keys_are_listed():
    assert "swiglu_limit" in load("gpt-oss-120b").ignored_keys
    assert "attn_logit_softcapping" in load("gemma-2-27b-it").ignored_keys


def test_layer_kinds_follow_each_family():
    gpt = load("gpt-oss-120b")
    assert gpt.kinds[:2] == ("sliding", "full") and gpt.sliding_window == 128
    gemma2 = load("gemma-2-27b-it")
    assert gemma2.kinds[:2] == ("sliding", "full") and gemma2.kinds.count("full") == 23
    gemma3 = load("gemma-3-27b-it")  # every sixth layer global: 10 of 62
    assert gemma3.kinds.count("full") == 10 and gemma3.kinds[5] == "full" and gemma3.vocab_size == 262_208
    assert any("vision" in n for n in gemma3.notes)
    scout = load("llama-4-scout-17b-16e-instruct")  # every fourth layer NoPE (global)
    assert scout.kinds.count("full") == 12 and scout.attention_chunk_size == 8192
    # Qwen 2.5 ships sliding_window 131072 with use_sliding_window false: no window
    assert load("qwen2.5-7b-instruct").sliding_window is None


def test_gpt_oss_cache_counts_the_window_on_half_its_layers():
    m = load("gpt-oss-120b")  # 36 layers x 8 KV heads x 64 values x K and V x 2 bytes
    assert cm.kv_bytes_per_token(m) == 36 * 8 * 64 * 2 * 2
    # at 131,072 tokens: 18 full layers hold all of them, 18 sliding layers hold 128
    per_layer = 8 * 64 * 2 * 2
    assert cm.kv_bytes_per_sequence(m, 131_072) == 18 * per_layer * (131_072 + 128)


def test_mixture_of_experts_active_is_a_small_share():
    p = cm.param_counts(load("qwen3-30b-a3b"))
    assert p.active / 1e9 == pytest.approx(3.3, rel=0.05)  # "A3B": 3.3B activated


def test_checkpoint_formats_are_read_from_quantization_config():
    assert load("deepseek-v3").weight_format == "fp8"
    assert load("gpt-oss-20b").weight_format == "mxfp4"
    assert load("qwen3-8b").weight_format == ""


@pytest.mark.parametrize("name", sorted(PUBLISHED_B))
def test_deployment_answers_every_real_config(name):
    cfg = json.loads((CONFIGS / f"{name}.json").read_text())
    answer = api.run("deployment", {"model": cfg, "gpu": "b200", "tensor_parallel_size": 8, "max_model_len": 4096})
    # an answer, or a field error naming what to change: never an exception
    assert answer["ok"] or answer["errors"][0]["field"]
