"""The iteration-level scheduler: which sequences run in the next forward pass, and with how many tokens.

Mental model (vLLM v1's scheduler, one comment block): there are no "prefill steps" and "decode
steps", only sequences whose `num_computed_tokens` trails the tokens they need. Every step has a
token budget, `max_num_batched_tokens`. First the `running` sequences are served in admission
order: each decoding sequence takes one token, each part-prefilled one takes the next chunk of
its prompt. KV blocks are allocated for what is scheduled; when they run out, the most recently
admitted running sequence is preempted (its blocks freed, its progress forgotten, recomputed
later) and put back at the front of `waiting`. Then, if nothing was preempted, `waiting`
sequences are admitted first come first served while budget, `max_num_seqs` and blocks allow
(blocks for the whole prompt, plus a watermark of free blocks while anything runs: see
`reserve_full_isl`); the first that does not fit stops admission (no overtaking).

Variants: without chunked prefill a prompt must be scheduled whole and the step runs prefills
only (decodes pause, as vLLM v0 did); static batching admits a batch only when the engine is
empty and lets the slots of finished sequences idle until the whole batch is done.

Decoding sequences are kept *lazily* so that a run of decode steps costs O(1), not O(batch):
the replica counts decode steps in `steps`; a decoding sequence stores g0 = steps - context at
join, so its context is `steps - g0`; it needs a new block on the step where its context is a
multiple of block_size, i.e. when steps = g0 (mod block_size), so a histogram of g0 mod
block_size counts the blocks any run of steps needs; and a heap orders the step counts at which
sequences finish.

Reference: vLLM v1 vllm/v1/core/sched/scheduler.py (waiting, running, num_computed_tokens,
token budget, preempt); Yu et al. 2022, Orca (OSDI) for iteration-level scheduling.
"""

from __future__ import annotations

from dataclasses import dataclass

from .workload import Request


@dataclass(frozen=True)
class SchedulerConfig:
    # "continuous" (iteration-level) or "static" (a new batch only when the last one is done).
    batching: str = "continuous"
    # Most sequences running at once (vLLM --max-num-seqs).
    max_num_seqs: int = 256
    # Token budget of one step (vLLM --max-num-batched-tokens).
    max_num_batched_tokens: int = 2048
    # Split long prompts into chunks that share steps with decodes (Sarathi-Serve, vLLM v1).
    chunked_prefill: bool = True
    # Longest prompt + output a sequence may reach; longer requests are dropped and reported.
    max_model_len: int = 8192
    # Admission control (vLLM v1 KVCacheManager.allocate_slots): a waiting or preempted sequence
    # is admitted only when blocks for its whole current sequence (prompt, plus the output so far
    # after a preemption) are free, not only for its first chunk (vLLM's
    # scheduler_reserve_full_isl, on by default: it prevents over-admission and KV thrashing with
    # chunked prefill), keeping `watermark` of all blocks free while anything runs (vLLM v0's
    # BlockSpaceManager default 0.01; v1 applies its watermark to waiting requests the same way).
    reserve_full_isl: bool = True
    watermark: float = 0.01
    # Speculative decoding: draft tokens per step (0 = off), per-token acceptance rate, and the
    # cost of one draft step as a fraction of one target decode step.
    num_speculative_tokens: int = 0
    acceptance_rate: float = 0.7
    draft_cost_ratio: float = 0.05

    def tokens_per_step(self) -> float:
        """Expected tokens a speculative step emits: (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023)."""
        k, a = self.num_speculative_tokens, self.acceptance_rate
        if k == 0:
            return 1.0
        return float(k + 1) if a >= 1.0 else (1 - a ** (k + 1)) / (1 - a)


class Seq:
    """One request inside a replica (vLLM's Request): progress, blocks and timestamps."""

    __slots__ = (
        "req",
        "id",
        "prompt",
        "num_computed_tokens",
        "out",
        "g0",
        "finish_g",
        "blocks",
        "owned",
        "chain_len",
        "t_arrival",
        "t_scheduled",
        "t_first_token",
        "t_finish",
        "num_preemptions",
        "cached_tokens",
        "prefilled",
        "scheduled",
        "decoding",
        "replica",
    )

    def __init__(self, req: Request, t_arrival: float):
        self.req = req
        self.id = req.id
        # Tokens to prefill: the prompt, plus the output so far after a preemption (recompute).
        self.prompt = req.prompt_tokens
        self.num_computed_tokens = 0
        self.out = 0  # output tokens produced (kept up to date except while decoding)
        self.g0 = 0  # while decoding: context = replica.steps - g0
        self.finish_g = 0
        self.blocks = 0  # private blocks held (outside the decode run, where they are implicit)
        self.owned: list[int] = []  # hashes of cached blocks this sequence references
        self.chain_len = 0
        self.t_arrival = t_arrival
        self.t_scheduled = -1.0
        self.t_first_token = -1.0
        self.t_finish = -1.0
        self.num_preemptions = 0
        self.cached_tokens = 0  # prompt tokens served from the prefix cache at first admission
        self.prefilled = False  # arrives with its KV (disaggregated decode side)
        self.scheduled = 0  # tokens scheduled in the current step
        self.decoding = False
        self.replica = -1

    def content(self) -> tuple[tuple[int, int], ...]:
        """Prompt segments plus the output generated so far (what the KV cache holds)."""
        r = self.req
        seg = r.output_segment if r.output_segment >= 0 else -(r.id + 1)
        return r.segments + ((seg, self.out),) if self.out else r.segments
