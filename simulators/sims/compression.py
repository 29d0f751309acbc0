"""Compression: pick an LLM Compressor scheme and see what it does to size, prefill and decode.

Model: each scheme (data/schemes.toml) is a weight format, an activation format and a 2:4
sparsity flag. The artifact size is costmodel.weight_bytes (block matmuls compressed, embedding
and LM head kept in bf16). Prefill (the prompt of every sequence in one pass) and one decode step
(one token per sequence over the prompt's KV cache) come from costmodel.step_time with those
formats, against the same passes in bf16. The matmuls run on the tensor cores of the activation
format only where the GPU has them (costmodel.matmul_path); otherwise they fall back to bf16, so
the weights still shrink and memory-bound decode still gains, but compute-bound prefill does not.
The KV-token capacity is what vLLM would log with the compressed weights (and FP8 KV if chosen), per
GPU rank of the layout (parallel.vllm_kv_tokens over simulators/core/vllm_memory.py).

Quality is not simulated: each scheme quotes its source, and states no figure the source lacks.

References: 1) LLM Compressor compression schemes guide (docs.vllm.ai/projects/llm-compressor);
2) Kurtic et al. 2025, "Give Me BF16 or Give Me Death"? (arXiv 2411.02355); 3) Frantar et al.
2023, GPTQ (arXiv 2210.17323); Xiao et al. 2023, SmoothQuant (arXiv 2211.10438); Frantar and
Alistarh 2023, SparseGPT (arXiv 2301.00774); 4) vLLM docs, Quantized KV Cache.
"""

from dataclasses import dataclass
from typing import Any

from ..core import costmodel as cm
from ..core.capacity import BATCH_GRID
from ..core.catalog import data_file
from ..core.layout import vllm_kv_tokens
from ..parallel import check_shape, layout_of, pipeline_parallel_param, tensor_parallel_param
from ..params import ModelGpu, context_param, engine_param, param
from ..plotting import ACROSS, LOG, bar, chart, level, line, right_axis
from ..results_cache import Keep

TITLE = "Compression schemes: size, prefill and decode"
DESCRIPTION = "W4A16, W8A8 (INT8, FP8), 2:4 sparse + FP8 and an FP8 KV cache: artifact size, speed change against bf16 on a GPU, and what each needs."
METRICS = {
    "prefill_speedup": ("Prefill speed-up over BF16", "x"),
    "decode_speedup": ("Decode speed-up over BF16", "x"),
    "prefill_s": ("Prefill", "s"),
    "prefill_baseline_s": ("Prefill in BF16", "s"),
    "decode_step_s": ("Decode step", "s"),
    "decode_baseline_s": ("Decode step in BF16", "s"),
    "artifact_GB": ("Compressed weights", "GB"),
    "baseline_GB": ("BF16 weights", "GB"),
    "artifact_ratio": ("Compressed / BF16 size", "x"),
    "bits_per_weight": ("Bits per block-matmul weight", "bits"),
    "kv_token_capacity": ("KV tokens that fit", "tokens"),
    "kv_token_capacity_baseline": ("KV tokens that fit in BF16", "tokens"),
}


def schemes() -> dict[str, Any]:
    """data/schemes.toml: {"schemes": {id: {...}}, "kv_cache": {"fp8": {...}}}."""
    return data_file("schemes.toml")


VIEWS = [("speed", "Speed-up per scheme"), ("batch", "Decode speed-up vs batch"), ("memory", "Size and KV capacity")]
# Sizes and KV room alone in the memory chart's table, which times nothing (api.run; learner review).
TABLES = {"memory": ("artifact_GB", "baseline_GB", "artifact_ratio", "bits_per_weight", "kv_token_capacity")}
UNTIMED = ("memory",)
BASELINE = {"name": "BF16", "weight_dtype": "bf16", "activation_dtype": "bf16", "sparse": False}


@dataclass(frozen=True)
class Params(ModelGpu):
    # The LLM Compressor scheme applied to the weights (and activations).
    scheme: str = param(
        "w8a8-fp8", label="Scheme", choices=lambda: [(k, s["name"]) for k, s in schemes()["schemes"].items()]
    )
    # Store the KV cache in FP8 as well (vLLM kv_cache_dtype="fp8").
    kv_fp8: bool = param(False, label="FP8 KV cache")
    # Sequences in each prefill and decode pass.
    batch_size: int = param(1, label="Batch size", unit="sequences", min=1, max=1024, step=1, log=True)
    # Prompt length: the prefill size and the KV cache each decode step reads.
    prompt_tokens: int = context_param(label="Prompt", step=1)
    tensor_parallel_size: int = tensor_parallel_param()
    pipeline_parallel_size: int = pipeline_parallel_param()
    # Peak bandwidth and FLOPs (the physical floor) instead of the sourced achieved fractions.
    ideal: bool = param(False, label="Ideal hardware (100% of peak)")
    engine: str = engine_param()

    def check(self) -> None:
        check_shape(*self.resolved(), layout_of(self))


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> dict[str, Any]:
    m, gpu = p.resolved()
    lay = layout_of(p)
    kw = {"eff": cm.efficiency(p.ideal, p.engine), **lay.cost_kw()}
    table = schemes()["schemes"]
    kv = "fp8" if p.kv_fp8 else "bf16"

    def timed(s: dict[str, Any], kv: str, batch: int) -> tuple[cm.StepTime, cm.StepTime]:
        """(prefill, one decode step) of `batch` sequences of the prompt in scheme `s`."""
        fmt = {"kv_dtype": kv, **{k: s[k] for k in ("weight_dtype", "activation_dtype", "sparse")}}
        prefill = cm.step_time(m, gpu, [(p.prompt_tokens, 0)] * batch, **fmt, **kw)
        return prefill, cm.step_time(m, gpu, [(1, p.prompt_tokens)] * batch, **fmt, **kw)

    base_pre, base_dec = timed(BASELINE, "bf16", p.batch_size)
    base_by_batch = [timed(BASELINE, "bf16", b)[1].time_s for b in BATCH_GRID]
    rows, passes = {}, {}
    for sid, s in table.items():
        pre, dec = passes[sid] = timed(s, kv, p.batch_size)
        tokens = vllm_kv_tokens(m, gpu, lay, weight_dtype=s["weight_dtype"], kv_dtype=kv, sparse=s["sparse"])
        by_batch = [t0 / timed(s, kv, b)[1].time_s for b, t0 in zip(BATCH_GRID, base_by_batch, strict=True)]
        rows[sid] = {
            "name": s["name"],
            "artifact_GB": cm.weight_bytes(m, s["weight_dtype"], sparse=s["sparse"]) / cm.GB,
            "prefill_speedup": base_pre.time_s / pre.time_s,
            "decode_speedup": base_dec.time_s / dec.time_s,
            "kv_token_capacity": tokens,
            "decode_speedup_by_batch": by_batch,
            "matmul_path": pre.matmul_path,
            "sparse": s["sparse"],
        }
    s, row = table[p.scheme], rows[p.scheme]
    pre, dec = passes[p.scheme]
    base_tokens = vllm_kv_tokens(m, gpu, lay)
    wanted = cm.precision(s["activation_dtype"]).tensor_core
    notes, speed = [], []  # speed: about the times, left out of the memory chart's text
    if pre.matmul_path != wanted:
        speed.append(
            f"{gpu.name} has no {wanted.upper()} tensor-core figure in the catalogue, so the matmuls run in BF16 after "
            f"up-casting (as vLLM's weight-only kernels do): the smaller weights still speed up memory-bound decode, "
            f"but compute-bound prefill gains nothing."
        )
    if s["sparse"]:
        notes.append(s["hardware"])
    if s["sparse"] and gpu.peak_tflops(pre.matmul_path, sparse=True) is None:
        speed.append(
            f"{gpu.name} has no 2:4 sparse rate for {pre.matmul_path.upper()} in the catalogue: the dense rate is used."
        )
    where = lay.describe(gpu.name)
    if not base_tokens:
        speed.append(f"The BF16 model does not fit on {where}; its times are what it would take if it did.")
    if not row["kv_token_capacity"]:
        notes.append(f"Even compressed, the weights do not fit on {where}.")
    # Speed-ups are against BF16, which must hold the batch too (vLLM's accounting, per GPU rank).
    held = cm.kv_tokens_held(m, p.prompt_tokens)
    most = base_tokens // held
    if base_tokens and p.batch_size > most:
        speed.append(
            f"Batch {p.batch_size:,} does not fit: at {p.prompt_tokens:,} tokens of context, {where} holds at most "
            f"{most:,} sequences with bf16 weights, so its figures are a roofline bound, not a batch that can run."
        )
    kv_info = schemes()["kv_cache"]["fp8"]
    if p.kv_fp8:
        speed.append(kv_info["latency"])
    return {
        **p.stated("scheme", "kv_fp8", "batch_size", "prompt_tokens"),
        "scheme_name": s["name"],
        "num_gpus": lay.num_gpus,
        **{k: s[k] for k in ("method", "calibration", "needs_calibration_data", "hardware", "use_case", "source")},
        **{k: s[k] for k in ("quality", "quality_source")},
        "kv_cache": kv_info if p.kv_fp8 else None,
        "prefill_bound": pre.bound,
        "decode_bound": dec.bound,
        "matmul_path": pre.matmul_path,
        "schemes": rows,
        "batch_grid": list(BATCH_GRID),
        "baseline_capacity": base_tokens,
        # Sequences of this prompt whose KV cache fits beside the weights, in this scheme and in BF16.
        "fit_batch": max(0, row["kv_token_capacity"]) // held,
        "fit_batch_baseline": max(0, base_tokens) // held,
        "notes": notes,
        "speed_notes": speed,
        "metrics": {
            **{k: row[k] for k in ("artifact_GB", "prefill_speedup", "decode_speedup", "kv_token_capacity")},
            "baseline_GB": cm.weight_bytes(m, "bf16") / cm.GB,
            "artifact_ratio": row["artifact_GB"] * cm.GB / cm.weight_bytes(m, "bf16"),
            "bits_per_weight": 8 * cm.block_bytes_per_value(s["weight_dtype"], s["sparse"]),
            "prefill_s": pre.time_s,
            "prefill_baseline_s": base_pre.time_s,
            "decode_step_s": dec.time_s,
            "decode_baseline_s": base_dec.time_s,
            "kv_token_capacity_baseline": base_tokens,
        },
    }


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    rows = list(r["schemes"].values())
    names = [v["name"].split(" (")[0] for v in rows]  # the axis's short names; the summary gives each in full
    kv = " + FP8 KV" if r["kv_fp8"] else ""
    if view == "batch":
        x = r["batch_grid"]
        data = [line(x, v["decode_speedup_by_batch"], v["name"] + kv, i) for i, v in enumerate(rows)]
        data.append(line([x[0], x[-1]], [1, 1], "BF16 (1x)", 6))
        title = f"Decode speed-up over BF16: {r['model']} on {r['gpu']}"
        return chart(data, title, "Batch size (sequences)", "Speed-up (x)", xaxis=LOG)
    if view == "memory":
        weights = [r["metrics"]["baseline_GB"]] + [v["artifact_GB"] for v in rows]
        tokens = [r["baseline_capacity"]] + [v["kv_token_capacity"] for v in rows]
        columns, room = ["BF16"] + names, f"KV tokens that fit{kv}"
        data = [  # offset groups set the two bars side by side on their two y axes (as cluster's)
            bar(columns, weights, "Weights (GB)", 0, offsetgroup="weights"),
            bar(columns, tokens, room, 1, yaxis="y2", offsetgroup="kv"),
        ]
        y2 = right_axis(room, rangemode="tozero")
        title = f"Size and KV room: {r['model']} on {r['num_gpus']} x {r['gpu']}"
        title += "" if r["metrics"]["kv_token_capacity"] else " (the weights do not fit)"
        return chart(data, title, "Scheme", "Weights (GB)", barmode="group", yaxis2=y2)
    prefill = f"Prefill ({r['prompt_tokens']:,} tokens x {r['batch_size']})"
    data = [
        bar(names, [v["prefill_speedup"] for v in rows], prefill, 0),
        bar(names, [v["decode_speedup"] for v in rows], f"Decode step (batch {r['batch_size']})", 1),
        level(1, "BF16 (1x)"),
    ]
    kv = ", each with an FP8 KV cache" if r["kv_fp8"] else ""  # against BF16 with a BF16 KV cache
    title = f"Speed-up over BF16: {r['model']} on {r['gpu']}{kv}"
    return chart(data, title, "Scheme", "Speed-up (x)", barmode="group", xaxis2=ACROSS)


def summary(r: dict[str, Any], view: str) -> str:
    m = r["metrics"]
    kv = " with an FP8 KV cache" if r["kv_fp8"] else ""
    if view == "memory":
        room = f"On {r['num_gpus']} x {r['gpu']} the memory it frees holds {m['kv_token_capacity']:,} tokens of KV cache{kv}"
        seqs = f"{r['fit_batch']:,} sequences of {r['prompt_tokens']:,} tokens"
        if not m["kv_token_capacity"]:  # the notes say the weights do not fit (learner review: "holds 0 tokens")
            room = ""
        elif m["kv_token_capacity_baseline"]:
            room += (
                f", against {m['kv_token_capacity_baseline']:,} in BF16: {seqs} against {r['fit_batch_baseline']:,}. "
            )
        else:
            room += f", where the BF16 weights do not fit at all: {seqs}. "
        text = (
            f"{r['scheme_name']} stores {r['model']}'s weights in {m['artifact_GB']:.1f} GB instead of "
            f"{m['baseline_GB']:.1f} GB ({m['artifact_ratio']:.0%}, {m['bits_per_weight']:.4g} bits per block-matmul weight). "
            f"{room}{r['calibration']}"
        )
    elif view == "batch":
        by_batch, grid = r["schemes"][r["scheme"]]["decode_speedup_by_batch"], r["batch_grid"]
        last = {v["name"]: v["decode_speedup_by_batch"][-1] for v in r["schemes"].values()}
        past = "; points beyond that are roofline extrapolations, not batches one deployment can run."
        text = (
            f"At {r['prompt_tokens']:,} tokens of context on {r['num_gpus']} x {r['gpu']}, {r['scheme_name']}{kv} speeds "
            f"a decode step up {by_batch[0]:.2f}x at batch 1 and {by_batch[-1]:.2f}x at batch {grid[-1]:,}: as the batch "
            "grows, the KV-cache reads (at short contexts, the matmuls' compute) take a larger share of the step, and "
            f"shrinking the weights saves less. At batch {grid[-1]:,} the schemes range from "
            f"{min(last.values()):.2f}x ({min(last, key=lambda k: last[k])}) to {max(last.values()):.2f}x "
            f"({max(last, key=lambda k: last[k])}). At this context BF16 holds at most {r['fit_batch_baseline']:,} sequences"
        ) + (past if r["fit_batch_baseline"] < grid[-1] else ".")
    else:  # which scheme gains most in prefill and which in decode, at this batch and prompt
        pre = max(r["schemes"].values(), key=lambda v: v["prefill_speedup"])
        dec = max(r["schemes"].values(), key=lambda v: v["decode_speedup"])
        sparse = " (2:4 sparse speeds are what the tensor cores allow: current vLLM no longer runs 2:4 checkpoints.)"
        most = f"{dec['name']} most in decode" if dec is not pre else "in decode"  # one scheme: named once
        fastest = (
            f"Of all schemes, {pre['name']} gains most in prefill ({pre['prefill_speedup']:.2f}x) and "
            f"{most} ({dec['decode_speedup']:.2f}x)."
        ) + (sparse if pre["sparse"] or dec["sparse"] else "")
        text = (
            f"On {r['num_gpus']} x {r['gpu']} with the matmuls on the {r['matmul_path'].upper()} path, "
            f"{r['scheme_name']}{kv} runs prefill of {r['prompt_tokens']:,} tokens x {r['batch_size']} "
            f"({r['prefill_bound']}-bound) {m['prefill_speedup']:.2f}x as fast as BF16 and a decode step "
            f"({r['decode_bound']}-bound) {m['decode_speedup']:.2f}x as fast. {fastest} "
            f"Quality ({r['quality_source']}): {r['quality']}"
        )
    if r["kv_cache"] and view != "batch":
        text += f" FP8 KV cache: {r['kv_cache']['calibration']} {r['kv_cache']['quality']}"
    return text + "".join(" " + n for n in r["notes"] + (r["speed_notes"] if view != "memory" else []))
