"""Unstructured sparsity in the cost model: only bytes shrink, never the tensor-core time."""

import pytest

from simulators.core import catalog
from simulators.core import costmodel as cm

LLAMA3_8B = catalog.models()["llama-3-8b"]
H100 = catalog.gpus()["h100-sxm"]


def test_layouts_by_hand():
    # BF16 at 50%: a bitmask keeps 1 B of values + 1 bit per position = 1.125 B, the same as 2:4;
    # CSR keeps 1 B of values + half a 16-bit index = 2 B: no saving at all at 50%.
    assert cm.unstructured_bytes_per_value("bf16", 0.5, "bitmask") == 1.125
    assert cm.unstructured_bytes_per_value("bf16", 0.5, "csr") == 2.0
    assert cm.unstructured_bytes_per_value("bf16", 0.5, "dense") == 2.0
    # FP8 at 75%: bitmask 0.25 + 0.125 = 0.375 B; CSR 0.25 x (1 + 2) = 0.75 B.
    assert cm.unstructured_bytes_per_value("fp8", 0.75, "bitmask") == 0.375
    assert cm.unstructured_bytes_per_value("fp8", 0.75, "csr") == 0.75
    # Nothing pruned: the bitmask is pure overhead.
    assert cm.unstructured_bytes_per_value("bf16", 0.0, "bitmask") == 2.125


def test_bad_layout_or_sparsity_is_refused():
    with pytest.raises(ValueError, match="layout"):
        cm.unstructured_bytes_per_value("bf16", 0.5, "coo")
    with pytest.raises(ValueError, match="sparsity"):
        cm.unstructured_bytes_per_value("bf16", 1.0)
    with pytest.raises(ValueError, match="not both"):
        cm.step_time(LLAMA3_8B, H100, [(1, 0)], sparse=True, weight_bytes_per_value=1.0)


def test_step_time_reads_fewer_bytes_but_computes_as_dense():
    seqs = [(2000, 0)]
    dense = cm.step_time(LLAMA3_8B, H100, seqs, eff=cm.IDEAL)
    pruned = cm.step_time(LLAMA3_8B, H100, seqs, eff=cm.IDEAL, weight_bytes_per_value=1.125)
    # Block matmul weights drop from 2 to 1.125 bytes each; the FLOPs and compute time do not move.
    assert dense.bytes - pruned.bytes == pytest.approx(cm.param_counts(LLAMA3_8B).block_linear * 0.875)
    assert pruned.flops == dense.flops and pruned.compute_s == dense.compute_s
    # The override with the dense bytes per value changes nothing.
    same = cm.step_time(LLAMA3_8B, H100, seqs, eff=cm.IDEAL, weight_bytes_per_value=2.0)
    assert same == dense
