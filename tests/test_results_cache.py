"""The results cache: bounded, least recently used first out, and invisible in the answers.

A chart switch in the browser asks the worker's api.Session for the same scenario with another
`view`: the session draws its kept result again. These tests check that such answers are
byte-for-byte the answers of a fresh, cache-less run, for every simulator and every chart.
"""

import json

import pytest

from simulators import api
from simulators.results_cache import LruCache, ResultsCache


def _views(name):
    field = next((p for p in api.schema(name)["params"] if p["name"] == "view"), None)
    return [None] if field is None else [c["value"] for c in field["choices"]]


def test_the_least_recently_used_entry_goes_first_and_the_bound_holds():
    cache = LruCache(2)
    made = []
    for key in ("a", "b", "a", "c", "b"):  # "a" used again, so "c" pushes out "b"; "b" is made again
        cache.get_or_make(key, lambda key=key: made.append(key) or key.upper())
    assert made == ["a", "b", "c", "b"]
    assert len(cache) == 2 and "b" in cache and "c" in cache and "a" not in cache
    assert (cache.hits, cache.misses) == (1, 4)
    with pytest.raises(ValueError, match="at least 1"):
        LruCache(0)


def test_a_session_keeps_at_most_its_bound_of_results():
    session = api.Session(max_results=2)
    for tokens in (1024, 2048, 4096):
        assert session.run("kv_cache", {"context_tokens": tokens})["ok"]
    assert len(session.results) == 2
    session.run("kv_cache", {"context_tokens": 1024})  # pushed out: simulated again
    assert (session.results.hits, session.results.misses) == (0, 4)
    session.cache.clear()
    assert len(session.results) == 0


@pytest.mark.parametrize("name", sorted(api.SIMULATORS))
def test_every_chart_from_a_session_is_byte_identical_to_a_fresh_run(name):
    session = api.Session()
    views = _views(name)
    for seed in (0, 1):
        for view in views + views[:1]:  # each chart, then the first again (answered from the cache)
            params = json.dumps({} if view is None else {"view": view})
            assert session.run_json(name, params, seed) == api.run_json(name, params, seed)
    # One answer per seed and chart; the first chart again was drawn from the kept answer.
    assert session.results.misses == 2 * len(views)
    assert session.results.hits == 2


@pytest.mark.parametrize(
    ("name", "params", "first", "then"),
    [
        ("batching", {"num_requests": 40}, "occupancy", "latency"),
        ("paged_kv", {"num_requests": 40}, "memory", "blocks"),
        ("reasoning", {"num_requests": 20}, "time", "batch"),
        ("prefix_cache", {"num_requests": 40}, "ttft", "hits"),
        ("cluster", {"num_requests": 40, "num_replicas": 3}, "routers", "disagg"),
        ("load_test", {"num_requests": 60}, "knee", "percentiles"),
    ],
)
def test_a_chart_switch_runs_nothing_again(name, params, first, then):
    """The same scenario, another chart: run() answers for that chart, and every run it needs comes
    from the session's keep (no new entry, only hits)."""
    session = api.Session()
    session.run_json(name, json.dumps({**params, "view": first}))
    work = session.cache.memo(name, api.SIMULATORS[name].MEMO_ENTRIES)
    made, hits = work.misses, work.hits
    again = session.run_json(name, json.dumps({**params, "view": then}))
    assert again == api.run_json(name, json.dumps({**params, "view": then}))
    assert work.misses == made and work.hits > hits


@pytest.mark.parametrize(
    ("name", "params", "unrelated", "seed", "reused"),
    [
        # The batch and the format leave quantization's demo (its errors) alone.
        ("quantization", {"view": "demo", "num_outliers": 5}, {"batch_size": 64, "weight_dtype": "fp8"}, 3, 1),
        # The batch and the layout leave both of sparsity's demo scores alone.
        ("sparsity", {"view": "demo", "sparsity": 0.7}, {"batch_size": 64, "unstructured_layout": "csr"}, 2, 2),
    ],
)
def test_an_unrelated_control_reuses_the_kept_work_and_changes_nothing(name, params, unrelated, seed, reused):
    a, b = params, {**params, **unrelated}
    fresh_a, fresh_b = (api.run_json(name, json.dumps(x), seed) for x in (a, b))  # nothing kept
    session = api.Session()
    assert session.run_json(name, json.dumps(a), seed) == fresh_a
    work = session.cache.memo(name, api.SIMULATORS[name].MEMO_ENTRIES)
    hits = work.hits
    assert session.run_json(name, json.dumps(b), seed) == fresh_b
    assert work.hits == hits + reused


@pytest.mark.parametrize("name", sorted(api.SIMULATORS))
def test_a_session_answers_a_kept_scenario_again_without_simulating(name):
    session = api.Session()
    for view in _views(name):
        answer = api.run_json(name, "{}", 0, view)  # nothing kept
        assert session.run_json(name, "{}", 0, view) == answer == session.run_json(name, "{}", 0, view)
    assert session.results.misses == len(_views(name))
    bad = json.loads(session.run_json(name, '{"no_such_parameter": 1}'))
    assert bad["ok"] is False and bad["errors"][0]["field"] == "no_such_parameter"


def test_the_view_argument_and_a_view_key_among_the_parameters_pick_the_same_chart():
    by_key = api.run_json("gpu_memory", '{"view": "roofline"}')
    assert by_key == api.run_json("gpu_memory", "{}", 0, "roofline")
    assert by_key != api.run_json("gpu_memory", "{}")


def test_an_unknown_chart_is_a_field_error():
    answer = json.loads(api.run_json("gpu_memory", '{"view": "pie"}'))
    assert answer["ok"] is False
    assert answer["errors"] == [{"field": "view", "message": "unknown chart 'pie'; choose one of: fit, roofline"}]
    one_chart = json.loads(api.run_json("evaluation", "{}", 0, "fit"))
    assert one_chart["errors"] == [{"field": "view", "message": "this simulator draws one chart: leave out 'view'"}]


def test_results_are_keyed_by_simulator_parameters_and_seed():
    cache = ResultsCache()
    session = api.Session()
    session.cache = cache
    session.run("kv_cache", {"context_tokens": 1024})
    session.run("kv_cache", {"context_tokens": 1024}, seed=1)  # another seed
    session.run("kv_cache", {"context_tokens": 1024.0})  # the same parameters once parsed
    session.run("gpu_memory", {})  # another simulator
    assert (cache.results.hits, cache.results.misses) == (1, 3)
