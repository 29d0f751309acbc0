"""Sparsity: pruned weights, and when the zeros turn into memory and wall-clock time.

Two ways to prune the block matmuls (the embedding and LM head stay dense):

- 2:4 structured: in every group of four consecutive weights of a row two are zero. The stored
  matrix keeps half the values plus a 2-bit position index for each kept one
  (costmodel.sparse24_bytes_per_value: bf16 1.125 B instead of 2), and sparse tensor cores skip
  the zeros at twice the dense rate (the catalogue's sparse_* keys). Compute-bound prefill gains
  from the rate, memory-bound decode from the bytes (costmodel.step_time(sparse=True)).
- Unstructured at sparsity s: zeros anywhere. GPU tensor cores have no path for it, so the
  matmuls run at the dense rate; only bytes can be saved, and only if the kernel reads a
  compressed layout. Assumed layouts (costmodel.unstructured_bytes_per_value): "dense" (zeros
  stored, nothing saved), "bitmask" (kept values + 1 bit per position: (1 - s) b + 1/8) or
  "csr" (kept values + a 16-bit column index each: (1 - s)(b + 2)). The skipped multiplies are
  real arithmetic savings on paper, shown as "FLOPs (on paper)", never as time.

Speed-ups compare step times with the dense model (costmodel.step_time) for one prefill of
`context_tokens` and one decode step of `batch_size` sequences at that context; as the batch
grows, the KV cache (not pruned) takes over the bytes and the decode gain fades.

Pruning demo (pure Python, seeded): a 64 x 256 matrix W of standard normal weights and 16 standard
normal inputs X. Magnitude pruning: unstructured zeroes the s * 64 * 256 smallest |w| of the whole
matrix; 2:4 zeroes the two smallest |w| of each group of four along a row. Reported: the fraction
of total |w| (magnitude) and of total w^2 (energy) removed, and the output error
||W X - W' X|| / ||W X|| (Frobenius norms). 2:4 must choose within each group of four, so at the same
50% it removes more than unstructured pruning does. Recovering quality after pruning takes further
training: Neural Magic's 2:4 Llama (Hugging Face model card neuralmagic/Sparse-Llama-3.1-8B-2of4)
reports its accuracy recovery; this simulator makes no quality claim.

References: 1) Mishra et al. 2021, Accelerating Sparse Deep Neural Networks (arXiv 2104.08378),
the 2:4 format on Ampere; 2) Frantar and Alistarh 2023, SparseGPT (arXiv 2301.00774); 3) Han et al.
2015, Learning both Weights and Connections (arXiv 1506.02626), magnitude pruning; 4) model card
neuralmagic/Sparse-Llama-3.1-8B-2of4 (Hugging Face).
"""

import math
import operator
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from ..core import capacity
from ..core import costmodel as cm
from ..core.catalog import running_example
from ..params import ModelGpu, context_param, dtype_choices, engine_param, param
from ..plotting import ACROSS, LOG, PERCENT, bar, chart, level, line
from ..results_cache import Keep, for_call

TITLE = "Sparsity: unstructured vs 2:4, bytes vs speed"
DESCRIPTION = (
    "What pruning half the weights saves in memory, in FLOPs on paper and in wall-clock time, for 2:4 "
    "structured and unstructured sparsity; and a magnitude-pruning demo."
)
ROWS, COLS, INPUTS = 64, 256, 16
BATCHES = tuple(2**i for i in range(11))  # 1 .. 1024
SCHEMES = ("24", "unstructured")
NAMES = (("24", "2:4"), ("unstructured", "unstructured"))  # each scheme in the metrics' labels
PASSES = ("prefill", "decode")
# The pruning demo's scores, and what each is.
DEMO = {
    "magnitude_removed": "share of |w| removed",
    "energy_removed": "share of w^2 removed",
    "output_rel_error": "relative output error",
}
VIEWS = [("savings", "Savings vs dense"), ("batch", "Decode speed-up vs batch"), ("demo", "Magnitude-pruning demo")]
TABLES = {"demo": ("demo_",)}  # the demo's table holds its own scores (api.run)
UNTIMED = ("demo",)  # and it times nothing
LAYOUTS = [("dense", "Dense (zeros stored)"), ("bitmask", "Bitmask + kept values"), ("csr", "CSR, 16-bit indices")]
METRICS = {
    "bytes_per_weight_24": ("Stored bytes per block weight, 2:4", "B"),
    "weights_dense_GB": ("Weights, dense", "GB"),
    "weights_24_GB": ("Weights, 2:4 sparse", "GB"),
    "weights_unstructured_GB": ("Weights, unstructured", "GB"),
    **{f"{step}_speedup_{s}": (f"{step.capitalize()} speed-up, {n}", "x") for step in PASSES for s, n in NAMES},
    "bytes_per_weight_unstructured": ("Stored bytes per block weight, unstructured", "B"),
    **{f"memory_saved_{s}_fraction": (f"Weight memory saved, {n}", "") for s, n in NAMES},
    **{f"flops_saved_{s}_fraction": (f"Block matmul FLOPs skipped on paper, {n}", "") for s, n in NAMES},
    "sparse_tensor_cores": ("The GPU has a 2:4 sparse tensor rate for this format (1 yes, 0 no)", ""),
    **{f"demo_{s}_{k}": (f"Demo, {name}: {label}", "") for s, name in NAMES for k, label in DEMO.items()},
}


@dataclass(frozen=True)
class Params(ModelGpu):
    weight_dtype: str = param(running_example()["weight_dtype"], label="Weight format", choices=dtype_choices())
    # Share of weights set to zero by unstructured pruning (2:4 is always one half).
    sparsity: float = param(0.5, label="Unstructured sparsity", min=0.0, max=0.95, step=0.05)
    # How the unstructured matrix is stored (an assumption about the kernel; see the docstring).
    unstructured_layout: str = param("bitmask", label="Unstructured storage", choices=LAYOUTS)
    # Prompt of the prefill comparison, and context of each decoding sequence.
    context_tokens: int = context_param()
    batch_size: int = param(1, label="Decode batch", unit="sequences", min=1, max=1024, step=1, log=True)
    ideal: bool = param(False, label="Ideal hardware (100% of peak)")
    engine: str = engine_param()


def prune_unstructured(w: Sequence[Sequence[float]], sparsity: float) -> list[list[float]]:
    """Zero the round(sparsity * size) smallest-magnitude weights of the whole matrix."""
    cols = len(w[0])
    flat = [abs(v) for row in w for v in row]
    # A stable sort of the positions by |w| breaks ties by position, as sorting (|w|, row, column) would, faster.
    drop = set(sorted(range(len(flat)), key=flat.__getitem__)[: round(sparsity * len(flat))])
    return [[0.0 if i * cols + j in drop else v for j, v in enumerate(row)] for i, row in enumerate(w)]


def prune_24(w: Sequence[Sequence[float]]) -> list[list[float]]:
    """Zero the two smallest-magnitude weights of every group of four along each row."""
    out = [list(row) for row in w]
    for new in out:
        size = list(map(abs, new))
        for g in range(0, len(new), 4):
            for j in sorted(range(g, g + 4), key=size.__getitem__)[:2]:
                new[j] = 0.0
    return out


def _matmul(w: Sequence[Sequence[float]], x: Sequence[Sequence[float]]) -> list[list[float]]:
    """W X, skipping the zeros of W: adding a zero product leaves a running sum unchanged (up to the
    sign of a zero sum, which the squared norms below cannot see); a pruned W costs half the multiplies."""
    out = []
    for row in w:
        kept = [j for j, v in enumerate(row) if v != 0.0]
        values = [row[j] for j in kept]
        cols = list(zip(*[x[j] for j in kept], strict=True)) if kept else [() for _ in x[0]]
        # map(operator.mul): a generator's products in its order (bit-identical sums), without its frames.
        out.append([sum(map(operator.mul, values, c)) for c in cols])
    return out


Matrix = tuple[tuple[float, ...], ...]
Scores = tuple[float, float, float]  # DEMO_KEYS in order
DEMO_KEYS = tuple(DEMO)


class _Base(NamedTuple):
    """The seeded W, X and W X with their norms (tuples: the cached copy cannot be changed)."""

    w: Matrix
    x: Matrix
    y: Matrix
    mag: float
    energy: float
    y_norm: float


def _scores(b: _Base, wp: list[list[float]]) -> Scores:
    removed = [a for r, rp in zip(b.w, wp, strict=True) for a, c in zip(r, rp, strict=True) if c == 0.0]
    yp = _matmul(wp, b.x)
    err = math.sqrt(sum([(a - c) ** 2 for r, rp in zip(b.y, yp, strict=True) for a, c in zip(r, rp, strict=True)]))
    return sum(map(abs, removed)) / b.mag, sum([v * v for v in removed]) / b.energy, err / b.y_norm


# Demo work kept in the caller's memo (api.Session gives one), at most 8 of each: W, X, W X and 2:4
# pruning depend only on the seed, unstructured pruning on the sparsity too; other controls reuse them.
MEMO_ENTRIES = 24


def _base(seed: int) -> _Base:
    rng = random.Random(seed)
    w = tuple(tuple(rng.gauss(0.0, 1.0) for _ in range(COLS)) for _ in range(ROWS))
    x = tuple(tuple(rng.gauss(0.0, 1.0) for _ in range(INPUTS)) for _ in range(COLS))
    y = tuple(map(tuple, _matmul(w, x)))
    # Sums over lists rather than generators: the same terms in the same order, fewer frames.
    mag = sum([abs(v) for row in w for v in row])
    energy = sum([v * v for row in w for v in row])
    y_norm = math.sqrt(sum([v * v for row in y for v in row]))
    return _Base(w, x, y, mag, energy, y_norm)


def demo_24(seed: int, keep: Keep) -> Scores:
    b = _kept_base(seed, keep)
    return _scores(b, prune_24(b.w))


def demo_unstructured(seed: int, sparsity: float, keep: Keep) -> Scores:
    b = _kept_base(seed, keep)
    return _scores(b, prune_unstructured(b.w, sparsity))


def _kept_base(seed: int, keep: Keep) -> _Base:
    return cast(_Base, keep(("base", seed), lambda: _base(seed)))


def demo(seed: int, sparsity: float, keep: Keep | None = None) -> dict[str, dict[str, float]]:
    """{scheme: {DEMO_KEYS: value}}, new dicts each call (the kept scores are tuples)."""
    kept = for_call(keep, MEMO_ENTRIES)
    s24: Scores = kept(("24", seed), lambda: demo_24(seed, kept))
    unstructured: Scores = kept(("unstructured", seed, sparsity), lambda: demo_unstructured(seed, sparsity, kept))
    return {v: dict(zip(DEMO_KEYS, s, strict=True)) for v, s in zip(SCHEMES, (s24, unstructured), strict=True)}


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> dict[str, Any]:
    """`keep` keeps the demo's matrices and scores for the caller's next call (none: this call's alone)."""
    m, gpu = p.resolved()
    per_value = cm.unstructured_bytes_per_value(p.weight_dtype, p.sparsity, p.unstructured_layout)
    kw: dict[str, Any] = {"weight_dtype": p.weight_dtype, "eff": cm.efficiency(p.ideal, p.engine)}
    variants: dict[str, dict[str, Any]] = {"dense": {}, "24": {"sparse": True}}
    variants["unstructured"] = {"weight_bytes_per_value": per_value}

    def decode_step(v: str, b: int) -> cm.StepTime:
        return cm.uniform_decode_step_time(m, gpu, p.context_tokens, b, **kw, **variants[v])

    prefill = {v: cm.step_time(m, gpu, [(p.context_tokens, 0)], **kw, **variants[v]) for v in variants}
    decode = {v: decode_step(v, p.batch_size) for v in variants}
    dense = {b: decode_step("dense", b).time_s for b in BATCHES}
    curves = {v: [dense[b] / decode_step(v, b).time_s for b in BATCHES] for v in SCHEMES}
    block, dense_b = cm.param_counts(m).block_linear, cm.weight_bytes(m, p.weight_dtype)
    # Unstructured: the block matmuls re-stored at per_value bytes, the rest as dense.
    unstructured_b = dense_b - block * cm.bytes_per_value(p.weight_dtype) + block * per_value
    weights = {"24": cm.weight_bytes(m, p.weight_dtype, sparse=True), "unstructured": unstructured_b}
    path = cm.matmul_path(gpu, p.weight_dtype)
    has_sparse = gpu.peak_tflops(path, sparse=True) is not None
    d = demo(seed, p.sparsity, keep)
    notes = []
    if not has_sparse:
        notes.append(f"{gpu.name} publishes no 2:4 sparse rate for {path}: 2:4 saves only bytes here.")
    if per_value >= cm.bytes_per_value(p.weight_dtype):
        notes.append(f"The {p.unstructured_layout} layout at {p.sparsity:.0%} stores no fewer bytes than dense.")
    # Gains are against the dense baseline, which must hold the batch too.
    note = capacity.batch_note("Batch", p.batch_size, m, gpu, p.context_tokens, weight_dtype=p.weight_dtype)
    notes += [note] if note else []
    metrics: dict[str, float] = {
        "weights_dense_GB": dense_b / cm.GB,
        "bytes_per_weight_24": cm.sparse24_bytes_per_value(p.weight_dtype),
        "bytes_per_weight_unstructured": per_value,
        "flops_saved_24_fraction": 0.5,
        "flops_saved_unstructured_fraction": p.sparsity,
        "sparse_tensor_cores": int(has_sparse),
    }
    for v in SCHEMES:
        metrics[f"weights_{v}_GB"] = weights[v] / cm.GB
        metrics[f"memory_saved_{v}_fraction"] = 1 - weights[v] / dense_b
        metrics[f"prefill_speedup_{v}"] = prefill["dense"].time_s / prefill[v].time_s
        metrics[f"decode_speedup_{v}"] = decode["dense"].time_s / decode[v].time_s
        metrics.update({f"demo_{v}_{k}": x for k, x in d[v].items()})
    return {
        **p.stated("weight_dtype", "sparsity", "context_tokens", "batch_size"),
        "layout": p.unstructured_layout,
        "prefill_bound": prefill["dense"].bound,
        "decode_bound": decode["dense"].bound,
        "batches": list(BATCHES),
        "speedup_curves": curves,
        "notes": notes,
        "metrics": metrics,
    }


def _names(r: dict[str, Any]) -> dict[str, str]:
    # One name for the pattern, as in lesson 04 (review 2026-12-03: "04 keeps two names for 2:4"):
    # "structured" there means whole rows or heads removed, which 2:4 is not.
    return {"24": "2:4 (50%)", "unstructured": f"Unstructured {r['sparsity']:.0%}, {r['layout']}"}


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    m, names = r["metrics"], _names(r)
    if view == "batch":
        data = [line(r["batches"], r["speedup_curves"][v], names[v], i) for i, v in enumerate(SCHEMES)]
        data.append(line([r["batches"][0], r["batches"][-1]], [1, 1], "Dense", 6))
        title = f"Decode speed-up over dense, {r['model']} on {r['gpu']} at {r['context_tokens']:,} tokens"
        return chart(data, title, "Batch size (sequences)", "Speed-up (x)", xaxis=LOG)
    if view == "demo":
        x = [label.capitalize() for label in DEMO.values()]
        data = [bar(x, [m[f"demo_{v}_{k}"] for k in DEMO_KEYS], names[v], i) for i, v in enumerate(SCHEMES)]
        title = f"Magnitude pruning of a {ROWS} x {COLS} matrix"
        return chart(data, title, "", "Share", barmode="group", yaxis=PERCENT)
    x = ["Weight memory", "Block FLOPs (on paper)"]
    x += [f"Prefill time, {r['context_tokens']:,} tokens", f"Decode step, batch {r['batch_size']:,}"]
    ys = {v: [1 - m[f"{k}_saved_{v}_fraction"] for k in ("memory", "flops")] for v in SCHEMES}
    data = [bar(x, ys[v] + [1 / m[f"{k}_speedup_{v}"] for k in PASSES], names[v], i) for i, v in enumerate(SCHEMES)]
    data.append(level(1, "Dense"))
    title = f"Pruned vs dense, {r['model']} ({r['weight_dtype']}) on {r['gpu']}"
    y_title = "Share of the dense figure (lower is better)"
    return chart(data, title, "", y_title, barmode="group", yaxis=PERCENT, xaxis2=ACROSS)


def summary(r: dict[str, Any], view: str) -> str:
    m, names = r["metrics"], _names(r)
    if view == "demo":  # the demo's own story and figures, not the speed-up's (review A-16; the notes too)
        return (
            f"{names['24']} keeps 2 of every 4 weights; {names['unstructured'].lower()} keeps the largest "
            f"{1 - r['sparsity']:.0%} anywhere. "
            f"Pruning the demo matrix by magnitude removes {m['demo_24_energy_removed']:.1%} of its energy with 2:4 and "
            f"{m['demo_unstructured_energy_removed']:.1%} unstructured at {r['sparsity']:.0%}, for output errors of "
            f"{m['demo_24_output_rel_error']:.1%} and {m['demo_unstructured_output_rel_error']:.1%}."
        )
    small = f": {cm.SMALL_BATCH_COMPUTE}" if r["decode_bound"] == "compute" and r["batch_size"] <= 8 else ""
    text = (
        f"{names['24']} stores {m['bytes_per_weight_24']:.4g} B per block weight and cuts {r['model']}'s weights from "
        f"{m['weights_dense_GB']:.1f} to {m['weights_24_GB']:.1f} GB; {names['unstructured'].lower()} stores "
        f"{m['bytes_per_weight_unstructured']:.4g} B ({m['weights_unstructured_GB']:.1f} GB). "
        f"Prefill ({r['prefill_bound']}-bound dense) gains {m['prefill_speedup_24']:.2f}x from 2:4 and "
        f"{m['prefill_speedup_unstructured']:.2f}x unstructured, which has no tensor-core path; decode at batch "
        f"{r['batch_size']:,} ({r['decode_bound']}-bound{small}) gains {m['decode_speedup_24']:.2f}x and "
        f"{m['decode_speedup_unstructured']:.2f}x. Unstructured sparsity can only save bytes, so it pays only in "
        "memory-bound steps and with a compressed layout. "
    )
    if view == "batch":
        c = r["speedup_curves"]
        text += (
            f"At batch {r['batches'][-1]:,} the decode gains are {c['24'][-1]:.2f}x and {c['unstructured'][-1]:.2f}x. "
        )
    return text.strip() + "".join(" " + n for n in r["notes"])
