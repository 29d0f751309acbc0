"""Step time of a mixed batch in O(1): the cost model's `step_time`, read off as a linear form.

`costmodel.step_time(model, gpu, seqs)` walks a list of (new_tokens, cached_tokens) pairs. The
engine needs the same figure thousands of times per run, for batches it keeps as running sums,
so it asks the cost model once for a few tiny batches and reads off the coefficients (as
`costmodel.decode_line` does). Nothing here restates a formula: every coefficient is a
difference of two `step_time` answers. For a batch with

    tokens = sum q_i            num_seqs = len(seqs)
    keys   = sum (q_i c_i + q_i (q_i + 1) / 2)     (attention: query j sees c_i + j keys)
    kv     = sum (held(c_i) + q_i)                 (KV tokens read and written)

step_time is  max(x tokens + y num_seqs + z keys,  W(tokens) + v kv) + u tokens,
exactly, because compute is linear in tokens, logits rows and attention keys; memory is the
weights streamed (a constant, or for a mixture of experts a function of the token count that
is asked of the cost model and remembered) plus KV bytes; tensor-parallel traffic is linear in
tokens. `tests/test_engine_core.py` (test_linear_step_cost_equals_step_time) checks the identity
against `step_time` on random batches.
"""

from __future__ import annotations

from typing import Any

from .. import costmodel as cm
from .. import parallel_time as pt
from ..catalog import Gpu, Model


def attention_keys(new_tokens: int, cached_tokens: int) -> int:
    """Keys the causal attention of one sequence's new tokens reads (query j sees c + j keys)."""
    return new_tokens * cached_tokens + new_tokens * (new_tokens + 1) // 2


class StepCost:
    """Linear form of `costmodel.step_time` for one model, GPU and set of options."""

    def __init__(self, model: Model, gpu: Gpu, **kw: Any):
        self.model, self.gpu, self.kw = model, gpu, kw
        # A pipeline's round divides a one-pass step by its micro-batches, m = min(sequences, pp):
        # the coefficients are read off a pass with pp = 1, and parts() divides (parallel_time.py).
        self.pp, self.dp = kw.get("pp", 1), kw.get("dp", 1)
        one_pass = {**kw, "pp": 1}
        link = cm.link_GBps_one_way(gpu) if self.pp > 1 else None
        self.hop = pt.pp_send_s(1 / self.dp, model.hidden_size, self.pp, link) if link else 0.0

        def step(seqs: list[tuple[int, int]]) -> cm.StepTime:
            return cm.step_time(model, gpu, seqs, **one_pass)

        self._step = step
        a, b, d = step([(1, 0)]), step([(2, 0)]), step([(1, 1)])
        self.compute_known = a.compute_known
        # Compute: a = x + y + z, b = 2x + y + 3z, d = x + y + 2z.
        self.z = d.compute_s - a.compute_s
        self.x = b.compute_s - a.compute_s - 2 * self.z
        self.y = a.compute_s - self.x - self.z
        # Memory: a = W + v, d = W + 2v; communication: u per token.
        self.v = d.memory_s - a.memory_s
        self.u = a.communication_s
        # The engine's fixed time per forward pass (its profile's step overhead), after the roofline.
        self.overhead = a.overhead_s
        self.moe = model.is_moe
        self._weights: dict[int, float] = {1: a.memory_s - self.v}
        self.window = model.sliding_window

    def weights_s(self, tokens: int) -> float:
        """Time to stream the weights one pass over `tokens` tokens reads."""
        if not self.moe:
            return self._weights[1]
        w = self._weights.get(tokens)
        if w is None:
            w = self._step([(tokens, 0)]).memory_s - self.v * tokens
            self._weights[tokens] = w
        return w

    def micro_batches(self, num_seqs: int) -> int:
        return pt.micro_batches(-(-num_seqs // self.dp), self.pp)

    def parts(self, tokens: int, num_seqs: int, keys: float, kv: float) -> tuple[float, float, float]:
        """(compute_s, memory_s, communication_s) of a batch given its four sums."""
        if self.pp > 1:
            mb = self.micro_batches(num_seqs)
            return (
                (self.x * tokens + self.y * num_seqs + self.z * keys) / mb,
                self.weights_s(-(-tokens // mb)) + self.v * kv / mb,
                (self.u + self.hop) * tokens / mb + self.overhead,
            )
        return (
            self.x * tokens + self.y * num_seqs + self.z * keys,
            (self.weights_s(tokens) if self.moe else self._weights[1])
            + self.v * kv,  # once per step: no call for a dense model
            self.u * tokens + self.overhead,
        )

    def mean_prefill_compute_s(self, mean_tokens: float, mean_keys: float) -> float:
        """The mean compute time of prefilling prompts each alone (one sequence, nothing cached),
        given their mean length and mean attention_keys(p, 0): parts(p, 1, keys, p)[0] is linear
        in both, and one sequence is one micro-batch."""
        return self.x * mean_tokens + self.y + self.z * mean_keys

    def time_s(self, tokens: int, num_seqs: int, keys: float, kv: float) -> float:
        return cm.roofline_s(*self.parts(tokens, num_seqs, keys, kv))

    def held(self, context: int) -> int:
        return cm.kv_tokens_held(self.model, context)

    def batch_time_s(self, seqs: list[tuple[int, int]]) -> float:
        """The same answer as step_time(seqs).time_s, from the linear form (for tests)."""
        keys = sum(attention_keys(q, c) for q, c in seqs)
        kv = sum(self.held(c) + q for q, c in seqs)
        return self.time_s(sum(q for q, _ in seqs), len(seqs), keys, kv)

    def decode_stride(
        self, batch: int, sum_context: int, sum_held: int, held_growth: int, q: int = 1
    ) -> tuple[float, float, float, float, float]:
        """Step k of a decode stride as affine pieces: (compute0, compute1, memory0, memory1, comm).

        Each of `batch` sequences brings q new tokens (1 for plain decode, k + 1 for a speculative
        verify pass) and its context grows by one token per step, so at step k the batch has
        sum_context + batch k cached tokens; the KV read grows by `held_growth` tokens per step
        (batch, less the sequences capped by a sliding window).
        """
        tokens = batch * q
        c0 = self.x * tokens + self.y * batch + self.z * (q * sum_context + batch * q * (q + 1) // 2)
        if self.pp > 1:  # a pipeline round: see parts()
            mb = self.micro_batches(batch)
            m0 = self.weights_s(-(-tokens // mb)) + self.v * (sum_held + tokens) / mb
            comm = (self.u + self.hop) * tokens / mb + self.overhead
            return c0 / mb, self.z * q * batch / mb, m0, self.v * held_growth / mb, comm
        m0 = (self.weights_s(tokens) if self.moe else self._weights[1]) + self.v * (sum_held + tokens)
        return c0, self.z * q * batch, m0, self.v * held_growth, self.u * tokens + self.overhead


def stride_time_s(c0: float, c1: float, m0: float, m1: float, comm: float, n: int) -> float:
    """Sum over k = 0 .. n-1 of max(c0 + c1 k, m0 + m1 k) + comm, in closed form.

    The two affine pieces cross at most once, at k* = (m0 - c0) / (c1 - m1); each side of the
    crossing is an arithmetic series: sum_{k=a}^{b-1} (p0 + p1 k) = (b - a) p0 + p1 (a + b - 1)(b - a) / 2.
    """
    if n <= 0:
        return 0.0
    # Step k is compute-bound when c0 + c1 k > m0 + m1 k; the difference is monotone in k.
    first_compute = c0 > m0
    guess = n
    if c1 != m1:
        k_star = (m0 - c0) / (c1 - m1)
        guess = int(k_star) + 1 if 0 <= k_star < n else n
    # The usual stride binds on one side throughout: settle that case without a call.
    if guess == n and (c0 + c1 * (n - 1) > m0 + m1 * (n - 1)) == first_compute:
        split = n
    else:
        split = _settle(c0, c1, m0, m1, guess, n, first_compute)
    if not first_compute:
        c0, c1, m0, m1 = m0, m1, c0, c1
    # Two arithmetic series, sum_{k=a}^{b-1} (p0 + p1 k) = (b - a) p0 + p1 (a + b - 1)(b - a) / 2:
    # step 0's binding side for the first `split` steps, the other side for the rest.
    head = split * c0 + c1 * (split - 1) * split / 2 if split > 0 else 0.0
    tail = (n - split) * m0 + m1 * (split + n - 1) * (n - split) / 2 if n > split else 0.0
    return head + tail + comm * n


def _settle(c0: float, c1: float, m0: float, m1: float, split: int, n: int, first_compute: bool) -> int:
    """The first k in [0, n] whose binding side differs from step 0's (robust to rounding)."""

    def compute_binds(k: int) -> bool:
        return c0 + c1 * k > m0 + m1 * k

    split = max(0, min(n, split))
    while split > 0 and compute_binds(split - 1) != first_compute:
        split -= 1
    while split < n and compute_binds(split) == first_compute:
        split += 1
    return split
