"""Paged KV cache vs contiguous max-length reservation, on the same trace.

Model: one replica with a fixed KV budget serves the same seeded trace twice. Contiguous: each
admitted request reserves `max_model_len` tokens of KV at once (what serving systems before vLLM
did, as they could not know the output length), so most of the reservation sits empty and few
requests fit; it is counted in tokens (1-token blocks), so the block size never changes it.
Paged: memory is cut into blocks of `block_size` tokens taken one at a time as a sequence grows,
so only each sequence's last block is part-empty (internal fragmentation below one block per
sequence). Utilisation = tokens held in KV / tokens of KV reserved, time-averaged
over the run (the share of reserved memory that holds real tokens). External fragmentation of
the contiguous allocator (holes between slabs) is not modelled, which flatters it.

The block-size view re-runs the paged engine for several block sizes: larger blocks waste more
of each sequence's last block; smaller ones mean longer block tables (the kernel-efficiency
side of that trade-off is not in the cost model).

References: 1) Kwon et al. 2023, Efficient Memory Management for Large Language Model Serving
with PagedAttention (SOSP; arXiv 2309.06180), section 3 and Figure 2 (20.4-38.2% of reserved
KV memory used by token states in earlier systems vs about 96% with paging); 2) ShareGPT
lengths from the WildChat paper, Table 1 (reference section 8), fitted as lognormals by moments.
"""

from dataclasses import dataclass
from functools import partial
from typing import Any

from ..core import costmodel as cm
from ..engine import EngineSpec, SchedulerConfig, serve, workload
from ..engine.cluster import serve_shown
from ..engine.metrics import RequestRecord, describe, downsample, time_average
from ..engine.replica import Replica
from ..parallel import check_serving, layout_of
from ..params import ModelGpuEngine, ParamError, arrival_rate_param, num_requests_param, param
from ..plotting import LOG, bar, chart, line, so_far, sweep
from ..results_cache import Keep, Streamed, for_call, kept_steps, run_key

TITLE = "Paged KV cache vs contiguous reservation"
DESCRIPTION = (
    "How much reserved KV memory holds real tokens, and how many requests fit, with max-length slabs or small blocks."
)
LAYOUTS = ("contiguous", "paged")  # served and drawn in this order (contiguous is the cheaper run)
METRICS = {
    **{f"kv_utilization_{v}": (f"{v.capitalize()}: reserved KV holding tokens", "") for v in LAYOUTS},
    "internal_fragmentation_paged": ("Paged: reserved KV left empty", ""),
    **{f"max_concurrent_{v}": (f"{v.capitalize()}: most requests at once", "requests") for v in LAYOUTS},
    **{f"throughput_{v}_per_s": (f"{v.capitalize()}: requests per second", "req/s") for v in LAYOUTS},
    "kv_capacity_tokens": ("KV budget", "tokens"),
}
BLOCK_SIZES = (1, 4, 8, 16, 32, 64, 128, 256)
# vLLM's FlashAttention backend, its default on NVIDIA GPUs, takes blocks of a multiple of 16 tokens
# (vllm/v1/attention/backends/flash_attn.py); other sizes (the sweep's 1, 4 and 8 among them) run
# here as a what-if of the memory arithmetic, which holds for any size, and the summary says so.
FLASH_ATTN_BLOCK_MULTIPLE = 16
LENGTHS = [("sharegpt", "ShareGPT-like (lognormal)"), ("azure", "Azure 2023 conversation (lognormal)")]

VIEWS = [
    ("memory", "Reserved vs used KV over time"),
    ("blocks", "Block tables"),
    ("block_size", "Block-size trade-off"),
]
UNTIMED = ("blocks", "block_size")  # the block charts show no time, nor do their tables (api.run; tool review)
TABLES = dict.fromkeys(UNTIMED, ("kv_utilization_", "internal_fragmentation_", "max_concurrent_", "kv_capacity_"))


@dataclass(frozen=True)
class Params(ModelGpuEngine):
    # KV memory given to the cache (the rest of the GPU holds weights and activations).
    kv_budget_GiB: float = param(4.0, label="KV memory", unit="GiB", min=0.25, max=200.0, step=0.25, log=True)
    # Length every contiguous reservation is made for (vLLM --max-model-len).
    max_model_len: int = param(2048, label="Max model length", unit="tokens", min=256, max=131072, step=256, log=True)
    # Tokens per KV block.
    block_size: int = param(16, label="Block size", unit="tokens", min=1, max=256, step=1, log=True)
    num_requests: int = num_requests_param(150, min=10, max=2000)
    rate_per_s: float = arrival_rate_param(20.0, max=500.0)
    lengths: str = param("sharegpt", label="Lengths", choices=LENGTHS)

    def check(self) -> None:
        m, gpu = self.resolved()
        check_serving(m, gpu, layout_of(self))
        if self.kv_budget_GiB * cm.GiB < self.max_model_len * cm.kv_bytes_per_token(m):
            raise ParamError("kv_budget_GiB", "the KV memory must hold at least one max-length reservation")


def _measured(
    block_size: int, recs: list[RequestRecord], dropped: list[workload.Request], replicas: list[Replica]
) -> dict[str, Any]:
    """A run's chart entry and figures, from the requests it finished (all of them, or so far)."""
    rep = replicas[0]
    res_avg = time_average([(t, u * block_size) for t, _, _, u, _, _ in rep.series])
    makespan = max(r.arrival_s + r.e2e_s for r in recs) - min(r.arrival_s for r in recs) if recs else 1.0
    return {
        "utilization": time_average([(t, h) for t, _, _, _, h, _ in rep.series]) / res_avg if res_avg else 0.0,
        "max_concurrent": max((x[5] for x in rep.series), default=0),
        "throughput": len(recs) / makespan,
        "ttft_p99": describe([r.ttft_s for r in recs])["p99"],  # summarize()'s, every request counting
        "series": downsample([(t, h, u * block_size) for t, _, _, u, h, _ in rep.series]),
        "num_dropped": len(dropped),
    }


def _capacity(p: Params) -> int:
    """Tokens the KV budget holds."""
    return int(p.kv_budget_GiB * cm.GiB // cm.kv_bytes_per_token(p.resolved()[0]))


def _engine(p: Params, layout_: str, bs: int) -> EngineSpec:
    """The engine on the KV budget; contiguous slabs take 1-token blocks: a slab is max_model_len tokens."""
    bs = bs if layout_ == "paged" else 1
    sched = SchedulerConfig(max_num_seqs=1024, max_model_len=p.max_model_len)
    m, gpu = p.resolved()
    return EngineSpec(m, gpu, sched, block_size=bs, layout=layout_, num_blocks=_capacity(p) // bs, engine=p.engine)


# Kept through the caller's keep (api.Session's store) for a chart switch or a rerun: the trace and its two runs.
MEMO_ENTRIES = 1 + len(LAYOUTS)


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> Streamed:
    """Both allocators' runs, contiguous (the cheaper) first, the memory chart yielded after each run
    made now and while the first goes; the block-size chart adds the paged engine at BLOCK_SIZES."""
    keep = for_call(keep, MEMO_ENTRIES)
    part: dict[str, Any] = p.stated("block_size", "max_model_len")
    lengths = workload.Lengths(p.lengths, 0, 0)
    reqs = keep(run_key(p, seed, "trace"), partial(workload.poisson_trace, seed, p.num_requests, p.rate_per_s, lengths))
    for layout_ in LAYOUTS:
        show = so_far(part, layout_, p.num_requests) if view == "memory" and layout_ == LAYOUTS[0] else None
        spec = _engine(p, layout_, p.block_size)
        served = partial(serve_shown, reqs, spec, partial(_measured, spec.block_size), show)
        part[layout_], was_kept = yield from kept_steps(keep, run_key(p, seed, layout_), served)
        if view == "memory" and not was_kept:
            yield dict(part)
    # Block tables of the first requests, each caught halfway through its answer.
    within = [r for r in reqs if r.prompt_tokens + r.output_tokens <= p.max_model_len][:8]
    return {
        **part,
        "block_sweep": _block_sweep(p, reqs) if view == "block_size" else [],
        "table_tokens": [r.prompt_tokens + r.output_tokens // 2 for r in within],
        "metrics": {
            **{f"kv_utilization_{v}": part[v]["utilization"] for v in LAYOUTS},
            "internal_fragmentation_paged": 1 - part["paged"]["utilization"],
            **{f"max_concurrent_{v}": part[v]["max_concurrent"] for v in LAYOUTS},
            **{f"throughput_{v}_per_s": part[v]["throughput"] for v in LAYOUTS},
            "kv_capacity_tokens": _capacity(p),
        },
    }


def _block_sweep(p: Params, reqs: list[workload.Request]) -> list[dict[str, Any]]:
    """What only the block-size chart draws: the paged engine re-run for each of BLOCK_SIZES."""
    sweep = []
    for bs in BLOCK_SIZES:
        served = serve(reqs, _engine(p, "paged", bs))
        r = _measured(bs, served.records, served.dropped, served.replicas)
        sweep.append({"block_size": bs, "utilization": r["utilization"], "max_concurrent": r["max_concurrent"]})
    return sweep


def _table_figure(r: dict[str, Any]) -> dict[str, Any]:
    """Block tables as stacked horizontal bars, one row per sequence, lengths in blocks (the browser's
    plotly bundle has no heatmap); white ticks mark block boundaries, up to 256 blocks per row."""
    bs, width, tokens = r["block_size"], -(-r["max_model_len"] // r["block_size"]), r["table_tokens"]
    blocks = [-(-t // bs) for t in tokens]
    labels = [f"{kind} #{i + 1}" for kind in ("paged", "contiguous") for i in range(len(tokens))]
    held = [t / bs for t in tokens] * 2
    empty_last = [b - t / bs for t, b in zip(tokens, blocks, strict=True)] * 2
    unused = [0] * len(tokens) + [width - b for b in blocks]
    rows = list(range(len(labels)))
    hover = "%{customdata}: %{x:.2f} blocks<extra>%{fullData.name}</extra>"
    grey = {"color": "#d9d9d9", "pattern": {"shape": "."}}
    kw: dict[str, Any] = {"orientation": "h", "customdata": labels, "hovertemplate": hover}
    data = [
        bar(held, rows, "Holding tokens", 0, **kw),
        bar(empty_last, rows, "Empty slots in the last block", 1, **kw),
        bar(unused, rows, "Reserved, never written (contiguous)", 5, **kw, marker=grey),
    ]
    if width <= 256:
        ticks = [(row, k) for row, n in enumerate(blocks + [width] * len(blocks)) for k in range(1, n)]
        xs = [x for _, k in ticks for x in (k, k, None)]
        ys = [y for row, _ in ticks for y in (row - 0.4, row + 0.4, None)]
        white = {"color": "#ffffff", "width": 1}
        data.append(line(xs, ys, "Block boundaries", 6, showlegend=False, hoverinfo="skip", line=white))
    title = f"Block tables: {bs}-token blocks, {width} blocks per {r['max_model_len']:,}-token reservation"
    rows_axis = {"autorange": "reversed", "tickvals": rows, "ticktext": labels}
    return chart(data, title, "Blocks", "", barmode="stack", bargap=0.2, yaxis=rows_axis)


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    if view == "blocks":
        return _table_figure(r)
    if view == "block_size":
        xs = [s["block_size"] for s in r["block_sweep"]]
        data = [sweep(r["block_sweep"], "block_size", "utilization", "Paged: share of reserved KV holding tokens")]
        data.append(line(xs, [r["metrics"]["kv_utilization_contiguous"]] * len(xs), "Contiguous reservation", 1))
        title, y_range = "Block size trade-off", {"range": [0, 1.02]}
        return chart(data, title, "Block size (tokens)", "KV utilisation", xaxis=LOG, yaxis=y_range)
    data = []
    for i, key in enumerate(LAYOUTS):
        if key in r:  # both, but while they stream
            s, name = r[key]["series"], key.capitalize()
            data.append(line([x[0] for x in s], [x[2] for x in s], f"{name}: KV reserved", 2 * i + 1, shape="hv"))
            data.append(line([x[0] for x in s], [x[1] for x in s], f"{name}: tokens held", 2 * i, shape="hv"))
    title = f"KV reserved vs used ({r['max_model_len']:,}-token reservations, {r['block_size']}-token blocks)"
    return chart(data, title, "Time (s)", "Tokens")


def summary(r: dict[str, Any], view: str) -> str:
    m, bs, n = r["metrics"], r["block_size"], FLASH_ATTN_BLOCK_MULTIPLE
    tokens, width = r["table_tokens"], -(-r["max_model_len"] // bs)
    if view == "blocks" and not tokens:
        text = f"No request of the trace fits {r['max_model_len']:,} tokens, so there is no block table to draw."
    elif view == "blocks":
        blocks = sum(-(-t // bs) for t in tokens)
        empty = blocks * bs - sum(tokens)
        text = (
            f"Block tables of the first {len(tokens)} requests, each halfway through its answer "
            f"({min(tokens):,} to {max(tokens):,} tokens). Paged with {bs}-token blocks, they hold {blocks:,} blocks "
            f"in all, {empty:,} token slots of them empty (only in each sequence's last block, "
            f"{empty / (blocks * bs):.0%}). Contiguous, each reserves {width:,} blocks ({r['max_model_len']:,} tokens) "
            f"whatever its length, {len(tokens) * width:,} blocks in all, of which {len(tokens) * width - blocks:,} "
            "are never written."
        )
    elif view == "block_size":
        sweep = r["block_sweep"]
        by_size = ", ".join(f"{x['block_size']} {x['utilization']:.0%}" for x in sweep)
        first, last = sweep[0], sweep[-1]
        most = (
            f"the most requests at once stay at {first['max_concurrent']:.0f}"
            if first["max_concurrent"] == last["max_concurrent"]
            else f"the most requests at once go from {first['max_concurrent']:.0f} with {first['block_size']}-token "
            f"blocks to {last['max_concurrent']:.0f} with {last['block_size']}-token ones"
        )
        text = (
            f"Share of reserved KV memory holding tokens by block size (tokens): {by_size}, against "
            f"{m['kv_utilization_contiguous']:.0%} with {r['max_model_len']:,}-token contiguous reservations. Larger "
            f"blocks leave more of each sequence's last block empty; {most}. What smaller blocks cost "
            "(longer block tables, slower kernels) is not in the cost model."
        )
    else:
        text = (
            f"Reserving {r['max_model_len']:,} tokens per request, only {m['kv_utilization_contiguous']:.0%} of the reserved KV "
            f"memory holds tokens and at most {m['max_concurrent_contiguous']:.0f} requests run at once. With {r['block_size']}-token "
            f"blocks, {m['kv_utilization_paged']:.0%} holds tokens, up to {m['max_concurrent_paged']:.0f} requests run together, and "
            f"throughput is {m['throughput_paged_per_s']:.2f} against {m['throughput_contiguous_per_s']:.2f} requests per second."
        )
    vllm = f" vLLM's default FlashAttention backend takes multiples of {n} tokens: {bs}-token blocks are a what-if."
    return text + (vllm if bs % n else "")
