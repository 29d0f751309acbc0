"""Save, or compare against, every simulator's JSON output on a broad set of scenarios.

A refactor must leave outputs byte-identical. The scenarios: every simulator at its defaults,
at each value of each choice field, and at the min and max of each numeric field (every other
field at its default; the chart view at its default, plus each view at the defaults).

    python scripts/snapshot_outputs.py save      # writes .snapshots/outputs.json (git-ignored)
    python scripts/snapshot_outputs.py compare   # exit 1 and name the scenarios that differ
    python scripts/snapshot_outputs.py compare --only load_test,engine
"""

import argparse
import hashlib
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from simulators import api  # noqa: E402

PATH = pathlib.Path(__file__).resolve().parent.parent / ".snapshots" / "outputs.json"


def scenarios(only: set[str] | None = None):
    """(simulator, params) for every scenario, in a fixed order."""
    for name, schema in api.schemas().items():
        if only and name not in only:
            continue
        views = [c["value"] for p in schema["params"] if p["name"] == "view" for c in p["choices"]]
        for view in views or [None]:
            for params in _one_field_changes(schema):
                yield name, params if view is None else {**params, "view": view}


def _one_field_changes(schema):
    """Defaults, then each field alone at each choice or end (the view left to the caller)."""
    yield {}
    for p in schema["params"]:
        if p["name"] == "view":
            continue
        if p["type"] == "choice":
            for c in p["choices"]:
                if c["value"] != p["default"]:
                    yield {p["name"]: c["value"]}
        elif p["type"] == "bool":
            yield {p["name"]: not p["default"]}
        elif p["type"] in ("int", "float"):
            for end in (p["min"], p["max"]):
                if end != p["default"]:
                    yield {p["name"]: end}


def engine_runs(n_configs: int = 160):
    """(key, serve() call) for random small engine configurations: records, log, series, counters."""
    import random

    from simulators.core.catalog import resolve_gpu, resolve_model
    from simulators.engine import EngineSpec, SchedulerConfig, serve, workload

    gpu = resolve_gpu("h100-sxm")
    models = [resolve_model(m) for m in ("llama-3-8b", "mistral-7b", "mixtral-8x7b", "deepseek-v3")]
    for i in range(n_configs):
        rng = random.Random(i)
        n = rng.randint(1, 60)
        bs = rng.choice([1, 8, 16, 64])
        sched = SchedulerConfig(
            batching=rng.choice(["continuous", "continuous", "static"]),
            max_num_seqs=rng.randint(1, 64),
            max_num_batched_tokens=rng.randint(64, 4096),
            chunked_prefill=rng.random() < 0.7,
            max_model_len=4096,
            num_speculative_tokens=rng.choice([0, 0, 2, 4]),
            reserve_full_isl=rng.random() < 0.8,
        )
        sched = SchedulerConfig(
            **{**sched.__dict__, "max_num_batched_tokens": max(sched.max_num_batched_tokens, sched.max_num_seqs)}
        )
        spec = EngineSpec(
            models[i % len(models)] if i % 3 == 0 else models[0],
            gpu,
            sched,
            block_size=bs,
            num_blocks=max(1, rng.randint(300, 4000) // bs),
            layout=rng.choice(["paged", "paged", "contiguous"]),
            prefix=rng.choice(["off", "hash", "radix"]),
        )
        sharing = rng.choice(["none", "system", "multi_turn", "agent"])
        reqs = workload.build(
            rng,
            n,
            workload.Lengths("uniform", 300, 60),
            workload.arrival_times(rng, n, "poisson", rng.uniform(0.5, 200)),
            sharing=sharing,
            shared_tokens=200,
            turns=3,
        ).requests
        reps = rng.choice([1, 1, 2, 3])
        kw = {
            "num_replicas": reps,
            "router": rng.choice(["round_robin", "least_queue", "least_kv", "prefix", "weighted"]),
        }
        if reps > 1 and rng.random() < 0.3:
            kw["num_prefill"] = 1
        yield f"serve#{i}", lambda reqs=reqs, spec=spec, kw=kw: serve(reqs, spec, keep_log=True, **kw)


def _served_text(served) -> str:
    reps = [
        (r.num_preemptions, r.busy_s, r.series, r.kv.num_evictions, r.prefill_tokens, r.hit_tokens)
        for r in served.replicas
    ]
    return repr((served.records, served.dropped, served.events, served.log, reps))


def run_all(only: set[str] | None = None) -> dict[str, str]:
    out = {}
    if not only or "serve" in only:
        for key, call in engine_runs():
            out[key] = hashlib.sha256(_served_text(call()).encode()).hexdigest()
    for name, params in scenarios(only):
        key = f"{name} {json.dumps(params, sort_keys=True)}"
        text = api.run_json(name, json.dumps(params))
        out[key] = hashlib.sha256(text.encode()).hexdigest()
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("action", choices=("save", "compare"))
    ap.add_argument("--only", default="", help="comma-separated simulator names")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    t0 = time.perf_counter()
    now = run_all(only)
    took = time.perf_counter() - t0
    if args.action == "save":
        PATH.parent.mkdir(exist_ok=True)
        PATH.write_text(json.dumps(now, indent=0, sort_keys=True))
        print(f"saved {len(now)} scenarios to {PATH} ({took:.0f} s)")
        return 0
    saved = json.loads(PATH.read_text())
    differ = [k for k in now if k not in saved or saved[k] != now[k]]
    print(f"{len(now)} scenarios compared ({took:.0f} s): {len(differ)} differ")
    by_sim: dict[str, int] = {}
    for k in differ:
        name = k.split()[0].split("#")[0]
        by_sim[name] = by_sim.get(name, 0) + 1
    if by_sim:
        print("  by simulator:", ", ".join(f"{k} {v}" for k, v in sorted(by_sim.items())))
    for k in differ[:40]:
        print("  differs:", k)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
