"""GuideLLM reports: real ones of four schema generations read into one shape (sources in
tests/data/guidellm/README.md); damaged or foreign files get one line, no traceback; the
simulator's own report is accepted by GuideLLM 0.8.1's loader and rendered by `guidellm export`."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from guidellm.benchmark import GenerativeBenchmarksReport

from simulators.benchmark import guidellm_read
from simulators.params import parse
from simulators.sims import load_test

DATA = Path(__file__).parent / "data" / "guidellm"
ROOT = Path(__file__).parent.parent


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "simulators", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


# (file, version, strategy, successful, TTFT p99 in ms as the file holds it, its p50 or median)
REAL = [
    ("v0.2-guidellm-test-asset.json", "before 0.4", "synchronous", 46, 21.281957626342773, 16.38054847717285),
    ("v0.2-guidellm-test-asset.yaml", "before 0.4", "synchronous", 46, 21.281957626342773, 16.38054847717285),
    ("v0.5.0.dev0-danielkorat-gpt-oss-20b.json", "0.5.0.dev0", "synchronous", 25, None, None),
    ("v0.6.0-mock-server.json", "0.6.0", "poisson", 172, None, None),
    ("v0.8.1-mock-server.json", "0.8.1", "concurrent", 120, None, None),
]


@pytest.mark.parametrize(("name", "version", "strategy", "ok", "p99", "p50"), REAL)
def test_real_reports_of_every_schema_read_into_one_shape(name, version, strategy, ok, p99, p50):
    text = (DATA / name).read_text()
    r = guidellm_read.read(text)
    assert r["guidellm_version"] == version
    b = r["benchmarks"][0]
    assert b["strategy"] == strategy and b["request_totals"]["successful"] == ok
    ttft = b["metrics"]["time_to_first_token_ms"]
    assert set(ttft) == set(guidellm_read.STATS) and ttft["count"] == ok
    # Independently of the reader: the same figures straight from the file's own layout.
    raw = json.loads(text) if name.endswith(".json") else None
    if raw is not None:
        s = raw["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]
        assert ttft["p99"] == s["percentiles"]["p99"] and ttft["mean"] == s["mean"]
        assert ttft["p50"] == s["percentiles"].get("p50", s["median"])
    if p99 is not None:  # the YAML twin holds the same numbers as the JSON
        assert ttft["p99"] == p99 and ttft["p50"] == p50


def test_read_report_cli_prints_the_shape_the_issue_names():
    out = _cli("read-report", str(DATA / "v0.6.0-mock-server.json"), "--json")
    assert out.returncode == 0, out.stderr
    b = json.loads(out.stdout)["benchmarks"][0]
    assert {"strategy", "rate", "streams", "request_totals", "metrics"} <= set(b)
    assert b["rate"] == 5.0 and set(b["metrics"]["inter_token_latency_ms"]) == set(guidellm_read.STATS)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "the file is empty"),
        ('{"benchmarks": [', "not valid JSON"),
        ('{"results": []}', "no top-level 'benchmarks' list"),
        ('{"benchmarks": [{"metrics": {}}]}', "names no strategy"),
        ("benchmarks: 'unterminated", "neither JSON nor YAML"),
        ("\x00\x01binary", "neither JSON nor YAML"),
    ],
)
def test_a_damaged_or_foreign_file_gets_one_line(tmp_path, content, message):
    f = tmp_path / "report.json"
    f.write_text(content)
    out = _cli("read-report", str(f), "--json")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and message in out.stderr and "Traceback" not in out.stderr


def test_a_truncated_real_report_is_refused_in_one_line(tmp_path):
    f = tmp_path / "cut.json"
    f.write_text((DATA / "v0.8.1-mock-server.json").read_text()[:5000])
    out = _cli("read-report", str(f))
    assert out.returncode == 2 and out.stderr.startswith("error:") and out.stderr.count("\n") == 1


def test_the_simulated_sweep_is_a_report_guidellms_own_loader_accepts(tmp_path):
    out = _cli("run", "load_test", "--set", "num_requests=60", "--format", "guidellm")
    assert out.returncode == 0, out.stderr
    path = tmp_path / "benchmarks.json"
    path.write_text(out.stdout)
    report = GenerativeBenchmarksReport.load_file(path)
    kinds = [b.config.strategy.type_ for b in report.benchmarks]
    assert kinds[:2] == ["synchronous", "throughput"] and set(kinds[2:]) == {"constant"} and len(kinds) == 10
    # What GuideLLM reads back is what the simulation measured (the loadgen figures).
    ours = guidellm_read.read(out.stdout)["benchmarks"]
    for b, mine in zip(report.benchmarks, ours, strict=True):
        assert (
            b.metrics.time_to_first_token_ms.successful.percentiles.p99
            == mine["metrics"]["time_to_first_token_ms"]["p99"]
        )
        assert b.metrics.request_totals.successful == mine["request_totals"]["successful"]
    # and the sweep's rates are GuideLLM's: linspace(sync, throughput, 9)[1:]
    rates = [b["rate"] for b in ours[2:]]
    sync, top = ours[0]["metrics"]["requests_per_second"]["mean"], ours[1]["metrics"]["requests_per_second"]["mean"]
    assert rates == pytest.approx([sync + (top - sync) * i / 8 for i in range(1, 9)])


def test_guidellm_export_renders_the_simulated_report(tmp_path):
    p = parse(load_test.Params, {"num_requests": 40})
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(load_test.guidellm_report(p, seed=0)))
    csv = tmp_path / "out.csv"
    out = subprocess.run(
        ["guidellm", "export", str(path), "--output", f"kind=csv,path={csv}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    rows = csv.read_text().splitlines()
    assert len(rows) >= 10 + 1 and any("synchronous" in r for r in rows)


def test_the_pages_download_is_the_cli_report_and_guidellm_loads_it(tmp_path):
    """The widget's "Download GuideLLM report" asks api.run for load_test's `guidellm` export (the
    schema lists it): the same report as `run load_test --format guidellm`, accepted by GuideLLM."""
    from simulators import api

    assert {"kind": "guidellm", "label": "Download GuideLLM report (JSON)", "file": "guidellm-benchmarks.json"} in (
        api.schema("load_test")["exports"]
    )
    answer = api.run("load_test", {"num_requests": 60, "view": "goodput", "export": "guidellm"})
    assert answer["ok"] and answer["export"]["file"] == "guidellm-benchmarks.json"
    cli = _cli("run", "load_test", "--set", "num_requests=60", "--format", "guidellm")
    assert json.loads(answer["export"]["text"]) == json.loads(cli.stdout)
    path = tmp_path / "download.json"
    path.write_text(answer["export"]["text"])
    assert len(GenerativeBenchmarksReport.load_file(path).benchmarks) == 10
    # A file the simulator does not make, or bad parameters, are field errors, not a traceback.
    bad = api.run("load_test", {"export": "csv"})
    assert not bad["ok"] and bad["errors"][0]["field"] == "export"
    assert api.run("generation", {"export": "guidellm"})["errors"][0]["field"] == "export"
    assert api.run("load_test", {"export": "guidellm", "num_requests": 1})["errors"][0]["field"] == "num_requests"
    assert api.schema("generation")["exports"] == []
