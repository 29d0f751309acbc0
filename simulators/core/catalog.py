"""The catalogues: GPUs, models, number formats and sourced assumptions, read from data/*.toml.

Everything here is data with a source: loading each catalogue once (an entry without a source is
refused), looking an entry up by id or Hugging Face repository, and vLLM's defaults on a GPU. What
a GPU and a model are, and how a reader's own is read and checked, is gpu.py's and model.py's;
their names are importable from here too.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from .data_files import DATA
from .data_files import CatalogError as CatalogError
from .data_files import data_file as data_file
from .gpu import Gpu as Gpu
from .gpu import gpu_from_dict as gpu_from_dict
from .model import Model as Model
from .model import model_from_config as model_from_config

T = TypeVar("T")


def serve_defaults(gpu: Gpu) -> dict[str, float]:
    """What `vllm serve` (the version in assumptions.toml [vllm_defaults]) picks on this GPU: batch
    limits as EngineArgs chooses them for the API server (larger on GPUs of 70 GiB or more, not A100s)."""
    d = assumptions()["vllm_defaults"]
    size = "large" if gpu.visible_GiB >= d["large_gpu_min_GiB"] and "a100" not in gpu.name.lower() else "small"
    return {
        "gpu_memory_utilization": float(d["gpu_memory_utilization"]),
        "block_size": int(d["block_size"]),
        "max_num_batched_tokens": int(d[f"max_num_batched_tokens_{size}"]),
        "max_num_seqs": int(d[f"max_num_seqs_{size}"]),
    }


def _load(file: str, kind: str, make: Callable[[dict[str, Any], str], T]) -> dict[str, T]:
    """Every entry of a catalogue by id, in file order, each naming where its figures come from (a
    reader's custom one need not); an error names the file that holds the entry."""
    entries = data_file(file)
    for eid, entry in entries.items():
        if not str(entry.get("source", "")).strip():
            raise CatalogError(f"{DATA}{file}: {kind} '{eid}' has no 'source': say where its figures come from")
    try:
        return {eid: make(entry, eid) for eid, entry in entries.items()}
    except CatalogError as e:
        raise CatalogError(f"{DATA}{file}: {e}") from None


@cache
def gpus() -> dict[str, Gpu]:
    return _load("gpus.toml", "GPU", gpu_from_dict)


@cache
def models() -> dict[str, Model]:
    """The catalogue's models; a catalogue entry may not carry unread keys."""
    out = _load("models.toml", "model", model_from_config)
    for mid, m in out.items():
        if m.ignored_keys:
            raise CatalogError(
                f"{DATA}models.toml: model '{mid}': unknown key(s) {', '.join(m.ignored_keys)} (not read by the cost model)"
            )
    return out


@cache
def hf_repos() -> dict[str, str]:
    """Hugging Face repository (lower case) -> catalogue model id, from each entry's `hf_ids`."""
    out: dict[str, str] = {}
    for mid, entry in data_file("models.toml").items():
        for repo in entry.get("hf_ids", []):
            if repo.lower() in out:
                raise CatalogError(f"model '{mid}': hf_ids repeats '{repo}' (also in '{out[repo.lower()]}')")
            out[repo.lower()] = mid
    return out


def model_for_repo(repo: str) -> Model | None:
    """The catalogue entry a Hugging Face repository id (or a local path ending in it) names; None if none."""
    key = repo.strip().rstrip("/").lower()
    by_name = {r.split("/")[-1]: mid for r, mid in hf_repos().items()}  # a local copy keeps the name
    mid = hf_repos().get("/".join(key.split("/")[-2:])) or by_name.get(key.split("/")[-1])
    return models()[mid] if mid else models().get(key)


@dataclass(frozen=True)
class Precision:
    id: str
    name: str
    bits: int
    group_size: int
    scale_bits: int
    tensor_core: str
    source: str
    # Average stored bits per weight of a mixed format (GGUF k-quant mixes), where one block
    # layout does not describe it; overrides bits + scales.
    bits_per_weight: float | None = None

    @property
    def bytes_per_value(self) -> float:
        """Stored bytes per value, group scales included: int4 g128 = (4 + 16/128) / 8."""
        if self.bits_per_weight is not None:
            return self.bits_per_weight / 8
        overhead = self.scale_bits / self.group_size if self.group_size else 0.0
        return (self.bits + overhead) / 8


@cache
def precisions() -> dict[str, Precision]:
    return {pid: Precision(id=pid, **entry) for pid, entry in data_file("precisions.toml").items()}


def assumptions() -> dict[str, Any]:
    return data_file("assumptions.toml")


def running_example() -> dict[str, Any]:
    return data_file("running_example.toml")


def resolve_gpu(value: str | dict[str, Any]) -> Gpu:
    """A catalogue id, or a dict describing a custom GPU."""
    if isinstance(value, dict):
        return gpu_from_dict(value, str(value.get("id", "custom")))
    return _entry("GPU", gpus(), value)


def resolve_model(value: str | dict[str, Any]) -> Model:
    """A catalogue id, or a Hugging Face config.json dict."""
    if isinstance(value, dict):
        return model_from_config(value, str(value.get("id", value.get("name", "custom"))))
    return _entry("model", models(), value)


def _entry(kind: str, entries: dict[str, T], value: str) -> T:
    try:
        return entries[value]
    except KeyError:
        raise CatalogError(f"unknown {kind} '{value}'; known: {', '.join(entries)}") from None
