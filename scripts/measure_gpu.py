"""Measure your own GPU in a few minutes and get a custom-GPU entry calibrated by the measurement.

    python scripts/measure_gpu.py [--quick] [--out my-gpu.json]

Needs PyTorch with CUDA or ROCm (torch.cuda works for both). Measures, with CUDA events:
1. achieved memory bandwidth: a large device-to-device copy (reads and writes counted);
2. achieved BF16 matrix throughput: square GEMMs of 4096, 8192 (and FP8 where torch._scaled_mm runs);
3. a decode step of a randomly initialised Llama-3-8B-shaped stack (batch 1, all layers' matmuls
   with the weights streamed once), as a check of the two figures together.

Prints, and writes with --out, a JSON object in the catalogue's custom-GPU keys: paste it into any
GPU field of the site (the KV calculator, the roofline planner) and tick "Ideal hardware": the
course then predicts with your measured bandwidth and throughput as the peaks, i.e. calibrated on
your machine. The decode step is printed next to what the cost model predicts from those figures.

The pure parts (the arithmetic, the JSON) import without PyTorch and are tested in
tests/test_measure_gpu.py; the measurement itself runs only where a GPU is.
"""

import argparse
import json
import sys
from dataclasses import dataclass

# Llama-3-8B shape (simulators/data/models.toml) for the decode-step check.
LLAMA3_8B = {"hidden": 4096, "intermediate": 14336, "layers": 32, "heads": 32, "kv_heads": 8, "head_dim": 128}


def copy_bandwidth_GBps(n_bytes: int, seconds: float) -> float:
    """A copy of n_bytes reads and writes them: 2 n_bytes over the time, in 10^9 B/s."""
    if n_bytes <= 0 or seconds <= 0:
        raise ValueError("bytes and seconds must be positive")
    return 2 * n_bytes / seconds / 1e9


def gemm_tflops(m: int, n: int, k: int, seconds: float) -> float:
    """2 m n k FLOPs (a multiply and an add per term) over the time, in 10^12 FLOP/s."""
    if min(m, n, k) <= 0 or seconds <= 0:
        raise ValueError("shape and seconds must be positive")
    return 2 * m * n * k / seconds / 1e12


def decode_layer_shapes(shape: dict[str, int]) -> list[tuple[int, int]]:
    """(in, out) of one decoder layer's matmuls: fused QKV, output, fused gate+up, down."""
    h, i, d = shape["hidden"], shape["intermediate"], shape["head_dim"]
    qkv = (shape["heads"] + 2 * shape["kv_heads"]) * d
    return [(h, qkv), (shape["heads"] * d, h), (h, 2 * i), (i, h)]


def decode_weight_bytes(shape: dict[str, int], bytes_per_value: int = 2) -> int:
    """Bytes of block-matmul weights one decode step streams (all layers)."""
    return shape["layers"] * sum(a * b for a, b in decode_layer_shapes(shape)) * bytes_per_value


@dataclass(frozen=True)
class Measured:
    device: str
    memory_GiB: float
    bandwidth_GBps: float
    bf16_tflops: float
    fp8_tflops: float | None
    decode_step_ms: float

    def custom_gpu(self) -> dict[str, object]:
        """The measurement as catalogue keys: the peaks are what this machine reached."""
        gpu: dict[str, object] = {
            "name": f"{self.device} (measured)",
            "memory_GiB": round(self.memory_GiB, 1),
            "hbm_bandwidth_GBps": round(self.bandwidth_GBps, 1),
            "dense_bf16_tflops": round(self.bf16_tflops, 1),
            "note": (
                f"Measured by scripts/measure_gpu.py: copy bandwidth, BF16 GEMM; a Llama-3-8B-shaped "
                f"batch-1 decode step took {self.decode_step_ms:.2f} ms. Use with 'Ideal hardware'."
            ),
            "source": "scripts/measure_gpu.py on the reader's machine",
        }
        if self.fp8_tflops:
            gpu["dense_fp8_tflops"] = round(self.fp8_tflops, 1)
        return gpu

    def predicted_decode_step_ms(self) -> float:
        """What the measured bandwidth alone predicts for the decode-step check (weights streamed once)."""
        return decode_weight_bytes(LLAMA3_8B) / (self.bandwidth_GBps * 1e9) * 1e3


def _time(torch, fn, repeats: int) -> float:  # noqa: ANN001 - torch is imported lazily
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / repeats


def measure(quick: bool = False) -> Measured:  # pragma: no cover - needs a GPU
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("no CUDA or ROCm device visible to PyTorch")
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    n = (1 << 28) if quick else (1 << 30)  # 256 MiB or 1 GiB per buffer
    a = torch.empty(n, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    bw = copy_bandwidth_GBps(n, _time(torch, lambda: b.copy_(a), 20))
    best = 0.0
    for size in (4096,) if quick else (4096, 8192):
        x = torch.randn(size, size, dtype=torch.bfloat16, device=dev)
        y = torch.randn(size, size, dtype=torch.bfloat16, device=dev)
        best = max(best, gemm_tflops(size, size, size, _time(torch, lambda x=x, y=y: x @ y, 20)))
    fp8 = None
    try:
        size = 8192
        x8 = torch.randn(size, size, device=dev).to(torch.float8_e4m3fn)
        y8 = torch.randn(size, size, device=dev).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device=dev)
        fp8 = gemm_tflops(size, size, size, _time(torch, lambda: torch._scaled_mm(x8, y8, one, one), 20))
    except (AttributeError, RuntimeError, TypeError):
        fp8 = None
    weights = [
        torch.randn(i, o, dtype=torch.bfloat16, device=dev) * 0.02
        for _ in range(LLAMA3_8B["layers"])
        for i, o in decode_layer_shapes(LLAMA3_8B)
    ]
    h = torch.randn(1, LLAMA3_8B["hidden"], dtype=torch.bfloat16, device=dev)

    def step() -> None:
        for k in range(0, len(weights), 4):
            qkv, o, gu, d = weights[k : k + 4]
            _ = h @ qkv
            _ = h @ gu
            inter = torch.randn(1, d.shape[0], dtype=torch.bfloat16, device=dev)
            _ = inter @ d
            _ = h @ o

    step_ms = _time(torch, step, 5 if quick else 20) * 1e3
    return Measured(props.name, props.total_memory / 2**30, bw, best, fp8, step_ms)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller buffers and fewer shapes")
    ap.add_argument("--out", help="write the custom-GPU JSON here")
    args = ap.parse_args(argv)
    m = measure(args.quick)
    gpu = m.custom_gpu()
    print(f"{m.device}: copy bandwidth {m.bandwidth_GBps:,.0f} GB/s, BF16 GEMM {m.bf16_tflops:,.0f} TFLOPS")
    print(f"decode step (Llama-3-8B shape, batch 1): {m.decode_step_ms:.2f} ms measured, ")
    print(f"  {m.predicted_decode_step_ms():.2f} ms from the measured bandwidth alone")
    print(json.dumps(gpu, indent=2))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(gpu, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
