"""How long the build's SVG chart renderer takes per figure, over every scenario the tests render.

    python scripts/bench_static_chart.py

Prints the count, the total and the milliseconds per figure (median of three passes). A figure, not
a pass/fail: the machines that run the tests are shared and noisy.
"""

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_static_chart import _scenarios  # noqa: E402

from simulators import api  # noqa: E402
from sitebuild.static_chart import render  # noqa: E402


def main() -> None:
    import json

    figures = []
    for _, name, params in _scenarios():
        answer = json.loads(api.run_json(name, json.dumps(params), 0))
        if answer["ok"]:
            figures.append(answer["figure"])
    passes = []
    for _ in range(3):
        start = time.perf_counter()
        for i, fig in enumerate(figures):
            render(fig, f"chart-{i}")
        passes.append(time.perf_counter() - start)
    total = statistics.median(passes)
    print(
        f"{len(figures)} figures: {total:.2f} s, {1000 * total / len(figures):.2f} ms per figure (median of 3 passes)"
    )


if __name__ == "__main__":
    main()
