"""Simulator parameters: declared once, with the metadata the UI, the CLI and validation need.

A simulator's `Params` is a frozen dataclass whose fields are made with `param(...)`:

    @dataclass(frozen=True)
    class Params:
        # Tokens of context held per sequence.
        context_tokens: int = param(8192, label="Context", unit="tokens", min=1, max=1_048_576)

`parse(Params, raw)` turns a dict (from JSON, or strings from the CLI) into a Params, or raises
`ParamErrors` listing every bad field with a message a learner can act on. `schema(Params)`
exports the fields as JSON for the page, which renders the controls before Python has loaded.
"""

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .core import catalog, efficiency
from .core import costmodel as cm

T = TypeVar("T")
Choices = Sequence[tuple[str, str]] | Callable[[], Sequence[tuple[str, str]]]


class ParamErrors(ValueError):
    """One or more invalid parameters: a list of {"field", "message"}."""

    def __init__(self, errors: list[dict[str, str]]):
        self.errors = errors
        super().__init__("; ".join(f"{e['field']}: {e['message']}" for e in errors))


class ParamError(ValueError):
    """Raised by a Params.check() for one field."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


def param(
    default: Any,
    *,
    label: str,
    unit: str = "",
    min: float | None = None,
    max: float | None = None,
    step: float | None = None,
    choices: Choices | None = None,
    help: str = "",
    custom: str | None = None,
    log: bool = False,
    file: str | None = None,
    lines: int = 0,
) -> Any:
    """A dataclass field with UI metadata: every keyword. `custom` ("model" or "gpu") also accepts an
    object. For a text field, `file` (accepted types, e.g. ".json,.yaml") offers a file input whose
    text becomes the value (read in the page, never sent anywhere) and `lines` a box to paste into."""
    meta = {k: v for k, v in locals().items() if k != "default"}
    return dataclasses.field(default=default, metadata=meta)


def model_choices() -> list[tuple[str, str]]:
    return [(mid, m.name) for mid, m in catalog.models().items()]


def gpu_choices() -> list[tuple[str, str]]:
    return [(gid, g.name) for gid, g in catalog.gpus().items()]


def dtype_choices(*ids: str) -> Callable[[], list[tuple[str, str]]]:
    def choices() -> list[tuple[str, str]]:
        wanted = ids or tuple(catalog.precisions())
        return [(pid, catalog.precisions()[pid].name) for pid in wanted]

    return choices


def model_param(**kw: Any) -> Any:
    kw.setdefault("help", "A catalogue model, or (API and tools) a Hugging Face config.json object.")
    return param(catalog.running_example()["model"], label="Model", choices=model_choices, custom="model", **kw)


def gpu_param(**kw: Any) -> Any:
    kw.setdefault(
        "help",
        "A catalogue GPU, or (API and tools) an object with memory_GiB, hbm_bandwidth_GBps and dense_bf16_tflops.",
    )
    return param(catalog.running_example()["gpu"], label="GPU", choices=gpu_choices, custom="gpu", **kw)


def _choices(meta: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    c = meta["choices"]
    return None if c is None else list(c() if callable(c) else c)


def _kind(f: dataclasses.Field[Any]) -> str:
    if _choices(f.metadata) is not None:
        return "choice"
    name = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    return {"int": "int", "float": "float", "bool": "bool", "str": "text"}[name]


def _coerce(f: dataclasses.Field[Any], value: Any) -> Any:
    """The value in the field's type, or ValueError with the message the learner reads."""
    meta, kind = f.metadata, _kind(f)
    if meta["custom"] and isinstance(value, dict):
        # raises CatalogError (a ValueError) naming the bad key
        (catalog.resolve_model if meta["custom"] == "model" else catalog.resolve_gpu)(value)
        return value
    if kind == "choice":
        allowed = [v for v, _ in _choices(meta) or []]
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}; got {value!r}")
        return value
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.strip().lower() in ("true", "1", "yes")
        raise ValueError(f"must be true or false; got {value!r}")
    if kind == "text":
        if not isinstance(value, str):
            raise ValueError(f"must be text; got {value!r}")
        return value
    return _number(meta, kind, value)


def _number(meta: Mapping[str, Any], kind: str, value: Any) -> int | float:
    what = "a whole number" if kind == "int" else "a number"
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        if not text:
            raise ValueError(f"must be {what}; the field is empty")
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"must be {what}; got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be {what}; got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number; got {value!r}")
    lo, hi = meta["min"], meta["max"]
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        unit = f" {meta['unit']}" if meta["unit"] else ""
        raise ValueError(f"must be between {_fmt(lo)} and {_fmt(hi)}{unit}; got {_fmt(value)}")
    if kind == "int":
        if value != int(value):
            raise ValueError(f"must be a whole number; got {_fmt(value)}")
        return int(value)
    return float(value)


def _fmt(x: float | None) -> str:
    if x is None:
        return "any"
    if abs(x) >= 1e12:
        return f"{x:.3g}"
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def parse(cls: type[T], raw: dict[str, Any], also: tuple[str, ...] = ()) -> T:
    """Validate `raw` against `cls`; missing fields take their defaults, then `check()` runs, if any
    (a costly rule that reuses kept work belongs in run(), which is handed `keep`). `also`: keys the
    caller accepts and took out of `raw` (a simulator's `view`), named among the known ones."""
    if not isinstance(raw, dict):
        raise ParamErrors([{"field": "", "message": "parameters must be a JSON object"}])
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    known = ", ".join([*fields, *also])
    errors = [{"field": key, "message": f"unknown parameter; known: {known}"} for key in raw if key not in fields]
    values: dict[str, Any] = {}
    for name in [key for key in fields if key in raw]:
        try:
            values[name] = _coerce(fields[name], raw[name])
        except ValueError as e:
            errors.append({"field": name, "message": str(e)})
    if errors:
        raise ParamErrors(errors)
    params = cls(**values)
    check = getattr(params, "check", None)
    if check is not None:
        try:
            check()
        except ParamError as e:
            raise ParamErrors([{"field": e.field, "message": e.message}]) from None
        except catalog.CatalogError as e:
            raise ParamErrors([{"field": "", "message": str(e)}]) from None
    return params


def schema_fields(cls: type) -> list[dict[str, Any]]:
    """The fields of a Params class as JSON for the page and `describe`."""
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata
        entry: dict[str, Any] = {"name": f.name, "label": meta["label"], "type": _kind(f), "default": f.default}
        entry |= {k: meta[k] for k in ("unit", "help", "custom")}
        entry |= {k: meta[k] for k in ("file", "lines") if meta.get(k)}
        if entry["type"] in ("int", "float"):
            entry |= {k: meta[k] for k in ("min", "max", "step", "log")}
        choices = _choices(meta)
        if choices is not None:
            entry["choices"] = [{"value": v, "label": label} for v, label in choices]
        out.append(entry)
    return out


def engine_choices() -> list[tuple[str, str]]:
    return [(pid, prof.name) for pid, prof in efficiency.profiles().items()]


def engine_param(**kw: Any) -> Any:
    """The engine whose achieved efficiencies a simulator uses (ignored when `ideal` is set)."""
    kw.setdefault(
        "help",
        "Engine profile: its bandwidth and BF16 GEMM plateau factors and step overhead (data/engine_profiles.toml).",
    )
    return param(cm.DEFAULT_ENGINE, label="Engine", choices=engine_choices, **kw)


# Fields that many serving simulators declare, each with its own default and range.


def kv_dtype_param(default: str = "bf16") -> Any:
    """The KV cache's format, among those the cost model prices."""
    return param(default, label="KV cache format", choices=dtype_choices("bf16", "fp8", "int8", "int4"))


def context_param(*, max: int = 131_072, label: str = "Context", step: float | None = None) -> Any:
    """Tokens of context per sequence, from the running example's prompt, on a log slider."""
    default = catalog.running_example()["prompt_tokens"]
    return param(default, label=label, unit="tokens", min=1, max=max, step=step, log=True)


def num_requests_param(default: int, *, min: int, max: int, step: int = 10, label: str = "Requests") -> Any:
    """Requests in a simulated trace, on a log slider: more give steadier percentiles, and a longer run."""
    return param(default, label=label, min=min, max=max, step=step, log=True)


def arrival_rate_param(
    default: float, *, max: float, min: float = 0.1, step: float = 0.1, label: str = "Arrival rate"
) -> Any:
    """An open-loop Poisson arrival rate, in requests per second, on a log slider."""
    return param(default, label=label, unit="req/s", min=min, max=max, step=step, log=True)


def batch_slots_param(default: int, *, label: str = "Batch slots", unit: str = "") -> Any:
    """Batch slots: the most sequences the engine runs together (vLLM --max-num-seqs), 1 to 1,024."""
    return param(default, label=label, unit=unit, min=1, max=1024, step=1, log=True)


@dataclasses.dataclass(frozen=True)
class ModelGpu:
    """The first two fields of every simulator that runs a model on a GPU; a simulator's Params
    subclasses it, and dataclasses put these fields (and so their controls) first."""

    # A catalogue model, or a Hugging Face config.json object.
    model: Any = model_param()
    # A catalogue GPU, or an object with its memory, bandwidth and tensor rate.
    gpu: Any = gpu_param()

    def resolved(self) -> tuple[catalog.Model, catalog.Gpu]:
        """The model and the GPU these fields name (a catalogue entry) or describe (a config, a custom GPU)."""
        return catalog.resolve_model(self.model), catalog.resolve_gpu(self.gpu)

    def stated(self, *fields: str) -> dict[str, Any]:
        """What a result states of its parameters: the model's and the GPU's names, then `fields` as set."""
        m, gpu = self.resolved()
        return {"model": m.name, "gpu": gpu.name} | {k: getattr(self, k) for k in fields}


@dataclasses.dataclass(frozen=True)
class ModelGpuEngine(ModelGpu):
    """ModelGpu and, third, the engine profile that prices its steps."""

    engine: str = engine_param()


def missing_figure(p: Any) -> dict[str, str] | None:
    """A field error on `gpu` where a timing simulator (one with an engine) runs on a GPU whose
    catalogue entry, or the reader's custom GPU, lacks the tensor rate its times need: without it
    a time could only be a memory-only floor (issue 29: complete figures, or a refusal)."""
    gpu_value = getattr(p, "gpu", None)
    if not isinstance(getattr(p, "engine", None), str) or gpu_value is None:
        return None
    gpu = catalog.resolve_gpu(gpu_value)
    if why := efficiency.unsupported(p.engine, gpu):  # vLLM on an Apple GPU: not even its ideal runs there
        return {"field": "engine", "message": why}
    if not (missing := cm.missing_compute_figure(gpu, getattr(p, "weight_dtype", "bf16"))):
        return None
    return {
        "field": "gpu",
        "message": f"{gpu.name} has no '{missing}' in the catalogue, and every time needs it (without it a "
        "prefill could only be priced as a memory-only floor): pick another GPU, or give a custom GPU that rate",
    }


def priced_by(p: Any) -> str:
    """The engine profile (or the ideal ceiling) whose factors priced a run's times; "" if none."""
    engine = getattr(p, "engine", None)
    if not isinstance(engine, str):
        return ""
    if getattr(p, "ideal", False):
        return "ideal hardware (100% of peak, no overhead)"
    gpu = getattr(p, "gpu", None)
    named = efficiency.profile(engine) if gpu is None else efficiency.profile_for(engine, catalog.resolve_gpu(gpu))
    return f"the {named.name} profile"
