"""Time every simulator's `run_json` on its defaults in CPython (prints figures; not a test).

    python scripts/bench_simulators.py [--runs 20]

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    print(f"run_json on defaults, {args.runs} runs each, Python {sys.version.split()[0]}")
    print(f"{'simulator':<16}{'median ms':>11}{'min ms':>10}{'max ms':>10}")
    for name in api.SIMULATORS:
        t = [x * 1e3 for x in bench(name, args.runs)]
        print(f"{name:<16}{statistics.median(t):>11.2f}{min(t):>10.2f}{max(t):>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
