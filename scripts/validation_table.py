"""Write docs/validation-table.md: the cost model's predictions next to published figures, and the
cross-validated error per quantity and engine (printed too); and docs/validation-runs.json, the
engine runs behind them, which a fresh clone's first site build reads instead of making them.

    python scripts/validation_table.py            # writes both (every run made afresh, ~30 s)
    python scripts/validation_table.py --check    # exits 1 if either is out of date

Importable: `render_markdown()` returns the Markdown (crossval.page_markdown, which the site build
also renders through simulators.api).
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from simulators import api  # noqa: E402
from simulators.benchmark.crossval import page_markdown as render_markdown  # noqa: E402
from simulators.benchmark.crossval import render_markdown as crossval_markdown  # noqa: E402
from sitebuild import processes, sims  # noqa: E402

OUTPUT = ROOT / "docs" / "validation-table.md"

USAGE = "python scripts/validation_table.py"

__all__ = ["OUTPUT", "render_markdown", "main"]


def write_runs() -> int:
    """Write the validation runs made in this process as the committed ones; their count."""
    runs = {sims.run_digest(k): v for k, v in api.measurement_runs().items()}
    text = json.dumps({"simulators": sims.validation_key(ROOT), "runs": dict(sorted(runs.items()))}, indent=0)
    (ROOT / sims.VALIDATION_RUNS).write_text(text + "\n", encoding="utf-8")
    return len(runs)


def main(argv: list[str]) -> int:
    if "--check" in argv:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != render_markdown() or not sims.committed_runs(ROOT):
            print(f"{OUTPUT.relative_to(ROOT)} or {sims.VALIDATION_RUNS} is out of date: run {USAGE}", file=sys.stderr)
            return 1
        return 0
    api.make_runs_with(processes.run_many)
    text = render_markdown()
    api.held_out_band()  # every run the lessons' band reads
    print(crossval_markdown())
    OUTPUT.write_text(text, encoding="utf-8")
    count = write_runs()
    print(f"wrote {OUTPUT.relative_to(ROOT)} ({text.count(chr(10))} lines) and {sims.VALIDATION_RUNS} ({count} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
