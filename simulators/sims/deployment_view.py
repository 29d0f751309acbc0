"""The deployment simulator's words and charts: notes on the layout, the memory bar per GPU,
the requests held by context length, and the summary (simulators/sims/deployment.py computes them)."""

from __future__ import annotations

from typing import Any

from ..core.catalog import Gpu, Model
from ..core.vllm_memory import VllmMemory
from ..plotting import bar, chart

__all__ = ["figure", "notes", "summary"]


def notes(m: Model, gpu: Gpu, p: Any, a: VllmMemory) -> list[str]:
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
    x = r["metrics"]
    dp = r["data_parallel_size"]
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
    logged = "vLLM would log" if dp == 1 else f"Each of the {dp} DP engines would log"
    total = ""
    if dp > 1:
        total = f" All {dp} DP ranks together: {x['kv_cache_tokens_total']:,} tokens, {x['max_concurrency_total']:.2f} "
        total += f"requests of {r['max_model_len']:,} tokens."
    return (
        f"{r['model']} on {x['num_gpus']} x {r['gpu']} ({shape}): each GPU holds {x['weights_GiB_per_gpu']:.2f} GiB of "
        f"{r['weight_dtype']} weights, a {x['activation_GiB_per_gpu']:.2f} GiB activation peak and "
        f"{x['kv_cache_GiB_per_gpu']:.2f} GiB of KV cache. "
        + _limits(r)
        + f"{logged}: "
        + "; ".join(r["log_lines"][2:])
        + f".{total}"
    )
