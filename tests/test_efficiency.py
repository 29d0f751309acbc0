"""Engine profiles: sourced factors, the ideal ceiling, M-dependent GEMM efficiency, kernel paths."""

from dataclasses import replace

import pytest

from simulators.core import catalog
from simulators.core import costmodel as cm
from simulators.core import efficiency as ef

M, H100, RTX = catalog.models()["llama-3-8b"], catalog.gpus()["h100-sxm"], catalog.gpus()["rtx-4090"]


def test_every_profile_loads_with_a_source_for_every_factor():
    profiles = ef.profiles()
    assert {"vllm", "sglang", "trtllm", "llamacpp"} <= set(profiles)
    for p in profiles.values():
        for key in (*ef.FACTORS, "gemm_m_half", "step_overhead_us"):
            assert p.sources[key].strip(), (p.id, key)
    with pytest.raises(ef.ProfileError, match="unknown engine"):
        ef.profile("nope")


def test_gemm_efficiency_grows_with_tokens_towards_its_plateau():
    p = ef.profile("trtllm")
    effs = [p.gemm_efficiency("fp8", m) for m in (1, 16, 128, 1024, 65536)]
    assert effs == sorted(effs) and effs[0] < 0.05 * p.gemm_fp8
    assert effs[-1] == pytest.approx(p.gemm_fp8, rel=1e-3)
    assert p.gemm_efficiency("fp8", int(p.gemm_m_half)) == pytest.approx(p.gemm_fp8 / 2, rel=0.02)


@pytest.mark.parametrize("pid", ["vllm", "sglang", "trtllm", "llamacpp"])
def test_the_ceiling_is_never_slower_than_the_profile(pid):
    p = ef.profile(pid)
    for seqs in ([(1, 100)], [(1, 2000)] * 64, [(512, 0)], [(4096, 0)] * 2):
        real = cm.step_time(M, H100, seqs, weight_dtype="fp8", kv_dtype="fp8", eff=p)
        top = cm.step_time(M, H100, seqs, weight_dtype="fp8", kv_dtype="fp8", eff=ef.ceiling(p))
        assert top.time_s < real.time_s
        fixed = (p.step_overhead_us + M.num_layers * p.layer_overhead_us) * 1e-6  # step's plus layers'
        assert top.overhead_s == 0 and real.overhead_s == pytest.approx(fixed)


def test_the_ideal_profile_reproduces_the_cost_models_ideal_step():
    seqs = [(300, 0), (1, 1000)]
    step = cm.step_time(M, H100, seqs, weight_dtype="fp8", eff=ef.IDEAL)
    base = cm.step_time(M, H100, seqs, weight_dtype="fp8", eff=cm.IDEAL)
    assert step.time_s == pytest.approx(base.time_s)
    assert 0 < base.attention_s < base.compute_s


def test_llamacpp_runs_q4_0_gemms_on_the_int8_path_and_vllm_pays_for_w4a16():
    llama = ef.ceiling(ef.profile("llamacpp"))
    plain = ef.ceiling(replace(ef.profile("llamacpp"), quantized_path={}))
    seqs = [(512, 0)]
    # INT8 tensor cores (660.6 TOPS) against the BF16 rate (165.15): the GEMM part is 4x faster.
    fast = cm.step_time(M, RTX, seqs, weight_dtype="q4_0", eff=llama).compute_s
    slow = cm.step_time(M, RTX, seqs, weight_dtype="q4_0", eff=plain).compute_s
    attention = cm.step_time(M, RTX, seqs, weight_dtype="q4_0", eff=cm.IDEAL).attention_s
    head = 2 * cm.lm_head_params(M) / (165.15e12)  # the LM head stays BF16: one row, one sequence
    assert (slow - attention - head) / (fast - attention - head) == pytest.approx(660.6 / 165.15, rel=1e-6)
    v = ef.profile("vllm")
    w4 = cm.step_time(M, H100, [(4096, 0)], weight_dtype="int4", eff=v).compute_s
    bf = cm.step_time(M, H100, [(4096, 0)], weight_dtype="bf16", eff=v).compute_s
    assert w4 > bf  # same BF16 tensor cores, plus dequantisation


def test_fp16_accumulate_uses_the_geforce_fp16_rate_and_the_catalogue_has_it():
    assert RTX.dense_fp16_acc_tflops == pytest.approx(2 * RTX.dense_bf16_tflops, rel=1e-3)
    l40s = catalog.gpus()["l40s"]
    assert l40s.peak_tflops("int8") == l40s.peak_tflops("fp8") == 733
    p = ef.ceiling(ef.profile("vllm"))
    acc16 = replace(p, fp16_accumulate=True)
    seqs = [(2048, 0)]
    base = cm.step_time(M, RTX, seqs, eff=cm.IDEAL)
    gemm32 = cm.step_time(M, RTX, seqs, eff=p).compute_s - base.attention_s
    gemm16 = cm.step_time(M, RTX, seqs, eff=acc16).compute_s - base.attention_s
    assert gemm32 / gemm16 == pytest.approx(2, rel=1e-3)


def test_simulators_take_an_engine_choice():
    assert cm.efficiency(False, "vllm") == cm.default_efficiency()  # no second set of factors
    with pytest.raises(ef.ProfileError, match="unknown engine 'course'"):
        cm.efficiency(False, "course")
    assert cm.efficiency(True, "vllm") == ef.ceiling(ef.profile("vllm"))  # its kernel paths, every factor 1.0
    assert cm.efficiency(False, "trtllm") is ef.profile("trtllm")  # the profile itself, not a linear form


def test_simulators_with_an_engine_choice_default_to_the_vllm_profile():
    from simulators.sims import generation

    assert cm.DEFAULT_ENGINE == "vllm" == ef.DEFAULT
    assert generation.Params().engine == "vllm"


def test_the_step_overhead_is_paid_once_per_forward_pass():
    """A profile's overhead adds to every step's time, prefill and decode alike, and not to its roofs."""
    vllm = cm.efficiency(False, "vllm")
    no_overhead = replace(vllm, step_overhead_us=0.0)
    for seqs in ([(2048, 0)], [(1, 2000)] * 8):
        with_it = cm.step_time(M, H100, seqs, eff=vllm)
        without = cm.step_time(M, H100, seqs, eff=no_overhead)
        assert with_it.time_s - without.time_s == pytest.approx(ef.profile("vllm").step_overhead_us * 1e-6)
        assert (with_it.compute_s, with_it.memory_s) == (without.compute_s, without.memory_s)
    line = cm.decode_line(M, H100, 8, eff=vllm)
    assert line.time_s(16_000) == pytest.approx(cm.decode_step_time(M, H100, [2000] * 8, eff=vllm).time_s)
    assert cm.step_time(M, H100, [(1, 0)], eff=cm.IDEAL).overhead_s == 0.0


def test_tensor_parallel_pays_two_allreduce_latencies_per_layer_and_one_gpu_none():
    """The alpha of the alpha-beta all-reduce: 2 x layers x latency under TP, nothing at TP 1."""
    m70 = catalog.models()["llama-3.1-70b"]
    p = ef.profile("vllm")
    assert p.allreduce_latency_us > 0 and p.sources["allreduce_latency_us"].strip()
    seqs = [(1, 100)] * 8
    with_lat = cm.step_time(m70, H100, seqs, tp=4, eff=p)
    without = cm.step_time(m70, H100, seqs, tp=4, eff=replace(p, allreduce_latency_us=0.0))
    expected = 2 * m70.num_layers * p.allreduce_latency_us * 1e-6  # computed from the definition
    assert with_lat.communication_s - without.communication_s == pytest.approx(expected, rel=1e-9)
    one = cm.step_time(M, H100, seqs, eff=p)
    assert one.communication_s == 0.0
    assert cm.step_time(m70, H100, seqs, tp=4, eff=ef.ceiling(p)).time_s < with_lat.time_s  # the ceiling has none


def test_llamacpp_small_batches_run_matrix_vector_kernels_without_the_small_m_penalty():
    p = ef.profile("llamacpp")
    assert p.matvec_max_tokens == 8 and p.sources["matvec_max_tokens"].strip()
    for tokens in (1, 8):
        assert p.gemm_efficiency("int8", tokens) == p.gemm_int8
    assert p.gemm_efficiency("int8", 9) == pytest.approx(p.gemm_int8 * 9 / (9 + p.gemm_m_half))
    # a batch-1 decode step is then memory-bound, as llama.cpp's MMVQ decode is
    step = cm.step_time(M, RTX, [(1, 64)], weight_dtype="q4_0", eff=p)
    assert step.memory_s > step.compute_s


def test_an_optional_profile_key_without_a_source_is_refused():
    d = dict(ef._data()["vllm"])
    del d["allreduce_latency_us_source"]
    with pytest.raises(ef.ProfileError, match="allreduce_latency_us_source"):
        ef._profile("x", d)
    d = dict(ef._data()["vllm"], allreduce_latency_us=-1)
    with pytest.raises(ef.ProfileError, match=">= 0"):
        ef._profile("x", d)


def test_a_layer_overhead_adds_layers_times_its_time_to_every_step_whatever_the_batch():
    """layer_overhead_us: a fixed time per layer and forward pass, 32 layers for Llama-3-8B."""
    p = replace(ef.profile("vllm"), layer_overhead_us=50.0)
    none = replace(p, layer_overhead_us=0.0)
    assert M.num_layers == 32
    for seqs in ([(1, 100)], [(1, 2000)] * 64, [(2048, 0)]):
        a, b = cm.step_time(M, H100, seqs, eff=p), cm.step_time(M, H100, seqs, eff=none)
        assert a.overhead_s - b.overhead_s == pytest.approx(32 * 50e-6)  # 1.6 ms
        assert (a.compute_s, a.memory_s, a.communication_s) == (b.compute_s, b.memory_s, b.communication_s)
    # vLLM and SGLang set it, each with a source naming its calibration rows; the ceiling drops it
    for pid in ("vllm", "sglang"):
        q = ef.profile(pid)
        assert q.layer_overhead_us > 0 and "calibration rows" in q.sources["layer_overhead_us"]
        assert ef.ceiling(q).layer_overhead_us == 0.0


def test_the_allreduce_bandwidth_share_divides_the_ring_term_only():
    """Under TP 4 a 1,000-token step all-reduces 1,000 x 8,192 bf16 values twice per layer (80):
    the ring sends 1.5x each payload, at allreduce_bandwidth x 450 GB/s (NVLink 4, one way)."""
    m70 = catalog.models()["llama-3.1-70b"]
    assert (m70.hidden_size, m70.num_layers) == (8192, 80)
    p = replace(ef.profile("vllm"), allreduce_latency_us=0.0, allreduce_bandwidth=0.5)
    seqs = [(1000, 0)]
    step = cm.step_time(m70, H100, seqs, tp=4, eff=p)
    ring = 2 * 80 * 1.5 * 1000 * 8192 * 2 / 450e9  # seconds at the full link rate: 8.74 ms
    assert step.communication_s == pytest.approx(ring / 0.5, rel=1e-9)
    full = cm.step_time(m70, H100, seqs, tp=4, eff=replace(p, allreduce_bandwidth=1.0))
    assert full.communication_s == pytest.approx(ring, rel=1e-9)
    assert cm.step_time(M, H100, seqs, eff=p).communication_s == 0.0  # one GPU: no all-reduce


def test_the_allreduce_bandwidth_shares_follow_from_the_cited_microbenchmark():
    """sglang PR #2904 at TP 4 on H100: 2 KiB -> 4 MiB of float32 takes 9.1 -> 40.2 us (vLLM's
    kernel) and 4.8 -> 31.1 us (TensorRT-LLM's); the ring moves 1.5x the extra bytes."""
    extra = 1.5 * (1_048_576 - 512) * 4
    assert ef.profile("vllm").allreduce_bandwidth == pytest.approx(extra / 31.1e-6 / 450e9, abs=0.005)
    assert ef.profile("trtllm").allreduce_bandwidth == pytest.approx(extra / 26.3e-6 / 450e9, abs=0.005)
    assert ef.profile("llamacpp").allreduce_bandwidth == 1.0  # not set: the plain ring term
    d = dict(ef._data()["vllm"], allreduce_bandwidth=1.5)
    with pytest.raises(ef.ProfileError, match="allreduce_bandwidth"):
        ef._profile("x", d)


def test_activation_values_count_a_llama_layers_tensors_between_its_kernels():
    # Llama-3-8B (config.json): d 4096, 32 query heads and 8 KV heads of 128, SwiGLU width 14,336.
    # Per token and layer: two fused add + norm kernels (4 d each), rotary on q and k (read and
    # write), the four GEMMs' inputs and outputs, attention's q in and output out, SiLU-and-mul (3 I).
    d, q, kv, inter = 4096, 4096, 1024, 14336
    by_hand = 8 * d + 2 * (q + kv) + (d + q + 2 * kv) + 2 * q + (q + d) + (d + 2 * inter) + 3 * inter + (inter + d)
    assert ef.activation_values(M, 1) == 32 * by_hand == 32 * 163_840
    # Under tensor parallelism the d-wide tensors stay whole on every rank; the rest split.
    assert ef.activation_values(M, 2) == 32 * (12 * d + (6 * q + 4 * kv + 6 * inter) / 2)


def test_activation_traffic_is_serial_per_token_and_absent_from_the_ceiling():
    p = ef.profile("trtllm")
    one, many = (cm.step_time(M, H100, [(n, 0)], weight_dtype="fp8", kv_dtype="fp8", eff=p) for n in (1024, 4096))
    bytes_per_token = ef.activation_values(M, 1) * cm.ACTIVATION_BYTES
    assert one.activation_s == pytest.approx(1024 * bytes_per_token / (H100.hbm_bandwidth_GBps * 1e9 * p.bandwidth))
    assert many.activation_s == pytest.approx(4 * one.activation_s)
    assert many.time_s == pytest.approx(
        max(many.compute_s, many.memory_s) + many.communication_s + many.overhead_s + many.activation_s
    )
    top = cm.step_time(M, H100, [(4096, 0)], weight_dtype="fp8", kv_dtype="fp8", eff=ef.ceiling(p))
    assert top.activation_s == 0
    none = cm.step_time(M, H100, [(4096, 0)], weight_dtype="fp8", kv_dtype="fp8", eff=replace(p, activation_io=0.0))
    assert none.activation_s == 0 and many.time_s - none.time_s == pytest.approx(many.activation_s)


def test_a_per_sm_cycle_cap_slows_only_matrix_vector_steps_on_gpus_with_few_sms_for_their_bandwidth():
    """matvec_bytes_per_sm_cycle: a step of at most matvec_max_tokens tokens streams at most
    SMs x boost clock x that many bytes. At 4 bytes an H100 SXM (132 SMs, 1,980 MHz) streams at most
    1,045 GB/s, below 0.87 of its 3,350, and an RTX 4090 (128 SMs, 2,520 MHz) 1,290 GB/s, above 0.87
    of its 1,008: only the H100 is slowed."""
    base = replace(ef.profile("llamacpp"), matvec_bytes_per_sm_cycle=0.0)
    p = replace(base, matvec_bytes_per_sm_cycle=4.0)
    assert (H100.sm_count, H100.boost_clock_MHz, RTX.sm_count, RTX.boost_clock_MHz) == (132, 1980, 128, 2520)
    ideal = cm.step_time(M, H100, [(1, 64)], weight_dtype="q4_0", eff=cm.IDEAL).memory_s  # bytes at peak
    capped = cm.step_time(M, H100, [(1, 64)], weight_dtype="q4_0", eff=p)
    assert capped.memory_s == pytest.approx(ideal * 3350 / (132 * 1.980 * 4.0), rel=1e-9)
    assert capped.memory_s > cm.step_time(M, H100, [(1, 64)], weight_dtype="q4_0", eff=base).memory_s
    for gpu, seqs in ((RTX, [(1, 64)]), (H100, [(9, 64)]), (H100, [(512, 0)])):  # not bound / not matvec
        assert cm.step_time(M, gpu, seqs, weight_dtype="q4_0", eff=p) == cm.step_time(
            M, gpu, seqs, weight_dtype="q4_0", eff=base
        )
    # no SM count or clock (a reader's GPU of memory and bandwidth only), no factor, or the ceiling: no cap
    bare = catalog.gpu_from_dict({"memory_GiB": 80, "hbm_bandwidth_GBps": 3350, "dense_bf16_tflops": 989.4})
    assert bare.sm_count is None and ef.matvec_bandwidth_GBps(p, bare, 1) is None
    assert ef.matvec_bandwidth_GBps(base, H100, 1) is None
    assert ef.ceiling(p).matvec_bytes_per_sm_cycle == 0.0 and ef.matvec_bandwidth_GBps(ef.ceiling(p), H100, 1) is None


def test_llamacpp_sets_the_cap_from_calibration_rows_and_it_spares_its_rtx3090_row():
    """The fitted bytes per SM-cycle name their calibration rows; on the RTX 3090 (82 SMs, 1,695 MHz)
    the cap stays above the bandwidth share fitted there, so that row still sets the share alone."""
    p = ef.profile("llamacpp")
    assert p.matvec_bytes_per_sm_cycle > 0 and "calibration rows" in p.sources["matvec_bytes_per_sm_cycle"]
    rtx3090 = catalog.gpus()["rtx-3090"]
    assert ef.matvec_bandwidth_GBps(p, rtx3090, 1) > p.bandwidth * rtx3090.hbm_bandwidth_GBps
    for pid in ("vllm", "sglang", "trtllm"):  # engines without the factor keep their bandwidth share
        assert ef.matvec_bandwidth_GBps(ef.profile(pid), H100, 1) is None


def test_sm_counts_and_clocks_are_catalogued_with_their_source():
    """Streaming-multiprocessor (AMD: compute-unit) counts and boost clocks as the cited spec tables or
    device reports give them."""
    expected = {
        "h100-sxm": (132, 1980),
        "h100-pcie": (114, 1755),
        "a100-sxm-80gb": (108, 1410),
        "rtx-3090": (82, 1695),
        "rtx-4090": (128, 2520),
        "a100-sxm-40gb": (108, 1410),
        "l40s": (142, 2520),
        "l4": (58, 2040),
        "t4": (40, 1590),
        "rtx-5090": (170, 2407),
        "mi300x": (304, 2100),  # compute units and peak engine clock
    }
    gpus = catalog.gpus()
    for gid, (sms, mhz) in expected.items():
        g = gpus[gid]
        assert (g.sm_count, g.boost_clock_MHz) == (sms, mhz), gid
        assert "SM count" in g.source and "boost clock" in g.source, gid
    with pytest.raises(catalog.CatalogError, match="sm_count"):
        catalog.gpu_from_dict({"memory_GiB": 24, "hbm_bandwidth_GBps": 900, "sm_count": "many"})


M2 = catalog.gpus()["m2-ultra"]


def test_llamacpp_on_an_apple_gpu_is_priced_with_its_metal_profile():
    """Issue 29, item 2: llama.cpp on Apple silicon runs Metal kernels, so a step on an M-series GPU
    uses the llamacpp-metal profile (its ceiling for the ideal), whatever profile the caller passed;
    on a CUDA GPU the CUDA profile stays. The Metal profile is not an engine choice of its own."""
    cuda, metal = ef.profile("llamacpp"), ef.profile("llamacpp-metal")
    assert metal.platform == "metal" and metal.replaces == "llamacpp" and M2.platform == "metal"
    assert "llamacpp-metal" not in ef.profiles() and "llamacpp-metal" in ef.platform_profiles()
    assert ef.profile_for("llamacpp", M2) is metal and ef.profile_for("llamacpp", H100) is cuda
    assert ef.on_gpu(ef.ceiling(cuda), M2) == ef.ceiling(metal)
    seqs = [(1, 64)]
    via_cuda = cm.step_time(M, M2, seqs, weight_dtype="q4_0", eff=cuda)
    assert via_cuda == cm.step_time(M, M2, seqs, weight_dtype="q4_0", eff=metal)
    assert via_cuda.overhead_s == pytest.approx(M.num_layers * metal.layer_overhead_us * 1e-6)
    # the event engine's linear form (engine/steptime.py) reads the engine's own profile for its regimes
    assert metal.matvec_max_tokens == cuda.matvec_max_tokens
    # Apple's GPU lists no INT8 rate: Q4_0 GEMMs run on the FP16 (bf16) path, not llama.cpp CUDA's MMQ INT8
    assert cm.step_time(M, M2, [(512, 0)], weight_dtype="q4_0", eff=cuda).matmul_path == "bf16"


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_cuda_engines_do_not_run_on_apple_silicon(engine):
    why = ef.unsupported(engine, M2)
    assert why and ef.profile(engine).name in why and "CUDA or ROCm" in why and "'llamacpp'" in why
    assert ef.unsupported("llamacpp", M2) is None and ef.unsupported(engine, H100) is None


def test_a_platform_profile_must_name_the_engine_it_replaces():
    good = {k: 0.5 for k in ef.FACTORS} | {"gemm_m_half": 1, "step_overhead_us": 0, "max_num_seqs": 1}
    good |= {"max_num_batched_tokens": 1}
    good |= {"name": "x"} | {f"{k}_source": "s" for k in good}
    with pytest.raises(ef.ProfileError, match="go together"):
        ef._profile("x", good | {"platform": "metal"})
    assert ef._profile("x", good | {"platform": "metal", "replaces": "llamacpp"}).platform == "metal"
