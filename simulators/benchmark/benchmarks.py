"""Published benchmarks, predicted under their own conditions with an engine profile.

- `prompt_rate`: llama-bench ppN with micro-batch u: N prompt tokens in passes of u tokens over a
  growing context.
- `decode_rate`: batch-1 (or batch-B) decode tokens per second at a fixed context.
- `in_flight`: the batch of a "fit" row, the KV cache's capacity in whole sequences, capped by the
  engine's max_num_seqs.

Serving-level rows (offline runs, vLLM's latency test, server scenarios) run on the event engine
instead (served_benchmarks.py). Every time comes from costmodel.step_time with the profile's factors.
"""

from dataclasses import dataclass
from typing import Any

from ..core import costmodel as cm
from ..core import efficiency as ef
from ..core.catalog import Gpu, Model


@dataclass(frozen=True)
class Formats:
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    activation_dtype: str | None = None
    tp: int = 1

    def kw(self) -> dict[str, Any]:
        """The formats as keywords of costmodel.step_time and EngineSpec (the fields, in order)."""
        return dict(vars(self))


def formats(e: dict[str, Any]) -> Formats:
    """A measurement's formats and tensor parallel size (data/measurements.toml's keys)."""
    dtypes = (e.get("weight_dtype", "bf16"), e.get("kv_dtype", "bf16"), e.get("activation_dtype"))
    return Formats(*dtypes, tp=int(e.get("tp", 1)))


def kv_sequences(m: Model, gpu: Gpu, f: Formats, seq_tokens: int) -> int:
    """Whole sequences of `seq_tokens` tokens the KV cache of one replica holds."""
    fit = cm.memory_fit(m, gpu, num_gpus=f.tp, weight_dtype=f.weight_dtype, kv_dtype=f.kv_dtype)
    return max(1, fit.kv_token_capacity // seq_tokens)


def in_flight(p: ef.EngineProfile, m: Model, gpu: Gpu, f: Formats, seq_tokens: int) -> int:
    """Sequences an offline run keeps in flight: KV capacity, capped by the engine."""
    return max(1, min(p.max_num_seqs, kv_sequences(m, gpu, f, seq_tokens)))


def prompt_rate(p: ef.EngineProfile, m: Model, gpu: Gpu, f: Formats, prompt_tokens: int, ubatch: int) -> float:
    """llama-bench pp`prompt_tokens` at micro-batch `ubatch`: tokens per second."""
    total, done = 0.0, 0
    while done < prompt_tokens:
        q = min(ubatch, prompt_tokens - done)
        total += cm.step_time(m, gpu, [(q, done)], **f.kw(), eff=p).time_s
        done += q
    return prompt_tokens / total


def decode_rate(p: ef.EngineProfile, m: Model, gpu: Gpu, f: Formats, context_tokens: int, batch: int = 1) -> float:
    """Tokens per second of `batch` sequences decoding at `context_tokens` of context."""
    return batch / cm.step_time(m, gpu, [(1, context_tokens)] * batch, **f.kw(), eff=p).time_s
