"""2:4 structured sparsity and the llama.cpp Q4_0 format in the cost model, by hand."""

import pytest

from simulators.core import catalog
from simulators.core import costmodel as cm

LLAMA3_8B = catalog.models()["llama-3-8b"]
H100 = catalog.gpus()["h100-sxm"]


def test_two_of_four_keeps_half_the_values_plus_a_two_bit_index_each():
    # FP8: 2 of 4 bytes kept = 0.5 B per original weight, plus 2 bits x 2 kept / 4 = 1 bit = 0.125 B.
    assert cm.sparse24_bytes_per_value("fp8") == 0.625
    # BF16: 1 B + 0.125 B of index per original weight.
    assert cm.sparse24_bytes_per_value("bf16") == 1.125
    assert cm.block_bytes_per_value("fp8", sparse=False) == 1.0


def test_sparse_weights_shrink_only_the_block_matmuls():
    p = cm.param_counts(LLAMA3_8B)
    dense, sparse = cm.weight_bytes(LLAMA3_8B, "fp8"), cm.weight_bytes(LLAMA3_8B, "fp8", sparse=True)
    assert dense - sparse == pytest.approx(p.block_linear * (1.0 - 0.625))


def test_step_time_reads_the_sparse_weight_bytes():
    dense = cm.step_time(LLAMA3_8B, H100, [(1, 0)], weight_dtype="fp8", eff=cm.IDEAL)
    sparse = cm.step_time(LLAMA3_8B, H100, [(1, 0)], weight_dtype="fp8", eff=cm.IDEAL, sparse=True)
    saved = cm.param_counts(LLAMA3_8B).block_linear * (1.0 - 0.625)
    assert dense.bytes - sparse.bytes == pytest.approx(saved)


def test_q4_0_is_four_and_a_half_bits():
    # llama.cpp block_q4_0: 32 4-bit weights + one fp16 scale = 18 bytes / 32 weights = 4.5 bits.
    assert cm.bytes_per_value("q4_0") == 18 / 32
    # Llama-2-7B in Q4_0: llama-bench reports 3.56 GiB. We keep the embedding and LM head in bf16
    # (llama.cpp quantises them too), so our file is larger: 3.88 GiB.
    gib = cm.weight_bytes(catalog.models()["llama-2-7b"], "q4_0") / cm.GiB
    assert gib == pytest.approx(3.88, abs=0.01)


def test_memory_fit_counts_sparse_weights():
    dense = cm.memory_fit(LLAMA3_8B, H100, weight_dtype="fp8")
    sparse = cm.memory_fit(LLAMA3_8B, H100, weight_dtype="fp8", sparse=True)
    assert dense.weight_bytes - sparse.weight_bytes == pytest.approx(cm.param_counts(LLAMA3_8B).block_linear * 0.375)
    assert sparse.kv_token_capacity > dense.kv_token_capacity
