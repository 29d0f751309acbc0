"""KV cache: what one token costs in memory, how the bill grows, and how many sequences fit.

Model: bytes per token from the model's shape (costmodel.kv_bytes_per_token); per sequence, that
times the tokens held. How many sequences fit is vLLM's start-up accounting per GPU rank
(capacity.held: simulators/core/vllm_memory.py through parallel.rank_fit, at `vllm serve`'s defaults
for the GPU, `num_gpus` as tensor parallelism and max_model_len = the context): the memory CUDA
reports times gpu_memory_utilization, less the weights each rank holds, the activation peak of a
profile run of max_num_batched_tokens and the non-torch memory, cut into 16-token blocks; a sequence
takes whole blocks. These are the figures vLLM would log ("GPU KV cache size", "Maximum
concurrency"). The lesson's byte arithmetic (costmodel.memory_fit: the data sheet's memory x
utilisation, less weights and activations, divided by bytes per token) is kept beside them as
`*_by_bytes`, an upper bound. The same shape is re-costed with the other attention designs (MHA,
GQA, MQA, MLA) to show what each saves. The "work" view compares the FLOPs to generate with and
without a cache (costmodel.generation_flops): linear against quadratic in the length.

References: 1) Pope et al. 2022, Efficiently Scaling Transformer Inference (arXiv 2211.05102),
section 2 on KV-cache memory; 2) Ainslie et al. 2023, GQA (arXiv 2305.13245); Shazeer 2019,
MQA (arXiv 1911.02150); DeepSeek-AI 2024, DeepSeek-V2 (arXiv 2405.04434) for MLA.
"""

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..core import capacity
from ..core import costmodel as cm
from ..core.catalog import Model, resolve_model, running_example
from ..params import ModelGpu, dtype_choices, kv_dtype_param, param
from ..plotting import LOG, chart, line
from ..results_cache import Keep

TITLE = "KV cache size, growth and concurrency"
DESCRIPTION = "Bytes per token from the model's shape, the cache per sequence as context grows, and how many sequences fit on the GPU."
# The KV cache per token in whole bytes (131,072 for the running example), not "131 KB" (= 128 KiB).
METRICS = {
    "kv_bytes_per_token": ("KV cache per token", "bytes/token"),
    "kv_GiB_per_sequence": ("KV cache per sequence", "GiB"),
    "weights_GB": ("Weights", "GB"),
    "kv_token_capacity": ("GPU KV cache size, as vLLM would log it", "tokens"),
    "max_concurrency": ("Maximum concurrency at this context, as vLLM would log it", "x"),
    "max_concurrent_sequences": ("Whole sequences of this context that fit (vLLM's accounting)", "sequences"),
    "kv_token_capacity_by_bytes": ("KV tokens by byte arithmetic on the data sheet's memory (upper bound)", "tokens"),
    "max_concurrent_sequences_by_bytes": ("Sequences by byte arithmetic (upper bound)", "sequences"),
    "kv_bytes_per_sequence": ("KV cache per sequence", "B"),
    "flops_with_cache": ("Work to generate, with a KV cache", "FLOP"),
    "flops_without_cache": ("Work to generate, recomputing", "FLOP"),
    "recompute_ratio": ("Recompute / cached work", "x"),
}

# The MLA variant of a model that has no latent of its own borrows DeepSeek-V3's shape from the
# catalogue (kv_lora_rank latent + qk_rope_head_dim rotary values per token per layer).
MLA_SHAPE_MODEL = "deepseek-v3"

VIEWS = [("memory", "Memory per sequence"), ("work", "Work with vs without a cache")]


@dataclass(frozen=True)
class Params(ModelGpu):
    # Format of the cached keys and values.
    kv_dtype: str = kv_dtype_param()
    # Format of the weights (decides how much memory is left for the cache).
    weight_dtype: str = param("bf16", label="Weight format", choices=dtype_choices())
    # Tokens in the sequence: prompt plus generated output.
    context_tokens: int = param(8192, label="Context length", unit="tokens", min=1, max=1_048_576, step=1, log=True)
    # GPUs the model is split over (tensor parallel): each holds its share of the weights and of
    # every token's KV heads (a whole head when there are fewer heads than GPUs; MLA: all of it).
    num_gpus: int = param(1, label="GPUs", min=1, max=8, step=1)


def _variants(m: Model) -> dict[str, Model]:
    """The same model re-costed with each attention design (hypothetical where not its own)."""
    std = dataclasses.replace(m, kv_lora_rank=0, qk_rope_head_dim=0, qk_nope_head_dim=0, v_head_dim=0)
    if m.kv_lora_rank:  # MHA for an MLA model keeps a full key and value per head
        std = dataclasses.replace(std, head_dim=(m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) // 2)
    gqa_heads = m.num_kv_heads if m.attention == "GQA" else max(1, min(8, m.num_heads))
    mla = m if m.kv_lora_rank else resolve_model(MLA_SHAPE_MODEL)
    return {
        "MHA": dataclasses.replace(std, num_kv_heads=m.num_heads),
        f"GQA ({gqa_heads} KV heads)": dataclasses.replace(std, num_kv_heads=gqa_heads),
        "MQA (1 KV head)": dataclasses.replace(std, num_kv_heads=1),
        f"MLA ({mla.kv_lora_rank} + {mla.qk_rope_head_dim} latent)": dataclasses.replace(
            m,
            kv_lora_rank=mla.kv_lora_rank,
            qk_rope_head_dim=mla.qk_rope_head_dim,
            qk_nope_head_dim=m.qk_nope_head_dim or m.head_dim,
            v_head_dim=m.v_head_dim or m.head_dim,
        ),
    }


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> dict[str, Any]:
    m, gpu = p.resolved()
    per_token = cm.kv_bytes_per_token(m, p.kv_dtype)
    per_seq = cm.kv_bytes_per_sequence(m, p.context_tokens, p.kv_dtype)
    on: dict[str, Any] = {"num_gpus": p.num_gpus, "weight_dtype": p.weight_dtype, "kv_dtype": p.kv_dtype}
    fit, held = cm.memory_fit(m, gpu, **on), cm.kv_tokens_held(m, p.context_tokens)
    tokens, concurrency = capacity.held(m, gpu, p.context_tokens, **on)
    prompt = min(running_example()["prompt_tokens"], p.context_tokens)

    def work(c: int, kv_cache: bool) -> float:
        """FLOPs to generate a sequence of `c` tokens (prompt and output) with or without the cache."""
        return cm.generation_flops(m, min(prompt, c), c - min(prompt, c) + 1, kv_cache=kv_cache)

    with_cache, without = work(p.context_tokens, True), work(p.context_tokens, False)
    top = p.context_tokens
    grid = sorted({max(1, round(top * i / 48)) for i in range(49)})  # 48 even steps to the context
    # 48 steps even on a log axis over the last 2.4 decades, from one 16-token block (from 1 if shorter).
    lo = max(16, top // 256) if top > 16 else 1
    log_grid = sorted({max(1, round(lo * (top / lo) ** (i / 48))) for i in range(49)})
    variants = {
        name: {
            "kv_bytes_per_token": cm.kv_bytes_per_token(v, p.kv_dtype),
            "GiB": [cm.kv_bytes_per_sequence(v, c, p.kv_dtype) / cm.GiB for c in log_grid],
        }
        for name, v in _variants(m).items()
    }
    notes = m.beyond_context(p.context_tokens)
    if m.num_heads % p.num_gpus:
        notes.append(
            f"vLLM cannot split {m.name}'s {m.num_heads} attention heads over {p.num_gpus} GPUs: it refuses to start, "
            "so no sequence fits; only the byte arithmetic is shown."
        )
    if m.sliding_window:
        notes.append(
            f"{m.name} uses a sliding window of {m.sliding_window:,} tokens, so a sequence holds at most that many tokens of cache."
        )
    if p.kv_dtype not in ("bf16", "fp8"):
        notes.append(
            f"vLLM has no {p.kv_dtype} KV cache (auto or fp8); its accounting is applied to the format as if it had."
        )
    return {
        **p.stated("kv_dtype", "context_tokens", "num_gpus"),
        "gpu_memory_GiB": gpu.memory_GiB,
        # vLLM's gpu_memory_utilization: the share of the memory the byte arithmetic starts from
        "usable_share": fit.usable_bytes / fit.capacity_bytes,
        "attention": m.attention,
        "grid_tokens": log_grid,
        "variants": variants,
        # Both budgets as the cache they hold, in sequence terms: tokens x one token's bytes.
        "vllm_budget_GiB": tokens * per_token / cm.GiB,
        "formula_budget_GiB": max(fit.kv_token_capacity, 0) * per_token / cm.GiB,
        "prompt_tokens": prompt,  # the work view's: the running example's prompt, or all of a shorter context
        "work_grid_tokens": grid,
        "work_with_cache": [work(c, True) for c in grid],
        "work_without_cache": [work(c, False) for c in grid],
        "notes": notes,
        "metrics": {
            "kv_bytes_per_token": per_token,
            "kv_bytes_per_sequence": per_seq,
            "kv_GiB_per_sequence": per_seq / cm.GiB,
            "kv_token_capacity": tokens,
            "max_concurrency": concurrency,
            "max_concurrent_sequences": int(concurrency),
            "kv_token_capacity_by_bytes": fit.kv_token_capacity,
            "max_concurrent_sequences_by_bytes": fit.kv_token_capacity // held if fit.fits and held else 0,
            "weights_GB": fit.weight_bytes / cm.GB,
            "flops_with_cache": with_cache,
            "flops_without_cache": without,
            "recompute_ratio": without / with_cache,
        },
    }


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    if view == "work":
        x = r["work_grid_tokens"]
        data = [
            line(x, [f / 1e12 for f in r["work_with_cache"]], "With a KV cache (linear)", 0),
            line(x, [f / 1e12 for f in r["work_without_cache"]], "Recomputing every step (quadratic)", 1),
        ]
        return chart(data, f"Work to generate, {r['model']}", "Sequence length (tokens)", "TFLOP", yaxis=LOG)
    # Both axes logarithmic (review 2026-12-03, L-7): on linear axes every curve hugs zero under budgets
    # of tens of GiB; on log axes the designs are parallel lines (MHA 4x GQA for Llama-3-8B), and the gap
    # from a curve's end up to the vLLM line is how many sequences fit (none where they cross).
    data = [line(r["grid_tokens"], v["GiB"], name, i) for i, (name, v) in enumerate(r["variants"].items())]
    ends = [r["grid_tokens"][0], r["grid_tokens"][-1]]
    vllm, formula = r["vllm_budget_GiB"], r["formula_budget_GiB"]
    gpus = f"{r['num_gpus']} GPU{'s' if r['num_gpus'] > 1 else ''}"
    fits = r["metrics"]["max_concurrent_sequences"]
    if vllm > 0:  # a log axis cannot draw zero: with no cache left, the summary says so instead
        label = f"KV cache vLLM leaves ({gpus}): {fits:,} sequences of {r['context_tokens']:,} token{'s' * (r['context_tokens'] != 1)}, {r['attention']}"
        data.append(line(ends, [vllm, vllm], label, 6))
    if formula > 0:
        total = f"{r['usable_share']:.0%} of {r['num_gpus'] * r['gpu_memory_GiB']:,g} GiB"  # the memory of all the GPUs
        label = f"Byte arithmetic: {total} less weights and activations ({gpus}, upper bound)"
        data.append(line(ends, [formula, formula], label, 4))
    title = f"KV cache per sequence, {r['model']} ({r['kv_dtype']})"
    return chart(data, title, "Context (tokens)", "GiB per sequence (log)", xaxis=LOG, yaxis=LOG)


def summary(r: dict[str, Any], view: str) -> str:
    m = r["metrics"]
    text = (
        f"{r['model']} ({r['attention']}) stores {m['kv_bytes_per_token']:,.0f} bytes of {r['kv_dtype']} KV cache per token, "
        f"so a sequence of {r['context_tokens']:,} token{'s' if r['context_tokens'] != 1 else ''} holds "
        f"{m['kv_GiB_per_sequence']:,.2f} GiB. On {r['num_gpus']} x {r['gpu']}, after {m['weights_GB']:,.1f} GB of weights, "
        + (
            f"vLLM would log GPU KV cache size: {m['kv_token_capacity']:,} tokens, and a maximum concurrency of "
            f"{m['max_concurrency']:,.2f}x at this length: {m['max_concurrent_sequences']:,} whole sequences. "
            if m["kv_token_capacity"] > 0  # none: vLLM stops at start-up ("No available memory for the cache blocks")
            else "no memory is left for the KV cache: vLLM would refuse to start (use more GPUs or smaller weights). "
        )
        + f"Byte arithmetic ({r['usable_share']:.0%} of the data sheet's memory, less weights and activations), an upper "
        f"bound, gives {m['kv_token_capacity_by_bytes']:,} tokens "
        f"({m['max_concurrent_sequences_by_bytes']:,} sequences). "
    )
    if view == "work":
        prompt, made = r["prompt_tokens"], r["context_tokens"] - r["prompt_tokens"]
        # Learner review: below 2,000 tokens the curves met and "1 times" read as a cache saving nothing.
        text += (
            f"Generating without a cache costs {m['recompute_ratio']:,.0f} times the work of generating with one: the "
            f"first {prompt:,} tokens are the prompt, prefilled in one pass either way, so the cache saves work on the "
            f"{made:,} generated after it."
            if made
            else "Without a cache the work is the same here: the whole context is the prompt, prefilled in one pass "
            f"either way; the cache saves work on the tokens generated after a {running_example()['prompt_tokens']:,}-token "
            "prompt, so set a longer context."
        )
    else:
        sizes = ", ".join(f"{name}: {v['kv_bytes_per_token']:,.0f} B/token" for name, v in r["variants"].items())
        text += f"The same shape with other attention designs: {sizes}."
    return text + "".join(" " + n for n in r["notes"])
