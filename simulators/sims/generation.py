"""Autoregressive generation: one request, one prefill pass, then one decode pass per token.

Model: the prompt is processed in one forward pass (prefill: every prompt token at once, so the
matmuls are large and compute usually binds); the first output token appears when it ends (TTFT).
Each further token needs its own pass over all the weights and the growing KV cache (decode: one
token per sequence, so bandwidth usually binds); the gap between tokens is the inter-token
latency (ITL). Step times come from costmodel.step_time; `batch_size` identical requests share
each pass. The sampling view shows how temperature, top-k and top-p reshape one fixed next-token
distribution: the token drawn is fed back as input, which is why the passes cannot overlap. That
view prices no time: its answer holds the sampler's two figures alone, so they lead its table.

References: 1) Vaswani et al. 2017 (arXiv 1706.03762); 2) Pope et al. 2022 (arXiv 2211.05102),
prefill vs decode; 3) Holtzman et al. 2020, The Curious Case of Neural Text Degeneration
(arXiv 1904.09751) for top-p; Fan et al. 2018 (arXiv 1805.04833) for top-k.
"""

import itertools
import math
import random
from dataclasses import dataclass
from typing import Any

from .. import parallel
from ..core import costmodel as cm
from ..core.catalog import running_example
from ..params import ModelGpu, ParamError, dtype_choices, engine_param, kv_dtype_param, param
from ..plotting import bar, chart, line
from ..results_cache import Keep

TITLE = "Generation: prefill, one decode step per token, and how each token is sampled"
DESCRIPTION = "Time to first token, inter-token latency and the stream of tokens for one request; and how sampling picks each token."
METRICS = {
    "ttft_s": ("Time to first token", "s"),
    "itl_s": ("Mean inter-token latency", "s"),
    "e2e_s": ("End-to-end latency", "s"),
    "decode_share": ("Share of the request spent decoding", ""),
    "decode_s": ("Decode time", "s"),
    "tokens_per_s": ("Output tokens per second, per request", "tokens/s"),
    "prefill_intensity": ("Prefill arithmetic intensity", "FLOP/B"),
    "decode_intensity": ("Decode arithmetic intensity", "FLOP/B"),
    "prefill_compute_s": ("Prefill: compute part", "s"),
    "prefill_memory_s": ("Prefill: memory part", "s"),
    "decode_step_compute_s": ("First decode step: compute part", "s"),
    "decode_step_memory_s": ("First decode step: memory part", "s"),
    "step_overhead_s": ("Fixed time per pass (CPU between passes, per-layer kernels)", "s"),
    "sample_entropy_bits": ("Entropy of the sampling distribution", "bits"),
    "sample_candidates": ("Tokens left to sample from", "tokens"),
}

# A fixed next-token distribution for the sampling demo: continuations of
# "The running example asks the model to explain why decoding is" with illustrative logits.
WORDS = "memory slow bandwidth sequential expensive bound limited hard costly serial tricky purple"
LOGITS = (4.1, 3.6, 3.3, 2.9, 2.6, 2.2, 1.9, 1.4, 1.1, 0.9, 0.2, -1.5)  # one per word, in order
CANDIDATES = tuple(zip([" " + w for w in WORDS.split()], LOGITS, strict=True))  # (token, logit)
EX = running_example()
NUM_DRAWS = 1000
MAX_TIMELINE_POINTS = 200

VIEWS = [("timeline", "Tokens over time"), ("sampling", "Next-token sampling")]
UNTIMED = ("sampling",)  # the sampler prices no time, so its answer names no profile (api.run)


@dataclass(frozen=True)
class Params(ModelGpu):
    # Prompt length: processed in one prefill pass.
    prompt_tokens: int = param(EX["prompt_tokens"], label="Prompt", unit="tokens", min=1, max=131_072, step=1, log=True)
    # Output length: one decode pass each after the first.
    output_tokens: int = param(EX["output_tokens"], label="Output", unit="tokens", min=1, max=50_000, step=1, log=True)
    # Identical requests sharing every forward pass.
    batch_size: int = param(1, label="Batch size", unit="requests", min=1, max=1024, step=1, log=True)
    # The parallel layout, as vLLM's flags; the fit is vLLM's, per GPU rank (simulators/parallel.py).
    tensor_parallel_size: int = parallel.tensor_parallel_param()
    pipeline_parallel_size: int = parallel.pipeline_parallel_param()
    data_parallel_size: int = parallel.data_parallel_param()
    enable_expert_parallel: bool = parallel.expert_parallel_param()
    weight_dtype: str = param(EX["weight_dtype"], label="Weight format", choices=dtype_choices())
    kv_dtype: str = kv_dtype_param(EX["kv_dtype"])
    # Peak bandwidth and FLOPs (the physical floor) instead of the sourced achieved fractions.
    ideal: bool = param(False, label="Ideal hardware (100% of peak)")
    engine: str = engine_param()
    # Sampling demo: temperature divides the logits; 0 means greedy.
    temperature: float = param(1.0, label="Temperature", min=0.0, max=2.0, step=0.05)
    # Keep only the k most likely tokens (0 = off).
    top_k: int = param(0, label="Top-k", min=0, max=len(CANDIDATES), step=1)
    # Keep the smallest set of tokens whose probability adds up to p (1 = off).
    top_p: float = param(1.0, label="Top-p", min=0.01, max=1.0, step=0.01)

    def check(self) -> None:
        m, gpu = self.resolved()
        if self.prompt_tokens + self.output_tokens > 2 * max(m.max_context_tokens, 131_072):
            raise ParamError("output_tokens", "prompt plus output is far beyond any context this model supports")
        formats = {"weight_dtype": self.weight_dtype, "kv_dtype": self.kv_dtype}
        context = self.prompt_tokens + self.output_tokens
        parallel.check_layout(m, gpu, parallel.layout_of(self), **formats, context=context, batch=self.batch_size)


def sampling_distribution(temperature: float, top_k: int, top_p: float) -> list[float]:
    """Probabilities over CANDIDATES after temperature, top-k and top-p (in that order, as vLLM)."""
    if temperature == 0:
        best = LOGITS.index(max(LOGITS))
        return [1.0 if i == best else 0.0 for i in range(len(LOGITS))]
    weights = [math.exp((lg - max(LOGITS)) / temperature) for lg in LOGITS]
    total = sum(weights)
    probs = [w / total for w in weights]
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    keep = set(order[:top_k] if top_k else order)
    if top_p < 1.0:  # the most likely tokens up to the first whose running sum reaches top_p
        cum = list(itertools.accumulate(probs[i] for i in order))
        keep &= set(order[: next((n for n, c in enumerate(cum) if c >= top_p), len(order) - 1) + 1])
    kept = sum(probs[i] for i in keep)
    return [probs[i] / kept if i in keep else 0.0 for i in range(len(probs))]


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> dict[str, Any]:
    probs = sampling_distribution(p.temperature, p.top_k, p.top_p)
    draws = random.Random(seed).choices(range(len(CANDIDATES)), weights=probs, k=NUM_DRAWS)
    sampled = {
        "candidates": [tok for tok, _ in CANDIDATES],
        "probabilities": probs,
        "draw_counts": [draws.count(i) for i in range(len(CANDIDATES))],
    }
    figures = {
        "sample_entropy_bits": sum(-q * math.log2(q) for q in probs if q > 0),  # sum from +0: never -0.0
        "sample_candidates": sum(1 for q in probs if q > 0),
    }
    if view == "sampling":  # the sampler's own figures alone: it prices nothing
        return {**sampled, "metrics": figures}
    m, gpu = p.resolved()
    kw: dict[str, Any] = {"weight_dtype": p.weight_dtype, "kv_dtype": p.kv_dtype, **parallel.layout_of(p).cost_kw()}
    kw["eff"] = cm.efficiency(p.ideal, p.engine)
    prefill = cm.step_time(m, gpu, [(p.prompt_tokens, 0)] * p.batch_size, **kw)
    first = cm.decode_step_time(m, gpu, [p.prompt_tokens] * p.batch_size, **kw)
    # Every decode step has the same batch, each context one token longer: an affine step time.
    dl = cm.decode_line(m, gpu, p.batch_size, **kw)
    steps = (dl.time_s(p.batch_size * (p.prompt_tokens + step)) for step in range(1, p.output_tokens))
    times = list(itertools.accumulate(steps, initial=prefill.time_s))
    t, ttft = times[-1], prefill.time_s
    decode = t - ttft
    # Every so many tokens, and the last.
    idx = sorted({*range(0, len(times), max(1, len(times) // MAX_TIMELINE_POINTS)), len(times) - 1})
    return {
        **p.stated("batch_size", "prompt_tokens", "output_tokens"),
        "prefill_bound": prefill.bound,
        "decode_bound": first.bound,
        "token_times_s": [times[i] for i in idx],
        "token_index": [i + 1 for i in idx],
        **sampled,
        "notes": m.beyond_context(p.prompt_tokens + p.output_tokens),
        "metrics": {
            "ttft_s": ttft,
            "itl_s": decode / (p.output_tokens - 1) if p.output_tokens > 1 else 0.0,
            "decode_s": decode,
            "e2e_s": t,
            "tokens_per_s": p.output_tokens / t,
            "prefill_compute_s": prefill.compute_s,
            "prefill_memory_s": prefill.memory_s,
            "decode_step_compute_s": first.compute_s,
            "decode_step_memory_s": first.memory_s,
            "step_overhead_s": first.overhead_s,
            "prefill_intensity": prefill.intensity_flop_per_byte,
            "decode_intensity": first.intensity_flop_per_byte,
            "decode_share": decode / t,
            **figures,
        },
    }


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    if view == "sampling":
        data = [
            bar(r["candidates"], r["probabilities"], "Probability after temperature, top-k, top-p", 0),
            bar(r["candidates"], [c / NUM_DRAWS for c in r["draw_counts"]], f"Share of {NUM_DRAWS} seeded draws", 1),
        ]
        return chart(data, "Next-token sampling", "Candidate token", "Probability", barmode="group")
    ttft = r["metrics"]["ttft_s"]
    data = [
        line([0, ttft], [0, 0], "Prefill (nothing streamed yet)", 1),
        line(r["token_times_s"], r["token_index"], "Tokens streamed", 0),
    ]
    b = r["batch_size"]
    title = f"{'One request' if b == 1 else f'One of {b:,} requests in a batch'} on {r['gpu']}: {r['model']}"
    return chart(data, title, "Time since the request arrived (s)", "Output tokens received")


def summary(r: dict[str, Any], view: str) -> str:
    m = r["metrics"]
    if view == "sampling":
        n, bits, probs = m["sample_candidates"], m["sample_entropy_bits"], r["probabilities"]
        listed = [f"{t.strip()} {q:.0%}" for t, q in zip(r["candidates"], probs, strict=True) if q >= 0.005]
        if rest := n - len(listed):  # kept, too unlikely to show: counted, so the text adds up to n
            listed.append(f"and {rest} more under 0.5%{' each' * (rest > 1)}")
        return f"Sampling keeps {n} candidate token{'s' * (n != 1)} (entropy {bits:.2f} bits): {', '.join(listed)}."
    why = f" ({cm.SMALL_BATCH_COMPUTE})" if r["decode_bound"] == "compute" else ""
    b, tokens = r["batch_size"], f"{r['prompt_tokens']:,} tokens"
    # Learner review: at batch 128, 7,169 ms for "a prefill of 2,000 tokens": it is 128 prompts in one pass.
    prefill = f"prefill of {tokens}" if b == 1 else f"the prefill of {b:,} x {tokens}, one pass for all,"
    text = (
        f"{r['model']} on {r['gpu']}, batch {b}: {prefill} is {r['prefill_bound']}-bound and gives "
        f"{'the' if b == 1 else 'each request its'} first token after {m['ttft_s'] * 1e3:,.1f} ms. "
    )
    if r["output_tokens"] == 1:  # learner review: "Each of the next 0 tokens ..., 0.00 ms apart"
        text += "That token is the whole answer: no decode step follows."
    else:
        text += (
            f"Each of the next {r['output_tokens'] - 1:,} tokens needs its own {r['decode_bound']}-bound pass{why}, "
            f"{m['itl_s'] * 1e3:,.2f} ms apart on average, so the answer ends after {m['e2e_s']:,.2f} s "
            f"({m['decode_share']:.0%} of it decoding)."
        )
    return text + "".join(" " + n for n in r["notes"])
