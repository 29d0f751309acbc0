"""Charts that stream: a sweep drawn point by point while the worker computes it.

api.Session.run_json_stream posts each growing chart before the answer (the browser worker's
"partial" messages). These tests check that streaming changes nothing in the answer, that each
partial chart is a valid plotly figure that only adds points, and that the last partial chart is
the answer's chart.
"""

import json

import plotly.graph_objects as go
import pytest

from simulators import api, load_test

SMALL = {"num_requests": 60, "rate_per_s": 12, "users": 16}
# Points each swept chart gets: closed loop (knee) + open loop (+ the other lengths' open loop).
POINTS = {
    "knee": len(load_test.USERS) + len(load_test.FRACTIONS),
    "goodput": len(load_test.FRACTIONS),
    "lengths": 2 * len(load_test.FRACTIONS),
    "percentiles": 1,  # run()'s chart, from the run at the chosen rate alone, before the ceiling
}


def _points(figure):
    return [len(trace.get("x") or []) for trace in figure["data"]]


@pytest.mark.parametrize("view", [v for v, _ in load_test.VIEWS])
def test_a_streamed_answer_is_the_plain_answer_and_its_last_partial_is_its_chart(view):
    params = json.dumps({**SMALL, "view": view})
    posted = []
    streamed = api.Session().run_json_stream("load_test", params, 0, posted.append)
    assert streamed == api.run_json("load_test", params) == api.Session().run_json("load_test", params)
    parts = [json.loads(p) for p in posted]
    assert len(parts) == POINTS[view]
    assert all(p["ok"] and p["partial"] and set(p) == {"ok", "partial", "figure"} for p in parts)
    for p in parts:
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
