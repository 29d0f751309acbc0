"""Deployment and vLLM's memory accounting: numbers checked by hand against vLLM's rules."""

import json

import pytest

from simulators import api
from simulators.core import catalog, vllm_memory
from simulators.core import costmodel as cm
from simulators.sims import deployment

GiB = 2**30


def llama8b():
    return catalog.models()["llama-3-8b"]


def test_page_bytes_split_kv_heads_and_replicate_below_one_head_per_rank():
    m = llama8b()  # 8 KV heads of 128 values
    # key + value, 16 tokens, 8 heads, 128 values, 2 bytes = 65,536 bytes per layer and block
    assert vllm_memory.page_bytes(m, 1, "bf16", 16) == 2 * 16 * 8 * 128 * 2
    assert vllm_memory.page_bytes(m, 2, "bf16", 16) == 2 * 16 * 4 * 128 * 2
    assert vllm_memory.page_bytes(m, 8, "fp8", 16) == 2 * 16 * 1 * 128 * 1
    # 16 ranks, 8 heads: each rank still keeps one head (a replica), never half of one
    assert vllm_memory.kv_heads_per_rank(m, 16) == (1, True)
    assert vllm_memory.page_bytes(m, 16, "bf16", 16) == vllm_memory.page_bytes(m, 8, "bf16", 16)


def test_an_mla_latent_is_copied_to_every_rank():
    m = catalog.models()["deepseek-v3"]  # latent 512 + rotary key 64, one per token and layer
    for tp in (1, 8):
        assert vllm_memory.page_bytes(m, tp, "bf16", 16) == 16 * (512 + 64) * 2
    assert vllm_memory.kv_heads_per_rank(m, 8) == (1, True)


def test_pipeline_stages_take_the_extra_layers_before_the_last():
    # vLLM get_pp_indices: 61 // 4 = 15 each, the one left over goes to the second-to-last stage
    assert vllm_memory.pp_layer_counts(61, 4) == [15, 15, 16, 15]
    assert vllm_memory.pp_layer_counts(80, 4) == [20, 20, 20, 20]
    assert sum(vllm_memory.pp_layer_counts(62, 5)) == 62


def test_logged_tokens_are_whole_blocks_of_what_is_left():
    m, gpu = llama8b(), catalog.gpus()["h100-sxm"]
    a = vllm_memory.account(m, gpu, gpu_memory_utilization=0.9, max_model_len=8192)
    s = a.stages[0]
    assert s.requested_bytes == pytest.approx(79.19 * GiB * 0.9)
    assert s.kv_bytes == pytest.approx(s.requested_bytes - s.weight_bytes - s.activation_bytes - s.non_torch_bytes)
    page_all_layers = 65_536 * 32
    assert a.num_blocks == int(s.kv_bytes // page_all_layers)
    assert a.kv_tokens == a.num_blocks * 16
    # a request of 8,192 tokens takes 512 blocks
    assert a.max_concurrency == pytest.approx(a.num_blocks / 512)
    assert a.log_lines[2] == f"GPU KV cache size: {a.kv_tokens:,} tokens"
    assert a.log_lines[3] == f"Maximum concurrency for 8,192 tokens per request: {a.num_blocks / 512:.2f}x"


def test_interleaved_sliding_and_full_layers_form_kv_groups():
    # gpt-oss style: 36 layers alternating sliding (window 128) and full
    cfg = {
        "num_hidden_layers": 36,
        "hidden_size": 2880,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "vocab_size": 201088,
        "sliding_window": 128,
        "max_position_embeddings": 131072,
        "layer_types": ["sliding_attention", "full_attention"] * 18,
    }
    m = catalog.resolve_model(cfg)
    a = vllm_memory.account(m, catalog.gpus()["h100-sxm"], max_model_len=131072, max_num_batched_tokens=8192)
    assert (a.group_size, a.groups) == (18, ["sliding", "full"])
    assert a.kv_tokens == a.num_blocks // 2 * 16
    # per request: 8,192 full blocks, and the window: ceil((128 - 1 + 8192) / 16) + 1 = 521
    assert a.blocks_per_request == 8192 + 521
    # Gemma 3 style, 5 sliding : 1 full over 62 layers -> 52 and 10: groups of 10 layers
    size, groups = vllm_memory._groups(["sliding" if (i + 1) % 6 else "full" for i in range(62)])
    assert (size, groups.count("sliding"), groups.count("full")) == (10, 6, 1)


def test_a_layout_that_does_not_fit_is_a_field_error():
    answer = api.run("deployment", {"model": "llama-3.1-70b", "gpu": "h100-sxm"})
    assert not answer["ok"] and answer["errors"][0]["field"] == "tensor_parallel_size"
    assert "does not fit" in answer["errors"][0]["message"]
    too_long = api.run("deployment", {"model": "llama-3.1-70b", "gpu": "h100-sxm", "tensor_parallel_size": 2,
                                      "max_model_len": 131072})  # fmt: skip
    assert too_long["errors"][0]["field"] == "max_model_len"
    odd = api.run("deployment", {"model": "llama-3-8b", "tensor_parallel_size": 3})
    assert odd["errors"][0]["field"] == "tensor_parallel_size"
    no_link = api.run("deployment", {"model": "llama-3-8b", "gpu": "m2-ultra", "tensor_parallel_size": 2})
    assert no_link["errors"][0]["field"] == "tensor_parallel_size"


def test_deepseek_v3_on_eight_h200_holds_about_five_requests_of_128k():
    # The case: MLA's latent is on every rank, so capacity does not grow with TP.
    answer = api.run(
        "deployment",
        {"model": "deepseek-v3", "gpu": "h200", "tensor_parallel_size": 8, "max_model_len": 131072,
         "gpu_memory_utilization": 0.9},
    )  # fmt: skip
    assert answer["ok"]
    assert 4 < answer["metrics"]["max_concurrency"] < 7
    assert answer["result"]["weight_dtype"] == "fp8"


def test_cli_reads_a_config_file(tmp_path, capsys):
    from simulators.__main__ import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                                "vocab_size": 100, "max_position_embeddings": 4096, "rope_theta": 1e4,
                                "some_new_key": 1}))  # fmt: skip
    assert main(["run", "deployment", "--set", f"model=@{path}", "--set", "max_model_len=4096"]) == 0
    out = capsys.readouterr().out
    assert "GPU KV cache size" in out and "some_new_key" not in out


def test_tp_shards_weights():
    m = catalog.models()["llama-3.1-70b"]
    one = vllm_memory.weight_bytes(m, "bf16", 1, m.num_layers, first=True, last=True)
    four = vllm_memory.weight_bytes(m, "bf16", 4, m.num_layers, first=True, last=True)
    rope = vllm_memory.rope_cache_bytes(m)  # the cos/sin table: each rank builds its own
    assert one - rope == pytest.approx(cm.weight_bytes(m, "bf16"), rel=1e-9)
    assert (one - rope) / 4 < four - rope < (one - rope) / 4 * 1.001  # norms replicated, the rest split


def test_one_set_of_vllm_defaults_for_every_simulator():
    # `vllm serve` v0.19 (EngineArgs, OPENAI_API_SERVER usage context): 8,192 batched tokens and
    # 1,024 sequences on GPUs of 70 GiB or more other than the A100, 2,048 and 256 on the rest;
    # --gpu-memory-utilization 0.9 (0.92 only from v0.21, vLLM PR #38284).
    h100, l4, a100 = (catalog.gpus()[g] for g in ("h100-sxm", "l4", "a100-sxm-80gb"))
    assert catalog.serve_defaults(h100) == {
        "gpu_memory_utilization": 0.9, "block_size": 16, "max_num_batched_tokens": 8192, "max_num_seqs": 1024,
    }  # fmt: skip
    for small in (l4, a100):
        d = catalog.serve_defaults(small)
        assert (d["max_num_batched_tokens"], d["max_num_seqs"]) == (2048, 256)
    # The deployment simulator's defaults and the accounting every fit check runs agree: its batch
    # limits are 0, "vllm serve's default for the GPU", which is 8,192 and 1,024 on an H100.
    m = catalog.models()["llama-3-8b"]
    p = deployment.Params()
    assert (p.gpu_memory_utilization, p.max_num_seqs, p.max_num_batched_tokens) == (0.9, 0, 0)
    assert deployment.batch_limits(h100, p) == (8192, 1024)
    assert deployment.batch_limits(l4, p) == (2048, 256)
    a = vllm_memory.account(m, h100, max_model_len=2200)
    b = vllm_memory.account(
        m, h100, max_model_len=2200, gpu_memory_utilization=0.9, max_num_batched_tokens=8192, max_num_seqs=1024
    )
    assert a.kv_tokens == b.kv_tokens
    # A cost-model fit on an L4 budgets vLLM's 2,048-token profile run there.
    assert cm.memory_fit(m, l4).activation_bytes == cm.activation_bytes(m, 2048)


def test_a_derived_cuda_total_is_said():
    # GB200's CUDA total has no published log (gpus.toml says how it was derived); the answer says so.
    notes = api.run("deployment", {"gpu": "gb200", "model": "llama-3.1-8b"})["result"]["notes"]
    assert any("derived, not read from a log" in n for n in notes)
    assert not any(
        "derived" in n for n in api.run("deployment", {"gpu": "l4", "model": "llama-3.1-8b"})["result"]["notes"]
    )


def test_batch_limits_left_at_zero_follow_vllm_serve_on_each_gpu():
    # An L4 (22.03 GiB visible) is below 70 GiB: `vllm serve` profiles 2,048 tokens and 256
    # sequences there, so deployment at its defaults must agree with the KV calculator's other
    # widget (kv_cache, which runs vLLM's accounting at the GPU's defaults) and not use the H100's.
    m, l4 = catalog.models()["llama-3.1-8b"], catalog.gpus()["l4"]
    here = api.run("deployment", {"model": "llama-3.1-8b", "gpu": "l4", "max_model_len": 8192})
    kv = api.run("kv_cache", {"model": "llama-3.1-8b", "gpu": "l4", "context_tokens": 8192})["metrics"]
    assert here["metrics"]["kv_cache_tokens"] == kv["kv_token_capacity"]
    assert here["metrics"]["max_concurrency"] == pytest.approx(kv["max_concurrency"])
    small = vllm_memory.account(m, l4, max_model_len=8192, max_num_batched_tokens=2048, max_num_seqs=256)
    large = vllm_memory.account(m, l4, max_model_len=8192, max_num_batched_tokens=8192, max_num_seqs=1024)
    assert here["metrics"]["kv_cache_tokens"] == small.kv_tokens > large.kv_tokens
    # The sampler's fp32 logits (12 bytes a logit in the fitted profile) for 1,024 - 256 fewer rows
    # of Llama 3.1's 128,256-token vocabulary, and 55,000 bytes a token for 6,144 fewer tokens.
    saved = (1024 - 256) * 128_256 * 12 + (8192 - 2048) * 55_000
    assert large.stages[0].activation_bytes - small.stages[0].activation_bytes == pytest.approx(saved)
    r = here["result"]
    assert (r["max_num_batched_tokens"], r["max_num_seqs"]) == (2048, 256)
    assert "vllm serve's defaults on this GPU, 2,048 batched tokens and 256 sequences" in here["summary"]
    # An A100 80GB is large but excluded by name (EngineArgs: 'a100' not in the device name).
    a100 = api.run("deployment", {"model": "llama-3.1-8b", "gpu": "a100-sxm-80gb"})["result"]
    assert (a100["max_num_batched_tokens"], a100["max_num_seqs"]) == (2048, 256)


def test_batch_limits_set_by_the_reader_are_used_and_said():
    m, l4 = catalog.models()["llama-3.1-8b"], catalog.gpus()["l4"]
    answer = api.run("deployment", {"model": "llama-3.1-8b", "gpu": "l4", "max_num_seqs": 64})
    a = vllm_memory.account(m, l4, max_model_len=8192, max_num_batched_tokens=2048, max_num_seqs=64)
    assert answer["metrics"]["kv_cache_tokens"] == a.kv_tokens
    assert "2,048 batched tokens (vllm serve's default on this GPU) and 64 sequences (as set)" in answer["summary"]
    # The CLI takes 0 (the default) and a value alike.
    from simulators.__main__ import main

    assert main(["run", "deployment", "--set", "gpu=l4", "--set", "max_num_batched_tokens=0"]) == 0
    # vLLM refuses fewer batched tokens than sequences, the default sequences included.
    low = api.run("deployment", {"model": "llama-3.1-8b", "gpu": "h100-sxm", "max_num_batched_tokens": 512})
    assert low["errors"][0]["field"] == "max_num_batched_tokens" and "1,024" in low["errors"][0]["message"]
    ok = api.run("deployment", {"model": "llama-3.1-8b", "gpu": "l4", "max_num_batched_tokens": 512})
    assert ok["ok"] and ok["result"]["max_num_seqs"] == 256
    tiny = api.run("deployment", {"model": "llama-3.1-8b", "max_num_batched_tokens": 8})
    assert tiny["errors"][0]["field"] == "max_num_batched_tokens"
