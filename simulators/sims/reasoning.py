"""Reasoning traffic: about 2,000 tokens in and 20,000 out, against conventional chat.

Model: one replica (simulators/engine) serves two seeded open-loop traces with the same number
of requests: chat (Azure 2023 conversation lengths) and reasoning (lognormal around 2,000
prompt and 20,000 output tokens, course seed 000). For each: the share of a request's time
spent decoding, the slot turnover (requests finished per batch slot per minute), the KV cache
a sequence ends with (costmodel.kv_bytes_per_token x its final context) and how many such
sequences the KV memory holds. Speculative decoding is modelled by its expectation (Leviathan
et al. 2023): with k draft tokens and per-token acceptance a, a step emits (1 - a^(k+1)) / (1 - a)
tokens on average, costs one verify pass over k + 1 tokens per sequence plus k draft steps at
`draft_cost_ratio` of a target decode step, and tokens arrive at that average pace (no bursts).
The speculation view sweeps k at the chosen acceptance rate.

References: 1) course seed 000, "reasoning workloads"; 2) Leviathan, Kalman, Matias 2023,
Fast Inference from Transformers via Speculative Decoding (arXiv 2211.17192), eq. 1;
3) Azure LLM inference trace 2023 (reference section 8) for chat lengths.
"""

from dataclasses import dataclass
from functools import partial
from typing import Any

from ..core import costmodel as cm
from ..core.layout import pooled_kv_tokens
from ..engine import EngineSpec, SchedulerConfig, summarize, workload
from ..engine.cluster import serve_shown
from ..engine.metrics import RequestRecord, downsample
from ..engine.replica import Replica
from ..parallel import check_serving, layout_of, pipeline_parallel_param, tensor_parallel_param
from ..params import ModelGpuEngine, ParamError, arrival_rate_param, batch_slots_param, num_requests_param, param
from ..plotting import bar, chart, line, so_far, sweep
from ..results_cache import Keep, KeptSteps, Show, Streamed, for_call, kept_steps, run_key

TITLE = "Reasoning workloads: 2k in, 20k out"
DESCRIPTION = "Where the time goes when answers are 100 times longer, how long slots stay held, how much KV each sequence needs, and what speculation buys."
WORKLOADS = (("reasoning", "Reasoning"), ("chat", "Chat"))  # in METRICS' order
METRICS = {
    "decode_share_reasoning": ("Reasoning: share of a request's time decoding", ""),
    "e2e_reasoning_s_mean": ("Reasoning: mean end-to-end", "s"),
    "prefill_share_reasoning": ("Reasoning: share of time to first token", ""),
    "decode_share_chat": ("Chat: share of a request's time decoding", ""),
    "e2e_chat_s_mean": ("Chat: mean end-to-end", "s"),
    "speculation_speedup": ("Speculation: reasoning e2e speed-up", "x"),
    "tokens_per_step": ("Speculation: tokens per step", "tokens"),
    "num_preemptions_reasoning": ("Preemptions of reasoning requests (recomputed)", "preemptions"),
    **{f"turnover_{v}_per_slot_min": (f"{n}: requests per slot per minute", "1/min") for v, n in WORKLOADS},
    **{f"kv_GiB_per_sequence_{v}": (f"{n}: KV at the end of a sequence", "GiB") for v, n in WORKLOADS},
    **{f"max_sequences_{v}": (f"{n} sequences the KV memory holds", "sequences") for v, n in WORKLOADS},
}
DRAFTS = (0, 1, 2, 3, 4, 6, 8)
# Sequences may grow to this length whatever the model's trained context (see the notes).
MAX_LEN = 65536

VIEWS = [
    ("time", "Where the time goes"),
    ("speculation", "Speculation vs draft length"),
    ("batch", "Running sequences over time"),
]


@dataclass(frozen=True)
class Params(ModelGpuEngine):
    # Requests in each trace (chat and reasoning get the same count and arrival times).
    num_requests: int = num_requests_param(40, min=5, max=1000, step=5)
    rate_per_s: float = arrival_rate_param(0.5, max=50.0, min=0.01, step=0.01)
    max_num_seqs: int = batch_slots_param(64)
    # Speculative decoding: draft tokens per step (0 = off).
    num_speculative_tokens: int = param(4, label="Draft tokens", min=0, max=16, step=1)
    # Chance each draft token is accepted (independent per token).
    acceptance_rate: float = param(0.8, label="Acceptance rate", min=0.0, max=0.99, step=0.01)
    # Cost of one draft step relative to one decode step of the target model.
    draft_cost_ratio: float = param(0.05, label="Draft cost / target step", min=0.0, max=1.0, step=0.01)
    tensor_parallel_size: int = tensor_parallel_param()
    pipeline_parallel_size: int = pipeline_parallel_param()

    def check(self) -> None:
        check_serving(*self.resolved(), layout_of(self))


def _measured(recs: list[RequestRecord], _dropped: list[workload.Request], replicas: list[Replica]) -> dict[str, Any]:
    """A served trace's figures, from the requests it finished (all of them, or so far)."""
    s = summarize(recs)
    makespan = max(r.arrival_s + r.e2e_s for r in recs) - min(r.arrival_s for r in recs) if recs else 1.0
    busy_slots = sum(r.e2e_s - r.queue_s for r in recs) / makespan  # mean slots held (Little's law)
    return {
        **{f"{k}_mean": s[f"{k}_s_mean"] for k in ("e2e", "ttft", "queue")},
        "decode_share": sum((r.e2e_s - r.ttft_s) / r.e2e_s for r in recs) / max(1, len(recs)),
        "prefill_share": sum((r.ttft_s - r.queue_s) / r.e2e_s for r in recs) / max(1, len(recs)),
        "turnover": 60 * len(recs) / makespan / max(busy_slots, 1e-9),
        "final_ctx": sum(r.prompt_tokens + r.output_tokens for r in recs) / max(1, len(recs)),
        "preemptions": s["num_preemptions"],
        "series": downsample([(t, running) for t, _, _, _, _, running in replicas[0].series]),
    }


# The served traces of the latest scenario (chat; reasoning at each draft length, 0 = none), kept
# through the caller's keep (api.Session's store): a chart switch serves nothing again.
MEMO_ENTRIES = len(DRAFTS) + 3


def _served(
    p: Params, seed: int, kind: str, k: int, keep: Keep, show: Show[dict[str, Any]] | None = None
) -> KeptSteps[dict[str, Any]]:
    """The `kind` trace served by one replica with k draft tokens (0: no speculation), measured; made
    now with `show`, shown while it goes."""
    lengths = workload.Lengths(kind, 0, 0, prompt_cap=MAX_LEN // 4, output_cap=MAX_LEN // 2)
    rates: dict[str, Any] = {"acceptance_rate": p.acceptance_rate, "draft_cost_ratio": p.draft_cost_ratio}
    sched = SchedulerConfig(max_num_seqs=p.max_num_seqs, max_model_len=MAX_LEN, num_speculative_tokens=k, **rates)
    spec = EngineSpec(*p.resolved(), sched, engine=p.engine, **layout_of(p).cost_kw())
    trace = partial(workload.poisson_trace, seed, p.num_requests, p.rate_per_s, lengths)  # made only if served
    return (yield from kept_steps(keep, run_key(p, seed, kind, k), lambda: serve_shown(trace(), spec, _measured, show)))


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> Streamed:
    """Chat, reasoning, and reasoning with speculation (the speculation chart adds reasoning at each
    k in DRAFTS); the chart asked for is yielded after each run made now."""
    m, gpu = p.resolved()
    keep = for_call(keep, MEMO_ENTRIES)
    sweep: list[dict[str, float]] = []
    if view == "speculation":
        for k in DRAFTS:
            got, was_kept = yield from _served(p, seed, "reasoning", k, keep)
            sweep.append({"k": k, "e2e": got["e2e_mean"]})
            if not was_kept:
                yield {"sweep": list(sweep), "acceptance_rate": p.acceptance_rate}
    part: dict[str, Any] = p.stated("acceptance_rate")
    k = p.num_speculative_tokens
    # Without speculation the third run is the second, kept: it is neither served again nor yielded.
    for name, kind, draft in (("chat", "azure", 0), ("reasoning", "reasoning", 0), ("speculative", "reasoning", k)):
        show = so_far(part, name, p.num_requests) if name == "chat" and view in ("time", "batch") else None
        part[name], was_kept = yield from _served(p, seed, kind, draft, keep, show)
        if not was_kept and (view == "time" or view == "batch" and name != "speculative"):
            yield dict(part)
    plain, spec = part["reasoning"], part["speculative"]
    per_token = cm.kv_bytes_per_token(m)
    capacity = pooled_kv_tokens(m, gpu, layout_of(p), weight_dtype="bf16", kv_dtype="bf16")
    for v, label in WORKLOADS:
        if not part[v]["final_ctx"]:  # no request finished (the engine drops one that can never fit)
            raise ParamError(
                "gpu",
                f"{m.name} on {gpu.name} serves none of the {label.lower()} requests: the KV cache holds "
                f"{capacity:,} tokens after the weights, and each of them needs more; pick a GPU with more "
                "memory or more tensor-parallel GPUs",
            )
    sched = SchedulerConfig(num_speculative_tokens=k, acceptance_rate=p.acceptance_rate)
    trained = f"{m.name} was trained for {m.max_context_tokens:,} tokens of context; 20,000-token answers need a long-context variant of the same shape (Llama-3.1-8B has 131,072), which costs the same here."
    return {
        "notes": [trained] if m.max_context_tokens < MAX_LEN else [],
        **part,
        "sweep": sweep,
        "k": k,
        "metrics": {
            "prefill_share_reasoning": plain["prefill_share"],
            **{f"decode_share_{v}": part[v]["decode_share"] for v, _ in WORKLOADS},
            **{f"e2e_{v}_s_mean": part[v]["e2e_mean"] for v, _ in WORKLOADS},
            **{f"turnover_{v}_per_slot_min": part[v]["turnover"] for v, _ in WORKLOADS},
            **{f"kv_GiB_per_sequence_{v}": part[v]["final_ctx"] * per_token / cm.GiB for v, _ in WORKLOADS},
            **{f"max_sequences_{v}": capacity // max(1, round(part[v]["final_ctx"])) for v, _ in WORKLOADS},
            "speculation_speedup": plain["e2e_mean"] / spec["e2e_mean"],
            "tokens_per_step": sched.tokens_per_step(),
            "num_preemptions_reasoning": plain["preemptions"],
        },
    }


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    if view == "speculation":
        data = [sweep(r["sweep"], "k", "e2e", f"Reasoning request, acceptance {r['acceptance_rate']:.0%}")]
        x_title = "Draft tokens per step (0 = no speculation)"
        return chart(data, "Mean end-to-end time vs draft length", x_title, "Seconds")
    if view == "batch":
        data = [
            line([x[0] for x in r[k]["series"]], [x[1] for x in r[k]["series"]], name, i, shape="hv")
            for i, (k, name) in enumerate((("chat", "Chat"), ("reasoning", "Reasoning")))
            if k in r  # both, but while they stream
        ]
        return chart(data, "Sequences running over time (same arrivals)", "Time (s)", "Sequences")
    traffic = (("Chat", "chat"), ("Reasoning", "reasoning"), ("Reasoning + speculation", "speculative"))
    shown = [(n, k) for n, k in traffic if k in r]  # all three, but while they stream
    names, parts = [n for n, _ in shown], [r[k] for _, k in shown]
    data = [
        bar(names, [x["queue_mean"] for x in parts], "Queueing", 3),
        bar(names, [x["ttft_mean"] - x["queue_mean"] for x in parts], "Prefill (to first token)", 1),
        bar(names, [x["e2e_mean"] - x["ttft_mean"] for x in parts], "Decode", 0),
    ]
    title = f"Where a request's time goes, {r['model']} on {r['gpu']}"
    return chart(data, title, "Traffic", "Mean seconds per request", barmode="stack")


def summary(r: dict[str, Any], view: str) -> str:
    m = r["metrics"]
    if view == "speculation":
        sweep = r["sweep"]
        best = min(sweep, key=lambda x: x["e2e"])
        plain = next(x["e2e"] for x in sweep if x["k"] == 0)
        by_k = "; ".join(f"{x['k']}: {x['e2e']:,.0f} s" for x in sweep)
        text = (
            f"Mean end-to-end time of a reasoning request at {r['acceptance_rate']:.0%} acceptance, by draft tokens "
            f"per step (0: no speculation): {by_k}. The shortest is at {best['k']} draft tokens, "
            f"{plain / best['e2e']:.2f}x faster than without speculation"
        )
        if r["k"]:
            chosen = f"{r['k']} ({m['tokens_per_step']:.2f} tokens per step)"
            text += f"; the draft tokens set, {chosen}, give {m['speculation_speedup']:.2f}x"
        return text + "." + "".join(" " + n for n in r["notes"])
    if view == "batch":
        runs = {k: r[k]["series"] for k in ("chat", "reasoning")}
        peak = {k: max((x[1] for x in s), default=0) for k, s in runs.items()}
        end = {k: s[-1][0] if s else 0.0 for k, s in runs.items()}
        preempted = int(m["num_preemptions_reasoning"])
        again = f"; reasoning requests were preempted {preempted:,} time{'s' if preempted != 1 else ''} and recomputed."
        return (
            f"Sequences running over time, same arrivals: chat peaks at {peak['chat']:,} running at once and is done "
            f"at {end['chat']:,.0f} s; reasoning peaks at {peak['reasoning']:,} and is done at "
            f"{end['reasoning']:,.0f} s. A slot turns over {m['turnover_reasoning_per_slot_min']:.2f} times a minute "
            f"instead of {m['turnover_chat_per_slot_min']:.1f}. Each reasoning sequence ends with "
            f"{m['kv_GiB_per_sequence_reasoning']:.2f} GiB of KV (chat {m['kv_GiB_per_sequence_chat']:.2f} GiB), so "
            f"the KV memory holds {m['max_sequences_reasoning']:,.0f} of them against {m['max_sequences_chat']:,.0f}"
            + (again if preempted else ".")
        ) + "".join(" " + n for n in r["notes"])
    names = (("chat", "chat"), ("reasoning", "reasoning"), ("speculative", "reasoning with speculation"))
    split = "; ".join(
        f"{name} {r[k]['queue_mean']:,.1f} / {r[k]['ttft_mean'] - r[k]['queue_mean']:,.2f} / "
        f"{r[k]['e2e_mean'] - r[k]['ttft_mean']:,.1f} s"
        for k, name in names
    )
    return (
        f"A reasoning request spends {m['decode_share_reasoning']:.1%} of its {m['e2e_reasoning_s_mean']:,.0f} s decoding "
        f"(prefill is {m['prefill_share_reasoning']:.2%}); a chat request {m['decode_share_chat']:.0%} of {m['e2e_chat_s_mean']:,.1f} s. "
        f"Mean queueing / prefill / decode per request: {split}"
        + (" (decode counts a preempted request's wait and recompute). " if m["num_preemptions_reasoning"] else ". ")
        + f"Speculating {r['k']} tokens at {r['acceptance_rate']:.0%} acceptance ({m['tokens_per_step']:.2f} tokens per step) "
        f"makes reasoning requests {m['speculation_speedup']:.2f}x faster end to end."
    ) + "".join(" " + n for n in r["notes"])
