"""A published benchmark's figure, predicted under the conditions it states: the validated path.

Model: the validation page (simulators/benchmark/validation.py) predicts each published figure
from the conditions its row states: for a serving figure, the event engine under the benchmark's
own lengths, request count, arrivals and caps (benchmark/served_benchmarks.py); for a llama-bench
prompt test, its micro-batches; for a compiled decode, no per-layer time. This simulator takes
those conditions as parameters and calls the same prediction function, so every row's prediction
is one public command (benchmark/commands.py writes it). Nothing here prices anything itself.

References: 1) the validation page and data/measurements.toml (each row's source and conditions);
2) vLLM benchmarks/benchmark_serving.py, SGLang bench_serving.py, MLPerf Inference rules.
"""

from dataclasses import dataclass
from typing import Any

from ..benchmark import served_benchmarks as sb
from ..benchmark import validation
from ..core import efficiency as ef
from ..core.catalog import resolve_gpu, resolve_model, running_example
from ..parallel import check_serving, layout_of, tensor_parallel_param
from ..params import ParamError, dtype_choices, engine_param, gpu_choices, kv_dtype_param, model_choices, param
from ..plotting import bar, chart
from ..results_cache import Keep

TITLE = "A published benchmark, predicted under its own conditions"
DESCRIPTION = "What a published benchmark reports, predicted from its stated conditions as the validation page does."
METRICS = {"predicted": ("The published figure, predicted (unit: the figure's)", "")}
UNITS: list[tuple[str, str]] = [("tokens_per_s", "tokens/s"), ("per_token", "B/token"), ("per_byte", "FLOP/B")]
UNITS += [("_ms", "ms"), ("_s", "s"), ("GBps", "GB/s"), ("GiB", "GiB"), ("GiB_per_sequence", "GiB"), ("_B", "billion")]
SERVED = {"offline_output_tokens_per_s": ("offline", "server"), "batch_latency_s": ("batch",)}
SERVED |= {"median_tpot_ms": ("rate",), "median_ttft_ms": ("rate",)}  # quantity: the arrivals that report it
# The fields a row takes as they are (the others: conditions()).
AS_STATED = "quantity model gpu engine weight_dtype kv_dtype per_gpu fused_layers context_tokens prompt_tokens ubatch"
AS_STATED += " lengths input_tokens output_tokens fixed_output arrival request_rate ttft_limit_ms tpot_limit_ms"


@dataclass(frozen=True)
class Params:
    # The published figure (validation.PREDICTIONS): its quantity decides which conditions count.
    quantity: str = param("batch_latency_s", label="Figure", choices=[(q, q) for q in validation.PREDICTIONS])
    # Catalogue entries only: the validation reads a row's model and GPU by their catalogue ids.
    model: str = param(running_example()["model"], label="Model", choices=model_choices)
    gpu: str = param(running_example()["gpu"], label="GPU", choices=gpu_choices)
    engine: str = engine_param()
    # Every efficiency 1.0 and no overhead: the table's "ideal" column (a ceiling, a floor for a time).
    ideal: bool = param(False, label="Ideal hardware (100% of peak)")
    weight_dtype: str = param("bf16", label="Weight format", choices=dtype_choices())
    kv_dtype: str = kv_dtype_param()
    # The matmuls' activation format; auto: the weights' (fp8, int8) or bf16.
    activation_dtype: str = param(
        "auto", label="Activation format", choices=lambda: [("auto", "auto"), *dtype_choices("bf16", "fp8", "int8")()]
    )
    tensor_parallel_size: int = tensor_parallel_param()
    # Copies of the server in the system (tensor_parallel_size GPUs each); per_gpu: the figure per GPU.
    replicas: int = param(1, label="Replicas", min=1, max=64, step=1)
    per_gpu: bool = param(False, label="Figure per GPU")
    # The engine compiles the whole decode step (gpt-fast's torch.compile): no per-layer time.
    fused_layers: bool = param(False, label="Compiled whole-step decode")
    # A decode or prefill step: its context and batch; batch_fit: as many sequences as the KV cache holds.
    context_tokens: int = param(1024, label="Context", unit="tokens", min=1, max=131_072, log=True)
    batch_size: int = param(8, label="Batch", unit="sequences", min=1, max=4096, log=True)
    batch_fit: bool = param(False, label="Batch: as many as the KV cache holds")
    # llama-bench ppN -ub U: N prompt tokens in micro-batches of U.
    prompt_tokens: int = param(512, label="Prompt (llama-bench)", unit="tokens", min=1, max=131_072, log=True)
    ubatch: int = param(512, label="Micro-batch (-ub)", unit="tokens", min=1, max=131_072, log=True)
    # Serving: the requests' lengths (served_benchmarks.LENGTHS: means after the data set's filter).
    lengths: str = param("fixed", label="Lengths", choices=[("fixed", "fixed")] + [(k, k) for k in sb.LENGTHS])
    input_tokens: int = param(1024, label="Mean input", unit="tokens", min=1, max=131_072, log=True)
    output_tokens: int = param(128, label="Mean output", unit="tokens", min=1, max=131_072, log=True)
    # The data set's caps; 0: the distribution's own filter (sharegpt 1,024 and 2,048, else none).
    max_input_tokens: int = param(0, label="Input cap (0: the data set's)", unit="tokens", min=0, max=1_048_576)
    max_total_tokens: int = param(0, label="Total cap (0: the data set's)", unit="tokens", min=0, max=1_048_576)
    fixed_output: bool = param(False, label="Every output the mean length")
    # Requests simulated; static_batch: one batch (batch_size or the KV fit) queued at once instead.
    requests: int = param(100, label="Requests", min=1, max=50_000, log=True)
    static_batch: bool = param(False, label="One static batch (in-flight batching off)")
    arrival: str = param("batch", label="Arrival", choices=[(a, a) for a in ("offline", "batch", "server", "rate")])
    request_rate: float = param(4.0, label="Request rate (arrival rate)", unit="req/s", min=0.01, max=1000.0)
    # MLPerf Server: the highest Poisson rate whose p99 TTFT and TPOT stay within these.
    ttft_limit_ms: float = param(2000.0, label="p99 TTFT bound (server)", unit="ms", min=1.0, max=1e6)
    tpot_limit_ms: float = param(200.0, label="p99 TPOT bound (server)", unit="ms", min=0.1, max=1e5)
    # The benchmark's scheduler caps; 0: the engine profile's.
    max_num_seqs: int = param(0, label="Max sequences (0: the engine's)", min=0, max=16_384)
    max_num_batched_tokens: int = param(0, label="Max batched tokens (0: the engine's)", min=0, max=65_536)
    # vLLM v0.6: chunked prefill off below 32K tokens of max_model_len, and --num-scheduler-steps.
    chunked_prefill: bool = param(True, label="Chunked prefill")
    num_scheduler_steps: int = param(1, label="Scheduler steps (multi-step runs)", min=1, max=64, step=1)

    def check(self) -> None:
        if self.quantity == "params_B":
            return
        lay, m = layout_of(self), resolve_model(self.model)
        check_serving(m, resolve_gpu(self.gpu), lay, weight_dtype=self.weight_dtype, kv_dtype=self.kv_dtype)
        if self.quantity not in SERVED:
            return
        if self.num_scheduler_steps > 1 and m.sliding_window:  # engine/replica.py does not model the pair
            raise ParamError("num_scheduler_steps", f"multi-step runs are not modelled for {m.name}'s sliding window")
        if self.arrival not in SERVED[self.quantity]:
            raise ParamError("arrival", f"{self.quantity} is reported by arrival {' or '.join(SERVED[self.quantity])}")
        if self.arrival == "batch" and self.batch_fit:  # served_benchmarks draws batch_size requests
            raise ParamError("batch_fit", "a batch's latency is stated for its batch size: set batch_size instead")
        if self.lengths == "fixed":
            return
        caps = sb.LENGTHS[self.lengths]
        cap_in, cap_all = self.max_input_tokens or caps["max_input"], self.max_total_tokens or caps["max_total"]
        if self.input_tokens >= cap_in or self.input_tokens + self.output_tokens >= cap_all:
            raise ParamError(
                "input_tokens", f"mean lengths must stay under the caps: {cap_in:,} in, {cap_all:,} in all"
            )


def conditions(p: Params) -> dict[str, Any]:
    """The row the parameters state, in data/measurements.toml's keys."""
    e: dict[str, Any] = {k: getattr(p, k) for k in AS_STATED.split()}
    e |= {"id": "published", "tp": p.tensor_parallel_size, "num_gpus": p.replicas * p.tensor_parallel_size}
    e["batch_size"] = "fit" if p.batch_fit else p.batch_size
    e["requests"] = "batch" if p.static_batch else p.requests
    if p.activation_dtype != "auto":
        e["activation_dtype"] = p.activation_dtype
    caps = ("max_input_tokens", "max_total_tokens", "max_num_seqs", "max_num_batched_tokens")
    e |= {k: getattr(p, k) for k in caps if getattr(p, k)}  # 0: not stated
    if not p.chunked_prefill or p.num_scheduler_steps > 1:  # stated only where they differ (the runs' keys)
        e |= {"chunked_prefill": p.chunked_prefill, "num_scheduler_steps": p.num_scheduler_steps}
    return e


def unit(quantity: str) -> str:
    return next(u for end, u in UNITS if quantity.endswith(end))


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> dict[str, Any]:
    profile = ef.profile(p.engine)
    try:
        value = validation.PREDICTIONS[p.quantity](conditions(p), ef.ceiling(profile) if p.ideal else profile)
    except sb.Unserved as e:
        raise ParamError("input_tokens", str(e)) from None
    out = {"model": resolve_model(p.model).name, "gpu": resolve_gpu(p.gpu).name, "quantity": p.quantity}
    return out | {"unit": unit(p.quantity), "ideal": p.ideal, "metrics": {"predicted": value}}


def figure(r: dict[str, Any]) -> dict[str, Any]:
    name = "ideal ceiling" if r["ideal"] else "engine profile"
    data = [bar([r["quantity"]], [r["metrics"]["predicted"]], f"Predicted ({name})")]
    return chart(data, f"{r['model']} on {r['gpu']}", "Published figure", r["unit"])


def summary(r: dict[str, Any]) -> str:
    how = "the ideal ceiling" if r["ideal"] else "the engine profile"
    return f"{r['model']} on {r['gpu']}: {r['quantity']} predicted by {how} is {r['metrics']['predicted']:,.4g} {r['unit']}."
