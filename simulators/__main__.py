"""Command line: python -m simulators list | describe NAME | run NAME --set key=value ... [--json]
| run load_test ... --format guidellm | read-report FILE [--json]

`run load_test --format guidellm` prints the simulated server's GuideLLM sweep as the report
GuideLLM 0.8.1 writes (its `GenerativeBenchmarksReport.load_file` reads it). `read-report` reads a
GuideLLM report of any schema from 0.2 to 0.8 (JSON or YAML). Bad input prints one line naming
the field (or what is wrong with the file) and exits with status 2.
"""

import argparse
import json
import sys

from .core.data_files import CatalogError

try:
    from . import api  # imports the catalogues: a broken one is one line naming its file, not a traceback
except CatalogError as error:
    print(f"error: {error}", file=sys.stderr)
    raise SystemExit(2) from None


def _fail(message: str) -> int:
    """Bad input: "error: ..." on stderr (a line per error), exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    return 2


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
        # JSON objects (a config.json, a custom GPU) pass through; the simulator converts the rest.
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
    r.add_argument("--format", choices=["guidellm"], help="load_test only: print a GuideLLM 0.8.1 report")
    rr = sub.add_parser("read-report", help="read a GuideLLM benchmark report (schemas 0.2 to 0.8)")
    rr.add_argument("file")
    rr.add_argument("--json", action="store_true", help="print the normalised report as JSON")
    args = ap.parse_args(argv)
    if args.cmd == "read-report":
        return _read_report(args.file, args.json)
    if args.cmd == "list":
        for name, mod in api.SIMULATORS.items():
            print(f"{name:14s} {mod.TITLE}")
        return 0
    if args.name not in api.SIMULATORS:
        return _fail(f"unknown simulator '{args.name}'; known: {', '.join(api.SIMULATORS)}")
    if args.cmd == "describe":
        print(_describe(args.name))
        return 0
    try:
        params = _parse_sets(args.set)
    except (ValueError, OSError) as e:
        return _fail(str(e))
    if args.format == "guidellm":  # the file a page's "Download GuideLLM report" makes
        if args.name != "load_test":
            return _fail(f"--format guidellm is for load_test, not {args.name}")
        params["export"] = "guidellm"
    answer = json.loads(api.run_json(args.name, json.dumps(params), seed=args.seed))
    if not answer["ok"]:
        return _fail("\nerror: ".join(f"{err['field'] or args.name}: {err['message']}" for err in answer["errors"]))
    if "export" in answer:  # --set export=KIND: the file a page's download button makes
        print(answer["export"]["text"])
    elif args.json:
        print(json.dumps(answer, indent=2, sort_keys=True))
    else:
        for key, value in answer["metrics"].items():
            print(f"{key:32s} {value}")
        print(f"\n{answer['summary']}")
    return 0


def _read_report(path: str, as_json: bool) -> int:
    from .benchmark.guidellm_read import ReportError, read

    try:
        with open(path, encoding="utf-8") as f:
            report = read(f.read())
    except (OSError, UnicodeDecodeError) as e:
        return _fail(f"{path}: cannot read the file ({e.__class__.__name__}: {e})")
    except ReportError as e:
        return _fail(f"{path}: {e}")
    if as_json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"GuideLLM {report['guidellm_version']} ({report['schema']}), {len(report['benchmarks'])} benchmarks")
    for b in report["benchmarks"]:
        m, t = b["metrics"], b["request_totals"]
        where = f"@{b['rate']:g}/s" if b["rate"] else f" x{b['streams']}" if b["streams"] else ""
        ttft = m["time_to_first_token_ms"]
        print(
            f"  {b['strategy']}{where}: {m['requests_per_second']['mean']:.3g} req/s, TTFT p50 {ttft['p50']:.4g} ms "
            f"p99 {ttft['p99']:.4g} ms (of {ttft['count']} requests), {t['successful']} ok / {t['incomplete']} "
            f"incomplete / {t['errored']} errored"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
