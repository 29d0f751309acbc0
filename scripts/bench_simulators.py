"""Time every simulator's `run_json` on its defaults in CPython (prints figures; not a test).

    python scripts/bench_simulators.py [--runs 20]
    python scripts/bench_simulators.py --widgets 11,F2 [--changes 5]   # only the lessons' widgets
    python scripts/bench_simulators.py --widgets tools/roofline-planner  # a docs/ page's widgets

Also, per widget of the lessons named by --widgets (default 11 and F2) and per numeric control
of it: change -> chart in the browser worker's api.Session, which already holds the page's
scenario, each change to a value not used before. "first" is the first chart the page can draw
(a streaming chart's first partial one, else the answer), "whole" the answer; p50 and p95, at
the page's scenario (values next to the page's) and at the slider's two ends.

Also a chart switch: a fresh run_json of each other chart ("view") of the default scenario,
against api.Session.run_json answering it from the kept result (what the browser worker does).

Pyodide runs pure Python about 1.7x slower than CPython (measured, see the design notes), so a
simulator that takes 100 ms here takes about 170 ms in the reader's browser.
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from simulators import api  # noqa: E402
from simulators.core import mini_yaml  # noqa: E402


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
    for view in views:  # the reader has seen every chart once (each chart's answer is kept apart)
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


def lesson_widgets(prefixes: list[str]) -> list[tuple[str, str, dict, list[str]]]:
    """(lesson and widget, simulator, params, numeric controls) of every sim block of those
    lessons (read with the standard library alone, so that this runs in Pyodide too)."""
    out = []
    for prefix in prefixes:
        # A lesson id ("11"), or a page under docs/ by its path ("tools/roofline-planner").
        paths = [ROOT / "docs" / f"{prefix}.md"] if "/" in prefix else sorted((ROOT / "lessons").glob(f"{prefix}-*.md"))
        for path in paths:
            block: list[str] | None = None
            for line in path.read_text().splitlines():
                if block is None and line.strip() == "```sim":
                    block = []
                elif block is not None and line.strip() == "```":
                    spec = mini_yaml.loads("\n".join(block))
                    block = None
                    fields = {p["name"]: p for p in api.schema(spec["sim"])["params"]}
                    numeric = [
                        c
                        for c in spec.get("controls", list(fields))
                        if fields.get(c, {}).get("type") in ("int", "float")
                    ]
                    out.append(
                        (f"{path.stem}#{spec.get('id', spec['sim'])}", spec["sim"], spec.get("params", {}), numeric)
                    )
                elif block is not None:
                    block.append(line)
    return out


def nearby(field: dict, start: float, count: int) -> list[float]:
    """`count` valid values next to `start` not equal to it: steps of 1 (ints) or 1% (floats)."""
    step = 1 if field["type"] == "int" else max(abs(start) * 0.01, field.get("step") or 0.001)
    values = []
    for k in range(1, 4 * count):
        for v in (start + k * step, start - k * step):
            v = int(v) if field["type"] == "int" else round(v, 6)
            if field["min"] <= v <= field["max"] and v != start and v not in values:
                values.append(v)
    return values[:count]


def change_times(name: str, params: dict, field: str, values: list[float]) -> tuple[list[float], list[float]]:
    """(ms to the first chart, ms to the answer) for each change of `field` to each value, in a
    session that holds the page's scenario (as the worker does after the page's warm-up)."""
    session = api.Session()
    # (A Session without run_json_stream, from before streaming, answers whole: for comparisons.)
    stream = getattr(
        session, "run_json_stream", lambda name, params, seed, post=None: session.run_json(name, params, seed)
    )
    stream(name, json.dumps(params), 0)
    first, whole = [], []
    for v in values:
        seen: list[float] = []
        t0 = time.perf_counter()
        stream(name, json.dumps({**params, field: v}), 0, lambda _, seen=seen: seen.append(time.perf_counter()))
        t1 = time.perf_counter()
        first.append(((seen[0] if seen else t1) - t0) * 1e3)
        whole.append((t1 - t0) * 1e3)
    return first, whole


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def widget_figures(prefixes: list[str], count: int) -> None:
    print(f"\nlesson widgets: change -> chart, ms (first chart drawn / whole answer), {count} changes per row")
    # What the figures rest on: with fewer than 20 changes a row's p95 is its slowest change, and a
    # shared machine's load moves every figure (compare rows measured under the same load).
    print(
        f"load average at the start: {os.getloadavg()[0]:.1f}; p95 of {count} changes = the {'slowest' if count < 20 else 'p95'} one"
    )
    print(f"{'widget':<40}{'control':<14}{'where':<9}{'first p50':>10}{'p95':>7}{'whole p50':>11}{'p95':>7}")
    firsts: list[float] = []
    for where_from, name, params, numeric in lesson_widgets(prefixes):
        fields = {p["name"]: p for p in api.schema(name)["params"]}
        for control in numeric:
            f = fields[control]
            page = params.get(control, f["default"])
            for where, start in (("page", page), ("min", f["min"]), ("max", f["max"])):
                values, base = nearby(f, start, count), {**params, control: start}
                first, whole = change_times(name, base, control, values)
                firsts += first
                print(
                    f"{where_from:<40}{control:<14}{where:<9}{statistics.median(first):>10.0f}{p95(first):>7.0f}"
                    f"{statistics.median(whole):>11.0f}{p95(whole):>7.0f}"
                )
    print(
        f"all changes: first chart p50 {statistics.median(firsts):.0f} ms, p95 {p95(firsts):.0f} ms of {len(firsts)} "
        f"(target p95 <= 150 ms); load average at the end: {os.getloadavg()[0]:.1f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument(
        "--widgets",
        help="lesson ids or docs/ pages (tools/roofline-planner) whose widgets to time (default 11,F2), alone",
    )
    ap.add_argument("--changes", type=int, default=5, help="changes per control and place (--widgets)")
    args = ap.parse_args()
    if args.widgets:
        widget_figures(args.widgets.split(","), args.changes)
        return 0
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
    widget_figures(["11", "F2"], args.changes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
