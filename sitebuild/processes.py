"""A map in other processes, for the build's long independent runs (the validation's engine runs:
simulators.api.make_runs_with). Fresh interpreters (spawn), one per CPU up to four: safe beside the
threads of the caller (`./dev serve` serves while it rebuilds), and no fork copies a lock held."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any


def run_many(fn: Callable[[Any], float], jobs: list[Any]) -> list[float]:
    """[fn(job) for job in jobs], made in parallel; in this process when one CPU or job is all there is."""
    workers = min(os.cpu_count() or 1, 4, len(jobs))
    if workers < 2:
        return [fn(job) for job in jobs]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(fn, jobs))
