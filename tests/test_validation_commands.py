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


def test_every_speed_quantity_a_simulator_can_state_has_commands_and_the_rest_say_why():
    assert len(WITH_COMMAND) >= 10
    classes = {crossval.QUANTITY_CLASS.get(e["quantity"], "size") for e in WITH_COMMAND}
    assert {"decode step", "prefill (TTFT alone)", "size"} <= classes
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
