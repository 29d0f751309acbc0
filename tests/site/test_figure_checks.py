"""The build refuses figures that cannot be read as their sentence states them (sitebuild/figure_checks.py).

Each class of error the December 2026 review found is written here as a broken example, next to
the two ways out the check accepts: change the figure's conditions, or say so in the sentence.
"""

from pathlib import Path

import pytest
from kept import KeptSimulators
from lesson_fixtures import FRONT

from sitebuild import lesson_page
from sitebuild.course import parse_lesson
from sitebuild.errors import LessonError

SIMS = KeptSimulators()  # the build's answers where it kept them (tests/kept.py)
# In vLLM's accounting four H100s hold 5.009 requests of 90,000 tokens (0.2% above 5): a knife edge.
SEVENTY_B = 'model="llama-3.1-70b", context_tokens=90000, num_gpus=4'
# By byte arithmetic three GPUs hold 2.002 sequences of 128k (0.1% above 2), which vLLM would
# not even start (64 heads over 3 GPUs): the formula's count is checked the same way.
SEVENTY_B_FORMULA = 'model="llama-3.1-70b", context_tokens=131072, num_gpus=3'


def render(tmp_path: Path, body: str, front: str = FRONT) -> str:
    path = tmp_path / "01-kv-cache.md"
    path.write_text(front + body)
    lesson = parse_lesson(path)
    scenarios = lesson_page.resolve_scenarios(lesson, SIMS)
    return lesson_page.render_body(lesson.body, path, lesson.body_line, SIMS, None, scenarios)


def refused(tmp_path: Path, body: str, front: str = FRONT) -> LessonError:
    with pytest.raises(LessonError) as caught:
        render(tmp_path, body, front)
    return caught.value


# --- 1. a rate or percentile read off a run that is too short -------------------------------------


def test_a_rate_from_a_short_run_is_refused_at_its_line(tmp_path: Path) -> None:
    body = "Intro.\n\nIt serves {{ batching.throughput_continuous_per_s(num_requests=200) :.2f }} req/s.\n"
    error = refused(tmp_path, body)
    assert error.line == 13  # front matter is 10 lines; the sentence is the third body line
    assert "run of 200 requests" in error.message and "1,000" in error.message


def test_a_long_run_or_a_stated_run_length_passes(tmp_path: Path) -> None:
    long_run = "It serves {{ batching.throughput_continuous_per_s(num_requests=2000) :.2f }} req/s.\n"
    stated = "In a 200-request run it serves {{ batching.throughput_continuous_per_s(num_requests=200) :.2f }} req/s.\n"
    assert "req/s" in render(tmp_path, long_run)
    assert "200-request run" in render(tmp_path, stated)


def test_a_cluster_p99_from_80_requests_is_refused(tmp_path: Path) -> None:
    body = "p99 TTFT is {{ cluster.ttft_prefix_s_p99(num_requests=80) * 1000 :.0f }} ms.\n"
    assert "at least 400" in refused(tmp_path, body).message


# --- 2. a figure at an operating point that does not fit ------------------------------------------


def test_a_figure_at_a_batch_that_does_not_fit_is_refused(tmp_path: Path) -> None:
    error = refused(tmp_path, "At batch 256 goodput is {{ slo.goodput_rps(batch_size=256) :.2f }} req/s.\n")
    assert "batch 256" in error.message and "does not fit" in error.message
    fit = SIMS.run("slo", {"batch_size": 256})["metrics"]["max_batch_fits"]
    assert f"({fit:,} fit)" in error.message  # the capacity the simulator itself reports


def test_a_batch_that_fits_or_a_stated_bound_passes(tmp_path: Path) -> None:
    fits = "At batch 200 goodput is {{ slo.goodput_rps(batch_size=200) :.2f }} req/s.\n"
    bound = "A hypothetical batch of 256, more than fits, makes {{ slo.local_tokens_per_s(batch_size=256) :,.0f }}.\n"
    assert "req/s" in render(tmp_path, fits)
    assert "hypothetical" in render(tmp_path, bound)


def test_a_batch_valued_figure_beyond_memory_is_refused(tmp_path: Path) -> None:
    # quantization's crossover batch lies beyond what one H100 holds at 2,000 tokens of context
    body = "The speed-up stops paying at batch {{ quantization.speedup_stops_paying_batch() :,.0f }}.\n"
    assert "does not fit" in refused(tmp_path, body).message


def test_a_tensor_parallel_70b_fits_where_one_gpu_does_not(tmp_path: Path) -> None:
    one_gpu = 'It decodes at {{ quantization.decode_step_s(model="llama-3.1-70b", weight_dtype="bf16") :.3f }} s.\n'
    assert "does not fit" in refused(tmp_path, one_gpu).message


# --- 3. a knife-edge capacity rounded to a whole count --------------------------------------------


def test_a_knife_edge_count_is_refused(tmp_path: Path) -> None:
    body = f"Four GPUs hold {{{{ kv_cache.max_concurrent_sequences({SEVENTY_B}) }}}} sequences.\n"
    error = refused(tmp_path, body)
    held = SIMS.run("kv_cache", {"model": "llama-3.1-70b", "context_tokens": 90000, "num_gpus": 4})["metrics"]
    assert 5 < held["max_concurrency"] < 5 * 1.02
    assert f"{held['max_concurrency']:.2f} sequences" in error.message and "knife edge" in error.message


def test_a_knife_edge_count_of_the_byte_arithmetic_is_refused(tmp_path: Path) -> None:
    body = f"Three GPUs hold {{{{ kv_cache.max_concurrent_sequences_by_bytes({SEVENTY_B_FORMULA}) }}}} sequences.\n"
    error = refused(tmp_path, body)
    three = {"model": "llama-3.1-70b", "context_tokens": 131072, "num_gpus": 3}
    held = SIMS.run("kv_cache", three)["metrics"]["kv_token_capacity_by_bytes"] / 131072
    assert f"{held:.2f} sequences" in error.message and "knife edge" in error.message


def test_a_stated_margin_or_the_unrounded_ratio_passes(tmp_path: Path) -> None:
    margin = f"Four GPUs hold at most {{{{ kv_cache.max_concurrent_sequences({SEVENTY_B}) }}}} sequences.\n"
    ratio = f"Four GPUs hold {{{{ kv_cache.max_concurrency({SEVENTY_B}) :.2f }}}} sequences' worth.\n"
    assert "at most" in render(tmp_path, margin)
    assert "worth" in render(tmp_path, ratio)


def test_a_count_with_room_to_spare_is_not_a_knife_edge(tmp_path: Path) -> None:
    body = '{{ kv_cache.max_concurrent_sequences(model="llama-3-8b", context_tokens=8192) }} sequences fit.\n'
    assert "sequences fit" in render(tmp_path, body)


# --- 4. a number at the start of a line becomes a list marker -------------------------------------


def test_a_number_then_period_at_line_start_is_refused(tmp_path: Path) -> None:
    body = "The cache holds\n{{ kv_cache.kv_bytes_per_token() :,.0f }}. Then more.\n"
    assert "list marker" in refused(tmp_path, body).message


# --- scenarios: one place for a sentence's conditions ---------------------------------------------

# A batch computed at build time that the generation simulator (vLLM's accounting) accepts for its
# 2,200-token requests: what the byte arithmetic fits at twice that context.
SCENARIO_FRONT = FRONT.replace(
    "summary: Keys and values are kept.\n",
    "summary: Keys and values are kept.\n"
    "scenarios:\n"
    '  peak: {batch_size: "{{ gpu_memory.max_batch_at_context(context_tokens=4400) }}"}\n',
)


def test_a_scenario_feeds_the_condition_and_the_figure(tmp_path: Path) -> None:
    body = "At batch {{ peak.batch_size }} it makes {{ generation.tokens_per_s(**peak) * peak.batch_size :,.0f }}.\n"
    page = render(tmp_path, body, SCENARIO_FRONT)
    batch = SIMS.run("gpu_memory", {"context_tokens": 4400})["metrics"]["max_batch_at_context"]
    per_request = SIMS.run("generation", {"batch_size": batch})["metrics"]["tokens_per_s"]
    assert f"At batch {batch} it makes {per_request * batch:,.0f}." in page


def test_parameters_after_a_scenario_override_it(tmp_path: Path) -> None:
    page = render(tmp_path, "{{ generation.tokens_per_s(**peak, batch_size=2) :.4f }}\n", SCENARIO_FRONT)
    assert f"{SIMS.run('generation', {'batch_size': 2})['metrics']['tokens_per_s']:.4f}" in page


def test_a_widget_takes_the_same_scenario(tmp_path: Path) -> None:
    body = "```sim\nsim: generation\nscenario: peak\ncontrols: [batch_size]\n```\n"
    page = render(tmp_path, body, SCENARIO_FRONT)
    batch = SIMS.run("gpu_memory", {"context_tokens": 4400})["metrics"]["max_batch_at_context"]
    assert f'"batch_size": {batch}' in page.replace("&quot;", '"')


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("{{ generation.tokens_per_s(**peek) }}\n", "unknown scenario 'peek'"),
        ("{{ generation.tokens_per_s(batch_size=2, **peak) }}\n", "before the other parameters"),
        ("{{ peak.context_tokens }}\n", "has no parameter 'context_tokens'"),
        ("```sim\nsim: generation\nscenario: peek\n```\n", "unknown scenario 'peek'"),
    ],
)
def test_scenario_mistakes_fail_with_a_message(tmp_path: Path, body: str, words: str) -> None:
    assert words in refused(tmp_path, body, SCENARIO_FRONT).message


def test_a_scenario_with_a_bad_expression_fails_at_its_front_matter_line(tmp_path: Path) -> None:
    front = SCENARIO_FRONT.replace("max_batch_at_context", "max_batch")
    error = refused(tmp_path, "Body.\n", front)
    assert error.line == 11 and "no metric 'max_batch'" in error.message


def test_a_page_pending_on_another_issue_warns_instead_of_failing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pathlib import PurePath

    from sitebuild import figure_checks
    from sitebuild.errors import display_path

    page = PurePath(display_path(tmp_path / "01-kv-cache.md")).as_posix()
    monkeypatch.setattr(figure_checks, "PENDING", {page: "issue 99 reworks this page"})
    body = "It serves {{ batching.throughput_continuous_per_s(num_requests=200) :.2f }} req/s.\n"
    assert "req/s" in render(tmp_path, body)
    err = capsys.readouterr().err
    assert f"warning: {page}:" in err and "run of 200 requests" in err and "issue 99" in err


# --- 4. templates written wrong: a count printed as a percentage, a format without its colon -------


def test_a_count_printed_as_a_percentage_is_refused(tmp_path: Path) -> None:
    # Review C-7: ":,.0%" on a byte count rendered "16,384,000% bytes".
    body = "Each token holds {{ kv_cache.kv_bytes_per_token() :,.0% }} bytes.\n"
    error = refused(tmp_path, body)
    assert "not a share" in error.message and "%" in error.message
    share = "Decoding is {{ generation.decode_share() :.0% }} of the request.\n"
    assert "% of the request" in render(tmp_path, share)


def test_a_format_without_its_colon_is_named(tmp_path: Path) -> None:
    body = "It takes {{ generation.ttft_s() * 1000 .1f }} ms.\n"
    error = refused(tmp_path, body)
    assert "a format goes after a colon" in error.message and ":.1f" in error.message
