"""Benchmark of the serving engine (prints figures; not a test).

    python scripts/bench_engine.py

1,000 and 10,000 open-loop requests (Azure 2023 conversation lognormal lengths, Poisson at 80%
of one replica's capacity, Llama-3-8B on an H100 SXM), and 200 reasoning requests against 200
chat requests. Capacity is measured first: the completion rate with more closed-loop users than
batch slots. Each figure is the median wall time over several runs.
"""

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulators.benchmark.searches import constrained_run  # noqa: E402
from simulators.core.catalog import resolve_gpu, resolve_model  # noqa: E402
from simulators.engine import EngineSpec, SchedulerConfig, serve, summarize, workload  # noqa: E402


def timed(reqs: list[workload.Request], spec: EngineSpec, repeats: int) -> tuple[float, int, int]:
    times, events, done = [], 0, 0
    for _ in range(repeats):
        t = time.perf_counter()
        served = serve(reqs, spec)
        times.append(time.perf_counter() - t)
        events, done = served.events, len(served.records)
    return statistics.median(times), events, done


def trace(n: int, rate: float, kind: str = "azure", seed: int = 0) -> list[workload.Request]:
    rng = random.Random(seed)
    lengths = workload.azure_lengths() if kind == "azure" else workload.Lengths("reasoning", 0, 0)
    return workload.build(rng, n, lengths, workload.arrival_times(rng, n, "poisson", rate)).requests


def main() -> None:
    m, gpu = resolve_model("llama-3-8b"), resolve_gpu("h100-sxm")
    spec = EngineSpec(m, gpu)
    cap = constrained_run("concurrent", spec, 2000, workload.azure_lengths(), 0, users=2 * spec.sched.max_num_seqs)[
        0
    ].metrics["request_throughput_per_s"]
    rate = 0.8 * cap
    slots = spec.sched.max_num_seqs
    print(
        f"capacity ({2 * slots} closed-loop users, {slots} slots): {cap:.2f} req/s; open-loop rate 80%: {rate:.2f} req/s"
    )
    for n, repeats, target in ((1000, 7, 0.150), (10000, 3, 1.5)):
        reqs = trace(n, rate)
        wall, events, done = timed(reqs, spec, repeats)
        s = summarize(serve(reqs, spec).records)
        print(
            f"{n:>6,} requests: {wall * 1e3:8.1f} ms median of {repeats} (target <= {target * 1e3:,.0f} ms) | "
            f"{events:,} events, {events / wall:,.0f} events/s, {done / wall:,.0f} simulated requests/s | "
            f"TTFT p50 {s['ttft_s_p50'] * 1e3:.0f} ms, TPOT p50 {s['tpot_s_p50'] * 1e3:.1f} ms"
        )
    # 20,000-token answers need a long context: Llama-3.1-8B's shape is Llama-3-8B's. At 0.02
    # req/s the KV memory (about 19 reasoning sequences) keeps up; at 0.5 req/s it is 25 times
    # oversubscribed: admission waits for blocks for the whole sequence plus a 1% watermark
    # (vLLM v1), yet decode growth still preempts the newest sequence about twice per request
    # (every preemption and its recompute chunks are events).
    long = EngineSpec(m, gpu, SchedulerConfig(max_model_len=65536))
    for r in (0.02, 0.5):
        chat = trace(200, r)
        reason = trace(200, r, "reasoning")
        wc, ec, dc = timed(chat, long, 5)
        wr, er, dr = timed(reason, long, 5)
        pre = serve(reason, long).replicas[0].num_preemptions
        print(
            f"at {r} req/s: 200 chat requests {wc * 1e3:.1f} ms ({ec:,} events); 200 reasoning requests {wr * 1e3:.1f} ms ({er:,} events, {pre:,} preemptions); ratio {wr / wc:.2f} (target within 2x)"
        )
    out_chat = sum(r.output_tokens for r in chat)
    out_reason = sum(r.output_tokens for r in reason)
    print(
        f"output tokens simulated: chat {out_chat:,}, reasoning {out_reason:,} ({out_reason / out_chat:.0f}x the tokens)"
    )


if __name__ == "__main__":
    main()
