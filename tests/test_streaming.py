"""Charts that stream: a sweep drawn point by point while the worker computes it.

api.Session.run_json_stream posts each growing chart before the answer (the browser worker's
"partial" messages). These tests check that streaming changes nothing in the answer, that each
partial chart is a valid plotly figure that only adds points, and that the last partial chart is
the answer's chart.
"""

import json

import plotly.graph_objects as go
import pytest

from simulators import api
from simulators.sims import compare_benchmark, load_test

SMALL = {"num_requests": 60, "rate_per_s": 12, "users": 16}
# Points each swept chart gets: closed loop (knee) + open loop (+ the other lengths' open loop).
POINTS = {
    "knee": len(load_test.USERS) + len(load_test.FRACTIONS),
    "goodput": len(load_test.FRACTIONS) + 1,  # and the chosen rate's point
    "lengths": 2 * len(load_test.FRACTIONS),
    "percentiles": 1,  # run()'s chart, from the run at the chosen rate alone, before the ceiling
}


def _points(figure):
    return [len(trace.get("x") or []) for trace in figure["data"]]


def _running(figure):
    """Whether this partial chart is of a run still going (load_test_view.figure)."""
    return "(simulating: " in figure["layout"]["title"]["text"]


@pytest.mark.parametrize("view", [v for v, _ in load_test.VIEWS])
def test_a_streamed_answer_is_the_plain_answer_and_its_last_partial_is_its_chart(view):
    params = json.dumps({**SMALL, "view": view})
    posted = []
    streamed = api.Session().run_json_stream("load_test", params, 0, posted.append)
    assert streamed == api.run_json("load_test", params) == api.Session().run_json("load_test", params)
    parts = [json.loads(p) for p in posted]
    # The chart's first run is drawn once while it goes, when a quarter of its requests are done
    # (ServedMemo.stream): its point is there, measured on those, and the title says so.
    running = parts.pop(0)
    title = running["figure"]["layout"]["title"]["text"]
    assert title.endswith(f"(simulating: {SMALL['num_requests'] // 4} of {SMALL['num_requests']} requests done)")
    assert all(t["name"].endswith(" (so far)") for t in running["figure"]["data"])
    assert _points(running["figure"]) == _points(parts[0]["figure"])
    so_far = [{**t, "name": t["name"].removesuffix(" (so far)")} for t in running["figure"]["data"]]
    assert so_far != parts[0]["figure"]["data"]  # the same point, on a quarter of the requests
    assert not [p for p in parts if _running(p["figure"])]
    assert len(parts) == POINTS[view]
    assert all(p["ok"] and p["partial"] and set(p) == {"ok", "partial", "figure"} for p in [running, *parts])
    for p in [running, *parts]:
        go.Figure(p["figure"])  # raises on any property plotly does not know
    counts = [sum(_points(p["figure"])) for p in parts]
    assert counts[0] > 0 and all(a < b for a, b in zip(counts, counts[1:], strict=False))  # more each time
    for before, after in zip(parts, parts[1:], strict=False):  # every trace only grows
        assert all(b <= a for b, a in zip(_points(before["figure"]), _points(after["figure"]), strict=True))
    assert parts[-1]["figure"] == json.loads(streamed)["figure"]


def test_a_kept_scenario_and_a_chart_that_does_not_stream_post_nothing():
    session = api.Session()
    params = json.dumps({**SMALL, "view": "goodput"})
    first: list[str] = []
    session.run_json_stream("load_test", params, 0, first.append)
    again: list[str] = []
    assert session.run_json_stream("load_test", params, 0, again.append) == session.run_json("load_test", params)
    assert first and not again  # the kept answer is drawn at once
    other: list[str] = []
    assert session.run_json_stream("kv_cache", "{}", 0, other.append) == api.run_json("kv_cache", "{}")
    assert not other


def test_bad_input_streams_nothing_and_answers_with_the_field():
    posted: list[str] = []
    answer = json.loads(api.Session().run_json_stream("load_test", '{"num_requests": 5}', 0, posted.append))
    assert not answer["ok"] and answer["errors"][0]["field"] == "num_requests"
    assert not posted


def _chosen(figure):
    """The goodput chart's marker of the chosen rate: (x, y) or None when not drawn yet."""
    marks = [t for t in figure["data"] if t["name"].startswith("At the chosen rate")]
    return (marks[0]["x"], marks[0]["y"]) if marks else None


def test_after_new_batch_slots_the_chosen_rate_comes_first_and_is_the_answers_point():
    """New slots need a new ceiling run before any sweep point; the chosen rate's run does not, so
    the first chart shows it, with the same values as the whole answer's chart and key figures."""
    params = {**SMALL, "max_num_seqs": 48, "view": "goodput"}
    posted: list[str] = []
    answer = json.loads(api.Session().run_json_stream("load_test", json.dumps(params), 0, posted.append))
    running, first = (json.loads(p)["figure"] for p in posted[:2])
    assert _running(running) and not _running(first)
    assert _points(first)[:2] == [0, 0]  # no sweep point yet: the ceiling was not needed
    assert _chosen(first) == _chosen(answer["figure"])
    m = answer["metrics"]
    assert _chosen(first) == ([params["rate_per_s"]] * 2, [m["request_throughput_per_s"], m["goodput_per_s"]])


def test_with_the_ceiling_kept_the_sweep_comes_first_and_the_chosen_rate_last():
    """A new rate re-simulates one run (the chosen rate's): the kept sweep points are drawn at once."""
    session = api.Session()
    params = {**SMALL, "view": "goodput"}
    session.run_json_stream("load_test", json.dumps(params), 0)
    posted: list[str] = []
    again = {**params, "rate_per_s": 13}
    answer = json.loads(session.run_json_stream("load_test", json.dumps(again), 0, posted.append))
    parts = [json.loads(p)["figure"] for p in posted]
    assert _points(parts[0])[:2] == [1, 1] and _chosen(parts[0]) is None
    assert [_chosen(f) for f in parts[:-1]] == [None] * (len(parts) - 1)
    assert _chosen(parts[-1]) == _chosen(answer["figure"]) == ([13, 13], _chosen(answer["figure"])[1])
    fresh = json.loads(api.run_json("load_test", json.dumps(again)))
    assert answer == fresh  # the order of the points changes nothing in the answer


@pytest.mark.parametrize("view", [v for v, _ in compare_benchmark.VIEWS])
def test_the_benchmark_comparison_streams_its_sweep_and_answers_as_without(view):
    """compare_benchmark draws GuideLLM's sweep point by point, the ceiling's line last."""
    params = json.dumps({"num_requests": 50, "max_num_seqs": 16, "view": view})
    posted: list[str] = []
    streamed = api.Session().run_json_stream("compare_benchmark", params, 0, posted.append)
    assert streamed == api.run_json("compare_benchmark", params)
    parts = [json.loads(p)["figure"] for p in posted]
    answer = json.loads(streamed)
    assert len(parts) == len(answer["result"]["sim"]) + 1  # each sweep point, then the ceiling
    for before, after in zip(parts, parts[1:], strict=False):
        assert all(b <= a for b, a in zip(_points(before), _points(after), strict=True))
    assert _points(parts[0])[-1] == 0 and _points(parts[-2])[-1] == 0  # the ceiling's line comes last
    assert parts[-1] == answer["figure"]


def test_the_benchmark_comparison_keeps_its_runs_in_the_callers_memo_only():
    """No module-global memo: a session's memo holds the runs (bounded by MEMO_ENTRIES), and a new
    chart or report re-simulates nothing."""
    session = api.Session()
    memo = session.cache.memo("compare_benchmark", compare_benchmark.MEMO_ENTRIES)
    for slots in (8, 9, 10, 11):
        session.run_json("compare_benchmark", json.dumps({"num_requests": 50, "max_num_seqs": slots}))
    assert len(memo) == compare_benchmark.MEMO_ENTRIES  # sweep and ceiling per scenario, the oldest gone
    misses = memo.misses
    session.run_json("compare_benchmark", json.dumps({"num_requests": 50, "max_num_seqs": 11, "view": "itl"}))
    assert memo.misses == misses
    assert not [
        k
        for k, v in vars(compare_benchmark).items()
        if isinstance(v, dict) and k.startswith("_") and not k.startswith("__")
    ]


def _pairs(trace):
    return set(zip(trace.get("x") or [], trace.get("y") or [], strict=True))


@pytest.mark.parametrize(
    ("name", "params"),
    [("load_test", {**SMALL, "view": v}) for v, _ in load_test.VIEWS]
    + [("compare_benchmark", {"num_requests": 50, "max_num_seqs": 16, "view": "ttft"})],
)
def test_every_streamed_point_is_the_answers_point(name, params):
    """What a partial chart shows is never revised: each of its points is, with the same values,
    a point of the same trace in the whole answer's chart (new batch slots, a cold session)."""
    posted: list[str] = []
    answer = json.loads(api.Session().run_json_stream(name, json.dumps(params), 0, posted.append))
    final = {t["name"]: _pairs(t) for t in answer["figure"]["data"]}
    shown = 0
    for part in posted:
        figure = json.loads(part)["figure"]
        if _running(figure):  # a run still going: its own traces, each of one point "so far"
            assert all(t["name"].endswith(" (so far)") and len(_pairs(t)) <= 4 for t in figure["data"])
            continue
        for trace in figure["data"]:
            assert _pairs(trace) <= final[trace["name"]], trace["name"]
            shown += len(_pairs(trace))
    assert shown > 0


@pytest.mark.parametrize(
    ("view", "grows"),
    [
        ("ttft", lambda f: len(f["data"])),  # one group of bars per cache mode, no cache first
        ("hits", lambda f: len(f["data"][0]["x"])),  # one bar per cache
        ("pressure", lambda f: sum(len(t["x"]) for t in f["data"])),  # one point per memory size and cache
    ],
)
def test_the_prefix_cache_charts_stream_and_share_runs_with_run(view, grows):
    """Each chart grows one run at a time; the streamed answer is the plain one; the pressure chart's
    full-memory point has the hit rates of the other charts' runs (the same kept runs); and a kept
    scenario posts nothing."""
    from simulators.sims import prefix_cache

    params = json.dumps({"sharing": "multi_turn", "num_requests": 40, "view": view})
    posted: list[str] = []
    session = api.Session()
    streamed = session.run_json_stream("prefix_cache", params, 0, posted.append)
    assert streamed == api.run_json("prefix_cache", params)
    parts = [json.loads(p)["figure"] for p in posted]
    expected = {"ttft": len(prefix_cache.MODES), "hits": 2, "pressure": 2 * len(prefix_cache.PRESSURE)}[view]
    assert [grows(f) for f in parts] == list(range(1, expected + 1))
    assert parts[-1] == json.loads(streamed)["figure"]
    answer = json.loads(streamed)
    if view == "pressure":
        full = max(answer["result"]["pressure"], key=lambda x: x["GiB"])
        assert (full["hash"], full["radix"]) == (
            answer["metrics"]["hit_rate_hash"],
            answer["metrics"]["hit_rate_radix"],
        )
    again: list[str] = []
    assert session.run_json_stream("prefix_cache", params, 0, again.append) == streamed
    assert not again


def _shown_while_it_goes(posted, n):
    """The charts posted, the first one checked as drawn while the first run goes: a quarter of its
    n requests done (engine.cluster.serve_shown), the title says so and every trace is "(so far)"."""
    running, *parts = [json.loads(p)["figure"] for p in posted]
    go.Figure(running)
    assert running["layout"]["title"]["text"].endswith(f" (simulating: {n // 4} of {n} requests done)")
    assert running["data"] and all(t["name"].endswith(" (so far)") for t in running["data"])
    assert not [f for f in parts if _running(f)]
    return running, parts


@pytest.mark.parametrize(
    ("view", "grows", "count"),
    [
        ("routers", lambda f: len(f["data"][0]["x"]), 5),  # one router after another
        ("balance", lambda f: len(f["data"][0]["x"]), 5),
        ("disagg", lambda f: len(f["data"]), 2),  # colocated, then disaggregated
    ],
)
def test_the_cluster_charts_stream_one_run_at_a_time(view, grows, count):
    """Each run is posted as it ends; the streamed answer is the plain one, and a new split into
    prefill and decode replicas re-serves no router (only the disaggregated run is new)."""
    from simulators.engine.cluster import ROUTERS

    assert len(ROUTERS) == 5
    params = {"num_requests": 40, "num_replicas": 3, "view": view}
    posted: list[str] = []
    session = api.Session()
    streamed = session.run_json_stream("cluster", json.dumps(params), 0, posted.append)
    assert streamed == api.run_json("cluster", json.dumps(params))
    running, parts = _shown_while_it_goes(posted, 40)
    assert grows(running) == 1
    assert [grows(f) for f in parts] == list(range(1, count + 1))
    assert parts[-1] == json.loads(streamed)["figure"]
    again: list[str] = []
    split = json.dumps({**params, "num_prefill": 2})
    assert session.run_json_stream("cluster", split, 0, again.append) == api.run_json("cluster", split)
    assert len(again) == (1 if view == "disagg" else 0)  # kept routers are drawn at once


@pytest.mark.parametrize(
    ("view", "grows", "count"),
    [
        ("time", lambda f: len(f["data"][0]["x"]), 3),  # chat, reasoning, reasoning with speculation
        ("batch", lambda f: len(f["data"]), 2),  # chat's line, then reasoning's
        ("speculation", lambda f: len(f["data"][0]["x"]), 7),  # one point per draft length
    ],
)
def test_the_reasoning_charts_stream_one_run_at_a_time(view, grows, count):
    """Each served trace is posted as it ends, and the chat trace (the time and batch charts' first)
    once while it goes; the streamed answer is the plain one; a kept scenario posts nothing, and the
    speculation sweep reuses run()'s runs at 0 and at the chosen draft length."""
    from simulators.sims import reasoning

    assert len(reasoning.DRAFTS) == 7
    params = json.dumps({"num_requests": 20, "view": view})
    posted: list[str] = []
    session = api.Session()
    streamed = session.run_json_stream("reasoning", params, 0, posted.append)
    assert streamed == api.run_json("reasoning", params)
    if view == "speculation":  # the sweep's points are each a whole run: none is shown half-way
        parts = [json.loads(p)["figure"] for p in posted]
        assert not [f for f in parts if _running(f)]
    else:
        running, parts = _shown_while_it_goes(posted, 20)
        assert grows(running) == 1
    assert [grows(f) for f in parts] == list(range(1, count + 1))
    assert parts[-1] == json.loads(streamed)["figure"]
    again: list[str] = []
    assert session.run_json_stream("reasoning", params, 0, again.append) == streamed and not again
    if view == "time":  # now the sweep needs only the draft lengths run() did not serve (0 and 4 are kept)
        sweep: list[str] = []
        session.run_json_stream("reasoning", json.dumps({"num_requests": 20, "view": "speculation"}), 0, sweep.append)
        assert len(sweep) == len(reasoning.DRAFTS) - 2


@pytest.mark.parametrize(
    ("name", "view", "grows", "count"),
    [
        ("batching", "occupancy", lambda f: len(f["data"]), 2),  # static's two lines, then continuous's
        ("batching", "latency", lambda f: len(f["data"]), 2),  # static's bars, then continuous's
        ("paged_kv", "memory", lambda f: len(f["data"]), 2),  # contiguous's two lines, then paged's
        ("paged_kv", "blocks", lambda f: 0, 0),  # the block tables need no run: nothing to stream
    ],
)
def test_the_two_engine_charts_stream_one_run_at_a_time(name, view, grows, count):
    """Batching (static, then continuous) and paged KV (contiguous, then paged): the first run is
    shown once while it goes, each run is posted as it ends, the streamed answer is the plain one,
    and a kept scenario posts nothing."""
    params = json.dumps({"num_requests": 40, "view": view})
    posted: list[str] = []
    session = api.Session()
    streamed = session.run_json_stream(name, params, 0, posted.append)
    assert streamed == api.run_json(name, params) == api.Session().run_json(name, params)
    if count:
        running, parts = _shown_while_it_goes(posted, 40)
        assert len(parts) == count
        for f in parts:
            go.Figure(f)
        first, last = (grows(f) for f in (parts[0], parts[-1]))
        assert grows(running) == first and 0 < first < last  # the first run's traces, measured so far
        so_far = [{**t, "name": t["name"].removesuffix(" (so far)")} for t in running["data"]]
        assert so_far != parts[0]["data"]  # the same traces, on a quarter of the requests
        assert parts[-1] == json.loads(streamed)["figure"]
    else:
        assert not posted
    again: list[str] = []
    assert session.run_json_stream(name, params, 0, again.append) == streamed and not again
