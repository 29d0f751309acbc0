"""Write docs/validation-table.md: the cost model's predictions next to published figures, and the
cross-validated error per quantity and engine (printed too).

    python scripts/validation_table.py            # writes docs/validation-table.md
    python scripts/validation_table.py --check    # exits 1 if the file is out of date

Importable: `render_markdown()` returns the Markdown (the site build calls it too).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from simulators.benchmark.crossval import page_markdown as render_markdown  # noqa: E402
from simulators.benchmark.crossval import render_markdown as crossval_markdown  # noqa: E402

OUTPUT = ROOT / "docs" / "validation-table.md"

__all__ = ["OUTPUT", "render_markdown", "main"]


def main(argv: list[str]) -> int:
    text = render_markdown()
    print(crossval_markdown())
    if "--check" in argv:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is out of date: run python scripts/validation_table.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
