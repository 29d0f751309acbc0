"""`published`: a row's conditions as parameters, the validation's own prediction of them."""

import pytest

from simulators import api
from simulators.benchmark import served_benchmarks as sb
from simulators.benchmark import validation
from simulators.core import efficiency as ef
from simulators.params import parse
from simulators.sims import published


def test_the_parameters_are_the_row_the_validation_reads():
    # 2 replicas of TP 4: an 8-GPU system; 0 caps are left unstated; one static batch of the KV fit
    row = {"quantity": "offline_output_tokens_per_s", "arrival": "offline", "static_batch": True, "batch_fit": True}
    p = parse(published.Params, {"tensor_parallel_size": 4, "replicas": 2, **row})
    e = published.conditions(p)
    assert (e["tp"], e["num_gpus"], e["requests"], e["batch_size"]) == (4, 8, "batch", "fit")
    assert not {"max_input_tokens", "max_total_tokens", "max_num_seqs", "max_num_batched_tokens"} & set(e)


def test_a_latency_batch_is_the_validation_rows_figure():
    # vLLM's CI latency row: 8 requests of 32 in and 128 out started together, mean end-to-end seconds
    row = next(e for e in validation.measurements() if e["id"] == "vllm-ci-latency-llama31-8b-h200-b8")
    params = {"gpu": "h200", "input_tokens": 32, "output_tokens": 128, "batch_size": 8}
    got = api.run("published", params)["metrics"]["predicted"]
    assert got == validation.PREDICTIONS["batch_latency_s"](row, ef.profile("vllm"))


def test_a_figure_its_arrival_does_not_report_and_lengths_over_the_caps_are_field_errors():
    wrong = api.run("published", {"quantity": "median_tpot_ms", "arrival": "offline"})
    assert [x["field"] for x in wrong["errors"]] == ["arrival"]
    # ShareGPT's filter drops prompts over 1,024 tokens: a mean of 1,024 cannot be drawn
    over = api.run("published", {"lengths": "sharegpt", "input_tokens": sb.LENGTHS["sharegpt"]["max_input"]})
    assert [x["field"] for x in over["errors"]] == ["input_tokens"]
    # a batch's latency is for a stated batch: the KV fit is a field error, not the engine's ValueError
    fit = api.run("published", {"batch_fit": True})
    assert [x["field"] for x in fit["errors"]] == ["batch_fit"]


def test_units_follow_the_quantitys_name():
    got = [published.unit(q) for q in ("decode_tokens_per_s", "median_ttft_ms", "batch_latency_s", "params_B")]
    assert got == ["tokens/s", "ms", "s", "billion"]
    assert published.unit("kv_GiB_per_sequence") == published.unit("weight_GiB") == "GiB"


def test_a_step_quantity_with_the_batch_the_kv_cache_holds_prices_that_batch():
    # batch_fit stated the batch as "fit" and the step quantities read it as a number: a crash
    # (int("fit")) where every other quantity prices the KV cache's capacity in whole sequences.
    fit = {"batch_fit": True, "context_tokens": 1024}
    step = api.run("published", {"quantity": "decode_step_ms", **fit})
    rate = api.run("published", {"quantity": "decode_tokens_per_s", **fit})
    assert step["ok"] and rate["ok"]
    # tokens/s x seconds per step = tokens per step = the batch, a whole number of sequences
    batch = rate["metrics"]["predicted"] * step["metrics"]["predicted"] / 1e3
    assert batch == pytest.approx(round(batch)) and round(batch) > 8
    stated = api.run("published", {"quantity": "decode_step_ms", "context_tokens": 1024, "batch_size": round(batch)})
    assert stated["metrics"]["predicted"] == pytest.approx(step["metrics"]["predicted"])
    prefill = api.run("published", {"quantity": "prefill_ms", **fit})
    stated = api.run("published", {"quantity": "prefill_ms", "context_tokens": 1024, "batch_size": round(batch)})
    assert prefill["ok"] and prefill["metrics"]["predicted"] == pytest.approx(stated["metrics"]["predicted"])


def test_a_run_whose_every_request_is_too_long_for_the_kv_cache_is_a_field_error():
    # Llama-2-7B in BF16 fills about 13 of an RTX 4090's 24 GB; one 76,778-token request needs about
    # 76,778 x 0.5 MiB = 37.5 GiB of KV cache, so the engine serves none of the batch. Every
    # statistic of an empty run divided by zero (a crash); the reader now gets the reason instead.
    out = api.run("published", {"model": "llama-2-7b", "gpu": "rtx-4090", "input_tokens": 76_650})
    assert not out["ok"]
    assert [e["field"] for e in out["errors"]] == ["input_tokens"]
    assert "none of the 8 requests could be served: one of 76,778 tokens" in out["errors"][0]["message"]
    # The same server with requests that fit answers.
    assert api.run("published", {"model": "llama-2-7b", "gpu": "rtx-4090", "input_tokens": 1024})["ok"]
