"""One module per simulator (the registry is api.SIMULATORS); and `result`, which runs one through."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

Result = dict[str, Any]


def result(made: Result | Generator[Result, None, Result], each: Callable[[Result], None] | None = None) -> Result:
    """A simulator's full result from what its run() gave: the result itself, or, from a run() that
    yields growing results, what it returns after the last one (each yielded result goes to `each`)."""
    if isinstance(made, dict):
        return made
    while True:
        try:
            part = next(made)
        except StopIteration as done:
            full: Result = done.value
            return full
        if each is not None:
            each(part)
