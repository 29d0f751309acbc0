"""Deployment: will this model fit on these GPUs under vLLM, and how many requests will it hold?

Model: vLLM's own start-up accounting, per GPU rank (simulators/core/vllm_memory.py): the memory CUDA
reports times gpu_memory_utilization, less the weights each rank holds under tensor (TP) and
pipeline (PP) parallelism, the activation peak of a profile run of max_num_batched_tokens and
the non-torch memory; what is left becomes KV blocks of block_size tokens. The answer is the two
lines vLLM logs, "GPU KV cache size: N tokens" and "Maximum concurrency for L tokens per request:
X", and a per-GPU memory bar. TP shards weights and KV heads (a rank keeps one KV head when there
are fewer heads than ranks, and every rank copies an MLA latent); PP splits the layers. A layout
that does not fit, or that vLLM would refuse, is a field error naming what to change.

Data parallelism (--data-parallel-size, DP) runs one engine per DP rank, each with its own
requests, KV cache and batch limits; each profiles its own memory and logs its own two lines
(vllm/v1/engine/core.py EngineCore._initialize_kv_caches: determine_available_memory over the
engine's own TP x PP workers, never summed over DP ranks). A dense model is copied whole on every
DP rank. A mixture of experts shares its MoE layers over all tp x dp ranks: every expert split
that many ways, or whole experts per rank with --enable-expert-parallel (EP), while attention and
the dense layers are split over TP and copied per DP rank (vllm_memory.expert_share; vLLM docs
serving/data_parallel_deployment.md and expert_parallel_deployment.md). The log lines are one DP
rank's (the one holding the most experts); the layout holds dp times its requests.

max_num_batched_tokens and max_num_seqs left at 0 take `vllm serve`'s defaults for the GPU
(catalog.serve_defaults: 8,192 and 1,024 on GPUs of 70 GiB or more, the A100 excepted, 2,048 and 256
below), as kv_cache, gpu_memory and the engine do; the answer says which values were used.

References: 1) vllm-project/vllm, vllm/v1/worker/gpu_worker.py (determine_available_memory),
vllm/v1/core/kv_cache_utils.py (get_kv_cache_config, the two log lines), vllm/v1/engine/core.py
(_initialize_kv_caches, one per DP engine), vllm/engine/arg_utils.py (the defaults by GPU),
docs/serving/data_parallel_deployment.md; 2) Kwon et al. 2023, PagedAttention (arXiv 2309.06180).
"""

from dataclasses import dataclass
from typing import Any

from .. import parallel
from ..core import costmodel as cm
from ..core import vllm_memory as vm
from ..core.catalog import Gpu, Model, assumptions, gpus, running_example, serve_defaults
from ..params import ModelGpu, ParamError, dtype_choices, param
from ..plotting import bar, chart
from ..results_cache import Keep

TITLE = "Deployment: vLLM's memory per GPU"
DESCRIPTION = "Weights, activations and KV cache on each GPU as vLLM accounts for them, and the two lines it logs."
METRICS = {
    "weights_GiB_per_gpu": ("Weights per GPU", "GiB"),
    "activation_GiB_per_gpu": ("Activation peak per GPU (profile run)", "GiB"),
    "kv_cache_GiB_per_gpu": ("KV cache per GPU", "GiB"),
    "kv_cache_tokens": ("GPU KV cache size (as logged, per DP rank)", "tokens"),
    "max_concurrency": ("Requests of max_model_len held at once (as logged, per DP rank)", "x"),
    "kv_cache_tokens_total": ("KV cache tokens, all DP ranks", "tokens"),
    "max_concurrency_total": ("Requests of max_model_len held at once, all DP ranks", "x"),
    "num_gpus": ("GPUs (tensor x pipeline x data)", "GPUs"),
}
BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)
TABLE_CONTEXTS = (2048, 4096, 8192, 16384, 32768, 65536, 131072)
AUTO_WEIGHTS = "As the checkpoint (quantization_config), else BF16"
# The two batch limits' lower ends when set (0 means `vllm serve`'s default for the GPU).
MIN_BATCHED_TOKENS = 16
VIEWS = [("memory", "Memory per GPU"), ("concurrency", "Requests held by context length")]
# vLLM's defaults on the running example's GPU (assumptions.toml [vllm_defaults], the one place).
DEFAULTS = serve_defaults(gpus()[running_example()["gpu"]])


def _batch_limit(flag: str, label: str, unit: str, top: int, step: int) -> Any:
    """A batch limit's field; its help says what 0 stands for, read from assumptions.toml [vllm_defaults]."""
    d = assumptions()["vllm_defaults"]
    flag_help = (
        f"--{flag.replace('_', '-')}; 0 takes vllm serve's default for the GPU ({d[flag + '_large']:,} on GPUs of "
        f"{d['large_gpu_min_GiB']} GiB or more, the A100 excepted; else {d[flag + '_small']:,})"
    )
    return param(0, label=label, unit=unit, min=0, max=top, step=step, log=True, help=flag_help)


@dataclass(frozen=True)
class Params(ModelGpu):
    # Ranks a layer's matmuls and KV heads are split over, and stages the layers are split into:
    # the fields every serving simulator shares (simulators/parallel.py).
    tensor_parallel_size: int = parallel.tensor_parallel_param()
    pipeline_parallel_size: int = parallel.pipeline_parallel_param()
    # Engines, each with its own requests and KV cache (--data-parallel-size); a MoE's experts are
    # spread over all tp x dp ranks, whole experts per rank with expert parallelism.
    data_parallel_size: int = parallel.data_parallel_param(
        label="Data parallel", help="--data-parallel-size: one engine per rank, each with its own requests and KV cache"
    )
    enable_expert_parallel: bool = parallel.expert_parallel_param(
        help="--enable-expert-parallel: whole experts spread over tp x dp GPUs"
    )
    # Share of what CUDA reports that vLLM may use (--gpu-memory-utilization).
    gpu_memory_utilization: float = param(
        DEFAULTS["gpu_memory_utilization"], label="GPU memory utilization", min=0.05, max=1.0, step=0.01
    )
    # Longest request, prompt plus output (--max-model-len).
    max_model_len: int = param(8192, label="Max model length", unit="tokens", min=16, max=10_485_760, step=1, log=True)
    # Tokens in the largest forward pass; sizes the profiled activation peak (--max-num-batched-tokens).
    # 0: what `vllm serve` picks on this GPU (serve_defaults), as kv_cache and gpu_memory use.
    max_num_batched_tokens: int = _batch_limit("max_num_batched_tokens", "Max batched tokens", "tokens", 1_048_576, 16)
    # Requests in one batch; sizes the sampler's logits (--max-num-seqs). 0: `vllm serve`'s default.
    max_num_seqs: int = _batch_limit("max_num_seqs", "Max sequences", "sequences", 4096, 1)
    # "auto" stores K and V in the model's dtype (bf16); fp8 halves them (--kv-cache-dtype).
    kv_cache_dtype: str = param("auto", label="KV cache format", choices=[("auto", "auto (bf16)"), ("fp8", "fp8")])
    weight_dtype: str = param(
        "auto", label="Weight format", choices=lambda: [("auto", AUTO_WEIGHTS), *dtype_choices()()]
    )
    # Tokens per KV block (--block-size).
    block_size: int = param(int(DEFAULTS["block_size"]), label="Block size", unit="tokens", min=1, max=256, step=1)

    def check(self) -> None:
        m, gpu = self.resolved()
        tp, pp, dp = self.tensor_parallel_size, self.pipeline_parallel_size, self.data_parallel_size
        if self.block_size not in BLOCK_SIZES:
            raise ParamError("block_size", f"must be one of {', '.join(map(str, BLOCK_SIZES))}")
        if m.num_heads % tp:
            raise ParamError(
                "tensor_parallel_size",
                f"must divide {m.name}'s {m.num_heads} attention heads (vLLM splits them evenly)",
            )
        if pp > m.num_layers:
            raise ParamError("pipeline_parallel_size", f"must be at most {m.name}'s {m.num_layers} layers")
        if self.enable_expert_parallel and not m.is_moe:
            raise ParamError("enable_expert_parallel", f"{m.name} has no experts to spread (a dense model)")
        if self.enable_expert_parallel and tp * dp > m.num_experts:
            raise ParamError(
                "data_parallel_size" if dp > 1 else "tensor_parallel_size",
                f"tp x dp = {tp * dp} GPUs exceed {m.name}'s {m.num_experts} experts: expert parallelism "
                "gives each GPU at least one whole expert",
            )
        if 0 < self.max_num_batched_tokens < MIN_BATCHED_TOKENS:
            raise ParamError(
                "max_num_batched_tokens", f"must be 0 (vllm serve's default) or at least {MIN_BATCHED_TOKENS}"
            )
        tokens, seqs = batch_limits(gpu, self)
        if tokens < seqs:
            said = "" if self.max_num_seqs else f", vllm serve's default on {gpu.name}"
            raise ParamError("max_num_batched_tokens", f"must be at least max_num_seqs ({seqs:,}{said})")
        if self.max_model_len > m.max_context_tokens:
            raise ParamError("max_model_len", f"must be at most {m.name}'s {m.max_context_tokens:,} positions")
        # Dense DP ranks are independent replicas; a MoE's expert layers span all tp x dp GPUs.
        linked = tp * pp * (dp if m.is_moe else 1)
        parallel.check_link(gpu, linked, "data_parallel_size" if linked > tp * pp else "tensor_parallel_size")
        # Whether vLLM would start: the weights, activations and one request of max_model_len fit.
        a = _account(m, gpu, self)
        worst = min(a.stages, key=lambda s: s.kv_bytes)
        if worst.kv_bytes <= 0:
            raise ParamError(
                "data_parallel_size" if m.is_moe and dp > 1 and tp == pp == 1 else "tensor_parallel_size",
                f"does not fit: weights {worst.weight_bytes / cm.GiB:.1f} GiB + activations "
                f"{worst.activation_bytes / cm.GiB:.1f} GiB + non-torch {worst.non_torch_bytes / cm.GiB:.1f} GiB "
                f"exceed {self.gpu_memory_utilization:g} x {gpu.visible_GiB:.2f} GiB = "
                f"{worst.requested_bytes / cm.GiB:.1f} GiB per GPU; use more GPUs, a smaller weight format or a higher "
                "gpu_memory_utilization",
            )
        if a.num_blocks < a.blocks_per_request:
            kv_GiB = a.num_blocks * a.page_bytes * a.group_size / cm.GiB
            raise ParamError(
                "max_model_len",
                f"one request of {self.max_model_len:,} tokens needs {a.one_request_bytes / cm.GiB:.2f} GiB of KV "
                f"cache, more than the {kv_GiB:.2f} GiB available (vLLM refuses to start); lower max_model_len",
            )


def batch_limits(gpu: Gpu, p: Params) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) one engine runs with: a field left at 0 takes
    catalog.serve_defaults(gpu), as EngineArgs does when the flag is absent."""
    d = serve_defaults(gpu)
    return p.max_num_batched_tokens or int(d["max_num_batched_tokens"]), p.max_num_seqs or int(d["max_num_seqs"])


def _dtypes(m: Model, p: Params) -> tuple[str, str]:
    weight = (m.weight_format or "bf16") if p.weight_dtype == "auto" else p.weight_dtype
    return weight, "bf16" if p.kv_cache_dtype == "auto" else "fp8"


def _account(m: Model, gpu: Gpu, p: Params) -> vm.VllmMemory:
    weight, kv = _dtypes(m, p)
    tokens, seqs = batch_limits(gpu, p)
    same = {k: getattr(p, k) for k in ("gpu_memory_utilization", "max_model_len", "block_size")}
    limits: dict[str, Any] = {"max_num_batched_tokens": tokens, "max_num_seqs": seqs}
    return vm.account(m, gpu, **parallel.layout_of(p).cost_kw(), **same, **limits, kv_dtype=kv, weight_dtype=weight)


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> dict[str, Any]:
    m, gpu = p.resolved()
    weight, kv = _dtypes(m, p)
    a = _account(m, gpu, p)
    tokens, seqs = batch_limits(gpu, p)
    dp = p.data_parallel_size
    kv_bytes = a.num_blocks * a.page_bytes * a.group_size
    # Requests of each length the pools hold, all DP ranks together (the block count is the same).
    lengths = [c for c in TABLE_CONTEXTS if c <= m.max_context_tokens]
    needs = {c: sum(vm.blocks_per_request(m, g, c, tokens, p.block_size) for g in a.groups) for c in lengths}
    per_context = [{"context_tokens": c, "max_concurrency": dp * a.num_blocks / n} for c, n in needs.items()]
    gib = cm.GiB
    # Each stage's GiB by what holds them (the key's name, the VllmMemory field's).
    held = dict(total="total", requested="requested", weights="weight", activation="activation", non_torch="non_torch")
    stages = [
        {"stage": s.stage, "num_layers": s.num_layers, "kv_GiB": kv_bytes / gib}
        | {f"{k}_GiB": getattr(s, f"{f}_bytes") / gib for k, f in held.items()}
        for s in a.stages
    ]
    shape = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "enable_expert_parallel")
    return {
        **p.stated(*shape, "max_model_len", "gpu_memory_utilization"),
        "weight_dtype": weight,
        "kv_cache_dtype": kv,
        # The batch limits used, and whether each is `vllm serve`'s default for this GPU (field at 0).
        "max_num_batched_tokens": tokens,
        "max_num_seqs": seqs,
        "serve_default": {"max_num_batched_tokens": not p.max_num_batched_tokens, "max_num_seqs": not p.max_num_seqs},
        "stages": stages,
        "cudagraph_GiB": a.cudagraph_bytes / gib,
        **{k: getattr(a, k) for k in ("kv_heads_per_rank", "num_blocks", "log_lines")},
        "kv_groups": a.num_groups,
        "concurrency_by_context": per_context,
        "notes": notes(m, gpu, p, a),
        "metrics": {
            "weights_GiB_per_gpu": max(s.weight_bytes for s in a.stages) / gib,
            "activation_GiB_per_gpu": max(s.activation_bytes for s in a.stages) / gib,
            "kv_cache_GiB_per_gpu": kv_bytes / gib,
            "kv_cache_tokens": a.kv_tokens,
            "max_concurrency": a.max_concurrency,
            "kv_cache_tokens_total": dp * a.kv_tokens,
            "max_concurrency_total": dp * a.max_concurrency,
            "num_gpus": p.tensor_parallel_size * p.pipeline_parallel_size * dp,
        },
    }


def notes(m: Model, gpu: Gpu, p: Params, a: vm.VllmMemory) -> list[str]:
    """What a reader should know about this layout: copies, experts per GPU, replicas, the GPU's figures."""
    out = list(m.notes)
    tp, dp = p.tensor_parallel_size, p.data_parallel_size
    if a.kv_heads_replicated:
        what = "the MLA latent" if m.kv_lora_rank else f"{m.num_kv_heads} KV heads"
        out.append(f"{what} cannot be split over {tp} ranks: each rank keeps its own copy")
    if m.is_moe and (dp > 1 or p.enable_expert_parallel):
        ranks = tp * dp
        if p.enable_expert_parallel:
            most = -(-m.num_experts // ranks)
            out.append(
                f"expert parallelism: each of the {ranks} GPUs of tp x dp holds {most} of {m.num_experts} routed experts"
                + (" (the first ranks one more: the figures are the fullest's)" if m.num_experts % ranks else "")
            )
        else:
            out.append(f"every routed expert is split over tp x dp = {ranks} GPUs (no --enable-expert-parallel)")
        if dp > 1:
            split = f"split over TP {tp} and copied" if tp > 1 else "copied whole"
            out.append(f"attention and the dense layers are {split} on each of the {dp} DP ranks")
    elif dp > 1:
        out.append(f"each of the {dp} DP ranks is a whole replica of the model with its own requests")
    if m.ignored_keys:
        out.append("config keys not read: " + ", ".join(m.ignored_keys))
    if gpu.cuda_total_GiB is None:
        out.append(
            f"{gpu.name}: no published log gives the memory CUDA reports; the data-sheet {gpu.memory_GiB:g} GiB is used"
        )
    elif gpu.cuda_total_derived:
        out.append(f"{gpu.name}: the {gpu.cuda_total_GiB:g} GiB CUDA reports is derived, not read from a log")
    return out


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    dp = r["data_parallel_size"]
    if view == "concurrency":
        rows = r["concurrency_by_context"]
        data = [bar([f"{x['context_tokens']:,}" for x in rows], [x["max_concurrency"] for x in rows], "Requests held")]
        ranks = f" ({dp} DP ranks together)" if dp > 1 else ""
        title = f"{r['model']}: requests of each length the KV cache holds at once{ranks}"
        # Category axis: plotly would read "1,024" as the number 1024 and space the bars by value.
        x_axis = {"type": "category"}
        return chart(data, title, "Tokens per request (prompt + output)", "Requests at once", xaxis=x_axis)
    alike = r["tensor_parallel_size"] * dp
    names = [f"Stage {s['stage']} ({f'{alike} GPUs alike' if alike > 1 else 'one GPU'})" for s in r["stages"]]
    parts = [("Weights", "weights"), ("Activation peak", "activation"), ("Non-torch", "non_torch"), ("KV cache", "kv")]
    data = [bar(names, [s[f"{key}_GiB"] for s in r["stages"]], label, i) for i, (label, key) in enumerate(parts)]
    spare = [
        s["requested_GiB"] - s["weights_GiB"] - s["activation_GiB"] - s["non_torch_GiB"] - s["kv_GiB"]
        for s in r["stages"]
    ]
    data.append(bar(names, spare, "Requested, less than one block", 4))
    left = [s["total_GiB"] - s["requested_GiB"] for s in r["stages"]]
    data.append(bar(names, left, "Left to CUDA graphs and others", 5))
    title = f"{r['model']} on {r['metrics']['num_gpus']} x {r['gpu']}: memory per GPU"
    return chart(data, title, "", "GiB per GPU", barmode="stack")


def _limits(r: dict[str, Any]) -> str:
    """The two batch limits the engine ran with, and which are `vllm serve`'s defaults for the GPU."""
    said, n = r["serve_default"], r["max_num_seqs"]
    tokens, seqs = f"{r['max_num_batched_tokens']:,} batched tokens", f"{n:,} sequence{'s' if n > 1 else ''}"
    if all(said.values()):
        return f"Batch limits: vllm serve's defaults on this GPU, {tokens} and {seqs}. "
    default, chosen = " (vllm serve's default on this GPU)", " (as set)"
    tokens += default if said["max_num_batched_tokens"] else chosen
    seqs += default if said["max_num_seqs"] else chosen
    return f"Batch limits: {tokens} and {seqs}. "


def summary(r: dict[str, Any], view: str) -> str:
    x, dp = r["metrics"], r["data_parallel_size"]
    shape = f"TP {r['tensor_parallel_size']}, PP {r['pipeline_parallel_size']}" + (f", DP {dp}" if dp > 1 else "")
    shape += ", EP" if r["enable_expert_parallel"] else ""
    if view == "concurrency":
        held = ", ".join(
            f"{c['context_tokens']:,} tokens {c['max_concurrency']:,.1f}" for c in r["concurrency_by_context"]
        )
        tokens = f"{x['kv_cache_tokens']:,} tokens" + (
            f" per DP rank, {x['kv_cache_tokens_total']:,} in all" if dp > 1 else ""
        )
        return (
            f"Requests held at once by length (prompt + output){', all DP ranks together' if dp > 1 else ''}: "
            f"{held}. {r['model']} on {x['num_gpus']} x {r['gpu']} ({shape}) keeps "
            f"{x['kv_cache_GiB_per_gpu']:.2f} GiB of KV cache per GPU, {tokens}; at --max-model-len "
            f"{r['max_model_len']:,} vLLM would log a maximum concurrency of {x['max_concurrency']:.2f}x"
            f"{' per engine' if dp > 1 else ''}."
        )
    total = ""
    if dp > 1:
        total = f" All {dp} DP ranks together: {x['kv_cache_tokens_total']:,} tokens, {x['max_concurrency_total']:.2f} "
        total += f"requests of {r['max_model_len']:,} tokens."
    return (
        f"{r['model']} on {x['num_gpus']} x {r['gpu']} ({shape}): each GPU holds {x['weights_GiB_per_gpu']:.2f} GiB of "
        f"{r['weight_dtype']} weights, a {x['activation_GiB_per_gpu']:.2f} GiB activation peak and "
        f"{x['kv_cache_GiB_per_gpu']:.2f} GiB of KV cache. "
        + _limits(r)
        + ("vLLM would log: " if dp == 1 else f"Each of the {dp} DP engines would log: ")
        + "; ".join(r["log_lines"][2:])
        + f".{total}"
    )
