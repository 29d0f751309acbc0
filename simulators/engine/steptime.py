"""Step time of a mixed batch in O(1): the cost model's `step_time`, read off as a linear form.

The engine needs `costmodel.step_time(model, gpu, seqs, eff=profile)` thousands of times per run,
for batches it keeps as running sums, so it asks the cost model once for a few small batches and
solves for the coefficients (as `costmodel.decode_line` does): no formula is restated here. With

    tokens = sum q_i            num_seqs = len(seqs)
    keys   = sum (q_i c_i + q_i (q_i + 1) / 2)     (attention: query j sees c_i + j keys)
    kv     = sum (held(c_i) + q_i)                 (KV tokens read and written)

step_time is  max(x tokens + y num_seqs + z keys + F,  W(tokens) + v kv) + u tokens + fixed,

exactly, for a dense model: compute is linear in tokens, logits rows and attention keys, and the
GEMM's small-M curve (plateau x M / (M + m_half)) adds m_half tokens' worth, a fixed F per pass;
memory is the weights streamed (a constant, or for a mixture of experts a function of the token
count, asked of the cost model and remembered) plus KV bytes; tensor-parallel and activation
traffic are linear in tokens; the engine's fixed costs and the all-reduces' latency are `fixed`. A
profile whose small steps run matrix-vector kernels (llama.cpp: at most matvec_max_tokens tokens,
no small-M curve, a bandwidth cap) has a second set of coefficients for those steps. Tests check
the identity on random batches, and that a run's steps stay within 2% of `step_time` for every
engine, dense and MoE, with and without stages.
"""

from collections.abc import Callable
from functools import partial
from typing import Any

from ..core import costmodel as cm
from ..core import parallel_time as pt
from ..core.catalog import Gpu, Model

Batch = list[tuple[int, int]]  # (new_tokens, cached_tokens) per sequence


def attention_keys(new_tokens: int, cached_tokens: int) -> int:
    """Keys the causal attention of one sequence's new tokens reads (query j sees c + j keys)."""
    return new_tokens * cached_tokens + new_tokens * (new_tokens + 1) // 2


def batch_sums(seqs: Batch, held: Callable[[int], int]) -> tuple[int, int, int, int]:
    """(tokens, num_seqs, keys, kv) of a batch (module docstring)."""
    keys = sum(attention_keys(q, c) for q, c in seqs)
    return sum(q for q, _ in seqs), len(seqs), keys, sum(held(c) + q for q, c in seqs)


def _solve(rows: list[list[float]], rhs: list[float]) -> list[float]:
    """x with rows . x = rhs (Gaussian elimination with partial pivoting; 4 x 4 at most)."""
    n = len(rows)
    a = [list(r) + [v] for r, v in zip(rows, rhs, strict=True)]
    for i in range(n):
        k = max(range(i, n), key=lambda r: abs(a[r][i]))
        a[i], a[k] = a[k], a[i]
        for r in range(i + 1, n):
            f = a[r][i] / a[i][i]
            a[r] = [x - f * y for x, y in zip(a[r], a[i], strict=True)]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (a[i][n] - sum(a[i][j] * x[j] for j in range(i + 1, n))) / a[i][i]
    return x


class _Coefficients:
    """The linear form's coefficients, solved from four step_time answers around the batch `base`:
    base; its first sequence one token longer; its first sequence with one token cached; base and
    one more one-token sequence. A profile's kernel regimes (matrix-vector steps) hold throughout,
    so the base is chosen inside the regime the coefficients are for."""

    def __init__(self, step: Callable[[Batch], cm.StepTime], held: Callable[[int], int], base: Batch):
        (q, c), rest = base[0], base[1:]
        probes = [base, [(q + 1, c), *rest], [(q, c + 1), *rest], [*base, (1, 0)]]
        feats = [batch_sums(seqs, held) for seqs in probes]  # (tokens, seqs, keys, kv) of each probe
        times = [step(seqs) for seqs in probes]
        self.x, self.y, self.z, self.fixed_compute = _solve(
            [[t, n, k, 1.0] for t, n, k, _ in feats], [t.compute_s for t in times]
        )
        # Memory: W + v kv (the first and third probes differ in KV read only).
        (a, _, d, _), (fa, _, fd, _) = times, feats
        self.v = (d.memory_s - a.memory_s) / (fd[3] - fa[3]) if fd[3] != fa[3] else 0.0
        self.weights = a.memory_s - self.v * fa[3]
        # After the roofline: u per token (communication, activation traffic) and a fixed part.
        after = [t.communication_s + t.activation_s for t in times[:2]]
        self.u = (after[1] - after[0]) / (feats[1][0] - fa[0])
        self.overhead = after[0] - self.u * fa[0] + a.overhead_s


class StepCost:
    """Linear form of `costmodel.step_time` for one model, GPU, engine profile and set of options."""

    def __init__(self, model: Model, gpu: Gpu, **kw: Any):
        self.model, self.gpu, self.kw = model, gpu, kw
        # A pipeline's round divides a one-pass step by its micro-batches, m = min(sequences, pp):
        # the coefficients are read off a pass with pp = 1, and parts() divides (parallel_time.py).
        self.pp, self.dp = kw.get("pp", 1), kw.get("dp", 1)
        self._step: Callable[[Batch], cm.StepTime] = partial(cm.step_time, model, gpu, **{**kw, "pp": 1})
        link = cm.link_GBps_one_way(gpu) if self.pp > 1 else None
        self.hop = pt.pp_send_s(1 / self.dp, model.hidden_size, self.pp, link) if link else 0.0
        # Steps of at most `matvec` tokens (per rank and micro-batch) run matrix-vector kernels, and
        # so does an LM head over at most that many sequences: a set of coefficients per regime.
        eff = kw.get("eff") or cm.default_efficiency()
        self.matvec = mv = eff.matvec_max_tokens * self.dp
        self.large = c = _Coefficients(self._step, self.held, [(1, 0)] * (mv + 1))  # sequences > matvec
        self.small = _Coefficients(self._step, self.held, [(1, 0)]) if mv else c  # tokens <= matvec
        self.few = _Coefficients(self._step, self.held, [(mv + 1, 0)]) if mv else c  # sequences <= matvec
        self.moe, self.window = model.is_moe, model.sliding_window
        self._moe_weights: dict[int, float] = {}

    def _set(self, tokens: int, seqs: int) -> _Coefficients:
        """The coefficients of a pass over `tokens` tokens of `seqs` sequences (per micro-batch)."""
        if seqs > self.matvec:
            return self.large
        return self.small if tokens <= self.matvec else self.few

    def weights_s(self, tokens: int) -> float:
        """Time to stream the weights one pass over `tokens` tokens reads."""
        c = self._set(tokens, tokens)
        if not self.moe:
            return c.weights
        w = self._moe_weights.get(tokens)
        if w is None:
            w = self._step([(tokens, 0)]).memory_s - c.v * tokens
            self._moe_weights[tokens] = w
        return w

    def parts(self, tokens: int, num_seqs: int, keys: float, kv: float) -> tuple[float, float, float]:
        """(compute_s, memory_s, after_s) of a batch given its four sums; after_s (communication,
        activation traffic and fixed costs) runs after the roofline."""
        if self.pp > 1:  # a pipeline round: the coefficients of one micro-batch
            mb = pt.micro_batches(-(-num_seqs // self.dp), self.pp)
            c = self._set(-(-tokens // mb), -(-num_seqs // mb))
            return (
                (c.x * tokens + c.y * num_seqs + c.z * keys) / mb + c.fixed_compute,
                self.weights_s(-(-tokens // mb)) + c.v * kv / mb,
                (c.u + self.hop) * tokens / mb + c.overhead,
            )
        c = self._set(tokens, num_seqs)  # the hot path, written out: no call for a dense model's weights
        return (
            c.x * tokens + c.y * num_seqs + c.z * keys + c.fixed_compute,
            (self.weights_s(tokens) if self.moe else c.weights) + c.v * kv,
            c.u * tokens + c.overhead,
        )

    def mean_prefill_compute_s(self, mean_tokens: float, mean_keys: float) -> float:
        """The mean compute time of prefilling prompts each alone (one sequence, nothing cached),
        given their mean length and mean attention_keys(p, 0): parts(p, 1, keys, p)[0] is linear
        in both (above `matvec` tokens), and one sequence is one micro-batch."""
        c = self.few  # one sequence, more than `matvec` tokens
        return c.x * mean_tokens + c.y + c.z * mean_keys + c.fixed_compute

    def time_s(self, tokens: int, num_seqs: int, keys: float, kv: float) -> float:
        return cm.roofline_s(*self.parts(tokens, num_seqs, keys, kv))

    def held(self, context: int) -> int:
        return cm.kv_tokens_held(self.model, context)

    def batch_time_s(self, seqs: Batch) -> float:
        """The same answer as step_time(seqs).time_s, from the linear form (for tests)."""
        return self.time_s(*batch_sums(seqs, self.held))

    def decode_stride(
        self, batch: int, sum_context: int, sum_held: int, held_growth: int, q: int = 1
    ) -> tuple[float, float, float, float, float]:
        """Step k of a decode stride as affine pieces: (compute0, compute1, memory0, memory1, after).
        Each of `batch` sequences brings q new tokens (1, or k + 1 for a speculative verify pass) and
        its context grows by one token per step; the KV read grows by `held_growth` tokens per step
        (batch, less the sequences capped by a sliding window)."""
        tokens = batch * q
        keys = q * sum_context + batch * q * (q + 1) // 2
        c0, m0, after = self.parts(tokens, batch, keys, sum_held + tokens)
        mb = pt.micro_batches(-(-batch // self.dp), self.pp) if self.pp > 1 else 1
        c = self._set(-(-tokens // mb), -(-batch // mb))
        return c0, c.z * q * batch / mb, m0, c.v * held_growth / mb, after


def stride_time_s(c0: float, c1: float, m0: float, m1: float, comm: float, n: int) -> float:
    """Sum over k = 0 .. n-1 of max(c0 + c1 k, m0 + m1 k) + comm, in closed form.

    The two affine pieces cross at most once, at k* = (m0 - c0) / (c1 - m1); each side of the
    crossing is an arithmetic series: sum_{k=a}^{b-1} (p0 + p1 k) = (b - a) p0 + p1 (a + b - 1)(b - a) / 2.
    """
    if n <= 0:
        return 0.0
    # Step k is compute-bound when c0 + c1 k > m0 + m1 k; the difference is monotone in k.
    first_compute = c0 > m0
    split = n
    if c1 != m1:
        k_star = (m0 - c0) / (c1 - m1)
        split = int(k_star) + 1 if 0 <= k_star < n else n
    # `split`: the first step whose binding side differs from step 0's, settled robustly to rounding
    # (the usual stride binds on one side throughout: one comparison).
    while split > 0 and (c0 + c1 * (split - 1) > m0 + m1 * (split - 1)) != first_compute:
        split -= 1
    while split < n and (c0 + c1 * split > m0 + m1 * split) == first_compute:
        split += 1
    if not first_compute:
        c0, c1, m0, m1 = m0, m1, c0, c1
    # Step 0's binding side for the first `split` steps, the other side for the rest.
    head = split * c0 + c1 * (split - 1) * split / 2 if split > 0 else 0.0
    tail = (n - split) * m0 + m1 * (split + n - 1) * (n - split) / 2 if n > split else 0.0
    return head + tail + comm * n
