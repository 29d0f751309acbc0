"""Parallel layouts shared by the serving simulators: the checks every one of them makes.

A tensor-parallel layout of more than one GPU needs a link between them: the cost model times
the all-reduces of each layer on the catalogue's GPU-to-GPU (or host) link
(costmodel.link_GBps_one_way). A GPU that publishes neither link figure (the Apple M2 Ultra)
can only be used alone; asking for more is a field error naming the field, never an exception.
"""

from __future__ import annotations

from typing import Any

from . import costmodel as cm
from .catalog import Gpu, resolve_gpu
from .params import ParamError


def check_link(gpu: Any, num_gpus: int, field: str) -> None:
    """Raise a field error when `num_gpus` > 1 GPUs of this kind have no link to time."""
    g = gpu if isinstance(gpu, Gpu) else resolve_gpu(gpu)
    if num_gpus > 1 and cm.link_GBps_one_way(g) is None:
        raise ParamError(field, f"{g.name} publishes no GPU-to-GPU or host link figure; use 1 GPU")
