"""The catalogues: every entry sourced, the reference figures reproduced, bad input named."""

import pytest

from simulators.core import catalog
from simulators.core import costmodel as cm

REQUIRED_GPUS = [
    "h100-sxm",
    "h100-pcie",
    "h200",
    "a100-sxm-80gb",
    "a100-sxm-40gb",
    "l40s",
    "l4",
    "b200",
    "gb200",
    "mi300x",
    "rtx-4090",
    "m2-ultra",
    "rtx-3090",
    "rtx-5090",
    "t4",
    "a10g",
]
REQUIRED_MODELS = [
    "llama-3-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "mistral-7b",
    "mixtral-8x7b",
    "qwen2.5-7b",
    "qwen2.5-72b",
    "llama-2-7b",
    "llama-2-70b",
    "deepseek-v3",
    "gpt2-small",
]


def test_required_entries_exist_and_are_sourced():
    assert set(REQUIRED_GPUS) <= set(catalog.gpus())
    assert set(REQUIRED_MODELS) <= set(catalog.models())
    for g in catalog.gpus().values():
        assert g.source and g.memory_GiB > 0 and g.hbm_bandwidth_GBps > 0
    for m in catalog.models().values():
        assert m.source and m.published_params_B
    for p in catalog.precisions().values():
        assert p.source


def test_every_gpu_states_the_memory_cuda_reports():
    # vLLM multiplies what CUDA reports (torch.cuda.mem_get_info total), not the vendor's GB,
    # by gpu_memory_utilization. Each entry names the log it comes from, or says it is derived.
    for g in catalog.gpus().values():
        assert g.cuda_total_GiB is not None and g.cuda_total_source, g.id
        assert 0.9 * g.memory_GiB < g.cuda_total_GiB <= g.memory_GiB, g.id
        assert g.cuda_total_derived or "github.com" in g.cuda_total_source or "flagged" in g.cuda_total_source, g.id
    derived = {g.id for g in catalog.gpus().values() if g.cuda_total_derived}
    assert derived == {"h100-pcie", "gb200", "m2-ultra", "m1-7core", "m1-max", "m3-max", "a10g"}
    # An L4 is sold as 24 GB but CUDA reports 22.03 GiB (github.com/ArcInstitute/evo2/issues/190).
    assert catalog.gpus()["l4"].visible_GiB == 22.03


def test_gb200_rates_are_the_1200_w_blackwell_figures():
    g, b = catalog.gpus()["gb200"], catalog.gpus()["b200"]
    # glennklockwood.com/garden/processors/B200: GB200 at 1,200 W, 2,500 dense BF16 against the
    # HGX B200's 2,250; FP8 twice BF16; NVLink 5 at 1.8 TB/s as on the B200.
    assert (g.dense_bf16_tflops, g.dense_fp8_tflops) == (2500, 5000) and g.dense_bf16_tflops > b.dense_bf16_tflops
    assert g.interconnect_GBps == b.interconnect_GBps == 1800


def test_a100_has_no_fp8_path_and_m2_ultra_only_apples_gpu_rate():
    assert catalog.gpus()["a100-sxm-80gb"].peak_tflops("fp8") is None
    m2 = catalog.gpus()["m2-ultra"]
    # Apple: "Up to 76-core GPU with 27.2 teraflops" (apple.com/mac-pro); no INT8 / FP8 matrix path
    assert m2.platform == "metal" and m2.peak_tflops("bf16") == 27.2 and (m2.sm_count, m2.boost_clock_MHz) == (76, 1398)
    assert m2.peak_tflops("int8") is None and m2.peak_tflops("fp8") is None and "27.2 teraflops" in m2.source


def test_the_campaign_macs_are_metal_with_their_sourced_gpu_rates():
    # The Macs of the XiongjieDai campaign besides the M2 Ultra: Apple's 10.4 TFLOPS for the 32-core M1 Max;
    # hmc-tech's 2.29 TFLOPS for the 7-core M1 (7/8 of philipturner/metal-benchmarks' 2,617 GFLOPS for 8 cores);
    # philipturner/applegpuinfo's 14.131 TFLOPS for a 40-core M3-generation GPU at 1.38 GHz (no Apple figure: flagged).
    gpus = catalog.gpus()
    figures = {g: (gpus[g].peak_tflops("bf16"), gpus[g].hbm_bandwidth_GBps, gpus[g].sm_count, gpus[g].boost_clock_MHz)
               for g in ("m1-7core", "m1-max", "m3-max")}  # fmt: skip
    assert figures == {
        "m1-7core": (2.29, 68.25, 7, 1278),
        "m1-max": (10.4, 400, 32, 1296),
        "m3-max": (14.1, 400, 40, 1380),
    }
    for g in figures:
        assert (
            gpus[g].platform == "metal" and gpus[g].peak_tflops("int8") is None and gpus[g].peak_tflops("fp8") is None
        )
        assert "XiongjieDai/GPU-Benchmarks-on-LLM-Inference" in gpus[g].source
    assert "Flagged" in gpus["m3-max"].note and "16.4 TFLOPS" in gpus["m3-max"].source


# GPUs whose catalogue entry has no tensor rate: memory-only, and every timing answer on them is a
# field error naming the rate (tests/test_ceilings.py). NVIDIA publishes no A10G tensor rate.
MEMORY_ONLY = {"a10g"}
# GPUs whose SM count and clock no primary source read so far gives (a vendor document, or the device's
# own report through its driver in a named public log): NVIDIA's H200, B200 and GB200 datasheets state
# neither, and AWS and NVIDIA publish neither for the A10G. Only llama.cpp's CUDA matrix-vector cap
# (efficiency.matvec_bandwidth_GBps) reads them, and without them it applies no cap (optimistic).
NO_SM_FIGURES = {"h200", "b200", "gb200", "a10g"}


def test_every_gpu_has_the_figures_its_paths_use_or_is_named_as_lacking_them():
    """Issue 29, item 3: a tensor rate, CUDA-visible memory and (where llama.cpp's CUDA cap reads them)
    SM count and clock, or the GPU is listed here, so that adding a figure updates the list."""
    gpus = catalog.gpus()
    lacking = {g for g, gpu in gpus.items() if gpu.peak_tflops("bf16") is None}
    assert lacking == MEMORY_ONLY, f"GPUs without dense_bf16_tflops: {sorted(lacking)}; update MEMORY_ONLY"
    lacking = {g for g, gpu in gpus.items() if gpu.sm_count is None or gpu.boost_clock_MHz is None}
    assert lacking == NO_SM_FIGURES, (
        f"GPUs without sm_count or boost_clock_MHz: {sorted(lacking)}; update NO_SM_FIGURES"
    )
    for gpu in gpus.values():
        assert gpu.cuda_total_GiB is not None, f"{gpu.id}: no cuda_total_GiB (docs/extending.md, 'A GPU')"
        for path in ("fp8", "int8"):  # a sparse rate without its dense one would price a path at an unknown rate
            assert gpu.peak_tflops(path, sparse=True) is None or gpu.peak_tflops(path) is not None, (gpu.id, path)
    assert catalog.gpus()["rtx-3090"].dense_bf16_tflops == 71 and "GA102" in catalog.gpus()["rtx-3090"].source


def test_a_platform_other_than_cuda_or_metal_is_named():
    with pytest.raises(catalog.CatalogError, match="'platform' must be one of"):
        catalog.gpu_from_dict({"memory_GiB": 8, "hbm_bandwidth_GBps": 100, "platform": "vulkan"})


def test_sparse_is_twice_dense_where_the_vendor_says_so():
    # A check on the data entry, not a derivation: the datasheets quote 2:4 sparse as 2x dense.
    for gid in ("h100-sxm", "a100-sxm-80gb", "b200"):
        g = catalog.gpus()[gid]
        assert g.sparse_bf16_tflops == pytest.approx(2 * g.dense_bf16_tflops, rel=0.01)


# Every catalogue model whose vendor publishes a total (review C-2: a new model was not checked,
# so a missing head_dim passed). Vendors differ on a vision encoder, which the cost model counts
# apart (vision_params: not streamed per text token): Llama 4 Scout's 109 B includes it, Gemma 3
# 27B's 27 B does not; the text total, or the text total with the encoder, must match within 1%.
@pytest.mark.parametrize("mid", [mid for mid, m in catalog.models().items() if m.published_params_B])
def test_parameter_count_matches_the_published_total(mid):
    m = catalog.models()[mid]
    text_B = cm.param_counts(m).total / 1e9
    published = m.published_params_B
    totals = (text_B, text_B + m.vision_params / 1e9)
    assert any(abs(total / published - 1) < 0.01 for total in totals), (
        f"{mid}: the shape gives {text_B:.3f} B parameters (with a vision encoder {totals[1]:.3f} B), "
        f"published_params_B is {published}: more than 1% apart"
    )


def test_moe_active_parameters():
    # Mixtral: ~47B total, ~13B active (Mixtral paper); DeepSeek-V3: 671B total, 37B active.
    mix = cm.param_counts(catalog.models()["mixtral-8x7b"])
    assert mix.active / 1e9 == pytest.approx(12.88, abs=0.01)
    ds = cm.param_counts(catalog.models()["deepseek-v3"])
    assert ds.active / 1e9 == pytest.approx(37.55, abs=0.01)


def test_attention_kind_is_read_from_the_shape():
    kinds = {mid: m.attention for mid, m in catalog.models().items()}
    assert kinds["llama-2-7b"] == "MHA"
    assert kinds["llama-3-8b"] == "GQA"
    assert kinds["deepseek-v3"] == "MLA"


def test_int4_group_scales_cost_an_eighth_of_a_bit():
    # 4 bits + one 16-bit scale per 128 weights = 4.125 bits = 0.515625 bytes.
    assert catalog.precisions()["int4"].bytes_per_value == 0.515625


# Llama-3-8B's config.json as Hugging Face publishes it (the fields the loader reads, and three it
# ignores); tests/test_sim_speculative.py pastes it too.
LLAMA_3_8B_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "rope_theta": 500000.0,
    "torch_dtype": "bfloat16",
    "tie_word_embeddings": False,
}


def test_pasted_config_json_and_custom_gpu():
    m = catalog.resolve_model(LLAMA_3_8B_CONFIG)
    assert cm.param_counts(m).total == cm.param_counts(catalog.models()["llama-3-8b"]).total
    g = catalog.resolve_gpu({"name": "My GPU", "memory_GiB": 48, "hbm_bandwidth_GBps": 960, "dense_bf16_tflops": 180})
    assert cm.ridge_point(g) == pytest.approx(180e12 / 960e9)


@pytest.mark.parametrize(
    "cfg, words",
    [
        ({"hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10}, "num_hidden_layers"),
        (
            {
                "num_hidden_layers": 2,
                "hidden_size": 64,
                "num_attention_heads": 3,
                "num_key_value_heads": 2,
                "vocab_size": 10,
            },
            "multiple",
        ),
        ({"num_hidden_layers": -1, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10}, "at least 1"),
    ],
)
def test_bad_config_is_named(cfg, words):
    with pytest.raises(catalog.CatalogError, match=words):
        catalog.resolve_model(cfg)


def test_unread_keys_of_a_pasted_config_are_listed_not_refused():
    cfg = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "hiden": 3}
    assert catalog.resolve_model(cfg).ignored_keys == ("hiden",)


def test_bad_custom_gpu_is_named():
    with pytest.raises(catalog.CatalogError, match="hbm_bandwidth_GBps"):
        catalog.resolve_gpu({"memory_GiB": 10})
    with pytest.raises(catalog.CatalogError, match="greater than 0"):
        catalog.resolve_gpu({"memory_GiB": 10, "hbm_bandwidth_GBps": -1})


def test_cuda_visible_memory_is_sourced_and_below_the_data_sheet():
    for g in catalog.gpus().values():
        if g.cuda_total_GiB is not None:
            assert g.cuda_total_source and (g.cuda_total_GiB < g.memory_GiB or g.cuda_total_derived)
            assert g.visible_GiB == g.cuda_total_GiB
        else:
            assert g.visible_GiB == g.memory_GiB


def test_new_formats_store_what_their_sources_say():
    # NVFP4: 16 FP4 values + one FP8 scale = 9 bytes; MXFP4: 32 values + one E8M0 byte = 17 bytes;
    # Q8_0: 32 int8 + fp16 scale = 34 bytes; k-quant mixes as llama.cpp's table.
    assert cm.bytes_per_value("nvfp4") * 16 == pytest.approx(9)
    assert cm.bytes_per_value("mxfp4") * 32 == pytest.approx(17)
    assert cm.bytes_per_value("q8_0") * 32 == pytest.approx(34)
    assert cm.bytes_per_value("q4_k_m") * 8 == pytest.approx(4.84)
    assert cm.bytes_per_value("q5_k_m") * 8 == pytest.approx(5.68)


@pytest.mark.parametrize(("loader", "file", "entry"), [
    ("gpus", "gpus.toml", {"name": "X", "memory_GiB": 24, "hbm_bandwidth_GBps": 900, "cuda_total_GiB": 23.5}),
    ("models", "models.toml", {"name": "X", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 2, "vocab_size": 100}),
])  # fmt: skip
def test_an_entry_without_a_source_is_refused_where_it_is_loaded(monkeypatch, loader, file, entry):
    """Review C-4: a missing source reached the CLI and the build; loading now refuses it, naming the
    file, the entry and the key."""
    monkeypatch.setattr(catalog, "data_file", lambda name: {"new-entry": dict(entry)} if name == file else {})
    with pytest.raises(catalog.CatalogError, match=rf"{file}: .* 'new-entry' has no 'source'"):
        getattr(catalog, loader).__wrapped__()
