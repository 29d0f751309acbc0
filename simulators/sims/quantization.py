"""Quantisation: fewer bytes per weight, and when that becomes speed.

Bytes: each catalogue format stores `bits` per weight plus, for group-wise formats, one
`scale_bits` scale per `group_size` weights (catalog.Precision.bytes_per_value: INT4 with a 16-bit
scale per 128 weights is 4 + 16/128 = 4.125 bits). Only the block matmuls are quantised; the
embedding and the LM head stay in bf16 (costmodel.weight_bytes).

Speed: a decode step reads every weight once, so while decode is memory-bound fewer bytes mean
a shorter step (costmodel.decode_step_time at `batch_size` sequences of `context_tokens`). The
speed-up fades as the batch grows, because the KV cache (not quantised here) takes a larger share
of the bytes, and is gone for a weight-only format once the step is compute-bound: W4A16 weights
are dequantised and multiplied on the bf16 tensor cores. W8A8 formats (FP8, INT8) also multiply
in 8 bits where the GPU has such tensor cores, which halves the compute time too; an A100 has no
FP8 tensor cores, so there FP8 weights run weight-only on bf16 (costmodel.matmul_path). The cost
model does not charge the dequantisation itself, so compute-bound weight-only steps are, if
anything, slower than shown. "Stops paying" is the smallest batch (bisected between powers of two)
whose speed-up over bf16 falls below `worthwhile_speedup`.

Numeric demo (pure Python, seeded): a 64 x 256 weight matrix of standard normal values (unit: the
standard deviation of ordinary weights) with `num_outliers` entries set to +-`outlier_size`.
Symmetric round-to-nearest: scale = max|w| / qmax over the set of weights sharing a scale,
q = round(w / scale) (ties to even) clipped to [-qmax, qmax], w' = q * scale, with qmax = 127 for
INT8 and 7 for INT4. The scale is shared by the whole tensor, by each output row (per channel), or
by each group of `group_size` consecutive weights of a row. Errors: relative RMS error
sqrt(sum (w - w')^2 / sum w^2) and the largest |w - w'|. One outlier stretches the scale of all
the weights that share it, so finer scales contain the damage at the price of storing more scales.

References: 1) Frantar et al. 2023, GPTQ (arXiv 2210.17323) and Lin et al. 2024, AWQ
(arXiv 2306.00978) for group-wise INT4 W4A16; 2) Dettmers et al. 2022, LLM.int8() (arXiv 2208.07339)
and Xiao et al. 2023, SmoothQuant (arXiv 2211.10438) on outliers and W8A8; 3) Micikevicius et al.
2022, FP8 formats (arXiv 2209.05433); 4) LLM Compressor compression schemes (docs.vllm.ai).
"""

import math
import operator
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from ..core import capacity
from ..core import costmodel as cm
from ..core.catalog import precisions, running_example
from ..params import ModelGpu, context_param, dtype_choices, engine_param, kv_dtype_param, param
from ..plotting import LOG, MARKERS, bar, chart, line, markers
from ..results_cache import Keep, for_call

TITLE = "Quantisation: bytes per weight and when they become speed"
DESCRIPTION = (
    "Bytes per parameter per format, the decode speed-up while memory-bound and where it stops paying; "
    "and a small matrix with outliers quantised per tensor, per channel and per group."
)
ROWS, COLS = 64, 256
SCHEMES = ("per_tensor", "per_channel", "group")
QMAX = {"int8": 127, "int4": 7}
BATCHES = tuple(2**i for i in range(13))  # 1 .. 4096
Matrix = tuple[tuple[float, ...], float]  # the demo's weights, row after row, and their energy sum(w * w)
METRICS = {
    "bits_per_weight": ("Stored bits per weight, scales included", "bit"),
    "weights_bf16_GB": ("Weights in bf16", "GB"),
    "weights_GB": ("Weights", "GB"),
    "decode_step_s": ("Decode step", "s"),
    "decode_step_bf16_s": ("Decode step in bf16", "s"),
    "decode_speedup": ("Decode speed-up over bf16", "x"),
    "prefill_speedup": ("Prefill speed-up over bf16", "x"),
    "speedup_stops_paying_batch": ("Smallest batch below the worthwhile speed-up; 0: pays up to 4,096", "sequences"),
    "low_precision_tensor_cores": ("Matmuls run on 8-bit tensor cores (1 yes, 0 no)", ""),
    "compute_bound_batch": ("Smallest compute-bound decode batch; 0: never", "sequences"),
    **{
        f"demo_{b}_{s}_{e}": (f"Demo: {b.upper()} {s.replace('_', ' ')} {label}", unit)
        for b in QMAX
        for s in SCHEMES
        for e, label, unit in (("rel_rms", "relative RMS error", ""), ("max_abs_error", "largest error", "sigma"))
    },
}

VIEWS = [("speedup", "Decode speed-up vs batch"), ("formats", "Bytes per format"), ("demo", "Quantisation error demo")]
TABLES = {"demo": ("demo_",)}  # the demo's table holds its own figures (api.run), not the format's
UNTIMED = ("demo",)  # and it times nothing


@dataclass(frozen=True)
class Params(ModelGpu):
    # The format to compare with bf16.
    weight_dtype: str = param("int4", label="Weight format", choices=dtype_choices())
    kv_dtype: str = kv_dtype_param(running_example()["kv_dtype"])
    # Context of each decoding sequence, and the prompt length of the prefill comparison.
    context_tokens: int = context_param()
    batch_size: int = param(1, label="Batch size", unit="sequences", min=1, max=4096, step=1, log=True)
    # Speed-up below which the quantised model is judged not worth it (1.1 = 10% faster).
    worthwhile_speedup: float = param(1.1, label="Worthwhile speed-up", unit="x", min=1.0, max=4.0, step=0.05)
    ideal: bool = param(False, label="Ideal hardware (100% of peak)")
    engine: str = engine_param()
    # Demo: how many weights are outliers, and how large (in standard deviations of the others).
    num_outliers: int = param(8, label="Outliers in the demo matrix", min=0, max=256, step=1)
    outlier_size: float = param(20.0, label="Outlier size", unit="sigma", min=1.0, max=200.0, step=1.0, log=True)
    group_size: str = param("128", label="Demo group size", choices=[("32", "32"), ("64", "64"), ("128", "128")])


def demo_matrix(seed: int, num_outliers: int, outlier_size: float, keep: Keep | None = None) -> Matrix:
    """The seed's normal weights with `num_outliers` entries set to +-outlier_size, row after row
    (a tuple: a kept matrix cannot be changed by a caller), and its energy. The normal weights are
    kept: a change of the outliers draws only the outliers, from where the weights left the generator."""

    def normal_weights() -> tuple[tuple[float, ...], Any]:
        """ROWS x COLS standard normal weights, row after row, and the generator's state after them."""
        rng = random.Random(seed)
        return tuple([rng.gauss(0.0, 1.0) for _ in range(ROWS * COLS)]), rng.getstate()

    normal, state = for_call(keep)(("normal", seed), normal_weights)
    rng = random.Random()
    rng.setstate(state)
    w = list(normal)
    for k in rng.sample(range(ROWS * COLS), num_outliers):
        w[k] = outlier_size * rng.choice((-1.0, 1.0))
    total: float = sum(map(operator.mul, w, w))  # computed once per matrix, shared by every scheme's error
    return tuple(w), total


def scheme_errors(flat: Sequence[float], size: int, energy: float) -> list[tuple[float, float]]:
    """(relative RMS error, largest absolute error) of `flat` quantised in blocks of `size` values, one
    scale per block, for each format of QMAX in order; `energy` is sum(v * v). Symmetric round-to-nearest
    (ties to even, Python's round) with scale = largest |value| / qmax, so no value needs clipping to
    [-qmax, qmax] (|v / scale| exceeds qmax by a few ulps at most; round() brings it back). Each block's
    top is found once for both formats, each error where its value is rounded (no dequantised copy)."""
    blocks = [flat[j : j + size] for j in range(0, len(flat), size)]
    tops = [max(max(b), -min(b)) for b in blocks]
    found = []
    for qmax in QMAX.values():
        scales = [top / qmax if top else 1.0 for top in tops]  # an all-zero block is exact at any scale
        diff = [v - round(v / scale) * scale for block, scale in zip(blocks, scales, strict=True) for v in block]
        found.append((math.sqrt(sum(map(operator.mul, diff, diff)) / energy), max(max(diff), -min(diff))))
    return found


# Demo work kept in the caller's memo: the normal weights by seed, the matrix by seed and outliers,
# its errors by those and the group size; any other control (format, batch, GPU...) reuses all three.
MEMO_ENTRIES = 16
Errors = tuple[tuple[str, float, float], ...]


def demo_errors(seed: int, num_outliers: int, outlier_size: float, group: int, keep: Keep | None = None) -> Errors:
    """("{int8|int4}_{scheme}", relative RMS error, largest error) for each format and scheme."""
    keep = for_call(keep, MEMO_ENTRIES)

    def make() -> Errors:
        matrix = (seed, num_outliers, outlier_size)
        flat, flat_energy = keep(("matrix", *matrix), lambda: demo_matrix(*matrix, keep))
        sizes = {"per_tensor": ROWS * COLS, "per_channel": COLS, "group": group}
        found = {s: scheme_errors(flat, sizes[s], flat_energy) for s in SCHEMES}
        return tuple((f"{b}_{s}", *found[s][i]) for i, b in enumerate(QMAX) for s in SCHEMES)

    return cast(Errors, keep(("errors", seed, num_outliers, outlier_size, group), make))


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> dict[str, Any]:
    """`keep` keeps the demo's matrix and errors for the caller's next call (none: this call's alone)."""
    m, gpu = p.resolved()
    kw: dict[str, Any] = {"kv_dtype": p.kv_dtype, "eff": cm.efficiency(p.ideal, p.engine)}
    formats = list(precisions())

    @cache  # each bf16 step serves every format's speed-up
    def decode_s(fmt: str, b: int) -> float:
        return cm.decode_step_time(m, gpu, [p.context_tokens] * b, weight_dtype=fmt, **kw).time_s

    def speedup(fmt: str, b: int) -> float:
        return decode_s("bf16", b) / decode_s(fmt, b)

    curves = {f: [speedup(f, b) for b in BATCHES] for f in formats}
    stops = next((b for b, s in zip(BATCHES, curves[p.weight_dtype], strict=True) if s < p.worthwhile_speedup), 0)
    lo, hi = stops // 2, stops  # bisect between the last power of two that pays and the first that does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if speedup(p.weight_dtype, mid) >= p.worthwhile_speedup else (lo, mid)
    stops = hi
    prefill = {f: cm.prefill_time(m, gpu, p.context_tokens, weight_dtype=f, **kw) for f in ("bf16", p.weight_dtype)}
    bound = cm.decode_compute_bound_batch(m, gpu, p.context_tokens, weight_dtype=p.weight_dtype, **kw)
    path = cm.matmul_path(gpu, p.weight_dtype)
    group = int(p.group_size)
    scale_bits = cm.precision("int4").scale_bits
    overhead = {"per_tensor": scale_bits / (ROWS * COLS), "per_channel": scale_bits / COLS, "group": scale_bits / group}
    notes = []
    if path != cm.precision(p.weight_dtype).tensor_core:
        notes.append(
            f"{gpu.name} has no {p.weight_dtype} tensor cores: the weights are dequantised and multiplied in bf16, "
            "so only bytes are saved and compute-bound steps gain nothing."
        )
    metrics: dict[str, float] = {
        "bits_per_weight": cm.bytes_per_value(p.weight_dtype) * 8,
        "weights_GB": cm.weight_bytes(m, p.weight_dtype) / cm.GB,
        "weights_bf16_GB": cm.weight_bytes(m, "bf16") / cm.GB,
        "decode_step_s": decode_s(p.weight_dtype, p.batch_size),
        "decode_step_bf16_s": decode_s("bf16", p.batch_size),
        "decode_speedup": speedup(p.weight_dtype, p.batch_size),
        "prefill_speedup": prefill["bf16"].time_s / prefill[p.weight_dtype].time_s,
        "low_precision_tensor_cores": int(path != "bf16"),
        "compute_bound_batch": bound or 0,
        "speedup_stops_paying_batch": stops,
    }
    fmt: dict[str, Any] = {"weight_dtype": p.weight_dtype, "kv_dtype": p.kv_dtype}
    for what, batch in (("Batch", p.batch_size), ("The crossover batch", stops)):
        if batch and (note := capacity.batch_note(what, batch, m, gpu, p.context_tokens, **fmt)):
            notes.append(note)
    for key, rel, worst in demo_errors(seed, p.num_outliers, p.outlier_size, group, keep):
        metrics |= {f"demo_{key}_rel_rms": rel, f"demo_{key}_max_abs_error": worst}
    return {
        **p.stated("weight_dtype", "batch_size", "context_tokens", "worthwhile_speedup", "num_outliers"),
        "matmul_path": path,
        "formats": formats,
        "format_names": [cm.precision(f).name for f in formats],
        "bits_per_weight": [cm.bytes_per_value(f) * 8 for f in formats],
        "weights_GB": [cm.weight_bytes(m, f) / cm.GB for f in formats],
        "batches": list(BATCHES),
        "speedup_curves": curves,
        "group_size": group,
        "scale_overhead_bits": overhead,
        "notes": notes,
        "metrics": metrics,
    }


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    if view == "formats":
        text = [f"{b:g} bits/weight" for b in r["bits_per_weight"]]
        data = [bar(r["format_names"], r["weights_GB"], "Weights", 0, text=text, textposition="outside")]
        return chart(data, f"Weight memory of {r['model']} per format", "Format", "GB")
    if view == "demo":
        m = r["metrics"]
        x = ["Per tensor", "Per channel (row)", f"Groups of {r['group_size']}"]
        scales = [f"+{r['scale_overhead_bits'][s]:.3g} bit" for s in SCHEMES]  # short: a bar's width holds it
        data = [
            bar(
                x,
                [m[f"demo_{b}_{s}_rel_rms"] for s in SCHEMES],
                f"{b.upper()} round-to-nearest",
                i,
                text=scales,
                textposition="outside",
            )
            for i, b in enumerate(QMAX)
        ]
        title = f"Error quantising a {ROWS} x {COLS} matrix with {r['num_outliers']} outliers"
        x_title = "Who shares a scale (on each bar: the scales' bits per weight)"
        return chart(data, title, x_title, "Relative RMS error", barmode="group", yaxis=LOG)
    x, curves = r["batches"], r["speedup_curves"]
    data = [line(x, curves[f], n, i) for i, (f, n) in enumerate(zip(r["formats"], r["format_names"], strict=True))]
    # Past six formats the dashes run out (the seventh is the reference line's): add markers.
    for k, trace in enumerate(data[6:]):
        trace |= {"mode": "lines+markers", "marker": {"symbol": MARKERS[k % len(MARKERS)]}}
    # The format and batch the summary speaks of (learner review: 11 lines, none of them said which).
    i, b = r["formats"].index(r["weight_dtype"]), r["batch_size"]
    data[i]["line"] |= {"width": 5}
    data[i]["name"] += f" (chosen, marked at batch {b:,})"
    speedup = [r["metrics"]["decode_speedup"]]  # its legend entry is the line's (one more row broke the layout)
    data.append(markers([b], speedup, f"Batch {b:,}: {speedup[0]:.2f}x", i, showlegend=False))
    data.append(line([x[0], x[-1]], [r["worthwhile_speedup"]] * 2, "Worthwhile speed-up", 6))
    title = f"Decode speed-up over bf16, {r['model']} on {r['gpu']} at {r['context_tokens']:,} tokens"
    return chart(data, title, "Batch size (sequences)", "Speed-up (x)", xaxis=LOG)


def summary(r: dict[str, Any], view: str) -> str:
    m, fmt = r["metrics"], r["weight_dtype"]
    stores = f"{cm.precision(fmt).name} stores {m['bits_per_weight']:g} bits per weight"
    if view == "demo":  # the demo's own story: what the scales do to the error (review A-16)
        n = r["num_outliers"]
        worst = ", next to an outlier," if n else ""
        why = "finer scales protect the other weights, not the ones sharing a scale with the outlier"
        return (
            f"In the demo matrix with {n} outlier{'s' if n != 1 else ''}, INT4 errs by "
            f"{m['demo_int4_per_tensor_rel_rms']:.1%} (relative RMS) with one scale per tensor, "
            f"{m['demo_int4_per_channel_rel_rms']:.1%} per channel and {m['demo_int4_group_rel_rms']:.1%} with groups of "
            f"{r['group_size']}; INT8: {m['demo_int8_per_tensor_rel_rms']:.2%}, {m['demo_int8_per_channel_rel_rms']:.2%} "
            f"and {m['demo_int8_group_rel_rms']:.2%}. The largest error{worst} is "
            f"{m['demo_int4_group_max_abs_error']:.2f} sigma in INT4 with groups"
            + (f": {why}." if n else ": with no outlier, no scale is stretched.")
        )
    if view == "formats":  # the weight memory of every format, the chosen one's first
        sizes = "; ".join(
            f"{name} {gb:.1f} GB ({bits:g} bits)"
            for name, gb, bits in zip(r["format_names"], r["weights_GB"], r["bits_per_weight"], strict=True)
        )
        return (
            f"{stores}: {r['model']} shrinks from {m['weights_bf16_GB']:.1f} GB to {m['weights_GB']:.1f} GB "
            f"({m['weights_GB'] / m['weights_bf16_GB']:.0%}). Weight memory per format, with bits per weight: {sizes}."
        )
    stops, worth = m["speedup_stops_paying_batch"], r["worthwhile_speedup"]
    pays = f"falls below {worth:g}x from batch {stops:,}" if stops else f"stays above {worth:g}x up to batch 4,096"
    text = (
        f"{stores}: {r['model']} shrinks from {m['weights_bf16_GB']:.1f} GB "
        f"to {m['weights_GB']:.1f} GB. At batch {r['batch_size']:,} a decode step on {r['gpu']} takes "
        f"{m['decode_step_s'] * 1e3:,.2f} ms instead of {m['decode_step_bf16_s'] * 1e3:,.2f} ms "
        f"({m['decode_speedup']:.2f}x); a {r['context_tokens']:,}-token prefill runs {m['prefill_speedup']:.2f}x as fast. "
        f"The decode speed-up {pays}."
    )
    return text + "".join(" " + n for n in r["notes"])  # the notes are about the speed-up
