"""Replicas behind a router, optionally split into prefill and decode pools; and `serve`, the one entry point.

Routers (what llm-d's inference scheduler and its predecessors choose between):
- round_robin: the next replica in turn, blind to load and cache.
- least_queue: fewest requests waiting plus running (queue depth).
- least_kv: lowest share of KV blocks in use.
- prefix: most prompt tokens already in the replica's prefix cache (ties: least queue).
- weighted: llm-d's scheme: each scorer maps a replica to [0, 1] (prefix: hit share of the
  prompt; queue: 1 - depth / max depth; kv: 1 - KV use); the best sum of weight x score wins,
  weights 2 : 1 : 1, as llm-d's example configuration weighs its prefix-cache and load scorers.
Looking up a replica's prefix cache costs the router nothing here (llm-d keeps an approximate
index of each pod's cache from KV events).

Disaggregation (DistServe, Splitwise): `num_prefill` replicas only prefill; each finished
prefill frees its blocks there and ships its KV to the least-loaded decode replica, arriving
after kv_bytes / link bandwidth (the GPU's one-way interconnect from the cost model).

References: 1) llm-d inference scheduler (llm-d.ai; "KV-Cache Wins You Can See");
2) Zhong et al. 2024, DistServe (arXiv 2401.09670); Patel et al. 2024, Splitwise.
"""

import itertools
from collections.abc import Callable, Generator
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar

from ..core import costmodel as cm
from ..core import efficiency as ef
from ..core.catalog import Gpu, Model
from ..core.layout import Layout, pooled_kv_tokens
from .blockhash import chain_store, current_store, kept_in
from .eventloop import Progress, Router, run_out, show_once, simulate_steps
from .kv import KVCacheManager
from .metrics import RequestRecord, records
from .replica import Replica
from .scheduler import Log, SchedulerConfig
from .sequence import Seq
from .steptime import StepCost
from .workload import Request

M = TypeVar("M")
T = TypeVar("T")

ROUTERS = ("round_robin", "least_queue", "least_kv", "prefix", "weighted")


@dataclass(frozen=True)
class EngineSpec:
    model: Model
    gpu: Gpu
    sched: SchedulerConfig = SchedulerConfig()
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    ideal: bool = False
    # The engine profile whose factors price each step (costmodel.efficiency); "vllm" by default.
    engine: str = cm.DEFAULT_ENGINE
    # A profile given whole (the validation's refits) prices the steps instead of `engine`'s.
    profile: cm.Efficiency | None = None
    activation_dtype: str | None = None  # None: the weights' format where the GPU multiplies it (W8A8)
    # Tensor and pipeline stages, data-parallel attention ranks, expert parallelism (parallel.py).
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: bool = False
    block_size: int = 16  # tokens per KV block (vLLM --block-size)
    layout: str = "paged"  # "paged" blocks or "contiguous" max_model_len reservations
    # Prefix cache: "off", "hash" or "radix". On by default, as in vLLM v1 (CacheConfig.
    # enable_prefix_caching): a preempted request finds its own full blocks again.
    prefix: str = "hash"
    # KV blocks per replica; None: what memory_fit leaves after weights and activations.
    num_blocks: int | None = None

    def __post_init__(self) -> None:
        # Limits left unset take `vllm serve`'s defaults for this GPU (scheduler.vllm_serve_defaults).
        # (dataclasses.replace keeps the filled-in limits: pass sched again when changing the GPU.)
        object.__setattr__(self, "sched", self.sched.for_gpu(self.gpu))

    def step_cost(self) -> StepCost:
        # Made once per spec and kept on it (a pure function of a frozen spec, served many times).
        cost = self.__dict__.get("_step_cost")
        if cost is None:
            kw = {**self._dtypes(), "activation_dtype": self.activation_dtype, **self.parallel().cost_kw()}
            cost = StepCost(self.model, self.gpu, eff=self.efficiency(), **kw)
            object.__setattr__(self, "_step_cost", cost)
        return cost

    def efficiency(self) -> cm.Efficiency:
        """The profile that prices this spec's steps; under multi-step scheduling its CPU time
        between passes (step_overhead_us) is spread over each run of num_scheduler_steps steps."""
        return ef.multi_step(self.profile or cm.efficiency(self.ideal, self.engine), self.sched.num_scheduler_steps)

    def blocks(self) -> int:
        if self.num_blocks is not None:
            return self.num_blocks
        kw = {**self._dtypes(), "max_num_batched_tokens": self.sched.max_num_batched_tokens}
        return pooled_kv_tokens(self.model, self.gpu, self.parallel(), **kw) // self.block_size

    def _dtypes(self) -> dict[str, Any]:
        return {"weight_dtype": self.weight_dtype, "kv_dtype": self.kv_dtype}

    def parallel(self) -> Layout:
        return Layout(self.tp, self.pp, self.dp, self.ep)

    def adopt_step_cost(self, other: "EngineSpec") -> None:
        """Keep `other`'s step cost, which must be this spec's own: specs that differ only in KV
        blocks or batch limits (which the step cost does not read) share one."""

        def key(s: EngineSpec) -> tuple[Any, ...]:
            return (s.model, s.gpu, s.weight_dtype, s.kv_dtype, s.activation_dtype, s.efficiency(), s.parallel())

        if key(self) != key(other):
            raise ValueError("adopt_step_cost: the two specs make different step costs")
        object.__setattr__(self, "_step_cost", other.step_cost())


def make_router(name: str) -> Router:
    """A fresh router (its state, e.g. round-robin's turn, lives inside this call); ties go to the
    first candidate in index order."""
    turn = itertools.count()
    wp, wq, wk = 2.0, 1.0, 1.0  # weighted: prefix, queue and KV scorers (module docstring)
    seen: list[Replica] | None = None  # the replicas last routed to, split once by role:
    front: list[Replica] = []  # those that take new requests (prefill or both)
    back: list[Replica] = []  # those that take prefilled sequences (decode or both)

    def depth(r: Replica) -> int:
        return len(r.waiting) + len(r.running)

    def route(s: Seq, reps: list[Replica], t: float) -> Replica:
        nonlocal seen, front, back
        if seen is not reps:  # roles are fixed for a serve
            seen, front, back = reps, [r for r in reps if r.role != "decode"], [r for r in reps if r.role != "prefill"]
        cands = back if s.prefilled else front
        if name == "round_robin":
            return cands[next(turn) % len(cands)]
        if name == "least_queue" or s.prefilled:
            return min(cands, key=depth)
        if name == "least_kv":
            return min(cands, key=lambda r: (r.kv.num_used() / r.kv.num_blocks, depth(r)))
        content, prompt = s.content(), s.prompt

        def hit(kv: KVCacheManager) -> float:  # share of the prompt in the replica's prefix cache
            return kv.match(content, prompt)[1] / prompt if kv.prefix != "off" and not s.unique else 0.0

        if name == "prefix":
            return max(cands, key=lambda r: (hit(r.kv), -depth(r)))
        top = max(1, max(depth(r) for r in cands))

        def score(r: Replica) -> float:
            return wp * hit(r.kv) + wq * (1 - depth(r) / top) + wk * (1 - r.kv.num_used() / r.kv.num_blocks)

        return max(cands, key=score)

    return route


@dataclass
class Served:
    records: list[RequestRecord]
    dropped: list[Request]
    events: int
    replicas: list[Replica]
    log: Log


def serve(requests: list[Request], spec: EngineSpec, **options: Any) -> Served:
    """Run the requests on replicas of `spec`: serve_steps run to its end (`options`: its own).
    keep_series=False leaves each replica's per-step `series` empty (for callers that read only
    the records and counters). Block-hash chains come from the current chain store
    (blockhash.kept_in: e.g. an api.Session's), else from one made for this call."""
    return run_out(serve_steps(requests, spec, **options))


def serve_steps(
    requests: list[Request],
    spec: EngineSpec,
    *,
    num_replicas: int = 1,
    router: str = "round_robin",
    num_prefill: int = 0,
    single_step: bool = False,
    keep_log: bool = False,
    keep_series: bool = True,
    every: int = 0,
) -> Generator[Progress, None, Served]:
    """serve(), yielding the finished sequences, dropped requests and replicas so far each time
    another `every` requests have finished (eventloop.simulate_steps): a run a page shows as it goes."""
    with nullcontext() if current_store() is not None else kept_in(chain_store()):
        log: Log | None = [] if keep_log else None
        cost = spec.step_cost()
        blocks = spec.blocks()  # the same for every replica (a memory fit: computed once)
        reserve = spec.sched.max_model_len if spec.layout == "contiguous" else 0
        prefix = spec.prefix if spec.layout == "paged" else "off"
        reps = []
        for i in range(num_replicas):
            role = "both" if not num_prefill else ("prefill" if i < num_prefill else "decode")
            kv = KVCacheManager(blocks, spec.block_size, spec.layout, reserve, prefix)
            reps.append(Replica(i, spec.sched, kv, cost, role, single_step, log, keep_series))
        link = cm.link_GBps_one_way(spec.gpu) or 0.0
        per_token = cm.kv_bytes_per_token(spec.model, spec.kv_dtype)

        def transfer(s: Seq) -> float:  # a prefilled sequence's KV to its decode replica (num_prefill > 0)
            return per_token * s.num_computed_tokens / (link * cm.GB) if link else 0.0

        done, dropped, events = yield from simulate_steps(
            requests, reps, make_router(router), make_router("least_queue"), transfer, every
        )
        return Served(records(done), dropped, events, reps, log or [])


def serve_shown(
    requests: list[Request],
    spec: EngineSpec,
    measure: Callable[[list[RequestRecord], list[Request], list[Replica]], M],
    show: Callable[[M, int], T] | None = None,
    **options: Any,
) -> Generator[T, None, M]:
    """measure(records, dropped, replicas) of serve(requests, spec, **options). With `show`, it
    yields show(measure so far, how many finished) once, when a quarter have finished."""
    steps = serve_steps(requests, spec, every=len(requests) // 4 if show else 0, **options)

    def partial(progress: Progress) -> T:
        done, dropped, replicas = progress
        assert show is not None
        return show(measure(records(done), dropped, replicas), len(done))

    served: Served = yield from show_once(steps, partial)
    return measure(served.records, served.dropped, served.replicas)


def fit_error(
    model: Model, gpu: Gpu, *, weight_dtype: str = "bf16", kv_dtype: str = "bf16", layout: Layout | None = None
) -> str | None:
    """Why the model cannot be served on this layout (1 GPU by default): KV room under 4,096 tokens; or None."""
    lay = layout or Layout()
    tokens = pooled_kv_tokens(model, gpu, lay, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    if tokens >= 4096:
        return None
    return (
        f"{model.name} needs {cm.weight_bytes(model, weight_dtype) / cm.GB:,.0f} GB of weights; {lay.describe(gpu.name)} "
        f"{'leaves' if lay.num_gpus == 1 else 'leave'} room for only {tokens:,} tokens of KV cache. "
        "Use more GPUs (tensor or pipeline parallel), a smaller model or a larger GPU."
    )
