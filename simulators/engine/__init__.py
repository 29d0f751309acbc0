"""The serving engine: one discrete-event simulator of batching, paged KV, prefix caching,
speculation, routing and load, shared by the serving simulators.

Public API (everything a simulator module needs):

    from . import EngineSpec, SchedulerConfig, serve, summarize, workload

    spec = EngineSpec(model, gpu, SchedulerConfig(max_num_seqs=256), block_size=16,
                      layout="paged" | "contiguous", prefix="off" | "hash" | "radix")
    reqs = workload.build(rng, n, workload.azure_lengths(), workload.arrival_times(rng, n, "poisson", 20.0))
    served = serve(reqs.requests, spec, num_replicas=1, router="round_robin", num_prefill=0)
    served.records    # one metrics.RequestRecord per finished request (TTFT, TPOT, e2e, queue...)
    served.dropped    # requests that can never fit, and turns re-sending their answers (eventloop)
    served.replicas   # per replica: .series (per step), .kv (KVCacheManager), .num_preemptions, .busy_s
    summarize(served.records, slo=Slo(ttft_s=0.5, tpot_s=0.05), warmup=0.1, cooldown=0.1)

Files, one concept each, with vLLM v1's names (block_size, block_table, ref_cnt, num_computed_tokens,
waiting, running): workload.py (arrivals, lengths, shared prefixes); blockpool.py (the paged or
contiguous block pool, ref counts, one LRU free queue); kv.py (KVCacheManager: the pool plus the
prefix cache); blockhash.py (block contents and key chains); sequence.py (Seq: one request inside a
replica); decodeset.py (the decoding sequences, O(1) per step); scheduler.py (continuous or static
batching, chunked prefill, admission, preemption by recompute); steptime.py (costmodel.step_time as
an O(1) linear form, closed-form strides); replica.py (a scheduler with a clock); eventloop.py (the
event heap over replicas); cluster.py (EngineSpec, routers, disaggregation, serve()); metrics.py
(TTFT, TPOT, ITL, e2e, queueing, goodput). tests/engine_reference.py restates the rules as a plain
engine on one screen; tests compare.

Every RNG and counter is made inside a call. Nothing is process-global: blockhash's chain memos
(a pure function's cache) live in the store their caller passes or in one made for a serve() call.
"""

from . import workload
from .cluster import EngineSpec, Served, serve
from .metrics import Slo, summarize
from .scheduler import SchedulerConfig

__all__ = ["EngineSpec", "SchedulerConfig", "Served", "Slo", "serve", "summarize", "workload"]
