"""Every slider dragged to either end: no simulator raises, and none runs for long.

A learner who drags a slider to its end runs the simulator at that field's min or max with
every other field at its default. Each such run, in every chart view, must answer (a result,
or a cross-field check's refusal naming a field) without raising, and in about 2 s of CPython
time: the browser (Pyodide, slower than CPython) stops runs past its time limit. Where an end
is inherently slow, the slider's range is capped in the simulator's Params, with the reason.

Iterates over `simulators.api.schemas()`, so a new simulator and a new field are covered at once.
"""

import json
import time

import pytest

from simulators import api

# CPU seconds (time.process_time, so that other processes on a busy machine do not count) per run:
# a run that would reach the browser's 10 s run limit (Pyodide is 2-3x slower than CPython). The
# slowest ends today (cheapest at 1,000 requests per engine run, load_test at 2,000 requests in its
# "lengths" view, reasoning at 1,000) take about 1.5-2.7 s, more on a shared machine under load;
# scripts/bench_simulators.py prints the figures.
LIMIT_S = 4.0

SCHEMAS = api.schemas()


def _ends(schema):
    """(field, value) for the min and max of every numeric field."""
    for p in schema["params"]:
        if p["type"] in ("int", "float"):
            for end in (p["min"], p["max"]):
                assert end is not None, f"{schema['name']}.{p['name']} has an open-ended slider"
                yield p["name"], end


def _views(schema):
    """The chart views, the default first; [None] when there is no view choice."""
    for p in schema["params"]:
        if p["name"] == "view":
            return [p["default"]] + [c["value"] for c in p["choices"] if c["value"] != p["default"]]
    return [None]


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_every_slider_end_runs_in_every_view(name):
    schema = SCHEMAS[name]
    problems = []
    for view in _views(schema):
        for field, value in _ends(schema):
            params = {field: value} if view is None else {field: value, "view": view}
            t0 = time.process_time()
            try:
                answer = json.loads(api.run_json(name, json.dumps(params)))
            except Exception as e:  # every exception is the bug being looked for
                problems.append(f"{params}: raised {e!r}")
                continue
            took = time.process_time() - t0
            if not answer["ok"]:  # only a cross-field check may refuse a valid value, and must say why
                assert all(e["field"] and e["message"] for e in answer["errors"]), (params, answer)
            if took > LIMIT_S:
                problems.append(f"{params}: {took:.1f} s")
    assert not problems, f"{name}:\n" + "\n".join(problems)
