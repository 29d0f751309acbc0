"""A rule that reuses kept work runs in run(), through the session's keep: cheapest's impossibility
rule works out its best case once per model, GPUs and lengths, not on every change."""

import json

import pytest

from simulators import api, params
from simulators.benchmark import sizing_search as ss

SMALL = {"gpus": "h100-sxm, l40s", "num_requests": 100}


@pytest.fixture
def best_cases(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = ss.best_case

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ss, "best_case", counted)
    return calls


def test_a_session_checks_the_best_case_once_across_rate_changes(best_cases: list[int]) -> None:
    session = api.Session()
    for rate in (5.0, 5.5, 6.0):
        assert json.loads(session.run_json("cheapest", json.dumps({**SMALL, "request_rate_per_s": rate})))["ok"]
    assert len(best_cases) == 1
    # Other lengths are another question: worked out again.
    session.run_json("cheapest", json.dumps({**SMALL, "request_rate_per_s": 5.0, "output_tokens": 100}))
    assert len(best_cases) == 2
    # Without a session nothing is kept: every call works it out.
    for _ in range(2):
        api.run_json("cheapest", json.dumps({**SMALL, "request_rate_per_s": 5.0}))
    assert len(best_cases) == 4


def test_field_errors_are_the_same_with_the_memo_warm_or_cold() -> None:
    session = api.Session()
    session.run_json("cheapest", json.dumps({**SMALL, "request_rate_per_s": 5.0}))  # fills the memo
    for kw in ({"ttft_slo_s": 0.001}, {"tpot_slo_s": 0.0001}):
        asked = json.dumps({**SMALL, "request_rate_per_s": 5.0, **kw})
        warm = json.loads(session.run_json("cheapest", asked))
        assert not warm["ok"] and warm == json.loads(api.run_json("cheapest", asked))


def test_a_check_is_called_without_arguments() -> None:
    from simulators.sims import deployment

    with pytest.raises(params.ParamErrors) as caught:  # 32 heads do not split over 3 GPUs
        params.parse(deployment.Params, {"tensor_parallel_size": 3})
    assert caught.value.errors[0]["field"] == "tensor_parallel_size"
