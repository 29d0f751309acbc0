"""Published benchmarks, predicted under their own conditions with an engine profile.

- `offline_throughput`: an offline run (MLPerf Offline, trtllm-bench throughput, QServe's speed
  benchmark): every request is queued at once, all with `input_tokens` in and `output_tokens` out.
  The engine keeps B sequences in flight, B = the KV cache's capacity in whole sequences, capped
  by the engine's max_num_seqs. Each sequence costs its prefill (prompts packed into forward
  passes of max_num_batched_tokens tokens) and `output_tokens` decode steps at batch B over the
  mean context input + output / 2. Output tokens per second = B * output / (prefill + decode).
  Continuous batching mixes the two phases in one step, which this steady-state sum ignores (a
  mixed step reads the weights once, so the sum is slightly pessimistic when decode is
  memory-bound).
- `prompt_rate`: llama-bench ppN with micro-batch u: N prompt tokens in passes of u tokens over a
  growing context.
- `batch_latency`: end-to-end seconds of a fixed batch started together (vLLM's latency test).
- `decode_rate`: batch-1 (or batch-B) decode tokens per second at a fixed context.

Every time comes from efficiency.step_time, i.e. from costmodel.step_time with the profile's factors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core import costmodel as cm
from ..core import efficiency as ef
from ..core.catalog import Gpu, Model


@dataclass(frozen=True)
class Formats:
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    activation_dtype: str | None = None
    tp: int = 1

    def kw(self) -> dict[str, object]:
        return {
            "weight_dtype": self.weight_dtype,
            "kv_dtype": self.kv_dtype,
            "activation_dtype": self.activation_dtype,
            "tp": self.tp,
        }


def kv_sequences(m: Model, gpu: Gpu, f: Formats, seq_tokens: int) -> int:
    """Whole sequences of `seq_tokens` tokens the KV cache of one replica holds."""
    fit = cm.memory_fit(m, gpu, num_gpus=f.tp, weight_dtype=f.weight_dtype, kv_dtype=f.kv_dtype)
    return max(1, fit.kv_token_capacity // seq_tokens)


def in_flight(p: ef.EngineProfile, m: Model, gpu: Gpu, f: Formats, seq_tokens: int, cap: int | None = None) -> int:
    """Sequences an offline run keeps in flight: KV capacity, capped by the engine (or `cap`)."""
    limit = p.max_num_seqs if cap is None else cap
    return max(1, min(limit, kv_sequences(m, gpu, f, seq_tokens)))


def prefill_time_per_prompt(
    p: ef.EngineProfile, m: Model, gpu: Gpu, f: Formats, input_tokens: int, budget: int
) -> float:
    """Seconds of forward passes one prompt costs when prompts are packed `budget` tokens per pass."""
    if input_tokens <= budget:
        per_pass = max(1, budget // input_tokens)
        return cm.step_time(m, gpu, [(input_tokens, 0)] * per_pass, **f.kw(), eff=p).time_s / per_pass  # type: ignore[arg-type]
    chunks = math.ceil(input_tokens / budget)
    total = 0.0
    for k in range(chunks):
        q = min(budget, input_tokens - k * budget)
        total += cm.step_time(m, gpu, [(q, k * budget)], **f.kw(), eff=p).time_s  # type: ignore[arg-type]
    return total


def offline_throughput(
    p: ef.EngineProfile,
    m: Model,
    gpu: Gpu,
    f: Formats,
    input_tokens: int,
    output_tokens: int,
    *,
    batch: int | None = None,
    budget_profile: ef.EngineProfile | None = None,
    tpot_limit_s: float | None = None,
) -> float:
    """Output tokens per second of one replica (tp GPUs) in an offline run; see the module doc.

    `budget_profile` fixes the batch cap and pass size (so the ideal ceiling runs the same schedule).
    `tpot_limit_s` (a server scenario's latency bound, e.g. MLPerf Server's TPOT limit) keeps only as
    many sequences in flight as keep the mean time per output token within it.
    """
    sched = budget_profile or p
    b_max = batch or in_flight(sched, m, gpu, f, input_tokens + output_tokens)
    per_prompt = prefill_time_per_prompt(p, m, gpu, f, input_tokens, sched.max_num_batched_tokens)
    context = input_tokens + output_tokens // 2

    def cohort_s(b: int) -> float:
        decode = cm.step_time(m, gpu, [(1, context)] * b, **f.kw(), eff=p).time_s  # type: ignore[arg-type]
        return b * per_prompt + output_tokens * decode

    b = b_max
    if tpot_limit_s is not None and cohort_s(b) / output_tokens > tpot_limit_s:
        lo, hi = 0, b  # cohort_s(hi) / output > limit; lo is within it (or 0)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if cohort_s(mid) / output_tokens <= tpot_limit_s:
                lo = mid
            else:
                hi = mid
        b = max(1, lo)
    return b * output_tokens / cohort_s(b)


def prompt_rate(p: ef.EngineProfile, m: Model, gpu: Gpu, f: Formats, prompt_tokens: int, ubatch: int) -> float:
    """llama-bench pp`prompt_tokens` at micro-batch `ubatch`: tokens per second."""
    total, done = 0.0, 0
    while done < prompt_tokens:
        q = min(ubatch, prompt_tokens - done)
        total += cm.step_time(m, gpu, [(q, done)], **f.kw(), eff=p).time_s  # type: ignore[arg-type]
        done += q
    return prompt_tokens / total


def batch_latency(
    p: ef.EngineProfile, m: Model, gpu: Gpu, f: Formats, input_tokens: int, output_tokens: int, batch: int
) -> float:
    """Seconds for `batch` identical requests started together (vLLM's benchmark_latency): one
    prefill of every prompt (packed per max_num_batched_tokens), then output - 1 decode steps."""
    prefill = batch * prefill_time_per_prompt(p, m, gpu, f, input_tokens, p.max_num_batched_tokens)
    context = input_tokens + output_tokens // 2
    decode = cm.step_time(m, gpu, [(1, context)] * batch, **f.kw(), eff=p).time_s  # type: ignore[arg-type]
    return prefill + (output_tokens - 1) * decode


def decode_rate(p: ef.EngineProfile, m: Model, gpu: Gpu, f: Formats, context_tokens: int, batch: int = 1) -> float:
    """Tokens per second of `batch` sequences decoding at `context_tokens` of context."""
    return batch / cm.step_time(m, gpu, [(1, context_tokens)] * batch, **f.kw(), eff=p).time_s  # type: ignore[arg-type]
