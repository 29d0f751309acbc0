"""The build's other processes: Node.js scripts, and a map in Python processes for its long independent
runs (the validation's engine runs: simulators.api.make_runs_with). Fresh interpreters (spawn), one per
CPU up to four: safe beside the caller's threads (`./dev serve` serves while it rebuilds), no held lock forked."""

import multiprocessing
import os
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from sitebuild.errors import BuildError

ROOT = Path(__file__).resolve().parent.parent


def run_many(fn: Callable[[Any], float], jobs: list[Any]) -> list[float]:
    """[fn(job) for job in jobs], made in parallel; in this process when one CPU or job is all there is."""
    workers = min(os.cpu_count() or 1, 4, len(jobs))
    if workers < 2:
        return [fn(job) for job in jobs]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(fn, jobs))


def run_node(script: Path, *args: Path, purpose: str, failed: str, timeout: float | None = None) -> str:
    """The standard output of `node script args…` run in the repository root; BuildError when Node.js
    is missing (it is needed to `purpose`) or the script fails (`failed`, then its error output's end:
    Node prints the whole minified line of a failing module first)."""
    node = shutil.which("node")
    if node is None:
        raise BuildError(f"Node.js is needed to {purpose}: apt-get install -y nodejs")
    command = [node, str(script), *map(str, args)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise BuildError(f"{failed}:\n{done.stderr[-2000:]}")
    return done.stdout
