"""Cheapest deployment for an SLO: the search against brute force over the engine, refusals, chart and table."""

import json

import plotly.graph_objects as go
import pytest

from simulators import api, params
from simulators.benchmark import sizing_search as ss
from simulators.core import catalog
from simulators.sims import cheapest, result

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
    return result(cheapest.run(params.parse(cheapest.Params, kw)))


def _brute_force(kw):
    """Every layout of the search space (sizing_search.shapes: TP x PP, and DP + EP for a mixture of
    experts, on every GPU and format allowed) that vLLM would start, each at 1, 2, ... replicas up to
    max_gpus, served by the engine: each layout's fewest replicas that meet both targets with the
    rate per replica below its bound (the definition of meeting), all such configurations by
    (price, name). No pruning, no order of search, no early stop, no monotonicity assumed."""
    p = params.parse(cheapest.Params, kw)
    m = catalog.resolve_model(p.model)
    prices = cheapest.parse_prices(p.prices)
    drawn = [(p.prompt_tokens, p.output_tokens)] * p.num_requests
    met = []
    for gpu in cheapest.allowed_gpus(p.gpus, prices):
        for dtype in ss.weight_formats(gpu, p.weight_formats):
            for tp, pp, dp, ep in ss.shapes(m, p.max_gpus):
                lay = ss.Layout(gpu, tp, dtype, prices[gpu.id], pp, dp, ep)
                a = ss.memory(m, lay, p.prompt_tokens + p.output_tokens)
                if cheapest._unusable(m, lay) or a is None or not a.fits:
                    continue
                b = ss.bounds(m, lay, a, drawn)
                for r in range(1, p.max_gpus // lay.num_gpus + 1):
                    rate = ss.grid_rate(p.request_rate_per_s / r)
                    got = ss.engine_run(b.engine, drawn, rate, 0)
                    v = ss.verdict(got, p.percentile, p.ttft_slo_s, p.tpot_slo_s)
                    if rate < b.rate_bound_per_s and v["meets"]:
                        name = ss.config_name(lay, r)
                        met.append(
                            (r * lay.num_gpus * lay.price_per_gpu_h, name, gpu.id, tp, r, v["ttft_s"], v["tpot_s"])
                        )
                        break
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
    found = next(x for x in met if x[1] == top["config"])  # the same configuration, the engine's own figures
    assert found[0] == pytest.approx(cheapest_cost)
    assert (top["ttft_s"], top["tpot_s"]) == pytest.approx(found[5:])
    # $ per million output tokens: the price of an hour over the tokens made in it
    assert top["usd_per_million_output_tokens"] == pytest.approx(cheapest_cost / (3600 * 7.0 * 100) * 1e6)


def test_a_tighter_target_never_makes_the_answer_cheaper_and_brute_force_agrees():
    for tight in ({**SMALL, "tpot_slo_s": 0.03}, {**SMALL, "request_rate_per_s": 12.0, "tpot_slo_s": 0.012}):
        met = _brute_force(tight)
        r = _run(**tight)
        assert met and r["found"]
        assert r["table"][0]["usd_per_hour"] == pytest.approx(met[0][0])
        assert r["table"][0]["usd_per_hour"] >= _run(**SMALL)["table"][0]["usd_per_hour"]


CASES = {
    "dense, PP and TP on 4 GPUs": {**SMALL, "max_gpus": 4},
    "dense, tight ITL": {**SMALL, "max_gpus": 4, "request_rate_per_s": 12.0, "tpot_slo_s": 0.012},
    "MoE with DP + EP and fp8": {**SMALL, "model": "qwen3-30b-a3b", "max_gpus": 4, "weight_formats": "bf16,fp8",
                                "request_rate_per_s": 10.0, "tpot_slo_s": 0.03},
    "70B over 8 GPUs": {**SMALL, "model": "llama-3.1-70b", "max_gpus": 8, "weight_formats": "bf16,fp8",
                        "request_rate_per_s": 2.0, "ttft_slo_s": 1.0, "tpot_slo_s": 0.1},
}  # fmt: skip


@pytest.mark.parametrize("kw", CASES.values(), ids=CASES.keys())
def test_the_table_is_the_three_cheapest_layouts_brute_force_finds(kw):
    # Rows 2 and 3 too: the search stops only when no unconfirmed layout can sort before its last row.
    met = _brute_force(kw)
    r = _run(**kw)
    assert len(met) >= cheapest.TOP
    expected = {name: found for found in met[: cheapest.TOP] for name in [found[1]]}
    assert sorted(x["config"] for x in r["table"]) == sorted(expected)
    for x in r["table"]:
        assert (x["usd_per_hour"], x["ttft_s"], x["tpot_s"]) == pytest.approx(
            (expected[x["config"]][0], *expected[x["config"]][5:])
        )
    # By price, and at one price the most headroom first (learner review: a strictly worse row ranked above)
    order = [(x["usd_per_hour"], -x["headroom"]) for x in r["table"]]
    assert order == sorted(order)


def test_the_search_space_holds_pipelines_and_for_moe_dp_with_ep():
    dense = ss.shapes(catalog.models()["llama-3.1-70b"], 8)
    assert (2, 4, 1, False) in dense and (8, 1, 1, False) in dense and (1, 8, 1, False) in dense
    assert all(tp * pp * dp <= 8 and dp == 1 for tp, pp, dp, _ in dense)
    moe = ss.shapes(catalog.models()["mixtral-8x7b"], 8)
    assert (1, 1, 8, True) in moe and (2, 1, 4, True) in moe and len(moe) == len(dense) + 6
    assert ss.shapes(catalog.models()["llama-3.1-70b"], 64) == dense  # a replica is one node


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
    assert cheap_h100["table"][0]["gpu_id"] == "h100-sxm"
    assert cheap_h100["prices_usd_per_hour"]["h100-sxm"] == 0.01


def test_the_price_table_cites_its_source():
    from simulators.core.catalog import data_file

    table = data_file("gpu_prices.toml")
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


def test_answers_from_earlier_runs_agree_with_a_fresh_search():
    # One memo across rate and target changes, as on the page: verdicts taken from earlier runs
    # (a miss at a lower rate per replica, a meet at a higher one) give the table a search with
    # no memo gives.
    from simulators.results_cache import LruCache

    memo = LruCache(cheapest.MEMO_ENTRIES)
    base = {**SMALL, "max_gpus": 4}
    for change in ({}, {"request_rate_per_s": 10.0}, {"request_rate_per_s": 4.0}, {"request_rate_per_s": 12.0},
                   {"tpot_slo_s": 0.03}, {"request_rate_per_s": 6.0, "tpot_slo_s": 0.03}):  # fmt: skip
        p = params.parse(cheapest.Params, {**base, **change})
        shared, fresh = result(cheapest.run(p, keep=memo.get_or_make)), result(cheapest.run(p))
        assert shared["table"] == fresh["table"]


@pytest.mark.parametrize("view", [v for v, _ in cheapest.VIEWS])
def test_the_streamed_search_shows_bounds_first_and_answers_as_the_plain_search(view):
    """The page draws the search as it goes (api's partial charts): the first chart comes before the
    engine runs, with the lower bounds of the layouts next in line; the answer is unchanged."""
    kw = {**SMALL, "view": view}
    posted: list[str] = []
    streamed = api.Session().run_json_stream("cheapest", json.dumps(kw), 0, posted.append)
    assert streamed == api.run_json("cheapest", json.dumps(kw))
    parts = [json.loads(p)["figure"] for p in posted]
    assert parts, "the search posts its progress"
    for figure in parts:
        go.Figure(figure)
        assert "searching" in figure["layout"]["title"]["text"]
    plain = _run(**SMALL)
    # Before any layout is confirmed: nothing found yet, and (cost view) the cheapest bounds, each at
    # most the price of the configuration the engine then confirmed for the same layout.
    first = parts[0]["data"]
    if view == "cost":
        assert first[0]["x"] == [] and first[1]["x"]
        bound_of = dict(zip(first[1]["customdata"], first[1]["x"], strict=True))
        assert min(bound_of.values()) <= plain["table"][0]["usd_per_hour"]
        layouts_left = [int(f["layout"]["title"]["text"].split("(")[1].split()[0]) for f in parts]
        assert layouts_left == sorted(layouts_left, reverse=True) and len(set(layouts_left)) == len(parts)
    else:
        assert first[0]["x"] == [] and first[1]["x"] == [SMALL["tpot_slo_s"] * 1e3]


def test_a_search_with_no_candidate_posts_nothing():
    posted: list[str] = []
    kw = {**SMALL, "max_gpus": 1, "request_rate_per_s": 500.0}
    answer = json.loads(api.Session().run_json_stream("cheapest", json.dumps(kw), 0, posted.append))
    assert answer["ok"] and not answer["result"]["found"] and not posted


@pytest.mark.parametrize(
    ("gpu", "why", "said"),
    [
        # The A10G's vendor publishes no tensor rate: its prefill could only be priced as a memory-only
        # floor, which would win the search on missing data (review 2026-12-03, B-02).
        ("a10g", "dense_bf16_tflops", "Skipped: NVIDIA A10G (AWS G5) has no published dense_bf16_tflops"),
        # The search prices every layout with vLLM, which does not run on Apple silicon (Metal): the
        # M2 Ultra is never priced with a CUDA profile.
        ("m2-ultra", "does not run on Apple M2 Ultra", "does not run on Apple M2 Ultra"),
    ],
)
def test_a_gpu_the_search_cannot_price_is_skipped_and_named_never_ranked(gpu: str, why: str, said: str) -> None:
    """Given a price, the GPU is left out with its reason named, and the search ranks what it can price."""
    r = _run(**{**SMALL, "gpus": f"{gpu}, l40s", "prices": f"{gpu}=0.5, l40s=1.0"})
    assert all(gpu not in row["config"] for row in r["table"]) and r["found"]
    skipped = [x for x in r["pruned"] if x["config"].startswith(gpu)]
    assert skipped and all(why in x["why"] for x in skipped)
    assert said in cheapest.summary(r, "cost")


def test_every_gpu_the_default_search_ranks_has_its_compute_roof():
    r = _run()
    gpus = catalog.gpus()
    for row in r["table"]:
        gpu = gpus[row["gpu_id"]]
        assert gpu.peak_tflops("bf16") is not None, row["config"]


def test_gpus_without_a_price_are_named_as_not_searched():
    """Review C-6: a GPU without a price was left out of the search silently."""
    r = _run(**{**SMALL, "gpus": "l40s, h100-sxm, t4"})
    assert {"config": "t4", "why": cheapest.NO_PRICE} in r["pruned"]
    assert "Not searched, no price: t4" in cheapest.summary(r, "cost")


def test_the_summary_says_why_layouts_were_left_out_counted_by_reason():
    """Tool review: "43 layouts were left out." said neither why nor which."""
    from simulators.sims.cheapest_view import _left_out

    pruned = [
        {"config": "a", "why": "misses the targets on up to 8 GPUs at this rate"},
        {"config": "b", "why": "misses the targets on up to 8 GPUs at this rate"},
        {"config": "c", "why": "the rate needs at least 16 GPUs (a replica serves under 5.88 req/s)"},
        {"config": "d", "why": "its TTFT floor, 712 ms, is over the target"},
        {"config": "e", "why": "skipped: no price (gpu_prices.toml, or Your prices)"},
        {"config": "f", "why": "GPUs of this kind link at most 4 to a node"},
    ]
    told = _left_out(pruned)
    assert told == (
        " 5 layouts were left out: 2 missing the targets on the engine, 1 needing more GPUs than the limit for "
        "this rate (on paper), 1 missing a target on their floors alone (on paper), 1 for other reasons."
    )
    assert (
        _left_out(pruned[:1]) == " 1 layout was left out: 1 missing the targets on the engine."
        and _left_out(pruned[4:5]) == ""
    )
    # The reasons the search gives are the ones REASONS reads (a reworded one would fall to "other reasons")
    from simulators.sims.cheapest_view import REASONS

    for model in ("llama-3-8b", "llama-3.1-70b"):
        whys = [x["why"] for x in api.run("cheapest", {"model": model})["result"]["pruned"]]
        assert all(w.startswith(("skipped: ", *REASONS)) for w in whys), whys


@pytest.mark.parametrize("kw", [{}, {"max_gpus": 1}, {"gpus": "h100-sxm"}])
def test_the_summary_accounts_for_every_layout_the_key_figures_count(kw):
    """Learner review: "140 layouts vLLM would start" and "39 confirmed" sat beside three rows, unexplained.
    The summary's counts are recounted here from the reasons the search gives each layout it left out."""
    answer = api.run("cheapest", kw)
    r, m = answer["result"], answer["metrics"]
    floors = ("the rate needs at least", "its TTFT floor", "its ITL floor")
    paper = sum(x["why"].startswith(floors) for x in r["pruned"])
    missed = sum(x["why"].startswith("misses the targets on up to") for x in r["pruned"])
    rows, ran, started = len(r["table"]), int(m["layouts_confirmed"]), int(m["layouts_tried"])
    told = answer["summary"]
    assert f"Of the {started} layouts vLLM would start, " in told
    assert (f"{paper} miss a target on paper" in told) == (paper > 0)
    assert f"the engine ran {ran}" in told and f"{rows} are the rows above" in told
    assert (f"{missed} miss the targets on every GPU count allowed" in told) == (missed > 0)
    dearer, unrun = ran - rows - missed, started - paper - ran
    assert dearer >= 0 and unrun >= 0
    assert (f"{dearer} could not meet them for less than row {rows}" in told) == (dearer > 0)
    assert (f"the other {unrun} were never run" in told) == (unrun > 0)


@pytest.mark.parametrize(
    "kw", [{}, {"max_gpus": 1}, {"gpus": "h100-sxm"}, {"gpus": "b200", "max_gpus": 1, "weight_formats": "bf16"}]
)
def test_the_summary_says_why_row_1_leads_and_names_gpus_as_the_catalogue_does(kw):
    """Learner review: a 4 x L40S pipeline came first unexplained, and rows named GPUs by catalogue id
    ("4 x l40s"). Every row meets both targets, so the price alone ranks them: the summary says so, with
    row 1's price per GPU and the roomiest dearer row, recomputed here from the table."""
    answer = api.run("cheapest", kw)
    rows, told = answer["result"]["table"], answer["summary"]
    top, n = rows[0], rows[0]["num_gpus"]
    assert top["config"].startswith(f"{n} x {catalog.gpus()[top['gpu_id']].name.split(' (')[0]} (")
    each = (
        f"{n} GPUs at USD {top['usd_per_hour'] / n:,.2f}/h each"
        if n > 1
        else f"1 GPU at USD {top['usd_per_hour']:,.2f}/h"
    )
    if len(rows) == 1:
        assert f"It is the only layout found that meets both targets: {each}." in told
        assert ("vLLM would start no other layout here." in told) == (answer["metrics"]["layouts_tried"] == 1)
        return
    assert f"Every row meets both targets, so price alone ranks them: row 1 is {each}" in told
    roomier = [(k, x) for k, x in enumerate(rows[1:], 2) if x["headroom"] > top["headroom"]]
    if roomier:
        k, x = max(roomier, key=lambda kx: kx[1]["headroom"])
        extra = x["usd_per_hour"] - top["usd_per_hour"]
        said = f"for USD {extra:,.2f}/h more" if extra > 0.005 else "at the same price"
        assert f"row {k} leaves more headroom ({x['headroom']:.0%} against {top['headroom']:.0%}) {said}" in told
    else:
        assert "leaves more headroom" not in told


def test_a_pipeline_floor_is_one_pass_and_is_called_a_floor():
    """Learner review: "TP1 PP4: a prefill alone takes 15 ms" read as a pipeline cutting one prompt's
    latency by four. It does not: the prompt's micro-batch crosses every stage in turn, so a
    pipeline's TTFT floor is its one GPU's pass, and the summary calls it a floor."""
    answer = api.run("cheapest", {"gpus": "h100-sxm", "ttft_slo_s": 0.02})
    told, pruned = answer["summary"], answer["result"]["pruned"]
    assert not answer["result"]["table"] and "a prefill alone" not in told
    floor = {x["config"]: x["why"] for x in pruned if x["why"].startswith("its TTFT floor, ")}
    for tp in (1, 2, 4):  # the same milliseconds as the layout without a pipeline, whatever the stages
        alone = floor[f"h100-sxm TP{tp} bf16"]
        piped = [floor[f"h100-sxm TP{tp} PP{pp} bf16"] for pp in (2, 4, 8) if tp * pp <= 8]
        assert piped and piped == [alone] * len(piped)
    assert "a floor bounds every request from below, at any load" in told
