"""Physics the cost model must respect for every GPU, model and batch (hypothesis)."""

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from simulators.core import catalog
from simulators.core import costmodel as cm

models = st.sampled_from(list(catalog.models().values()))
gpus = st.sampled_from([g for g in catalog.gpus().values() if g.dense_bf16_tflops])
dtypes = st.sampled_from(list(catalog.precisions()))
batches = st.lists(st.tuples(st.integers(1, 4096), st.integers(0, 32768)), min_size=1, max_size=8)


@settings(max_examples=80, deadline=None)
@given(models, gpus, batches, dtypes, st.floats(1.01, 4))
def test_more_bandwidth_is_never_slower(m, gpu, seqs, dtype, factor):
    faster = dataclasses.replace(gpu, hbm_bandwidth_GBps=gpu.hbm_bandwidth_GBps * factor)
    assert (
        cm.step_time(m, faster, seqs, weight_dtype=dtype).time_s
        <= cm.step_time(m, gpu, seqs, weight_dtype=dtype).time_s
    )


@settings(max_examples=80, deadline=None)
@given(models, gpus, batches, st.floats(1.01, 4))
def test_more_flops_is_never_slower(m, gpu, seqs, factor):
    faster = dataclasses.replace(gpu, dense_bf16_tflops=gpu.dense_bf16_tflops * factor)
    assert cm.step_time(m, faster, seqs).time_s <= cm.step_time(m, gpu, seqs).time_s


@settings(max_examples=80, deadline=None)
@given(models, gpus, batches, dtypes)
def test_ideal_is_never_slower_than_default(m, gpu, seqs, dtype):
    assert (
        cm.step_time(m, gpu, seqs, weight_dtype=dtype, eff=cm.IDEAL).time_s
        <= cm.step_time(m, gpu, seqs, weight_dtype=dtype).time_s
    )


@settings(max_examples=80, deadline=None)
@given(models, gpus, st.integers(1, 8), st.floats(1.01, 4), dtypes)
def test_more_memory_never_fits_fewer_tokens(m, gpu, n, factor, dtype):
    bigger = dataclasses.replace(gpu, memory_GiB=gpu.memory_GiB * factor)
    assert (
        cm.memory_fit(m, bigger, num_gpus=n, weight_dtype=dtype).kv_token_capacity
        >= cm.memory_fit(m, gpu, num_gpus=n, weight_dtype=dtype).kv_token_capacity
    )


@settings(max_examples=80, deadline=None)
@given(models, gpus, batches)
def test_longer_context_is_never_faster(m, gpu, seqs):
    longer = [(q, c + 100) for q, c in seqs]
    assert cm.step_time(m, gpu, longer).time_s >= cm.step_time(m, gpu, seqs).time_s


@settings(max_examples=60, deadline=None)
@given(models, st.sampled_from(["bf16", "fp8", "int4"]))
def test_fewer_bits_never_need_more_bytes(m, dtype):
    assert cm.weight_bytes(m, dtype) <= cm.weight_bytes(m, "bf16")
    assert cm.kv_bytes_per_token(m, dtype) <= cm.kv_bytes_per_token(m, "bf16")
