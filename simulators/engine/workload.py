"""Workloads: when requests arrive, how long they are, and which prompt prefixes they share.

A request's prompt is a tuple of *segments* (segment id, tokens): a shared system prompt, a few-shot
block, the history of a conversation, a fresh user turn. Two prompts share a KV prefix exactly as
far as their segment lists agree, so the prefix cache can hash blocks of segments instead of
tokens (no token ids are ever drawn). Follow-up requests (the next turn of a conversation, the next
step of an agent) name the request they follow (`after`) and are released `arrival_s` seconds
after it completes: closed loop inside a conversation, open loop across conversations.

Length defaults are the lognormal fits to the Azure LLM inference trace 2023, conversation part
(reference section 8): prompt mu 6.633 sigma 0.985, output mu 5.019 sigma 0.859. Caveat: the
lognormal is a rough fit; its prompt median e^6.633 = 760 tokens is below the trace's empirical
1,020. The trace's outputs are capped at 1,000 tokens, so `output_cap` defaults to 1,000; any
length cut to a cap is counted in `Workload.num_truncated`, never silently.

References: 1) Azure LLM inference trace 2023 (Azure/AzurePublicDataset; Splitwise, ISCA 2024);
2) vLLM paper section 6.1 (Poisson arrivals); 3) SGLang paper (shared-prefix program structure).
"""

import itertools
import math
import random
from dataclasses import dataclass
from typing import Any, NamedTuple

# Azure LLM inference trace 2023, conversation: lognormal fits of ln(tokens) (reference section 8).
AZURE_CONV_PROMPT = (6.633, 0.985)
AZURE_CONV_OUTPUT = (5.019, 0.859)
AZURE_CONV_OUTPUT_CAP = 1000


def lognormal_from_moments(mean: float, std: float) -> tuple[float, float]:
    """(mu, sigma) of the lognormal with this mean and standard deviation (method of moments)."""
    s2 = math.log(1 + (std / mean) ** 2)
    return math.log(mean) - s2 / 2, math.sqrt(s2)


LOGNORMAL = {  # (mu, sigma) of ln(prompt tokens) and ln(output tokens) per length distribution
    "azure": (AZURE_CONV_PROMPT, AZURE_CONV_OUTPUT),
    # ShareGPT (WildChat paper, Table 1, Llama-2 tokenizer; reference section 8): user turns
    # 94.46 +- 626.39 tokens, assistant turns 348.45 +- 269.93, fitted by moments.
    "sharegpt": (lognormal_from_moments(94.46, 626.39), lognormal_from_moments(348.45, 269.93)),
    # Reasoning traffic (course seeds 000): about 2,000 tokens in and 20,000 out.
    "reasoning": ((math.log(2000), 0.25), (math.log(20000), 0.35)),
}


class Request(NamedTuple):  # a named tuple: a run builds thousands, and tuples build fastest
    id: int
    # Seconds: the arrival time, or for a follow-up the delay after the request it follows ends.
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    # The prompt as (segment id, tokens) pairs; the tokens add up to prompt_tokens.
    segments: tuple[tuple[int, int], ...] = ()
    # Id of the request this one follows (next turn, next agent step), or None.
    after: int | None = None
    # Segment id of this request's own output, when a follow-up re-sends it as history.
    output_segment: int = -1


@dataclass
class Workload:
    requests: list[Request]
    num_truncated: int = 0  # lengths cut to a cap


def arrival_times(rng: random.Random, n: int, process: str, rate: float) -> list[float]:
    """n arrival times at `rate` per second: "poisson" (exponential gaps, CV 1) or "constant" (1/rate)."""
    if process not in ("poisson", "constant"):
        raise ValueError(f"unknown arrival process '{process}'")
    if process == "constant":
        return [i / rate for i in range(n)]
    gaps = [rng.expovariate(rate) for _ in range(n)]  # n draws, the last one's unused: the RNG goes on
    return list(itertools.accumulate(gaps, initial=0.0))[:-1]


class Lengths:
    """Prompt and output length sampler: fixed, uniform, azure, sharegpt or reasoning."""

    def __init__(
        self,
        kind: str,
        prompt: float,
        output: float,
        *,
        spread: float = 0.5,
        prompt_cap: int = 1 << 20,
        output_cap: int = 1 << 20,
    ):
        self.kind, self.prompt, self.output, self.spread = kind, prompt, output, spread
        self.prompt_cap, self.output_cap = prompt_cap, output_cap
        self.num_truncated = 0

    def key(self) -> tuple[str, float, float, float, int, int]:
        """What decides the draws (two samplers with equal keys draw the same lengths)."""
        return (self.kind, self.prompt, self.output, self.spread, self.prompt_cap, self.output_cap)

    def _cap(self, x: float, cap: int) -> int:
        v = max(1, round(x))
        self.num_truncated += v > cap
        return min(v, cap)

    def draw(self, rng: random.Random) -> tuple[int, int]:
        k = self.kind
        if k == "fixed":
            p, o = self.prompt, self.output
        elif k == "uniform":  # uniform within +-spread of the given means
            s = self.spread
            p = rng.uniform(self.prompt * (1 - s), self.prompt * (1 + s))
            o = rng.uniform(self.output * (1 - s), self.output * (1 + s))
        elif k in LOGNORMAL:
            prompt, output = LOGNORMAL[k]
            p, o = rng.lognormvariate(*prompt), rng.lognormvariate(*output)
        else:
            raise ValueError(f"unknown length distribution '{k}'")
        return self._cap(p, self.prompt_cap), self._cap(o, self.output_cap)


def azure_lengths(prompt_cap: int = 1 << 20, output_cap: int = AZURE_CONV_OUTPUT_CAP) -> Lengths:
    return Lengths("azure", 0, 0, prompt_cap=prompt_cap, output_cap=output_cap)


LENGTH_CHOICES = [("azure", "Azure 2023 conversation (lognormal)"), ("fixed", "Fixed at the Azure means")]


def lengths_for(kind: str) -> Lengths:
    """The load tests' two length choices: "azure" (the trace's lognormal fits) or "fixed" (every
    request at those fits' means, e^(mu + sigma^2 / 2))."""
    if kind == "fixed":
        means = [round(math.exp(mu + s**2 / 2)) for mu, s in (AZURE_CONV_PROMPT, AZURE_CONV_OUTPUT)]
        return Lengths("fixed", *means)
    return azure_lengths()


def poisson_trace(seed: int, n: int, rate_per_s: float, lengths: Lengths, **sharing: Any) -> list[Request]:
    """n requests of `lengths` arriving as a Poisson process, one seeded RNG drawing the gaps first,
    sharing prefixes as `sharing` asks (build's options)."""
    rng = random.Random(seed)
    return build(rng, n, lengths, arrival_times(rng, n, "poisson", rate_per_s), **sharing).requests


def shared_prefix_trace(seed: int, max_context_tokens: int, n: int, rate_per_s: float, **sharing: Any) -> list[Request]:
    """poisson_trace() of Azure lengths, prompts capped at a quarter of the context."""
    return poisson_trace(seed, n, rate_per_s, azure_lengths(prompt_cap=max_context_tokens // 4), **sharing)


def build(
    rng: random.Random,
    n: int,
    lengths: Lengths,
    times: list[float],
    *,
    sharing: str = "none",
    shared_tokens: int = 1000,
    num_prefixes: int = 4,
    turns: int = 4,
    think_s: float = 5.0,
) -> Workload:
    """n requests with the given arrival times (one per conversation or trajectory start).

    sharing: "none" (every prompt unique); "system" (one of `num_prefixes` system prompts of
    `shared_tokens`, then a unique question); "few_shot" (one shared block of examples for all);
    "multi_turn" (conversations of `turns` turns, each re-sending the history and the previous
    answer, `think_s` apart); "agent" (trajectories of `turns` steps re-sending the growing
    history plus a tool result). n counts requests, follow-ups included.
    """
    seg = iter(range(1, 1 << 62))
    reqs: list[Request] = []  # a request's id is its index
    prefixes = [next(seg) for _ in range(max(1, num_prefixes))]
    fewshot = next(seg)
    t_i = 0
    while len(reqs) < n:
        t = times[min(t_i, len(times) - 1)] if times else 0.0
        t_i += 1
        p, o = lengths.draw(rng)
        if sharing in ("none", "system", "few_shot"):
            segs: tuple[tuple[int, int], ...] = ((next(seg), p),)
            if sharing == "system":
                segs = ((prefixes[rng.randrange(len(prefixes))], shared_tokens),) + segs
            elif sharing == "few_shot":
                segs = ((fewshot, shared_tokens),) + segs
            reqs.append(Request(len(reqs), t, sum(s for _, s in segs), o, segs))
            continue
        # multi_turn or agent: a chain of follow-ups, each re-sending everything before it.
        history: tuple[tuple[int, int], ...] = ((prefixes[rng.randrange(len(prefixes))], shared_tokens),)
        prev: Request | None = None
        for k in range(min(turns, n - len(reqs))):  # each turn is one request
            if k:
                p, o = lengths.draw(rng)
                if sharing == "agent":  # a tool result is shorter than a user turn
                    p = max(1, p // 4)
            history, out_seg = history + ((next(seg), p),), next(seg)
            t_req, after = (t, None) if prev is None else (think_s, prev.id)
            prev = Request(len(reqs), t_req, sum(s for _, s in history), o, history, after, out_seg)
            reqs.append(prev)
            history = history + ((out_seg, o),)
    return Workload(reqs, lengths.num_truncated)
