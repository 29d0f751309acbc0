"""scripts/measure_gpu.py: its pure parts import without PyTorch and compute what they say."""

import importlib.util
import sys
from pathlib import Path

import pytest

from simulators.core import catalog
from simulators.core import costmodel as cm

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("measure_gpu", ROOT / "scripts" / "measure_gpu.py")
mg = importlib.util.module_from_spec(spec)
sys.modules["measure_gpu"] = mg  # dataclasses look their module up
spec.loader.exec_module(mg)


def test_rates_from_bytes_flops_and_time():
    # 1 GiB copied in 1 ms: 2^31 bytes moved.
    assert mg.copy_bandwidth_GBps(2**30, 1e-3) == pytest.approx(2**31 / 1e-3 / 1e9)
    assert mg.gemm_tflops(4096, 4096, 4096, 0.25e-3) == pytest.approx(2 * 4096**3 / 0.25e-3 / 1e12)
    with pytest.raises(ValueError):
        mg.gemm_tflops(0, 1, 1, 1.0)
    with pytest.raises(ValueError):
        mg.copy_bandwidth_GBps(1, 0.0)


def test_the_decode_check_streams_the_cost_models_block_weights():
    # The script's Llama-3-8B layer shapes hold exactly the block matmul weights the cost model counts.
    model = catalog.models()["llama-3-8b"]
    assert mg.decode_weight_bytes(mg.LLAMA3_8B) == cm.param_counts(model).block_linear * 2
    assert mg.LLAMA3_8B["layers"] == model.num_layers and mg.LLAMA3_8B["hidden"] == model.hidden_size


def test_the_measurement_becomes_a_custom_gpu_the_site_accepts():
    m = mg.Measured("Test GPU", 79.1, 2900.0, 700.0, 1300.0, 6.1)
    gpu = catalog.gpu_from_dict(m.custom_gpu(), "measured")
    assert gpu.hbm_bandwidth_GBps == 2900.0 and gpu.peak_tflops("bf16") == 700.0 and gpu.peak_tflops("fp8") == 1300.0
    assert "measure_gpu.py" in gpu.source
    assert m.predicted_decode_step_ms() == pytest.approx(mg.decode_weight_bytes(mg.LLAMA3_8B) / 2900e9 * 1e3)
    no_fp8 = mg.Measured("Old GPU", 40, 1500.0, 250.0, None, 9.0).custom_gpu()
    assert "dense_fp8_tflops" not in no_fp8
