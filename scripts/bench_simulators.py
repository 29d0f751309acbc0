"""Time every simulator's `run_json` on its defaults in CPython (prints figures; not a test).

    python scripts/bench_simulators.py [--runs 20]

Also a chart switch: a fresh run_json of each other chart ("view") of the default scenario,
against api.Session.run_json answering it from the kept result (what the browser worker does).

Pyodide runs pure Python about 1.7x slower than CPython (measured, see the design notes), so a
simulator that takes 100 ms here takes about 170 ms in the reader's browser.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from simulators import api  # noqa: E402


def bench(name: str, runs: int) -> list[float]:
    api.run_json(name, "{}")  # warm-up: catalogues are read and cached once per process
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        api.run_json(name, "{}")
        times.append(time.perf_counter() - t0)
    return times


def chart_switch(name: str, runs: int) -> tuple[list[float], list[float]] | None:
    """(fresh run_json, session's answer) times for switching among the simulator's charts."""
    field = next((p for p in api.schema(name)["params"] if p["name"] == "view"), None)
    if field is None:
        return None
    views = [c["value"] for c in field["choices"]]
    session = api.Session()
    for view in views:  # the reader has seen every chart once (a chart's own view_data is kept too)
        session.run_json(name, "{}", 0, view)
    fresh, kept = [], []
    for i in range(runs):
        view = views[i % len(views)]
        t0 = time.perf_counter()
        api.run_json(name, "{}", 0, view)
        t1 = time.perf_counter()
        session.run_json(name, "{}", 0, view)
        t2 = time.perf_counter()
        fresh.append(t1 - t0)
        kept.append(t2 - t1)
    return fresh, kept


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    print(f"run_json on defaults, {args.runs} runs each, Python {sys.version.split()[0]}")
    print(f"{'simulator':<16}{'median ms':>11}{'min ms':>10}{'max ms':>10}")
    for name in api.SIMULATORS:
        t = [x * 1e3 for x in bench(name, args.runs)]
        print(f"{name:<16}{statistics.median(t):>11.2f}{min(t):>10.2f}{max(t):>10.2f}")
    print("\nchart switch on defaults: a fresh run_json vs a Session's (kept result, drawn again), median ms")
    print(f"{'simulator':<16}{'fresh':>11}{'session':>10}")
    for name in api.SIMULATORS:
        switch = chart_switch(name, args.runs)
        if switch is not None:
            fresh, kept = ([x * 1e3 for x in xs] for xs in switch)
            print(f"{name:<16}{statistics.median(fresh):>11.2f}{statistics.median(kept):>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
