"""Every simulator keeps the contract: schema, validation, determinism, valid plotly figures.

These tests iterate over `simulators.api.SIMULATORS`, so a new simulator is covered the moment
it is registered.
"""

import ast
import json
import math
import sys
from pathlib import Path

import plotly.graph_objects as go
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulators import api

NAMES = list(api.SIMULATORS)
PACKAGE = Path(api.__file__).parent


def _finite(value):
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@pytest.mark.parametrize("name", NAMES)
def test_defaults_run_and_draw_a_valid_figure(name):
    answer = json.loads(api.run_json(name, "{}"))
    assert answer["ok"], answer
    assert answer["metrics"] and all(_finite(v) for v in answer["metrics"].values())
    declared = {m["name"] for m in api.schema(name)["metrics"]} - set(getattr(api.SIMULATORS[name], "GIVEN", ()))
    assert declared <= set(answer["metrics"]), declared - set(answer["metrics"])
    go.Figure(answer["figure"])  # raises on any property plotly does not know
    assert isinstance(answer["figure"]["layout"]["title"], dict)
    assert len(answer["summary"]) > 40


@pytest.mark.parametrize("name", NAMES)
def test_every_view_draws_a_valid_figure(name):
    views = [p for p in api.schema(name)["params"] if p["name"] == "view"]
    for choice in views[0]["choices"] if views else []:
        answer = json.loads(api.run_json(name, json.dumps({"view": choice["value"]})))
        assert answer["ok"], answer
        go.Figure(answer["figure"])


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_json(name):
    assert api.run_json(name, "{}", seed=3) == api.run_json(name, "{}", seed=3)


def _bad_values(p):
    if p["type"] in ("int", "float"):
        yield p["min"] - 1 if p["min"] is not None else None
        yield p["max"] * 10 + 1 if p["max"] is not None else None
        yield "abc"
        yield ""
        yield "NaN"
        yield 1e308 if p["max"] is not None else None
        if p["type"] == "int":
            yield (p["min"] or 0) + 0.5
    elif p["type"] == "choice":
        yield "no-such-choice"
    elif p["type"] == "bool":
        yield "maybe"


@pytest.mark.parametrize("name", NAMES)
def test_every_invalid_value_is_rejected_naming_its_field(name):
    for p in api.schema(name)["params"]:
        for bad in _bad_values(p):
            if bad is None:
                continue
            answer = json.loads(api.run_json(name, json.dumps({p["name"]: bad})))
            assert not answer["ok"], (p["name"], bad)
            assert any(e["field"] == p["name"] and e["message"] for e in answer["errors"]), answer


@pytest.mark.parametrize("name", NAMES)
def test_unknown_parameter_and_bad_json_are_rejected(name):
    answer = json.loads(api.run_json(name, '{"no_such_knob": 1}'))
    assert answer["errors"][0]["field"] == "no_such_knob"
    answer = json.loads(api.run_json(name, "{not json"))
    assert not answer["ok"] and "JSON" in answer["errors"][0]["message"]


def test_unknown_simulator():
    answer = json.loads(api.run_json("nope", "{}"))
    assert not answer["ok"] and "unknown simulator" in answer["errors"][0]["message"]


def _strategy(p):
    if p["type"] == "choice":
        return st.sampled_from([c["value"] for c in p["choices"]])
    if p["type"] == "bool":
        return st.booleans()
    lo, hi = p["min"], p["max"]
    # Log-uniform over the range so that small and huge values both appear.
    if p["type"] == "int":
        return st.integers(lo, hi) | st.sampled_from([lo, hi])
    return st.floats(lo, hi, allow_nan=False) | st.sampled_from([lo, hi])


@pytest.mark.parametrize("name", NAMES)
def test_random_valid_parameters_give_finite_metrics(name):
    fields = [p for p in api.schema(name)["params"] if p["type"] != "text"]
    strategy = st.fixed_dictionaries({}, optional={p["name"]: _strategy(p) for p in fields})

    @settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
    @given(strategy)
    def check(params):
        answer = json.loads(api.run_json(name, json.dumps(params)))
        if not answer["ok"]:  # only a cross-field check may refuse a combination of valid values
            assert all(e["message"] for e in answer["errors"]), answer
            return
        assert all(_finite(v) for v in answer["metrics"].values()), answer["metrics"]
        json.dumps(answer["figure"], allow_nan=False)

    check()


def test_simulators_import_only_the_standard_library():
    stdlib = set(sys.stdlib_module_names)
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                roots = [] if node.level else [(node.module or "").split(".")[0]]
            else:
                continue
            for root in roots:
                assert root in stdlib or root == "simulators", f"{path.name} imports {root}"
