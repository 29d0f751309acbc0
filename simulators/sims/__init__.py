"""One module per simulator (the registry is api.SIMULATORS); and `result`, which runs one through."""

from collections.abc import Callable, Generator
from typing import Any

from ..engine.eventloop import run_out

Result = dict[str, Any]


def result(made: Result | Generator[Result, None, Result], each: Callable[[Result], None] | None = None) -> Result:
    """A simulator's full result from what its run() gave: the result itself, or, from a run() that
    yields growing results, what it returns after the last one (each yielded result goes to `each`)."""
    return made if isinstance(made, dict) else run_out(made, each)
