"""Command line: python -m simulators list | describe NAME | run NAME --set key=value ... [--json]

Bad input prints one line naming the field and what is allowed, and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import api


def _describe(name: str) -> str:
    s = api.schema(name)
    lines = [f"{name}: {s['title']}", f"  {s['description']}", "", "parameters:"]
    for p in s["params"]:
        if p["type"] == "choice":
            allowed = "one of " + ", ".join(c["value"] for c in p["choices"])
        elif p["type"] in ("int", "float"):
            allowed = f"{p['type']} in [{p['min']}, {p['max']}]"
        else:
            allowed = p["type"]
        unit = f" {p['unit']}" if p["unit"] else ""
        lines.append(f"  {p['name']} = {p['default']}{unit}  ({allowed}) {p['label']}")
    lines += ["", "metrics:"]
    lines += [f"  {m['name']}  {m['label']}" + (f" [{m['unit']}]" if m["unit"] else "") for m in s["metrics"]]
    return "\n".join(lines)


def _parse_sets(sets: list[str]) -> dict[str, object]:
    params: dict[str, object] = {}
    for item in sets:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"--set expects key=value, got {item!r}")
        # JSON objects (a pasted config.json or a custom GPU) pass through; the rest stay text
        # and are converted by the simulator's own validation.
        if value.startswith("@"):  # --set model=@config.json reads a file (a real config.json)
            with open(value[1:], encoding="utf-8") as f:
                value = f.read()
        params[key.strip()] = json.loads(value) if value.lstrip().startswith("{") else value
    return params


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simulators", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="list the simulators")
    d = sub.add_parser("describe", help="parameters and metrics of one simulator")
    d.add_argument("name")
    r = sub.add_parser("run", help="run one simulator")
    r.add_argument("name")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--json", action="store_true", help="print the full JSON answer")
    args = ap.parse_args(argv)

    if args.cmd == "list":
        for name, mod in api.SIMULATORS.items():
            print(f"{name:14s} {mod.TITLE}")
        return 0
    if args.name not in api.SIMULATORS:
        print(f"error: unknown simulator '{args.name}'; known: {', '.join(api.SIMULATORS)}", file=sys.stderr)
        return 2
    if args.cmd == "describe":
        print(_describe(args.name))
        return 0
    try:
        params = _parse_sets(args.set)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    answer = json.loads(api.run_json(args.name, json.dumps(params), seed=args.seed))
    if not answer["ok"]:
        for err in answer["errors"]:
            print(f"error: {err['field'] or args.name}: {err['message']}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(answer, indent=2, sort_keys=True))
    else:
        for key, value in answer["metrics"].items():
            print(f"{key:32s} {value}")
        print()
        print(answer["summary"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
