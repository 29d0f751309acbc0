"""The event loop that drives replicas: arrivals, step ends and KV hand-offs, in time order.

The loop is SimPy's: a heap of (time, priority, seq_no, kind, payload), with seq_no from an
itertools.count made per run so events are never compared and ties resolve in insertion order.
Handlers return the events they cause (Vidur's style). Kinds: ARRIVE (a request reaches the
router), KV_ARRIVE (a prefilled sequence reaches a decode replica), STEP_END (a replica finishes
the step or stride it planned; a replica that replans bumps its version, and the stale event is
skipped). At equal times arrivals come first, so a step that ends when a request arrives already
sees it.
"""

import heapq
import itertools
import operator
from collections import Counter
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from .replica import ARRIVE, KV_ARRIVE, Event, Replica
from .sequence import Seq
from .workload import Request

Router = Callable[[Seq, list[Replica], float], Replica]
R = TypeVar("R")
T = TypeVar("T")


Outcome = tuple[list[Seq], list[Request], int]  # finished sequences, dropped requests, events processed
Progress = tuple[list[Seq], list[Request], list[Replica]]  # finished and dropped so far, the replicas


def run_out(steps: Generator[T, None, R], each: Callable[[T], None] | None = None) -> R:
    """What a generator of simulate_steps' kind returns, its yields handed to `each` (or ignored)."""
    try:
        while True:
            part = next(steps)
            if each is not None:
                each(part)
    except StopIteration as end:
        value: R = end.value
        return value


def show_once(steps: Generator[Progress, None, R], show: Callable[[Progress], T]) -> Generator[T, None, R]:
    """Run `steps` out, yielding show(its first progress) on the way: one partial chart of a run
    (each costs a measurement of the requests finished so far)."""
    try:
        progress = next(steps)
    except StopIteration as end:
        made: R = end.value
        return made
    yield show(progress)
    return run_out(steps)


def simulate_steps(
    requests: list[Request],
    replicas: list[Replica],
    route: Router,
    decode_route: Router,
    transfer_s: Callable[[Seq], float],
    every: int = 0,
) -> Generator[Progress, None, Outcome]:
    """Run requests through replicas: (finished sequences, dropped requests, events processed).
    With `every` > 0 it yields (finished, dropped, replicas) so far each time another `every`
    sequences have finished, before the last one (the run's own lists: copy what you keep).

    Follow-up requests (after=id) are released `arrival_s` after the request they follow ends.
    A request that can never be served (longer than max_model_len or the whole KV pool) is
    dropped when it arrives, and so is a follow-up that re-sends its answer (a conversation's next
    turn); a closed-loop user's next request is released as if the dropped one had ended with an
    error then (GuideLLM records an error and goes on). "Prefill" replicas hand finished prefills to
    the decode replica `decode_route` picks after `transfer_s(seq)` seconds (disaggregation).
    """
    counter = itertools.count()
    heap: list[tuple[float, int, int, int, Any]] = []
    followers: dict[int, list[Request]] = {}
    for r in requests:
        if r.after is not None:
            followers.setdefault(r.after, []).append(r)
    # Requests that arrive on their own wait in a list sorted by arrival time, not in the heap,
    # which then holds only the few events the handlers cause. The next event is the earlier of
    # the two heads; at equal times the listed arrival goes first, as in one heap (priority 0).
    arrivals = sorted([r for r in requests if r.after is None], key=operator.attrgetter("arrival_s"))
    arrival_times = [r.arrival_s for r in arrivals]  # a list index is cheaper than a field read
    next_arrival, num_arrivals = 0, len(arrivals)
    firsts = Counter(r.segments[0][0] for r in requests if r.segments)
    max_len = replicas[0].cfg.max_model_len
    kv0 = replicas[0].kv
    done: list[Seq] = []
    dropped: list[Request] = []
    events = 0
    mark, last = every, len(requests)  # the count of finished ones that yields next; none at the end
    heappush, heappop = heapq.heappush, heapq.heappop  # local names: this loop runs per event

    def push(evs: list[Event]) -> None:
        for t, prio, kind, obj in evs:
            heappush(heap, (t, prio, next(counter), kind, obj))

    def drop(req: Request, t: float) -> None:
        """Drop a request that cannot be served, and every follow-up that re-sends a dropped answer
        (an explicit stack: a chain of thousands of follow-ups cannot overflow the recursion limit)."""
        stack = [req]
        while stack:
            r = stack.pop()
            # Kept with the absolute time it was refused (a follow-up's arrival_s is a delay).
            dropped.append(r._replace(arrival_s=t, after=None))
            for f in followers.pop(r.id, ()):
                if r.output_segment >= 0 and any(seg == r.output_segment for seg, _ in f.segments):
                    stack.append(f)  # its prompt holds the answer that never came
                else:
                    push([(t + f.arrival_s, 0, ARRIVE, f)])

    obj: Any  # a Request (ARRIVE), (replica, Seq) (KV_ARRIVE) or (replica, version) (STEP_END)
    while heap or next_arrival < num_arrivals:
        if next_arrival < num_arrivals and (not heap or arrival_times[next_arrival] <= heap[0][0]):
            obj, t, kind = arrivals[next_arrival], arrival_times[next_arrival], ARRIVE
            next_arrival += 1
        else:
            t, _, _, kind, obj = heappop(heap)
        events += 1
        if kind == ARRIVE:
            tokens = obj.prompt_tokens + obj.output_tokens
            if tokens > max_len or kv0.blocks_for(tokens) > kv0.num_blocks:
                drop(obj, t)
                continue
            s = Seq(obj, t)
            # Unique: no other prompt starts with its first segment, or it names none (Seq.unique).
            first = obj.segments[0] if obj.segments else None
            s.unique = first is None or (first[1] > 0 and firsts[first[0]] == 1)
            # Handlers return at most a few events, most often none or one: pushed inline (hot path).
            for ev_t, prio, ev_kind, ev_obj in route(s, replicas, t).add(s, t):
                heappush(heap, (ev_t, prio, next(counter), ev_kind, ev_obj))
            continue
        if kind == KV_ARRIVE:
            push(obj[0].add(obj[1], t))
            continue
        # STEP_END: the only event that finishes sequences or hands them off (at its replica).
        rep, version = obj
        if version != rep.version:
            continue
        for ev_t, prio, ev_kind, ev_obj in rep.step_end(t):
            heappush(heap, (ev_t, prio, next(counter), ev_kind, ev_obj))
        if rep.finished:
            done += rep.finished
            if every and len(done) >= mark:
                mark = (len(done) // every + 1) * every
                if len(done) < last:
                    yield done, dropped, replicas
            if followers:  # release the follow-ups of the finished ones (closed loop, conversations)
                for s in rep.finished:
                    push([(s.t_finish + f.arrival_s, 0, ARRIVE, f) for f in followers.pop(s.id, ())])
            rep.finished.clear()
        for s in rep.handoff:  # its KV leaves when its pass is over (its lag), to the decode side's clock
            s.prefilled, at, s.lag = True, t + s.lag, 0.0
            push([(at + transfer_s(s), 0, KV_ARRIVE, (decode_route(s, replicas, at), s))])
        rep.handoff.clear()
    return done, dropped, events
