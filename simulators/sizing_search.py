"""The search behind the cheapest-deployment simulator (simulators/cheapest.py): layouts, bounds, engine runs.

A *layout* is one GPU type, a tensor-parallel size and a weight format; a *configuration* is a
layout times a number of replicas (data parallel). The search:

1. enumerates layouts and keeps those vLLM would start (vllm_memory.account at vLLM's serve
   defaults for the GPU, max_model_len = the longest request);
2. bounds each with closed forms read off the engine's own step cost (engine.steptime.StepCost),
   so that the engine can never do better than the bound:
       TTFT_i >= the prefill of the shortest prompt alone   (every first token waits for one)
       TPOT_i >= a batch-1 decode step at the shortest prompt  (every later token needs a step)
       a replica's rate <= min(B / (mean(output - 1) x decode step of B at the shortest prompt),
                               1 / mean(prefill compute time))
   with B = the sequences a replica can run at once (max_num_seqs, or the KV blocks over the
   blocks of the shortest prompt). Bounding every request bounds every percentile, so a layout
   whose floor misses a target is dropped; the others need more than rate / (replica rate
   bound) replicas, which bounds their cost;
3. confirms with the event engine, cheapest bound first: r replicas behind a random router each
   see a Poisson stream at rate / r (a random split of a Poisson stream is Poisson), so one
   replica is served at rate / r and its percentiles stand for all. A configuration meets the
   SLO when its offered rate per replica is below the bound (else its queue grows without end,
   however short the run) and the engine's percentiles of TTFT and TPOT are within the targets.
   Per layout the search finds the highest such rate on the grid below (`highest_meeting`),
   taking "meets" as monotone in the rate; the fewest replicas follow for any request rate.

Runs are kept in a memo keyed by everything they depend on (not the SLO targets), so a change
of target or percentile re-ranks without running the engine again; the rate per replica is
rounded up to a grid of 4.4% steps (`grid_rate`), so nearby request rates share runs too.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import costmodel as cm
from . import vllm_memory as vm
from .catalog import Gpu, Model, serve_defaults
from .engine import EngineSpec, SchedulerConfig, serve, summarize
from .engine.loadgen import arrange
from .engine.scheduler import vllm_serve_defaults
from .engine.steptime import attention_keys

TP_SIZES = (1, 2, 4, 8)
GRID_PER_OCTAVE = 16  # per-replica rates are rounded up to 2^(k / 16): 4.4% steps
WARMUP = "10%"  # left out at both ends of each engine run (GuideLLM's --warmup / --cooldown)


@dataclass(frozen=True)
class Layout:
    gpu: Gpu
    tp: int
    weight_dtype: str
    price_per_gpu_h: float

    @property
    def label(self) -> str:
        return f"{self.gpu.id} TP{self.tp} {self.weight_dtype}"


@dataclass(frozen=True)
class Bounds:
    """Closed-form floors of one layout (see the module docstring); all from the engine's step cost."""

    ttft_floor_s: float  # the shortest prompt's bare prefill
    tpot_floor_s: float  # a batch-1 decode step at the shortest prompt
    rate_bound_per_s: float  # requests per second one replica cannot exceed
    num_blocks: int  # KV blocks per replica (vLLM's accounting)
    # An estimate, not a bound: ITL target -> the rate at the largest batch whose decode step plus
    # its share of the prefills stays within the target (lesson 00.2's server). Where to start looking.
    rate_estimate: Callable[[float], float]
    engine: EngineSpec  # the replica the engine serves (its step cost is kept on it)


def weight_formats(gpu: Gpu, asked: str) -> list[str]:
    """The weight formats tried on this GPU: bf16; fp8 where it has FP8 tensor cores; int4 (weight-only) if asked."""
    out = ["bf16"]
    if "fp8" in asked and cm.matmul_path(gpu, "fp8") == "fp8":
        out.append("fp8")
    if "int4" in asked:
        out.append("int4")
    return out


def memory(m: Model, layout: Layout, max_model_len: int) -> vm.VllmMemory | None:
    """vLLM's accounting for one replica, or None when this TP size cannot split the model."""
    tokens, seqs = vllm_serve_defaults(layout.gpu)
    try:
        return vm.account(
            m,
            layout.gpu,
            tp=layout.tp,
            gpu_memory_utilization=serve_defaults(layout.gpu)["gpu_memory_utilization"],
            max_model_len=max_model_len,
            max_num_batched_tokens=tokens,
            max_num_seqs=seqs,
            weight_dtype=layout.weight_dtype,
        )
    except ValueError:
        return None


def spec(m: Model, layout: Layout, num_blocks: int) -> EngineSpec:
    """The engine replica of a layout: vLLM's serve defaults, its KV blocks as vLLM counts them."""
    return EngineSpec(
        m, layout.gpu, SchedulerConfig(), weight_dtype=layout.weight_dtype, tp=layout.tp, num_blocks=num_blocks
    )


def bounds(m: Model, layout: Layout, a: vm.VllmMemory, drawn: list[tuple[int, int]]) -> Bounds:
    """The floors and the rate bound of the module docstring, for the drawn (prompt, output) lengths."""
    engine = spec(m, layout, a.num_blocks)
    cost = engine.step_cost()
    prompts = [p for p, _ in drawn]

    def prefill(p: int) -> tuple[float, float, float]:
        return cost.parts(p, 1, attention_keys(p, 0), p)

    def decode(batch: int, context: int) -> float:
        return cost.time_s(batch, batch, batch * (context + 1), batch * (cost.held(context) + 1))

    # The shortest prompt's floors bound every request's, so they bound any percentile of any
    # subset (the engine's statistics leave out the warm-up and the cool-down).
    shortest = min(prompts)
    ttft, tpot = cm.roofline_s(*prefill(shortest)), decode(1, shortest)
    blocks_each = -(-(shortest + 1) // engine.block_size)
    batch = max(1, min(engine.sched.max_num_seqs or 1, a.num_blocks // blocks_each))
    steps = sum(o - 1 for _, o in drawn) / len(drawn)
    decode_rate = batch / (steps * decode(batch, shortest)) if steps > 0 else math.inf
    compute = sum(prefill(p)[0] for p in prompts) / len(prompts)
    prefill_rate = 1 / compute if compute > 0 else math.inf
    bound = min(decode_rate, prefill_rate)
    return Bounds(
        ttft,
        tpot,
        bound,
        a.num_blocks,
        lambda itl_target: min(bound, _estimate(drawn, batch, decode, prefill, itl_target)),
        engine,
    )


def _estimate(drawn: list[tuple[int, int]], most: int, decode: Any, prefill: Any, itl_target: float) -> float:
    """Requests per second at the largest batch b <= `most` whose mean gap, b x prefill / (output
    - 1) + one decode step at the mean context, is within the ITL target (found by bisection)."""
    prompt = sum(p for p, _ in drawn) / len(drawn)
    steps = max(1.0, sum(o - 1 for _, o in drawn) / len(drawn))
    prefill_s = cm.roofline_s(*prefill(round(prompt)))

    def gap(b: int) -> float:
        return float(b * prefill_s / steps + decode(b, round(prompt + steps / 2)))

    lo, hi = 1, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if gap(mid) <= itl_target else (lo, mid - 1)
    return float(lo / (lo * prefill_s + steps * decode(lo, round(prompt + steps / 2))))


def replicas_needed(rate: float, b: Bounds) -> int:
    """The fewest replicas whose share of the rate stays below one replica's bound."""
    return max(1, math.floor(rate / b.rate_bound_per_s) + 1)


def grid_index(rate: float) -> int:
    """The grid point at or above `rate`: grid_rate(rate) == 2 ** (grid_index(rate) / GRID_PER_OCTAVE)."""
    return math.ceil(GRID_PER_OCTAVE * math.log2(rate) - 1e-9)


def at_index(k: int) -> float:
    return float(2 ** (k / GRID_PER_OCTAVE))


def highest_meeting(meets: Callable[[int], bool], guess: int, low: int, high: int) -> int | None:
    """The highest grid index in [low, high] whose rate meets the targets, None if even `low` misses.

    Meeting is taken as monotone in the rate (a higher rate per replica only loads it more): from
    the guess, step by 1, 2, 4... up while the targets are met (down while they are not), then
    bisect the last step. Depends only on the layout and the targets, never on the request rate,
    so one answer serves every rate (the memo keeps it)."""
    k = min(max(guess, low), high)
    if meets(k):
        ok, step = k, 1
        while ok < high:
            nxt = min(ok + step, high)
            if not meets(nxt):
                fail = nxt
                break
            ok, step = nxt, step * 2
        else:
            return ok
    else:
        fail, step = k, 1
        while True:
            if fail == low:
                return None
            nxt = max(fail - step, low)
            if meets(nxt):
                ok = nxt
                break
            fail, step = nxt, step * 2
    while fail - ok > 1:
        mid = (ok + fail) // 2
        ok, fail = (mid, fail) if meets(mid) else (ok, mid)
    return ok


def grid_rate(rate: float) -> float:
    """`rate` rounded up to the next point of the grid: runs are shared between nearby rates (a
    memo hit), and the engine is asked about a slightly higher load, so a verdict errs safe."""
    return at_index(grid_index(rate))


def engine_run(engine: EngineSpec, drawn: list[tuple[int, int]], rate: float, seed: int) -> dict[str, float]:
    """One replica served a Poisson stream at `rate`: the engine's summary (every percentile).
    Pass the layout's one EngineSpec (Bounds.engine): its step cost is made once and kept on it."""
    reqs = arrange("poisson", drawn, random.Random(seed), rate=rate)
    served = serve(reqs, engine, keep_series=False)
    out = summarize(served.records, warmup=WARMUP, cooldown=WARMUP)
    out["num_dropped"] = float(len(served.dropped))
    return out


def verdict(run: dict[str, float], q: str, ttft_slo_s: float, tpot_slo_s: float) -> dict[str, Any]:
    ttft, tpot = run[f"ttft_s_p{q}"], run[f"tpot_s_p{q}"]
    ok = ttft <= ttft_slo_s and tpot <= tpot_slo_s and run["num_dropped"] == 0
    headroom = 1 - max(ttft / ttft_slo_s, tpot / tpot_slo_s)
    return {"ttft_s": ttft, "tpot_s": tpot, "meets": ok, "headroom": headroom}


def best_case(
    m: Model, gpus: list[Gpu], max_gpus: int, formats: str, prompt: int, max_model_len: int
) -> dict[str, Any]:
    """The most any allowed layout can do: the lowest TTFT and ITL floors over the layouts that fit
    (cost model, course efficiencies, as the engine), and whether any fits at all."""
    best: dict[str, Any] = {"fits": False, "ttft_s": math.inf, "tpot_s": math.inf, "ttft_at": "", "tpot_at": ""}
    for gpu in gpus:
        for dtype in weight_formats(gpu, formats):
            for tp in (t for t in TP_SIZES if t <= max_gpus and m.num_heads % t == 0):
                if tp > 1 and cm.link_GBps_one_way(gpu) is None:
                    continue
                a = memory(m, Layout(gpu, tp, dtype, 0.0), max_model_len)
                if a is None or not a.fits:
                    continue
                kw: dict[str, Any] = {"weight_dtype": dtype, "eff": cm.efficiency(False), "tp": tp}
                ttft = cm.prefill_time(m, gpu, prompt, **kw).time_s
                tpot = cm.decode_step_time(m, gpu, [prompt], **kw).time_s
                where = f"{tp} x {gpu.id} ({dtype})"
                best["fits"] = True
                if ttft < best["ttft_s"]:
                    best.update(ttft_s=ttft, ttft_at=where)
                if tpot < best["tpot_s"]:
                    best.update(tpot_s=tpot, tpot_at=where)
    return best
