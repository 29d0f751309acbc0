"""One request inside a replica (vLLM v1's Request): its progress, blocks and timestamps."""

from .workload import Request


class Seq:
    __slots__ = tuple(
        "req id prompt num_computed_tokens out g0 finish_g blocks owned chain_len t_arrival t_scheduled "
        "t_first_token t_finish lag num_preemptions cached_tokens prefilled scheduled decoding replica unique".split()
    )

    def __init__(self, req: Request, t_arrival: float):
        self.req = req  # the request as the workload made it (lengths, segments, follow-up)
        self.id = req.id
        # Tokens to prefill: the prompt, plus the output so far after a preemption (recompute).
        self.prompt = req.prompt_tokens
        self.num_computed_tokens = 0  # tokens whose KV is computed (kept up to date except while decoding)
        self.out = 0  # output tokens produced (kept up to date except while decoding)
        self.g0 = 0  # while decoding: context = decode set's steps - g0 (see decodeset.py)
        self.finish_g = 0  # while decoding: the decode set's step count at its last token
        self.blocks = 0  # private blocks held (outside the decode set, where they are implicit)
        self.owned: list[int] = []  # hashes of cached blocks this sequence references
        self.chain_len = 0  # leading blocks of its hash chain among `owned` (where caching resumes)
        self.t_arrival = t_arrival  # when it reached the router
        self.t_scheduled = -1.0  # first admission (-1: not yet)
        self.t_first_token = -1.0  # first output token (-1: not yet)
        self.t_finish = -1.0  # last output token (-1: not yet)
        self.lag = 0.0  # how far its pipeline passes ran past the rounds: its tokens come that much later
        self.num_preemptions = 0
        self.cached_tokens = 0  # prompt tokens served from the prefix cache at first admission
        self.prefilled = False  # arrives with its KV (disaggregated decode side)
        self.scheduled = 0  # tokens scheduled in the current step
        self.decoding = False  # a member of its replica's decode set
        self.replica = -1  # index of the replica it was routed to
        self.unique = False  # only it can hit its own cached blocks: counted, not hashed (blockpool.py)

    def content(self) -> tuple[tuple[int, int], ...]:
        """Prompt segments plus the output generated so far (what the KV cache holds)."""
        r = self.req
        seg = r.output_segment if r.output_segment >= 0 else -(r.id + 1)
        return r.segments + ((seg, self.out),) if self.out else r.segments
