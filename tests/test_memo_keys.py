"""A session's memo never answers one scenario with another's runs: everything that prices a step
(the engine profile, the GPU layout) keys the kept runs. Found by the browser parity test: after
the default load test, `engine=llamacpp` was answered from the vLLM runs kept in the session."""

import json

import pytest

from simulators import api

CASES = [
    ("load_test", {"num_requests": 200}, {"engine": "llamacpp"}),
    ("load_test", {"num_requests": 200}, {"tensor_parallel_size": 2}),
    ("compare_benchmark", {"num_requests": 100}, {"engine": "sglang"}),
    ("cluster", {"num_requests": 60}, {"engine": "trtllm"}),
    ("batching", {"num_requests": 100}, {"engine": "llamacpp"}),
    ("prefix_cache", {"num_requests": 100}, {"engine": "llamacpp"}),
]


@pytest.mark.parametrize(("name", "base", "change"), CASES, ids=[f"{c[0]}-{next(iter(c[2]))}" for c in CASES])
def test_a_session_answers_a_changed_scenario_as_a_fresh_run_does(name, base, change):
    session = api.Session()
    session.run_json(name, json.dumps(base))  # the page's scenario, kept
    kept = session.run_json(name, json.dumps({**base, **change}))
    fresh = api.run_json(name, json.dumps({**base, **change}))
    assert json.loads(kept)["ok"] and kept == fresh
