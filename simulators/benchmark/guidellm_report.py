"""Simulated load-test runs written as a GuideLLM 0.8.1 benchmark report (JSON).

The layout is the one `guidellm run --output kind=json` writes (metadata version 2; read by
`GenerativeBenchmarksReport.load_file`, src/guidellm/benchmark/schemas/report.py): `benchmarks[]`
with `config.strategy` (type_, streams, rate), `scheduler_metrics`, and
`metrics.<name>.{successful, incomplete, errored, total}`, each a DistributionSummary
(stats.summary). Values use GuideLLM's units: seconds for request_latency, milliseconds for the
`_ms` metrics, requests or tokens per second for the rates.

What a simulation cannot mean as GuideLLM means it: there is no client, so no dispatch delay,
no network and no tokenizer; times start at 0 instead of the epoch; `requests` (per-request
samples) is left empty, as GuideLLM's own `--metrics sample_size=0` does.
"""

import random
from typing import Any

from ..core import stats
from ..engine.metrics import RequestRecord, overlapping, window

SCHEMA_VERSION = 2
WRITER = "0.8.1"  # the GuideLLM release whose layout this is
Recs = list[RequestRecord]


# Per-modality counters GuideLLM's report carries (null where nothing was measured; a
# simulation counts no words, characters, images, audio or tool calls).
_MODALITIES = {
    "text": ("tokens", "words", "characters"),
    "image": ("tokens", "images", "pixels", "bytes"),
    "video": ("tokens", "frames", "seconds", "bytes"),
    "audio": ("tokens", "samples", "seconds", "bytes"),
    "tool_call": ("tokens", "mixed_tokens", "count"),
}
_MODALITY_FIELDS = [f"{d}{s}" for d in ("input", "output", "total") for s in ("", "_per_second", "_concurrency")]


def _out_tokens(r: RequestRecord) -> list[tuple[float, float]]:
    t0, t1, n = r.arrival_s + r.ttft_s, r.arrival_s + r.e2e_s, r.output_tokens
    if n <= 1 or t1 <= t0:
        return [(t1, float(n))]
    return [(t0, 1.0)] + [(t0 + (t1 - t0) * k / (n - 1), 1.0) for k in range(1, n)]


def benchmark(
    profile: str, rate: float, streams: int, ok: Recs, cut: Recs, errored: list[float], index: int
) -> dict[str, Any]:
    """One `benchmarks[]` entry: a profile's run, measured over GuideLLM's window."""
    lo, hi = window([*ok, *cut], extra_starts=errored)
    ok, cut = overlapping(ok, lo, hi), overlapping(cut, lo, hi)
    n_err = len(errored)
    spans = [(r.arrival_s, r.arrival_s + r.e2e_s) for r in [*ok, *cut]]
    empty = stats.summary([])
    conc = stats.concurrency_summary(spans, lo, hi) if spans else empty
    strategy = {"type_": profile, "streams": streams} | ({"rate": rate} if profile in ("constant", "poisson") else {})
    made = {"successful": len(ok), "errored": n_err, "incomplete": len(cut), "total": len(ok) + len(cut) + n_err}

    def by_status(one: Any) -> dict[str, dict[str, Any]]:
        """A metric's summaries by status; the simulated server never errs (no errored requests)."""
        return {"successful": one(ok), "incomplete": one(cut), "errored": empty, "total": one([*ok, *cut])}

    def status(fn: Any, weighted: bool = False) -> dict[str, dict[str, Any]]:
        def one(recs: Recs) -> dict[str, Any]:
            pairs = [fn(r) for r in recs]
            return stats.summary([v for v, _ in pairs], [w for _, w in pairs]) if weighted else stats.summary(pairs)

        return by_status(one)

    def rates(events_of: Any) -> dict[str, dict[str, Any]]:
        return by_status(lambda recs: stats.rate_summary([e for r in recs for e in events_of(r)], lo, hi))

    none = dict.fromkeys(("successful", "incomplete", "errored", "total"), empty)
    metrics: dict[str, Any] = {
        "request_totals": {"successful": len(ok), "incomplete": len(cut), "errored": n_err, "total": made["total"]},
        "requests_per_second": rates(lambda r: [(r.arrival_s + r.e2e_s, 1.0)]),
        "request_concurrency": {"successful": conc, "incomplete": empty, "errored": empty, "total": conc},
        "request_latency": status(lambda r: r.e2e_s),
        "request_streaming_iterations_count": status(lambda r: float(r.output_tokens)),
        "prompt_token_count": status(lambda r: float(r.prompt_tokens)),
        "output_token_count": status(lambda r: float(r.output_tokens)),
        "total_token_count": status(lambda r: float(r.prompt_tokens + r.output_tokens)),
        "time_to_first_token_ms": (ttft := status(lambda r: r.ttft_s * 1e3)),
        "time_to_first_output_token_ms": ttft,
        "time_per_output_token_ms": status(
            lambda r: (r.e2e_s * 1e3 / max(r.output_tokens, 1), float(r.output_tokens)), True
        ),
        "inter_token_latency_ms": status(lambda r: ((r.tpot_s or 0.0) * 1e3, r.output_tokens - 1.0), True),
        "time_to_last_round_trip_ms": none,
        "avg_round_trip_time_ms": none,
        "prompt_tokens_per_second": rates(lambda r: [(r.arrival_s + r.ttft_s, float(r.prompt_tokens))]),
        "output_tokens_per_second": rates(_out_tokens),
        "tokens_per_second": rates(lambda r: [(r.arrival_s + r.ttft_s, float(r.prompt_tokens)), *_out_tokens(r)]),
        "output_tokens_per_iteration": status(lambda r: 1.0),
        "iter_tokens_per_iteration": status(lambda r: 1.0),
        **{kind: {unit: dict.fromkeys(_MODALITY_FIELDS) for unit in units} for kind, units in _MODALITIES.items()},
    }
    sched = {
        **dict.fromkeys(("start_time", "request_start_time", "measure_start_time"), lo),
        **dict.fromkeys(("measure_end_time", "request_end_time", "end_time"), hi),
        "requests_made": made,
        # GuideLLM's client and scheduler delays: a simulation has none
        **dict.fromkeys(
            "queued_time_avg resolve_start_delay_avg resolve_targeted_start_delay_avg request_start_delay_avg "
            "request_targeted_start_delay_avg request_time_avg resolve_end_delay_avg resolve_time_avg "
            "finalized_delay_avg processed_delay_avg".split(),
            0.0,
        ),
    }
    return {
        "type_": "generative_benchmark",
        "config": {
            "run_id": "simulated",
            "run_index": index,
            "strategy": strategy,
            "constraints": {},
            "profile": {"kind": profile},
            **dict.fromkeys(("requests", "backend", "environment"), {"kind": "simulated"}),
        },
        "scheduler_state": {},
        "scheduler_metrics": sched,
        "metrics": metrics,
        "requests": {"successful": [], "errored": [], "incomplete": [], "total": None},
        "start_time": lo,
        "end_time": hi,
        "duration": hi - lo,
        "warmup_duration": 0.0,
        "cooldown_duration": 0.0,
    }


def sweep_report(spec: Any, n: int, lengths: Any, seed: int) -> dict[str, Any]:
    """GuideLLM's default sweep (synchronous, throughput, then constant rates between their
    measured rates) of the simulated server, as the report `guidellm run --profile sweep` writes:
    metadata, the run's configuration (what was simulated: the model and GPU are labels, the
    target names the simulator), the benchmarks."""
    from ..engine.cluster import serve
    from .loadgen import cut_at, measure, requests_for, sweep_rates

    recs: Recs = []

    def one(profile: str, rate: float, index: int) -> tuple[dict[str, Any], float]:
        served = serve(requests_for(profile, random.Random(seed), n, lengths, rate=rate), spec, keep_series=False)
        ok, cut, err = cut_at(served, None)
        recs[:] = ok
        achieved = measure(served, profile, rate).metrics["request_throughput_per_s"]
        streams = 1 if profile == "synchronous" else n if profile == "throughput" else 0
        return benchmark(profile, rate, streams, ok, cut, err, index), achieved

    (sync, sync_rate), (top, top_rate) = one("synchronous", 0.0, 0), one("throughput", 0.0, 1)
    benches = [sync, top] + [one("constant", rate, i)[0] for i, rate in enumerate(sweep_rates(sync_rate, top_rate), 2)]
    k, model = max(len(recs), 1), spec.model.name
    prompt, output = round(sum(r.prompt_tokens for r in recs) / k), round(sum(r.output_tokens for r in recs) / k)
    run = {
        "backend": {"kind": "openai_http", "target": "simulated://simulators.sims.load_test", "model": model},
        "profile": {"kind": "sweep"},
        "data": [{"kind": "synthetic_text", "prompt_tokens": prompt, "output_tokens": output}],
    }
    return {
        "metadata": {"version": SCHEMA_VERSION, "guidellm_version": WRITER},
        "config": {"metadata": {"labels": {"simulated": "true", "model": model, "gpu": spec.gpu.name}}, "spec": run},
        "benchmarks": benches,
        "conclusions": [],
    }
