"""Cheapest deployment for an SLO: the search against brute force over the engine, refusals, chart and table."""

import itertools
import json

import plotly.graph_objects as go
import pytest

from simulators import api, catalog, cheapest, params
from simulators import sizing_search as ss

LLAMA3_8B = catalog.models()["llama-3-8b"]
# A small case to check by hand: two GPU types, at most two GPUs, BF16 only, short fixed requests.
SMALL = {
    "gpus": "l40s, h100-sxm",
    "max_gpus": 2,
    "weight_formats": "bf16",
    "request_rate_per_s": 7.0,
    "prompt_tokens": 1000,
    "output_tokens": 100,
    "ttft_slo_s": 0.3,
    "tpot_slo_s": 0.04,
    "num_requests": 200,
}


def _run(**kw):
    return cheapest.run(params.parse(cheapest.Params, kw))


def _brute_force(kw, q="90"):
    """Every GPU x TP x replica count up to max_gpus that vLLM would start, each served by the
    engine: every one that meets both targets, cheapest first. No bound, no order, no early stop."""
    prices = cheapest.parse_prices("")
    drawn = [(kw["prompt_tokens"], kw["output_tokens"])] * kw["num_requests"]
    met = []
    for gid, tp in itertools.product([g.strip() for g in kw["gpus"].split(",")], (1, 2)):
        lay = ss.Layout(catalog.gpus()[gid], tp, "bf16", prices[gid])
        a = ss.memory(LLAMA3_8B, lay, kw["prompt_tokens"] + kw["output_tokens"])
        if a is None or not a.fits:
            continue
        for r in range(1, kw["max_gpus"] // tp + 1):
            rate = ss.grid_rate(kw["request_rate_per_s"] / r)
            got = ss.engine_run(ss.spec(LLAMA3_8B, lay, a.num_blocks), drawn, rate, 0)
            ttft, tpot = got[f"ttft_s_p{q}"], got[f"tpot_s_p{q}"]
            if ttft <= kw["ttft_slo_s"] and tpot <= kw["tpot_slo_s"] and got["num_dropped"] == 0:
                met.append((r * tp * lay.price_per_gpu_h, gid, tp, r, ttft, tpot))
    return sorted(met)


def test_the_search_finds_what_brute_force_over_the_engine_finds():
    r = _run(**SMALL)
    met = _brute_force(SMALL)
    assert met and r["found"]
    cheapest_cost = met[0][0]
    # here one H100 costs more than two L40S, and one L40S misses: the answer takes two GPUs
    assert cheapest_cost == pytest.approx(2 * cheapest.default_prices()["l40s"])
    top = r["table"][0]
    assert top["usd_per_hour"] == pytest.approx(cheapest_cost)
    ties = [x for x in met if x[0] == pytest.approx(cheapest_cost)]
    shape = (catalog.gpus()[top["gpu_id"]].id, top["tensor_parallel_size"], top["replicas"])
    found = next(x for x in ties if x[1:4] == shape)  # one of the cheapest, with the engine's own figures
    assert (top["ttft_s"], top["tpot_s"]) == pytest.approx(found[4:])
    # $ per million output tokens: the price of an hour over the tokens made in it
    assert top["usd_per_million_output_tokens"] == pytest.approx(cheapest_cost / (3600 * 7.0 * 100) * 1e6)


def test_a_tighter_target_never_makes_the_answer_cheaper_and_brute_force_agrees():
    for tight in ({**SMALL, "tpot_slo_s": 0.03}, {**SMALL, "request_rate_per_s": 12.0, "tpot_slo_s": 0.012}):
        met = _brute_force(tight)
        r = _run(**tight)
        assert met and r["found"]
        assert r["table"][0]["usd_per_hour"] == pytest.approx(met[0][0])
        assert r["table"][0]["usd_per_hour"] >= _run(**SMALL)["table"][0]["usd_per_hour"]


def test_the_capacity_search_finds_the_highest_index_that_meets_from_any_guess():
    for edge in (-3, 0, 5, 17, 40):
        for guess in (-10, 0, 9, 40, 99):
            asked = []

            def meets(k, edge=edge, asked=asked):
                asked.append(k)
                return k <= edge

            found = ss.highest_meeting(meets, guess, -3, 40)
            assert found == edge and all(-3 <= k <= 40 for k in asked)
    assert ss.highest_meeting(lambda k: False, 7, 0, 20) is None


def test_the_table_is_ranked_and_every_row_meets_the_targets():
    r = _run()
    rows = r["table"]
    assert 1 <= len(rows) <= cheapest.TOP
    assert [x["usd_per_hour"] for x in rows] == sorted(x["usd_per_hour"] for x in rows)
    for x in rows:
        assert x["ttft_s"] <= r["ttft_slo_s"] and x["tpot_s"] <= r["tpot_slo_s"]
        assert 0 <= x["headroom"] < 1
        assert x["usd_per_hour"] == pytest.approx(x["num_gpus"] * r["prices_usd_per_hour"][x["gpu_id"]])


@pytest.mark.parametrize(
    ("kw", "field", "words"),
    [
        ({"ttft_slo_s": 0.001}, "ttft_slo_s", "cannot be met"),
        ({"tpot_slo_s": 0.0001}, "tpot_slo_s", "cannot be met"),
        ({"model": "llama-3.1-405b", "max_gpus": 2}, "max_gpus", "does not fit"),
        ({"prices": "h100-sxm=abc"}, "prices", "id=USD per hour"),
        ({"prices": "nope=1"}, "prices", "unknown GPU"),
        ({"gpus": "t4"}, "prices", "has a price"),
        ({"gpus": "h100-sxm, warp-drive"}, "gpus", "unknown GPU"),
    ],
)
def test_impossible_inputs_are_field_errors(kw, field, words):
    answer = api.run("cheapest", kw)
    assert not answer["ok"]
    (error,) = answer["errors"]
    assert error["field"] == field and words in error["message"]


def test_a_reader_price_replaces_the_default_and_changes_the_ranking():
    cheap_h100 = _run(**{**SMALL, "prices": "h100-sxm=0.01"})
    assert "h100-sxm" in cheap_h100["table"][0]["config"]
    assert cheap_h100["prices_usd_per_hour"]["h100-sxm"] == 0.01


def test_the_price_table_cites_its_source():
    from simulators.catalog import _load

    table = _load("gpu_prices.toml")
    assert "runpod" in table["source"]
    for gid, row in table.items():
        if isinstance(row, dict):
            assert gid in catalog.gpus() and row["usd_per_hour"] > 0 and row["offer"]


def test_grid_rates_round_up_by_at_most_one_step():
    for rate in (0.37, 1.0, 6.0, 19.99, 250.0):
        g = ss.grid_rate(rate)
        assert rate <= g < rate * 2 ** (1 / ss.GRID_PER_OCTAVE) * (1 + 1e-9)


@pytest.mark.parametrize("view", [v for v, _ in cheapest.VIEWS])
def test_charts_render_and_summaries_list_the_table(view):
    answer = api.run("cheapest", {**SMALL, "view": view})
    assert answer["ok"]
    go.Figure(answer["figure"])  # plotly validates every trace and layout key
    assert answer["summary"].count("USD") >= 2 * len(answer["result"]["table"])
    json.dumps(answer)


def test_cli_prints_the_ranked_table(capsys):
    from simulators.__main__ import main

    assert main(["run", "cheapest", "--set", "request_rate_per_s=5"]) == 0
    out = capsys.readouterr().out
    assert "usd_per_hour" in out and "1. " in out


def test_the_answer_does_not_depend_on_what_the_memo_already_holds():
    session = api.Session()
    for kw in ({"request_rate_per_s": 19.0}, {"ttft_slo_s": 0.4}, {"tpot_slo_s": 0.045}, {"request_rate_per_s": 23.0}):
        session.run_json("cheapest", json.dumps(kw))
    for kw in ({}, {"request_rate_per_s": 21.0}):
        assert session.run_json("cheapest", json.dumps(kw)) == api.run_json("cheapest", json.dumps(kw))
