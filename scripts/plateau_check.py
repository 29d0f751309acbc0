"""Issue 14's acceptance figure: open-loop runs past the knee at 150 requests (GuideLLM's CLI
default run length) against the long-run plateau, for heavy-tailed and fixed lengths.

    python scripts/plateau_check.py [--requests 150] [--long 2000]

For each length kind it prints the plateau (a --long-request Poisson run at 2x the maximum,
measured as GuideLLM measures), then 150-request runs at 1.5x, 2x and 3x the maximum, measured
  - as GuideLLM measures by default (first start to last completion, no warm-up or cool-down);
  - with --max-seconds at the arrival span (GuideLLM stops there; requests still running are
    incomplete and the drain is cut off, but so is the start-up's share grown);
  - with GuideLLM's --warmup and --cooldown at 10% and 20% (of the requests);
and the share of the window spent draining. When guidellm is installed it also recomputes the
throughput with GuideLLM 0.8.1's own rate distribution
(`DistributionSummary.rate_distribution_from_timings`, schemas/base/statistics.py) on the same
completion times and window, to show the figure is computed as GuideLLM computes it.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulators.benchmark.loadgen import cut_at, measure, requests_for  # noqa: E402
from simulators.engine import EngineSpec, SchedulerConfig, workload  # noqa: E402
from simulators.engine.cluster import serve  # noqa: E402
from simulators.engine.metrics import window  # noqa: E402
from simulators.sims import (
    load_test,  # noqa: E402
    result,
)

MULTIPLES = (1.5, 2.0, 3.0)


def guidellm_rate(served, max_seconds=None) -> float | None:
    """requests_per_second.successful.mean as GuideLLM 0.8.1 computes it, on our events."""
    try:
        from guidellm.schemas import DistributionSummary
    except ImportError:
        return None
    recs, cut, dropped = cut_at(served, max_seconds)
    lo, hi = window([*recs, *cut], extra_starts=dropped, max_seconds=max_seconds)
    ends = [r.arrival_s + r.e2e_s for r in recs]
    return float(DistributionSummary.rate_distribution_from_timings(ends, start_time=lo, end_time=hi).mean)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=150)
    ap.add_argument("--long", type=int, default=2000)
    args = ap.parse_args()
    p = load_test.Params()
    m = load_test.resolve_model(p.model)
    spec = EngineSpec(
        m,
        load_test.resolve_gpu(p.gpu),
        SchedulerConfig(max_num_seqs=p.max_num_seqs, max_model_len=m.max_context_tokens),
    )
    for kind in ("azure", "fixed"):
        q = load_test.Params(lengths=kind)
        cap = result(load_test.run(q, seed=0))["metrics"]["max_throughput_per_s"]
        lengths = workload.lengths_for(kind)
        long = measure(
            serve(requests_for("poisson", _rng(), args.long, lengths, rate=2 * cap), spec), "poisson", 2 * cap
        )
        plateau = long.metrics["request_throughput_per_s"]
        print(f"\n{kind} lengths: maximum {cap:.2f} req/s; plateau ({args.long:,} requests at 2x) {plateau:.2f} req/s")
        print(
            f"  {'offered':>8} {'default':>9} {'vs plat':>8} {'drain':>6} {'guidellm':>9} {'max_s':>9} {'vs plat':>8}"
            f" {'w/c 10%':>8} {'vs plat':>8} {'w/c 20%':>8} {'vs plat':>8}"
        )
        for k in MULTIPLES:
            rate = k * cap
            served = serve(requests_for("poisson", _rng(), args.requests, lengths, rate=rate), spec)
            d = measure(served, "poisson", rate, slots=p.max_num_seqs).metrics
            span = max(r.arrival_s for r in served.records)  # when GuideLLM stops sending
            c = measure(served, "poisson", rate, max_seconds=span, slots=p.max_num_seqs).metrics
            g = guidellm_rate(served)
            phased = [
                measure(served, "poisson", rate, warmup=w, cooldown=w).metrics["request_throughput_per_s"]
                for w in ("10%", "20%")
            ]
            print(
                f"  {k:>7.1f}x {d['request_throughput_per_s']:>9.2f} {d['request_throughput_per_s'] / plateau - 1:>+8.2%}"
                f" {d['drain_share']:>6.0%} {g if g is not None else float('nan'):>9.2f}"
                f" {c['request_throughput_per_s']:>9.2f} {c['request_throughput_per_s'] / plateau - 1:>+8.1%}"
                + "".join(f" {x:>8.2f} {x / plateau - 1:>+8.1%}" for x in phased)
            )
    return 0


def _rng():
    import random

    return random.Random(0)


if __name__ == "__main__":
    raise SystemExit(main())
