"""vLLM's memory accounting against vLLM's own start-up logs (measurements.toml [[vllm_log]])."""

import pytest

from simulators.benchmark import vllm_validation
from simulators.core import catalog


def test_enough_logged_start_ups_covering_each_feature():
    entries = vllm_validation.logs()
    assert len(entries) >= 15
    assert {e["tensor_parallel_size"] for e in entries} >= {1, 2, 4}
    assert any(e["pipeline_parallel_size"] > 1 for e in entries)
    assert any(e["kv_cache_dtype"] == "fp8" for e in entries)
    kinds = [catalog.models()[e["model"]] for e in entries]
    assert any(m.is_moe for m in kinds) and any(m.kv_lora_rank for m in kinds)
    assert any("sliding" in m.kinds for m in kinds)
    # Every row links its log, except a public file the search index found without naming its
    # repository: that row says so and quotes the file's title and index id instead.
    unlinked = [e for e in entries if not e["source"].startswith("https://")]
    assert all("index file id" in e["source"] and e["split"] == "held_out" for e in unlinked)
    assert len(unlinked) <= 1


def test_predicted_kv_tokens_match_the_logs():
    # The target of issue 15: median |error| <= 3%, none over 10%, on the rows the constants were
    # fitted to (calibration).
    s = vllm_validation.summary("calibration")
    assert s["median_abs_error"] <= 0.03
    assert s["within_10_percent"] == s["points"]
    # The held-out rows were never used to set a constant; none may be off by more than 10%.
    # Their median (8.0% on five start-ups: four Qwen3-14B, two of them releases that profile a
    # larger activation peak, and Qwen3-235B on 8x L40S with expert parallelism at -9.0%) is
    # reported, not asserted to meet the 3% target.
    held = vllm_validation.summary("held_out")
    assert held["points"] >= 5 and held["within_10_percent"] == held["points"]


def test_every_row_names_its_split_and_both_sets_are_shown():
    entries = vllm_validation.logs()
    assert {e["split"] for e in entries} == {"calibration", "held_out"}
    # Calibration is exactly the v0.19.0 sweep the [vllm_memory] constants were fitted to.
    assert all(e["vllm_version"] == "0.19.0" for e in entries if e["split"] == "calibration")
    held = [e for e in entries if e["split"] == "held_out"]
    assert not {e["model"] for e in held} & {e["model"] for e in entries if e["split"] == "calibration"}
    text = vllm_validation.render_markdown()
    assert "**Calibration" in text and "**Held out" in text


@pytest.mark.parametrize("row", vllm_validation.rows(), ids=lambda r: r.id)
def test_concurrency_follows_the_token_count(row):
    # Both lines come from the same block count: their errors agree to a fraction of a percent.
    conc_error = (row.predicted_concurrency - row.logged_concurrency) / row.logged_concurrency
    assert conc_error == pytest.approx(row.error, abs=0.006)


def test_the_table_renders_every_row():
    text = vllm_validation.render_markdown()
    linked = [e for e in vllm_validation.logs() if e["source"].startswith("https://")]
    assert text.count("| [log](https://") == len(linked)
    assert text.count("public file, no address") == len(vllm_validation.logs()) - len(linked)
    assert text.count("median |error|") == 2


def test_llama4_scout_weights_include_the_rotary_table_vllm_builds_per_rank():
    # vLLM v0.19.0 logs "Model loading took 53.12 GiB memory" per GPU for Llama 4 Scout at TP 4
    # (llm-d-planner accuracy/results/v0.19.0/logs, ...llama-4-scout--h100-80gb--tp4pp1dp1--8192.log).
    # The bf16 parameters alone give 50.6 GiB; the cos/sin table of 10,485,760 positions x 128
    # dims x 2 bytes (2.5 GiB, not split by TP) closes the gap.
    from simulators.core import vllm_memory as vm

    m = catalog.models()["llama-4-scout"]
    assert vm.rope_cache_bytes(m) == 10_485_760 * 128 * 2
    w = vm.weight_bytes(m, "bf16", 4, m.num_layers, first=True, last=True) / vm.GiB
    assert w == pytest.approx(53.12, rel=0.01)
