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

Files, one concept each (vLLM v1 names: block_size, block_table, ref_cnt, num_computed_tokens,
waiting, running):
    workload.py   arrivals (poisson, constant) and lengths; shared prefixes
    blockpool.py  the block pool: paged or contiguous; ref counts; one LRU free queue
    kv.py         KVCacheManager: the pool plus the prefix cache (off / hash / radix): match, cache_blocks
    blockhash.py  block contents and block-hash chains (memo per block size)
    sequence.py   Seq: one request's progress, blocks and timestamps inside a replica
    decodeset.py  the decoding sequences, kept so a decode step costs O(1)
    scheduler.py  SchedulerConfig and Scheduler: continuous or static batching, chunked prefill,
                  max_num_seqs, admission, preemption by recompute (the decision of each step)
    steptime.py   costmodel.step_time as an O(1) linear form; closed-form decode strides
    replica.py    Replica: a scheduler with a clock (timed steps, decode strides, cuts)
    eventloop.py  the event loop over replicas (heap with seq_no): arrivals, step ends, hand-offs
    cluster.py    EngineSpec, routers (llm-d style), disaggregation, serve()
    metrics.py    TTFT, TPOT, ITL, e2e, queueing; percentiles; goodput
(tests/engine_reference.py restates the rules as a plain engine on one screen; tests compare.)

Every RNG and counter is made inside a call. Nothing is process-global: blockhash's chain memos
(a pure function's cache) live in the store their caller passes or in one made for a serve() call.
"""

from . import workload
from .cluster import EngineSpec, Served, serve
from .metrics import Slo, summarize
from .scheduler import SchedulerConfig

__all__ = ["EngineSpec", "SchedulerConfig", "Served", "Slo", "serve", "summarize", "workload"]
