"""Every metric a simulator returns has a label and a unit in its schema, so no widget prints a raw key.

(The December 2026 review found `ttft_radix_s_p99` shown raw in lesson 07's key figures.)
"""

import json

import pytest

from simulators import api

SCHEMAS = api.schemas()


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_returned_metric_is_labelled(name: str) -> None:
    answer = json.loads(api.run_json(name, "{}", 0))
    assert answer["ok"], answer
    labelled = {m["name"] if isinstance(m, dict) else m for m in SCHEMAS[name]["metrics"]}
    assert set(answer["metrics"]) <= labelled, sorted(set(answer["metrics"]) - labelled)
