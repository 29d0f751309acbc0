"""The one cost model: bytes, FLOPs and time of transformer inference on a GPU.

Every figure comes from small pure functions fed by the catalogues (catalog.py) and an engine
profile (efficiency.py). Callers import this module (`from ..core import costmodel as cm`); the
names below live by what they hold:

    bytes_flops.py    parameter counts, bytes per value, weight and KV-cache bytes, FLOPs; no time
    roofline.py       step_time, the one function that prices a forward pass, and its shortcuts
    parallel_time.py  what a layout over several GPUs adds: collectives, pipeline sends
    limits.py         which roof binds, the figure a GPU lacks, whether it all fits (memory_fit)

Only roofline.py reads an engine profile's factors (tests/test_one_speed_model.py).
"""

from __future__ import annotations

# Every public name of the four modules, so that callers need only this one (cm.step_time, cm.GiB).
from .bytes_flops import *  # noqa: F403
from .limits import *  # noqa: F403
from .parallel_time import *  # noqa: F403
from .roofline import *  # noqa: F403
