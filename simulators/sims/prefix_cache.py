"""Prefix caching: the same shared-prefix traffic with no cache, vLLM's block hashing, and SGLang's radix tree.

Model: one replica serves a seeded trace whose prompts share structure (workload.build):
a few system prompts, one few-shot block, multi-turn conversations that re-send their history
and previous answers, or agent trajectories that re-send a growing history plus a tool result.
With the cache off every prompt token is prefilled. Block hashing (vLLM v1) finds the longest
chain of cached *full* blocks whose hashes match the prompt's; the "radix tree" arm (after SGLang)
matches whole blocks too and adds only a finished sequence's part-filled last block, which the next
turn of a conversation re-sends. It is not SGLang's token-exact match (page size 1): a shared
prefix that ends inside a block also holding other tokens is matched exactly as hashing matches
it, so on a shared system prompt the two arms are equal. Both keep finished
sequences' blocks until the memory is needed, then evict the least recently used unreferenced
blocks first; a small KV budget shows eviction undoing the hits. Hit rate = prompt tokens served from the cache / prompt tokens needed, over every admission
(a preempted request's recomputation counts again). TTFT and prefill work come from the cost model.

References: 1) vLLM automatic prefix caching design (docs.vllm.ai, "Automatic Prefix Caching");
vllm/v1/core/kv_cache_utils.py (hash_block_tokens: parent hash + block tokens); 2) Zheng et
al. 2024, SGLang: Efficient Execution of Structured Language Model Programs (arXiv
2312.07104), RadixAttention with LRU eviction.
"""

from dataclasses import dataclass
from typing import Any

from ..core import costmodel as cm
from ..engine import EngineSpec, SchedulerConfig, serve, summarize, workload
from ..parallel import check_serving, layout_of
from ..params import ModelGpuEngine, ParamError, arrival_rate_param, num_requests_param, param
from ..plotting import LOG, bar, chart, sweep
from ..results_cache import Keep, Streamed, for_call, kept, run_key

TITLE = "Prefix caching: none, block hashing, radix tree"
DESCRIPTION = "Shared system prompts, few-shot blocks, conversations and agent loops: how much prefill a prefix cache saves, and what eviction costs."
SHORT = {"off": "No cache", "hash": "Block hashing", "radix": "Radix tree"}  # the metrics' names of the modes
CACHES = ("hash", "radix")
METRICS = {
    **{f"ttft_{k}_s_p50": (f"{n}: median TTFT", "s") for k, n in SHORT.items()},
    **{f"ttft_{k}_s_p99": (f"{n}: p99 TTFT", "s") for k, n in SHORT.items()},
    **{f"hit_rate_{k}": (f"{SHORT[k]}: prompt tokens from cache", "") for k in CACHES},
    **{f"prefill_saved_{k}": (f"{SHORT[k]}: prefill tokens saved", "tokens") for k in CACHES},
    **{f"evictions_{k}": (f"{SHORT[k]}: blocks evicted", "blocks") for k in CACHES},
}
MODES = (("off", "No cache"), ("hash", "Block hashing (vLLM)"), ("radix", "Radix tree (SGLang)"))
SHARING = [
    ("system", "Shared system prompts"),
    ("few_shot", "One few-shot block"),
    ("multi_turn", "Multi-turn conversations"),
    ("agent", "Agent trajectories"),
]
PRESSURE = (0.1, 0.2, 0.4, 1.0)
SHARE = {"range": [0, 1]}  # the hit-rate charts' y axis

VIEWS = [("ttft", "TTFT per cache mode"), ("hits", "Hit rate and prefill saved"), ("pressure", "Hit rate vs KV memory")]
UNTIMED = ("hits", "pressure")  # the hit-rate charts time nothing; their tables hold the caches' own figures (api.run)
TABLES = dict.fromkeys(UNTIMED, ("hit_rate_", "prefill_saved_", "evictions_"))


@dataclass(frozen=True)
class Params(ModelGpuEngine):
    # Which prompt structure the traffic shares.
    sharing: str = param("multi_turn", label="Workload", choices=SHARING)
    # Requests, follow-up turns included. At most 500: the pressure view serves the trace 9
    # times, and 1,000 requests took about 3 s in CPython (more in the browser).
    num_requests: int = num_requests_param(120, min=10, max=500)
    rate_per_s: float = arrival_rate_param(4.0, max=100.0, label="New conversations per second")
    # Tokens of each shared system prompt or few-shot block.
    shared_tokens: int = param(1000, label="Shared prefix", unit="tokens", min=0, max=8000, step=10)
    num_prefixes: int = param(4, label="Distinct system prompts", min=1, max=64, step=1)
    # Turns per conversation, steps per agent trajectory.
    turns: int = param(4, label="Turns per conversation", min=1, max=16, step=1)
    # KV memory for the cache; small values force eviction.
    kv_budget_GiB: float = param(40.0, label="KV memory", unit="GiB", min=0.25, max=200.0, step=0.25, log=True)
    # Tokens per KV block. At least 4: the cache's bookkeeping is per block, and 1- or 2-token
    # blocks made the pressure view take 8 or 2 s in CPython (vLLM's default is 16).
    block_size: int = param(16, label="Block size", unit="tokens", min=4, max=256, step=1, log=True)

    def check(self) -> None:
        m, gpu = self.resolved()
        check_serving(m, gpu, layout_of(self))
        if self.kv_budget_GiB * cm.GiB < m.max_context_tokens * cm.kv_bytes_per_token(m):
            raise ParamError(
                "kv_budget_GiB",
                f"the KV memory must hold at least one {m.max_context_tokens:,}-token sequence of {m.name}",
            )


# The served trace per cache and memory size, kept through the caller's keep (api.Session's store)
# so that the pressure chart's full-memory point is the same run as the other charts'.
MEMO_ENTRIES = 16


def _served(p: Params, seed: int, mode: str, blocks: int, keep: Keep) -> tuple[dict[str, float], bool]:
    """One cache mode's run at `blocks` KV blocks, and whether it was kept already."""

    def make() -> dict[str, float]:
        m, gpu = p.resolved()
        sched = SchedulerConfig(max_model_len=m.max_context_tokens)
        spec = EngineSpec(m, gpu, sched, block_size=p.block_size, prefix=mode, num_blocks=blocks, engine=p.engine)
        sharing = {k: getattr(p, k) for k in ("sharing", "shared_tokens", "num_prefixes", "turns")}
        trace = workload.shared_prefix_trace(seed, m.max_context_tokens, p.num_requests, p.rate_per_s, **sharing)
        served = serve(trace, spec)
        s, rep = summarize(served.records), served.replicas[0]
        # Over every admission, recomputation after a preemption included.
        saved, computed = rep.hit_tokens, rep.prefill_tokens
        return {
            "hit_rate": saved / (saved + computed) if saved + computed else 0.0,
            "saved": saved,
            **{f"ttft_{q}": s[f"ttft_s_{q}"] for q in ("p50", "p90", "p99")},
            "evictions": rep.kv.num_evictions,
            "prefill_tokens": computed,
            "dropped": len(served.dropped),
        }

    return kept(keep, run_key(p, seed, mode, blocks), make)


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> Streamed:
    """Every cache mode's run at the page's KV memory, the pressure chart's with less memory first;
    the chart asked for is yielded after each run made now (the TTFT chart's cheapest first)."""
    m, _ = p.resolved()
    keep = for_call(keep, MEMO_ENTRIES)
    capacity = int(p.kv_budget_GiB * cm.GiB // cm.kv_bytes_per_token(m))  # tokens the KV memory holds
    blocks = capacity // p.block_size
    head = p.stated("sharing")
    pressure: list[dict[str, float]] = []
    if view == "pressure":  # smallest memory first; the full-memory point is the other charts' runs
        for f in PRESSURE:
            low = max(int(capacity * f) // p.block_size, -(-m.max_context_tokens // p.block_size))
            point = {"GiB": low * p.block_size * cm.kv_bytes_per_token(m) / cm.GiB}
            pressure.append(point)
            for mode in CACHES:
                got, was_kept = _served(p, seed, mode, low, keep)
                point[mode] = got["hit_rate"]
                if not was_kept:  # one cache's point at a time
                    yield {"pressure": [dict(x) for x in pressure]}
    results: dict[str, dict[str, float]] = {}
    for mode in ("hash", "radix", "off") if view == "hits" else ("off", "hash", "radix"):
        results[mode], was_kept = _served(p, seed, mode, blocks, keep)
        if not was_kept and (view == "ttft" or view == "hits" and mode != "off"):
            yield {**head, "modes": dict(results)}
    metrics = {f"ttft_{mode}_s_{q}": results[mode][f"ttft_{q}"] for mode, _ in MODES for q in ("p50", "p99")}
    for name, key in (("hit_rate", "hit_rate"), ("prefill_saved", "saved"), ("evictions", "evictions")):
        metrics |= {f"{name}_{mode}": results[mode][key] for mode in CACHES}
    return {**head, "kv_budget_GiB": p.kv_budget_GiB, "modes": results, "pressure": pressure, "metrics": metrics}


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    names = dict(MODES)
    if view == "pressure":
        data = []
        for i, mode in enumerate(CACHES):
            points = [x for x in r["pressure"] if mode in x]  # all, but while they stream
            data.append(sweep(points, "GiB", mode, names[mode], i))
        title = "Cache hit rate as KV memory shrinks (LRU eviction)"
        at = sorted({x["GiB"] for x in r["pressure"]})  # ticks at the sizes run (review: 5, 10, 20 missed 4 and 40)
        ticks = {"tickvals": at, "ticktext": [f"{x:,.3g}" for x in at]}
        return chart(data, title, "KV memory (GiB)", "Prompt tokens from cache", xaxis=LOG | ticks, yaxis=SHARE)
    if view == "hits":
        modes = [x for x in CACHES if x in r["modes"]]  # both, but while they stream
        hit_rates = [r["modes"][x]["hit_rate"] for x in modes]
        data = [bar([names[x] for x in modes], hit_rates, "Hit rate (share of prompt tokens)", 0)]
        title = f"Prefix cache hits: {dict(SHARING)[r['sharing']]}"  # the workload as its menu names it
        return chart(data, title, "Cache", "Share of prompt tokens", yaxis=SHARE)
    labels = ["p50", "p90", "p99"]
    data = [
        bar(labels, [r["modes"][mode][f"ttft_{q}"] for q in labels], names[mode], i)
        for i, (mode, _) in enumerate(MODES)
        if mode in r["modes"]  # every mode, but while they stream
    ]
    return chart(data, f"Time to first token, {r['model']} on {r['gpu']}", "Percentile", "TTFT (s)", barmode="group")


def summary(r: dict[str, Any], view: str) -> str:
    m, modes = r["metrics"], r["modes"]
    workload = f"On the workload '{dict(SHARING)[r['sharing']]}'"
    hits = (
        f"block hashing serves {m['hit_rate_hash']:.0%} of prompt tokens from the cache "
        f"and the radix tree {m['hit_rate_radix']:.0%}"
    )
    if view == "pressure":
        # Memory sizes held at the one-sequence floor are the same run: said once.
        drawn = {f"{x['GiB']:,.2f}": x for x in r["pressure"]}
        points = "; ".join(f"{gib} GiB: {x['hash']:.0%} and {x['radix']:.0%}" for gib, x in drawn.items())
        return (
            f"{workload}, the share of prompt tokens served from the cache by block hashing and by the radix tree, by "
            f"KV memory: {points}. With less memory, LRU eviction drops cached blocks before they are "
            f"reused; at the full {r['kv_budget_GiB']:g} GiB, {modes['hash']['evictions']:,} blocks were evicted under "
            f"block hashing and {modes['radix']['evictions']:,} under the radix tree."
        )
    if view == "hits":
        return (
            f"{workload}, {hits}, saving {m['prefill_saved_hash']:,.0f} and {m['prefill_saved_radix']:,.0f} prefill "
            f"tokens ({modes['hash']['prefill_tokens']:,.0f} and {modes['radix']['prefill_tokens']:,.0f} still "
            "prefilled). Block hashing reuses only full blocks whose hashes match; the radix tree here matches whole "
            "blocks too and adds only a finished sequence's part-filled last block (SGLang with a page size of 1 "
            f"would match to the token). With {r['kv_budget_GiB']:g} GiB "
            f"of KV memory, {modes['hash']['evictions']:,} cached blocks were evicted under block hashing and "
            f"{modes['radix']['evictions']:,} under the radix tree."
        )
    off, hashed, radix = (modes[k] for k in ("off", "hash", "radix"))
    return (
        f"{workload}, median TTFT falls from {m['ttft_off_s_p50'] * 1e3:,.0f} ms without a cache to "
        f"{m['ttft_hash_s_p50'] * 1e3:,.0f} ms with block hashing and {m['ttft_radix_s_p50'] * 1e3:,.0f} ms with the "
        f"radix tree; p90 {off['ttft_p90'] * 1e3:,.0f}, {hashed['ttft_p90'] * 1e3:,.0f} and "
        f"{radix['ttft_p90'] * 1e3:,.0f} ms; p99 {off['ttft_p99'] * 1e3:,.0f}, {hashed['ttft_p99'] * 1e3:,.0f} and "
        f"{radix['ttft_p99'] * 1e3:,.0f} ms. {hits[0].upper() + hits[1:]}, which need no prefill."
    )
