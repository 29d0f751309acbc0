"""The search behind the cheapest-deployment simulator (simulators/sims/cheapest.py): layouts, bounds, engine runs.

A *layout* is one GPU type, a weight format and a parallel shape of one replica (one vLLM
server): tensor parallel 1-8, pipeline parallel 1-8 and, for a mixture of experts, data-parallel
attention 2-8 with expert parallelism (`shapes`), at most 8 GPUs (one node: the catalogue's link
figure is the node's); a *configuration* is a layout times a number of replicas. The search:

1. keeps the layouts vLLM would start (vllm_memory.account at vLLM's serve defaults for the GPU,
   max_model_len = the longest request; each DP rank has its own KV blocks and batch limits, so
   the engine's replica gets dp times both);
2. bounds each with closed forms read off the engine's own step cost (engine.steptime.StepCost),
   which the engine can never beat:
       TTFT_i >= the prefill of the shortest prompt alone   (every first token waits for one)
       TPOT_i >= a batch-1 decode step at the shortest prompt  (every later token needs a step)
       a replica's rate <= min(B / (mean(output - 1) x decode step of B at the shortest prompt),
                               pp / mean(prefill compute time))
   with B = the sequences a replica can run at once (max_num_seqs, or the KV blocks over the
   blocks of the shortest prompt). Both hold at any pp: a pipeline's round divides a step's parts
   by its micro-batches (parallel_time.py), but a prompt's first token waits for its own pass
   through every stage (the engine's lag), and each part of a round is at least a batch-1 decode's
   (its sums per micro-batch are at least one sequence's; a MoE's expert reads are concave in the
   tokens). Bounding every request bounds every
   percentile: a layout whose floor misses a target is dropped; the others need more than
   rate / (replica rate bound) replicas, which bounds their cost;
3. confirms with the event engine, cheapest bound first: r replicas behind a random router each
   see a Poisson stream at rate / r (a random split of a Poisson stream is Poisson), so one
   replica served at rate / r stands for all. A configuration meets the SLO when its offered rate
   per replica is below the bound (else its queue grows without end, however short the run) and
   the engine's TTFT and TPOT percentiles are within the targets; per layout, the fewest replicas
   that meet (cheapest.run).

Runs are memoized by everything they depend on (not the SLO targets), so a new target or
percentile re-ranks without running the engine; the rate per replica is rounded up to a grid of
4.4% steps (`grid_rate`), so nearby request rates share runs, and a run that missed the targets
at one rate per replica answers for every higher one.
"""

import math
import random
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from ..core import costmodel as cm
from ..core import vllm_memory as vm
from ..core.catalog import Gpu, Model, serve_defaults
from ..engine import EngineSpec, SchedulerConfig, serve, summarize
from ..engine.scheduler import vllm_serve_defaults
from ..engine.steptime import attention_keys
from .loadgen import arrange

TP_SIZES = (1, 2, 4, 8)
PP_SIZES = (1, 2, 4, 8)
DP_SIZES = (1, 2, 4, 8)  # data-parallel attention with expert parallelism: mixtures of experts only
REPLICA_MAX_GPUS = 8
GRID_PER_OCTAVE = 16  # per-replica rates are rounded up to 2^(k / 16): 4.4% steps
WARMUP = "10%"  # left out at both ends of each engine run (GuideLLM's --warmup / --cooldown)


@dataclass(frozen=True)
class Layout:
    gpu: Gpu
    tp: int
    weight_dtype: str
    price_per_gpu_h: float
    pp: int = 1
    dp: int = 1  # data-parallel attention ranks (with expert parallelism): one vLLM server
    ep: bool = False

    @property
    def num_gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def shape(self) -> str:
        return " ".join(self.parts() + ["EP"] * self.ep)

    def parts(self, sep: str = "") -> list[str]:
        """TP, then PP and DP where above 1: "TP2 PP2" (`sep` between name and size: "TP 2")."""
        return [f"TP{sep}{self.tp}"] + [f"PP{sep}{self.pp}"] * (self.pp > 1) + [f"DP{sep}{self.dp}"] * (self.dp > 1)

    @property
    def label(self) -> str:
        return f"{self.gpu.id} {self.shape} {self.weight_dtype}"


def shapes(m: Model, max_gpus: int) -> list[tuple[int, int, int, bool]]:
    """(tp, pp, dp, ep) of every replica shape searched, at most min(max_gpus, 8) GPUs. Dense models:
    tp x pp (more copies are replicas). A mixture of experts also: dp data-parallel attention ranks
    with expert parallelism (vLLM's recommended DP + EP), each of tp GPUs, no pipeline. TP with EP and
    no DP is left out: it holds the bytes per GPU of TP (vllm_memory.expert_share) and times the same.
    Whether vLLM would start a shape (heads divisible by tp, layers >= pp, experts >= tp x dp) is memory()'s to say."""
    cap = min(max_gpus, REPLICA_MAX_GPUS)
    out = [(tp, pp, 1, False) for tp in TP_SIZES for pp in PP_SIZES if tp * pp <= cap]
    if m.is_moe:
        out += [(tp, 1, dp, True) for tp in TP_SIZES for dp in DP_SIZES[1:] if tp * dp <= cap]
    return out


@dataclass(frozen=True)
class Bounds:
    """Closed-form floors of one layout (see the module docstring); all from the engine's step cost."""

    ttft_floor_s: float  # the shortest prompt's bare prefill
    tpot_floor_s: float  # a batch-1 decode step at the shortest prompt
    rate_bound_per_s: float  # requests per second one replica cannot exceed
    num_blocks: int  # KV blocks per replica (vLLM's accounting)
    engine: EngineSpec  # the replica the engine serves (its step cost is kept on it)


def weight_formats(gpu: Gpu, asked: str) -> list[str]:
    """The weight formats tried on this GPU: bf16; fp8 where it has FP8 tensor cores; int4 (weight-only) if asked."""
    return ["bf16"] + ["fp8"] * ("fp8" in asked and cm.matmul_path(gpu, "fp8") == "fp8") + ["int4"] * ("int4" in asked)


def memory(m: Model, layout: Layout, max_model_len: int) -> vm.VllmMemory | None:
    """vLLM's accounting for one replica (one DP rank's engine), or None when vLLM would refuse the shape."""
    return _memory(m, replace(layout, price_per_gpu_h=0.0), max_model_len)


@lru_cache(maxsize=512)  # best_case and the search account the same layouts (not the price) in one change
def _memory(m: Model, lay: Layout, max_model_len: int) -> vm.VllmMemory | None:
    tokens, seqs = vllm_serve_defaults(lay.gpu)
    kw: dict[str, Any] = {"gpu_memory_utilization": serve_defaults(lay.gpu)["gpu_memory_utilization"]}
    kw |= {"max_model_len": max_model_len, "max_num_batched_tokens": tokens, "max_num_seqs": seqs}
    try:
        return vm.account(m, lay.gpu, tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=lay.ep, weight_dtype=lay.weight_dtype, **kw)
    except ValueError:
        return None


def spec(m: Model, layout: Layout, num_blocks: int) -> EngineSpec:
    """The engine replica of a layout: vLLM's serve defaults, its KV blocks as vLLM counts them (`num_blocks`
    per DP rank). A DP group runs as one scheduler with dp times one rank's blocks and batch limits (in vLLM
    each rank has its own; a prompt's chunk may then exceed one rank's token budget, which vLLM splits)."""
    tokens, seqs = vllm_serve_defaults(layout.gpu)
    sched = SchedulerConfig(max_num_seqs=layout.dp * seqs, max_num_batched_tokens=layout.dp * tokens)
    lay: dict[str, Any] = {"tp": layout.tp, "pp": layout.pp, "dp": layout.dp, "ep": layout.ep}
    return EngineSpec(m, layout.gpu, sched, weight_dtype=layout.weight_dtype, num_blocks=layout.dp * num_blocks, **lay)


@lru_cache(maxsize=8)
def _draw_sums(drawn: tuple[tuple[int, int], ...]) -> tuple[int, float, float, float]:
    """What bounds() needs of the drawn lengths, the same for every layout: the shortest prompt,
    the mean prompt, the mean attention_keys(prompt, 0) and the mean decode steps (output - 1)."""
    n = len(drawn)
    return (
        min(p for p, _ in drawn),
        sum(p for p, _ in drawn) / n,
        sum(attention_keys(p, 0) for p, _ in drawn) / n,
        sum(o - 1 for _, o in drawn) / n,
    )


def bounds(
    m: Model, layout: Layout, a: vm.VllmMemory, drawn: list[tuple[int, int]], like: EngineSpec | None = None
) -> Bounds:
    """The floors and the rate bound of the module docstring, for the drawn (prompt, output) lengths.
    `like`: an earlier spec of the same layout, whose step cost the new one keeps."""
    engine = spec(m, layout, a.num_blocks)
    if like is not None:
        engine.adopt_step_cost(like)
    cost = engine.step_cost()
    shortest, mean_tokens, mean_keys, steps = _draw_sums(tuple(drawn))
    pp = layout.pp

    def decode(batch: int, context: int) -> float:
        return cost.time_s(batch, batch, batch * (context + 1), batch * (cost.held(context) + 1))

    # The shortest prompt's floors bound every request's, so they bound any percentile of any
    # subset (the engine's statistics leave out the warm-up and the cool-down).
    ttft = cost.time_s(shortest, 1, attention_keys(shortest, 0), shortest)
    tpot = decode(1, shortest)
    blocks_each = -(-(shortest + 1) // engine.block_size)
    batch = max(1, min(engine.sched.max_num_seqs or 1, layout.dp * a.num_blocks // blocks_each))
    decode_rate = batch / (steps * decode(batch, shortest)) if steps > 0 else math.inf
    compute = cost.mean_prefill_compute_s(mean_tokens, mean_keys)
    prefill_rate = pp / compute if compute > 0 else math.inf
    return Bounds(ttft, tpot, min(decode_rate, prefill_rate), layout.dp * a.num_blocks, engine)


def replicas_needed(rate: float, b: Bounds) -> int:
    """The fewest replicas whose share of the rate stays below one replica's bound."""
    return max(1, math.floor(rate / b.rate_bound_per_s) + 1)


def grid_index(rate: float) -> int:
    """The grid point at or above `rate`: grid_rate(rate) == 2 ** (grid_index(rate) / GRID_PER_OCTAVE)."""
    return math.ceil(GRID_PER_OCTAVE * math.log2(rate) - 1e-9)


def at_index(k: int) -> float:
    return float(2 ** (k / GRID_PER_OCTAVE))


def config_name(lay: Layout, replicas: int) -> str:
    """How the table names a configuration: "4 x NVIDIA L40S (2 replicas of TP 2, fp8)"."""
    shape = ", ".join(lay.parts(" ")) + (" + EP" if lay.ep else "")
    how = f"{replicas} replicas of {shape}" if replicas > 1 else shape
    return f"{replicas * lay.num_gpus} x {lay.gpu.name.split(' (')[0]} ({how}, {lay.weight_dtype})"


def short_name(lay: Layout, replicas: int) -> str:
    """The chart's label, which a phone's width holds: "4 x l40s 2xTP2 fp8" (parallelism beyond
    one GPU and a format other than bf16 only; "2x" = replicas)."""
    how = "-".join(lay.parts()[lay.tp == 1 :] + ["EP"] * lay.ep) or "1 GPU"
    how = f"{replicas}x{how}" if replicas > 1 else how
    fmt = "" if lay.weight_dtype == "bf16" else f" {lay.weight_dtype}"
    return f"{replicas * lay.num_gpus} x {lay.gpu.id} {how}{fmt}"


Entry = tuple[float, str, Layout, Bounds, int, int]  # price, name, layout, bounds, replicas, grid index


def rank(
    candidates: list[tuple[float, str, Layout, Bounds, int]],
    meets: Callable[[Layout, Bounds, int], bool],
    top: int,
    rate: float,
    max_gpus: int,
) -> Generator[tuple[list[Entry], int], None, tuple[list[Entry], int, list[dict[str, Any]]]]:
    """The `top` cheapest layouts, each at its fewest replicas that meet (`meets` of one replica at
    a grid index), by (price, name); the layouts confirmed; those that miss on up to max_gpus GPUs.
    Candidates (lower-bound price, label, layout, bounds, fewest replicas the bound allows) come
    cheapest bound first; the search stops when none left could sort before the last row.
    Before each layout is confirmed it yields the rows so far and the number of candidates taken
    (confirmed or passed over): a page can draw the search as it goes."""
    ranked: list[Entry] = []
    confirmed = 0
    full: list[dict[str, Any]] = []

    def beaten(cost: float, name: str) -> bool:
        """The table is full and a configuration costing at least `cost` sorts after its last row."""
        return len(ranked) >= top and (cost, name) > ranked[-1][:2]

    for taken, (bound, _, lay, b, r) in enumerate(candidates):
        if len(ranked) >= top and bound > ranked[-1][0]:
            break
        if beaten(bound, config_name(lay, r)):
            continue  # (a later candidate of the same bound may still sort before the last row)
        yield ranked, taken
        confirmed += 1
        # The layout's cheapest configuration: the fewest replicas, from the fewest its rate bound
        # allows, whose share of the rate one replica serves within the targets (up to the last row).
        while r * lay.num_gpus <= max_gpus and not beaten(r * lay.num_gpus * lay.price_per_gpu_h, config_name(lay, r)):
            k = grid_index(rate / r)
            if meets(lay, b, k):
                entry = (r * lay.num_gpus * lay.price_per_gpu_h, config_name(lay, r), lay, b, r, k)
                ranked = sorted([*ranked, entry], key=lambda e: e[:2])[:top]
                break
            r += 1
        else:
            if r * lay.num_gpus > max_gpus:
                full.append({"config": lay.label, "why": f"misses the targets on up to {max_gpus} GPUs at this rate"})
    return ranked, confirmed, full


def grid_rate(rate: float) -> float:
    """`rate` rounded up to the next point of the grid: runs are shared between nearby rates (a
    memo hit), and the engine is asked about a slightly higher load, so a verdict errs safe."""
    return at_index(grid_index(rate))


def engine_run(engine: EngineSpec, drawn: list[tuple[int, int]], rate: float, seed: int) -> dict[str, float]:
    """One replica served a Poisson stream at `rate`: the engine's summary (every percentile).
    Pass the layout's one EngineSpec (Bounds.engine): its step cost is made once and kept on it."""
    served = serve(arrange("poisson", drawn, random.Random(seed), rate=rate), engine, keep_series=False)
    return summarize(served.records, warmup=WARMUP, cooldown=WARMUP) | {"num_dropped": float(len(served.dropped))}


def verdict(run: dict[str, float], q: str, ttft_slo_s: float, tpot_slo_s: float) -> dict[str, Any]:
    ttft, tpot = run[f"ttft_s_p{q}"], run[f"tpot_s_p{q}"]
    ok = ttft <= ttft_slo_s and tpot <= tpot_slo_s and run["num_dropped"] == 0
    return {"ttft_s": ttft, "tpot_s": tpot, "meets": ok, "headroom": 1 - max(ttft / ttft_slo_s, tpot / tpot_slo_s)}


def best_case(
    m: Model, gpus: list[Gpu], max_gpus: int, formats: str, prompt: int, max_model_len: int
) -> dict[str, Any]:
    """The most any allowed layout can do: the lowest TTFT and ITL floors over the layouts that fit (cost
    model, course efficiencies, as the engine; a pipeline's one pass, without its sends), and whether any
    fits. The floors are at most every searched layout's, so a target they miss is missed by all."""
    best: dict[str, Any] = {"fits": False, "ttft_s": math.inf, "tpot_s": math.inf, "ttft_at": "", "tpot_at": ""}
    for gpu in gpus:
        for dtype in weight_formats(gpu, formats):
            for tp, pp, dp, ep in shapes(m, max_gpus):
                lay = Layout(gpu, tp, dtype, 0.0, pp, dp, ep)
                a = memory(m, lay, max_model_len)
                if a is None or not a.fits or (lay.num_gpus > 1 and cm.link_GBps_one_way(gpu) is None):
                    continue
                kw: dict[str, Any] = {"weight_dtype": dtype, "eff": cm.efficiency(False), "tp": tp, "dp": dp, "ep": ep}
                steps = (cm.prefill_time(m, gpu, prompt, **kw), cm.decode_step_time(m, gpu, [prompt], **kw))
                best["fits"] = True
                for k, t in zip(("ttft", "tpot"), (step.time_s for step in steps), strict=True):
                    if t < best[f"{k}_s"]:
                        best |= {f"{k}_s": t, f"{k}_at": f"{lay.num_gpus} x {gpu.id} ({lay.shape}, {dtype})"}
    return best
