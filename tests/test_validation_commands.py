"""Every validation row's public command reproduces the table's prediction (the public path is the
validated path), and a row no simulator can state says why."""

import json

import pytest

from simulators import api
from simulators.__main__ import _parse_sets
from simulators.benchmark import commands, crossval, validation
from simulators.core import efficiency as ef

ENTRIES = validation.measurements()
WITH_COMMAND = [e for e in ENTRIES if isinstance(commands.command(e), commands.Command)]


def test_every_kind_of_row_has_commands_and_a_row_without_one_says_why():
    classes = {crossval.QUANTITY_CLASS.get(e["quantity"], "size") for e in WITH_COMMAND}
    assert {*crossval.CLASSES, "size"} <= classes  # serving rows included: `published` states them
    for e in ENTRIES:
        c = commands.command(e)
        if isinstance(c, str):
            assert len(c) > 20, e["id"]  # a reason, in words
            assert commands.cell(e).startswith("none: ")
        else:
            assert commands.cell(e).startswith(f"`python -m simulators run {c.simulator} --set ")


@pytest.mark.parametrize("e", WITH_COMMAND, ids=[e["id"] for e in WITH_COMMAND])
def test_the_command_reproduces_the_prediction(e):
    c = commands.command(e)
    assert isinstance(c, commands.Command)
    # the text is what a reader pastes: parse it as the CLI does
    argv = c.text.split()
    assert argv[:5] == ["python", "-m", "simulators", "run", c.simulator]
    sets = [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]
    answer = json.loads(api.run_json(c.simulator, json.dumps(_parse_sets(sets))))
    assert answer["ok"], answer.get("errors")
    predicted = validation.PREDICTIONS[e["quantity"]](e, ef.profile(commands.profile_of(e)))
    assert c.figure(answer["metrics"]) == pytest.approx(predicted, rel=0.005)


@pytest.mark.parametrize("row_id", ["vllm-ci-latency-llama31-8b-h200-b8", "llamacpp-llama2-7b-q4_0-m2-ultra-tg128"])
def test_ideal_true_gives_the_ideal_column(row_id):
    # a latency batch of 8 requests (published) and a batch-1 decode on Apple silicon (generation)
    e = next(e for e in ENTRIES if e["id"] == row_id)
    c = commands.command(e)
    assert isinstance(c, commands.Command)
    answer = api.run(c.simulator, {**c.params, "ideal": True})
    assert answer["ok"], answer.get("errors")
    ideal = validation.PREDICTIONS[e["quantity"]](e, ef.ceiling(ef.profile(commands.profile_of(e))))
    assert c.figure(answer["metrics"]) == pytest.approx(ideal, rel=0.005)
