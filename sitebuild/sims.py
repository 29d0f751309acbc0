"""The build's view of `simulators.api`: schemas, and cached runs through the browser's own entry.

Every run goes through `run_json`, the same function the browser worker calls, so the pre-rendered
chart and the live one come from one code path.
"""

from __future__ import annotations

import json
from typing import Any


class SimulatorRunError(Exception):
    """`run_json` answered ok=false: `errors` is its list of {field, message}."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e.get('field') or 'input'}: {e['message']}" for e in errors))


class Simulators:
    def __init__(self) -> None:
        from simulators import api

        self._api = api
        self.schemas: dict[str, dict[str, Any]] = api.schemas()
        self._runs: dict[str, dict[str, Any]] = {}

    def run(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        """The parsed `run_json` answer for these parameters (seed 0), cached per build."""
        params_json = json.dumps(params, sort_keys=True)
        key = f"{name}\n{params_json}"
        if key not in self._runs:
            self._runs[key] = json.loads(self._api.run_json(name, params_json, 0))
        answer = self._runs[key]
        if not answer["ok"]:
            raise SimulatorRunError(answer["errors"])
        return answer
