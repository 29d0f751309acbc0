"""What splitting one model over several GPUs adds to, or takes from, a forward pass's time.

Formulas of plain numbers (and a GPU's link rate), used by roofline.step_time (the one cost
model) for a layout of `tp` tensor-parallel ranks, `pp` pipeline stages and, for a mixture of
experts, `dp` data-parallel attention ranks whose experts are spread over tp x dp ranks (expert
parallelism).

- Tensor parallelism (Megatron-LM, Shoeybi et al. 2019, arXiv 1909.08053, section 3): each
  attention block and each MLP ends in one all-reduce of the layer's output, tokens x hidden
  values; a ring all-reduce over n ranks sends and receives 2 (n - 1) / n of those bytes per rank
  (Patarasuk and Yuan 2009), over one direction of the link.
- Pipeline parallelism: each stage holds layers / pp of the layers and passes its output, vLLM's
  IntermediateTensors ("hidden_states" and "residual", tokens x hidden each), to the next stage.
  vLLM keeps pp batches in flight ("PP requires PP-size concurrent batches to fill the
  pipeline": vllm/config/vllm.py, max_concurrent_batches), so the running requests are served as
  m = min(sequences, pp) micro-batches, each passing through every stage. A token of every
  sequence takes one round of pp stage-times of a micro-batch (GPipe, Huang et al. 2019, arXiv
  1811.06965: with fewer micro-batches than stages, stages wait; the bubble). Per round,
  compute is F / m and memory is W(ceil(tokens / m)) + KV / m, since each stage reads its weights once
  per micro-batch: pipelining adds GPUs' memory, not bandwidth per token, to a memory-bound decode.
  A prompt's chunk is one sequence in one micro-batch, so its pass through the pp stages is not
  divided: the engine keeps the round's pace for the others and gives the chunk's sequence the
  difference as a lag on its tokens (engine/replica.py).
- Expert parallelism with data-parallel attention (vLLM --enable-expert-parallel with
  --data-parallel-size; DeepSeek-V3 technical report, arXiv 2412.19437, section 3.4): each
  of dp attention ranks (each tp wide) runs its own 1/dp of the sequences with its own copy of
  the non-expert weights; the routed experts are spread over ep = tp x dp ranks, each holding
  E / ep whole experts. Each MoE layer sends every token's hidden state to its k experts and
  gathers the results back (dispatch and combine, two all-to-alls), of which (ep - 1) / ep leaves
  the rank under uniform routing. Both in bf16 here (DeepSeek-V3 dispatches in FP8).

Left out: overlap of communication with compute (DeepSeek's dual micro-batches, NCCL
overlap), load imbalance between experts or stages, and link latency.
"""

from .bytes_flops import BF16_BYTES
from .catalog import Gpu, Model


def tp_allreduce_s(tokens: float, hidden: int, layers: int, tp: int, link_GBps: float) -> float:
    """Two all-reduces per layer (after attention and after the MLP) of tokens x hidden bf16 values,
    in each of which a ring's rank sends (and receives) 2 (tp - 1) / tp of them."""
    sent = tokens * hidden * BF16_BYTES * 2 * (tp - 1) / tp if tp > 1 else 0.0
    return 2 * layers * sent / (link_GBps * 1e9)


def micro_batches(num_seqs: int, pp: int) -> int:
    """Batches in flight in a pipeline of pp stages: pp, or one per sequence when fewer."""
    return max(1, min(num_seqs, pp))


def pp_send_s(tokens: float, hidden: int, pp: int, link_GBps: float) -> float:
    """A micro-batch's trip between stages: pp - 1 sends of hidden_states and residual."""
    return (pp - 1) * 2 * tokens * hidden * BF16_BYTES / (link_GBps * 1e9)


def link_GBps_one_way(gpu: Gpu) -> float | None:
    """One direction of the GPU-to-GPU link (catalogues give both directions added)."""
    both = gpu.interconnect_GBps or gpu.host_link_GBps
    return None if both is None else both / 2


def collectives_s(m: Model, tokens: int, tp: int, dp: int, ep: bool, link_GBps: float) -> float:
    """A pass's all-reduces and all-to-alls over `tokens` tokens at the link's full rate: two
    all-reduces per layer; with dp attention ranks each all-reduces its own tokens over its tp ranks,
    except after a MoE layer's experts, which exchange tokens all-to-all over the tp x dp ranks
    (`ep`) or, tensor-parallel over all of them, all-reduce every token there."""
    hidden, moe_layers, ranks = m.hidden_size, m.num_moe_layers, tp * dp
    if dp == 1:
        return tp_allreduce_s(tokens, hidden, m.num_layers, tp, link_GBps)
    local = tokens / dp  # the tokens of one attention rank
    s = tp_allreduce_s(local, hidden, m.num_layers, tp, link_GBps)
    s -= tp_allreduce_s(local, hidden, moe_layers, tp, link_GBps) / 2  # MoE layers: no all-reduce after the MLP
    if ep:  # dispatch and combine of one rank's tokens to their k experts, (ranks - 1) / ranks of them away
        per_layer = 2 * (local / tp) * m.num_experts_per_tok * hidden * BF16_BYTES * (ranks - 1) / ranks
        return s + moe_layers * per_layer / (link_GBps * 1e9)
    return s + tp_allreduce_s(tokens, hidden, moe_layers, ranks, link_GBps) / 2
