"""Preemption and recompute in the lessons' engine scenarios (prints figures; not a test).

    python scripts/measure_preemption.py [--prefix off] [05 06 11 ...]

For each `sim` block of the lessons whose file names start with the given prefixes (default 05,
06 and 11), at its page parameters, it runs the simulator through `api.run_json`, watching every
engine run it makes, and counts from the event log: preemptions, prompt and answer tokens
prefilled again after a preemption ("recomputed"), and tokens a preempted request found in the
prefix cache when admitted again ("re-hit"). Run it before and after an engine change.
`--prefix off` (or radix) sets the prefix mode of every engine the simulators build without
saying, which is "hash" (on, vLLM v1's default) otherwise, to show what prefix caching changes.
"""

import dataclasses
import json
import pathlib
import sys
from collections import Counter

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from simulators import api  # noqa: E402


def lesson_scenarios(prefixes: tuple[str, ...]) -> list[tuple[str, str, dict]]:
    """(label, simulator, params) of every `sim` block in the lessons whose file names start so."""
    import yaml

    out = []
    root = pathlib.Path(__file__).resolve().parent.parent / "lessons"
    for path in sorted(root.glob("*.md")):
        if path.name.startswith(prefixes):
            for block in path.read_text().split("```sim\n")[1:]:
                spec = yaml.safe_load(block.split("```")[0])
                out.append((f"{path.name[:5]} {spec.get('id', '')}", spec["sim"], spec.get("params") or {}))
    return out


def count(log: list[tuple], totals: Counter) -> None:
    preempted: set[tuple[int, int]] = set()
    for _, rep, what, sid, extra in log:
        key = (rep, sid)
        if what == "preempt":
            totals["preemptions"] += 1
            preempted.add(key)
        elif what == "admit" and key in preempted:
            totals["re-hit tokens"] += extra
        elif what == "chunk":
            totals["recomputed tokens" if key in preempted else "prefill tokens"] += extra


def main() -> None:
    from simulators.engine import cluster

    args = sys.argv[1:]
    if args[:1] == ["--prefix"]:
        # EngineSpec's default prefix mode, as the simulators that do not set it will see it.
        names = [f.name for f in dataclasses.fields(cluster.EngineSpec)][2:]
        defaults = list(cluster.EngineSpec.__init__.__defaults__)
        defaults[names.index("prefix")] = args[1]
        cluster.EngineSpec.__init__.__defaults__ = tuple(defaults)
        args = args[2:]
    original = cluster.serve
    totals: Counter = Counter()

    def watched(*a, **kw):
        kw["keep_log"] = True
        served = original(*a, **kw)
        count(served.log, totals)
        totals["runs"] += 1
        return served

    # Every module that imported serve (the simulators, loadgen) gets the watched one.
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("simulators") and getattr(module, "serve", None) is original:
            module.serve = watched
    for label, name, params in lesson_scenarios(tuple(args) or ("05", "06", "11")):
        totals.clear()
        answer = json.loads(api.run_json(name, json.dumps(params)))
        if not answer["ok"]:
            print(f"{label:<22} {name}: refused {answer['errors']}")
            continue
        print(
            f"{label:<22} {name:<13} runs {totals['runs']:>3}  preemptions {totals['preemptions']:>6,}  "
            f"recomputed {totals['recomputed tokens']:>10,}  re-hit {totals['re-hit tokens']:>10,}  "
            f"(first prefills {totals['prefill tokens']:>11,})"
        )


if __name__ == "__main__":
    main()
