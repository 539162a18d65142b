"""A serving workload replayed against a trace of requests (issue 18): the harness, not the workload, says
when each request arrives and stamps when its tokens come out.

A server has two calls. submit(rid, prompt, max_new) queues a request; step() runs one scheduling step
and returns the tokens it produced, {rid: [token, ...]}, without waiting for requests that have not come:
at most one token a request, as a decoder makes them (each token is the next step's input). Where the puzzle
asks for them (its [serving] logits), each token comes as a (token, logit) pair: the logit the model gave it,
checked against the oracle server's as the tokens are (tutor.harness.serving_rounds).
Where the puzzle draws (its [serving] draws), step(draws) gets, for every request submitted and not done, a number
the harness drew for its next token once the token before it came back ({rid: draw}): a sampler's choice, so a
request's future is decided a token at a time and nothing known at submit tells a server what it will be (issue 76).
The replay submits every request whose arrival time has passed on the harness's clock (counted from the
replay's start), asks for a step, and stamps each token with the clock as step() returns: on a GPU the
tokens are host integers by then, so a stamp is never earlier than the work. A request is done when it
has max_new tokens; its latency is its last token's stamp less its arrival. Throughput is every token
over the time from the first arrival to the last token.
"""

from __future__ import annotations

import math
import secrets
import time
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable

from tutor.harness.loading import HarnessFailure, call_workload

# A step's tokens a request. A server that hands out several of a request's tokens in one step is not decoding
# (a decoder's next input is the token it just made), however right the tokens are.
TOKENS_A_STEP = 1


@dataclass(frozen=True)
class Request:
    rid: int
    arrival_s: float  # after the replay's start
    prompt: tuple[int, ...]
    max_new: int


@dataclass
class Served:
    """One request as the harness saw it: when it arrived, when its first and last tokens came back."""

    request: Request
    tokens: list[int] = field(default_factory=list)
    logits: list[float | None] = field(default_factory=list)  # each token's, where the server gave it
    first_token_s: float | None = None
    done_s: float | None = None

    @property
    def latency_s(self) -> float:
        return self.done_s - self.request.arrival_s

    @property
    def waited_s(self) -> float:
        """Arrival to first token: the queue and the prefill."""
        return self.first_token_s - self.request.arrival_s


class Draws:
    """Each (request, position)'s draw in [0, n), from the OS's entropy the first time a replay asks for it, so the
    two replays of a pair get the same draws, and no process but the one that holds this knows one before its
    token is due. One a pair of replays: a fresh pair, fresh draws."""

    def __init__(self, n: int):
        self.n, self.made = n, {}

    def __call__(self, rid: int, position: int) -> int:
        key = (rid, position)
        if key not in self.made:
            self.made[key] = secrets.randbelow(self.n)
        return self.made[key]


GONE = -1  # a change that says the request is done: its draw dropped


class LiveDraws(Mapping):
    """Every live request's draw for its next token, as step() reads it ({rid: draw}, read-only), and what changed
    since the last step was asked (`changes`): a step's message carries those alone, so its cost is the step's
    tokens, not the queue's length (a static batcher holds hundreds of requests queued)."""

    def __init__(self):
        self._now, self._changed = {}, {}

    def __getitem__(self, rid: int) -> int:
        return self._now[rid]

    def __iter__(self):
        return iter(self._now)

    def __len__(self) -> int:
        return len(self._now)

    def set(self, rid: int, draw: int) -> None:
        self._now[rid] = self._changed[rid] = draw

    def drop(self, rid: int) -> None:
        self._now.pop(rid, None)
        self._changed[rid] = GONE

    def changes(self) -> dict[int, int]:
        changed, self._changed = self._changed, {}
        return changed


def pack(changes: dict[int, int]) -> bytes:
    """Changes of the draws as bytes: one object in a message, however many (torch's reader builds each int in
    Python: a dict of 400 took 1.4 ms a step where their bytes take 0.07 ms)."""
    return array("q", [v for item in changes.items() for v in item]).tobytes()


def apply(packed: bytes, draws: dict[int, int]) -> None:
    """`packed` changes applied to the draws a server's process holds."""
    flat = array("q")
    flat.frombytes(packed)
    for rid, draw in zip(flat[::2], flat[1::2]):
        if draw == GONE:
            draws.pop(rid, None)
        else:
            draws[rid] = draw


def trace_of(requests: list[dict]) -> list[Request]:
    """A spec's make_trace() as Requests: its plain dicts (rid, arrival_s, prompt, max_new) read as such."""
    return [Request(rid=int(q["rid"]), arrival_s=float(q["arrival_s"]), prompt=tuple(int(t) for t in q["prompt"]),
                    max_new=int(q["max_new"])) for q in requests]


def draw_trace(spec, seed: int) -> list[Request]:
    """The spec's make_trace(seed) as Requests: a grade's replays and a profile's draw their traces alike."""
    return trace_of(call_workload("spec.make_trace", spec.make_trace, seed))


def least_flops(spec, trace: list[Request]) -> float | None:
    """The spec's least FLOPs for the trace's requests (their prompt and output lengths), if it states them."""
    stated = getattr(spec, "least_flops", None)
    return float(stated([(len(r.prompt), r.max_new) for r in trace])) if callable(stated) else None


def replay(trace: list[Request], submit: Callable[[int, tuple[int, ...], int], None],
           step: Callable[..., dict[int, list[int]]], limit_s: float, clock: Callable[[], float] = time.monotonic,
           wait: Callable[[float], None] = time.sleep, draw: Callable[[int, int], int] | None = None) -> list[Served]:
    """Serve `trace` in real time (`clock`, `wait`: the test suite's virtual ones); every request, in rid order.
    With `draw`, step() is given each live request's draw(rid, position of its next token), a LiveDraws."""
    arrivals = sorted(trace, key=lambda r: (r.arrival_s, r.rid))
    served = {r.rid: Served(r) for r in arrivals}
    if len(served) != len(arrivals):
        raise ValueError("a trace names a request id twice")
    live: set[int] = set()
    draws = LiveDraws()  # each live request's draw for its next token
    start, nxt, steps_idle = clock(), 0, 0
    while nxt < len(arrivals) or live:
        now = clock() - start
        if now > limit_s:
            raise HarnessFailure("timeout", f"the server had {len(live)} request(s) unfinished and "
                                 f"{len(arrivals) - nxt} not yet due after {limit_s:.0f} s of the trace")
        while nxt < len(arrivals) and arrivals[nxt].arrival_s <= now:
            r = arrivals[nxt]
            submit(r.rid, r.prompt, r.max_new)
            live.add(r.rid)
            if draw:
                draws.set(r.rid, draw(r.rid, 0))
            nxt += 1
        if not live:  # nothing to serve until the next arrival
            wait(arrivals[nxt].arrival_s - now)
            continue
        produced = step(draws) if draw else step()
        stamp = clock() - start
        at_once = next(((rid, len(t)) for rid, t in produced.items() if len(t) > TOKENS_A_STEP), None)
        if at_once:
            raise HarnessFailure("workload_error", f"step() gave request {at_once[0]} {at_once[1]} tokens at once: "
                                 "a decoder makes one token a request a step (each token is the next step's "
                                 "input), so a step gives each request at most one.")
        for rid, tokens in produced.items():
            _take(served, live, rid, tokens, stamp)
            if draw and tokens:  # the next token's draw, made only now that this one came back
                if rid in live:
                    draws.set(rid, draw(rid, len(served[rid].tokens)))
                else:
                    draws.drop(rid)
        # A server may hold a step's requests back (a static batch waiting to fill): that is its policy, and
        # its latency shows it. One that produces nothing with no request still due would spin forever.
        steps_idle = 0 if produced or nxt < len(arrivals) else steps_idle + 1
        if steps_idle > 1000:
            raise HarnessFailure("crashed", f"step() returned no tokens 1000 times with {len(live)} request(s) "
                                 "queued and none still to come: does it wait for a batch that cannot fill?")
    return [served[rid] for rid in sorted(served)]


def _take(served: dict[int, Served], live: set[int], rid: int, tokens: list[int], stamp: float) -> None:
    if rid not in live:
        what = "never submitted" if rid not in served else "already finished or not yet submitted"
        raise HarnessFailure("crashed", f"step() returned tokens for request {rid!r}, {what}")
    s = served[rid]
    if not tokens:
        return
    for t in tokens:
        token, logit = t if isinstance(t, (tuple, list)) else (t, None)
        s.tokens.append(int(token))
        s.logits.append(None if logit is None else float(logit))
    if s.first_token_s is None:
        s.first_token_s = stamp
    if len(s.tokens) == s.request.max_new:  # a token a step: one more would name a finished request
        s.done_s = stamp
        live.discard(rid)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile by the nearest rank: a value some request really had."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


# The steps of a replay a serving profile records: enough for its per-step figures, a trace of a few MB.
PROFILED_STEPS = 300


def profiled_window(trace: list[Request]) -> tuple[int, int]:
    """(skip, active): the steps of a replay of `trace` that the profiler records. A replay takes at least as
    many steps as its longest request has tokens (a token a step): the window opens a quarter of the way into
    those, past the first prefills, and well before the last step."""
    longest = max((request.max_new for request in trace), default=4)
    return max(1, min(longest // 4, 100)), PROFILED_STEPS


def figures(served: list[Served]) -> dict[str, float]:
    """What a replay shows: tokens a second over the replay, and latency, waiting by percentile."""
    first = min(s.request.arrival_s for s in served)
    last = max(s.done_s for s in served)
    tokens = sum(len(s.tokens) for s in served)
    latency, waited = [s.latency_s for s in served], [s.waited_s for s in served]
    return {"requests": len(served), "tokens": tokens, "makespan_s": last - first,
            "tokens_per_s": tokens / (last - first),
            "latency_p50_s": percentile(latency, 50), "latency_p99_s": percentile(latency, 99),
            "waited_p50_s": percentile(waited, 50), "waited_p99_s": percentile(waited, 99)}
