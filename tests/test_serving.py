"""The serving replay (tutor.harness.serving) on a virtual clock: the harness admits each request when the
trace says, stamps its tokens when step() returns them, and tells a static batcher from a continuous one
by its own figures. Toy servers in plain Python, each step costing virtual time as a GPU step would
(a fixed part and a part a slot, padded slots included)."""

from __future__ import annotations

import pytest

from conftest import VirtualClock
from tutor.harness.loading import HarnessFailure
from tutor.harness.serving import Request, figures, percentile, replay

STEP_S, SLOT_S = 0.010, 0.001  # a decode step's fixed cost and its cost a slot


def next_token(token: int) -> int:
    return (token * 31 + 7) % 1000


def oracle(prompt: tuple[int, ...], max_new: int) -> list[int]:
    """One request alone, greedy: what every server must produce for it."""
    out, token = [], prompt[-1]
    for _ in range(max_new):
        token = next_token(token)
        out.append(token)
    return out


class Static:
    """Waits for `size` requests, pads them to one batch, and steps it until its longest request is done."""

    def __init__(self, clock: VirtualClock, size: int):
        self.clock, self.size, self.queue, self.batch = clock, size, [], []

    def submit(self, rid, prompt, max_new):
        self.queue.append([rid, prompt[-1], max_new])

    def step(self):
        if not self.batch:
            if len(self.queue) < self.size:
                self.clock.wait(0.001)  # polls for the batch to fill
                return {}
            self.batch, self.queue = self.queue[:self.size], self.queue[self.size:]
        self.clock.wait(STEP_S + SLOT_S * len(self.batch))  # every slot, finished or not, until the longest is
        out = {}
        for slot in self.batch:
            if slot[2] > 0:
                slot[1], slot[2] = next_token(slot[1]), slot[2] - 1
                out[slot[0]] = [slot[1]]
        if all(slot[2] == 0 for slot in self.batch):
            self.batch = []
        return out


class Continuous:
    """Refills a finished slot at every step."""

    def __init__(self, clock: VirtualClock, slots: int):
        self.clock, self.slots, self.queue, self.active = clock, slots, [], []

    def submit(self, rid, prompt, max_new):
        self.queue.append([rid, prompt[-1], max_new])

    def step(self):
        while self.queue and len(self.active) < self.slots:
            self.active.append(self.queue.pop(0))
        if not self.active:
            self.clock.wait(0.001)
            return {}
        self.clock.wait(STEP_S + SLOT_S * len(self.active))
        out = {}
        for slot in self.active:
            slot[1], slot[2] = next_token(slot[1]), slot[2] - 1
            out[slot[0]] = [slot[1]]
        self.active = [slot for slot in self.active if slot[2] > 0]
        return out


def trace() -> list[Request]:
    """32 requests, 20 ms apart, short ones and a long one in every eight (the heavy tail)."""
    return [Request(rid, 0.020 * rid, (rid, 100 + rid), 64 if rid % 8 == 7 else 4) for rid in range(32)]


@pytest.mark.parametrize("make", [lambda c: Static(c, 8), lambda c: Continuous(c, 8)], ids=["static", "continuous"])
def test_every_request_gets_the_oracles_tokens_stamped_after_it_arrived(make):
    clock = VirtualClock()
    server = make(clock)
    served = replay(trace(), server.submit, server.step, limit_s=60, clock=clock, wait=clock.wait)
    assert [s.request.rid for s in served] == list(range(32))
    for s in served:
        assert s.tokens == oracle(s.request.prompt, s.request.max_new)
        assert s.request.arrival_s < s.first_token_s <= s.done_s


def test_the_harness_figures_tell_continuous_batching_from_static():
    """The same trace, the same cost a step: the static batch keeps its short requests waiting on its long one
    and pays for padded slots; refilling slots serves more tokens a second at a far lower p99 latency."""
    runs = {}
    for name, make in (("static", lambda c: Static(c, 8)), ("continuous", lambda c: Continuous(c, 8))):
        clock = VirtualClock()
        server = make(clock)
        runs[name] = figures(replay(trace(), server.submit, server.step, limit_s=60, clock=clock, wait=clock.wait))
    static, continuous = runs["static"], runs["continuous"]
    assert static["tokens"] == continuous["tokens"] == 28 * 4 + 4 * 64
    assert continuous["tokens_per_s"] > 1.5 * static["tokens_per_s"]
    assert continuous["latency_p99_s"] < static["latency_p99_s"]
    assert continuous["latency_p50_s"] < static["latency_p50_s"] / 3


def test_a_request_arriving_later_is_not_submitted_early():
    """The server sees a request only once the clock passes its arrival: no peeking at the trace."""
    clock = VirtualClock()
    server = Continuous(clock, 8)
    seen = []

    def submit(rid, prompt, max_new):
        seen.append((rid, clock()))
        server.submit(rid, prompt, max_new)

    late = [Request(0, 0.0, (1,), 1), Request(1, 0.5, (1,), 1)]
    served = replay(late, submit, server.step, limit_s=10, clock=clock, wait=clock.wait)
    assert [rid for rid, _ in seen] == [0, 1] and seen[1][1] >= 0.5 and served[1].first_token_s >= 0.5


@pytest.mark.parametrize("step, words", [
    (lambda: {7: [1]}, "request 7, never submitted"),
    (lambda: {0: [1, 2]}, "gave request 0 2 tokens at once: a decoder makes one token a request a step"),
    (lambda: {0: [1]}, "request 0, already finished"),  # a third token for a request that asked for 2
])
def test_a_server_that_invents_requests_or_tokens_is_stopped(step, words):
    clock = VirtualClock()
    trace = [Request(0, 0.0, (1,), 2), Request(1, 0.05, (1,), 2)]
    with pytest.raises(HarnessFailure) as e:
        replay(trace, lambda *a: None, lambda: (clock.wait(0.01), step())[1], limit_s=10, clock=clock, wait=clock.wait)
    assert words in e.value.message


def test_a_server_that_never_finishes_is_stopped_by_the_limit_or_its_idleness():
    clock = VirtualClock()
    waiting = Static(clock, 8)
    with pytest.raises(HarnessFailure) as e:  # a batch of 8 that 1 request can never fill
        replay([Request(0, 0.0, (1,), 2)], waiting.submit, waiting.step, limit_s=1e9, clock=clock, wait=clock.wait)
    assert "cannot fill" in e.value.message
    slow = VirtualClock()

    def crawl():
        slow.wait(1.0)
        return {}

    with pytest.raises(HarnessFailure) as e:
        replay([Request(0, 0.0, (1,), 2), Request(1, 100.0, (1,), 2)], lambda *a: None, crawl, limit_s=30,
               clock=slow, wait=slow.wait)
    assert e.value.kind == "timeout" and "after 30 s" in e.value.message


def test_percentiles_are_values_some_request_had():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0 and percentile(values, 99) == 99.0 and percentile(values, 100) == 100.0
    assert percentile([3.0], 99) == 3.0


# -- the tiers of a serving puzzle (tutor.grading.serving) ------------------------------------------------

BARS = [("bronze", 1.2), ("silver", 1.5), ("gold", 2.0)]


def pair(base_tps: float, mine_tps: float, base_p99: float, mine_p99: float) -> tuple[dict, dict]:
    return {"tokens_per_s": base_tps, "latency_p99_s": base_p99}, {"tokens_per_s": mine_tps, "latency_p99_s": mine_p99}


def test_the_replays_of_the_toy_servers_earn_the_tier_their_figures_say():
    """Static against continuous batching, the trace shifted a little each pair: 3x the tokens a second at a
    quarter of the p99 latency is gold; the static server against itself earns nothing."""
    from tutor.grading.serving import serving_estimates, serving_tier

    def run(make, shift):
        clock = VirtualClock()
        server = make(clock)
        jittered = [Request(r.rid, r.arrival_s + shift * (r.rid % 3), r.prompt, r.max_new) for r in trace()]
        return figures(replay(jittered, server.submit, server.step, limit_s=60, clock=clock, wait=clock.wait))

    shifts = [0.0, 0.001, 0.002, 0.003, 0.004, 0.005]
    pairs = [(run(lambda c: Static(c, 8), s), run(lambda c: Continuous(c, 8), s)) for s in shifts]
    estimates = serving_estimates(pairs)
    assert estimates["throughput"].low > 2.0 and estimates["latency_p99"].high < 0.5
    assert serving_tier(BARS, estimates) == "gold"
    itself = serving_estimates([(run(lambda c: Static(c, 8), s), run(lambda c: Static(c, 8), s)) for s in shifts])
    assert serving_tier(BARS, itself) == ""


def test_more_tokens_bought_with_longer_waits_earn_nothing():
    from tutor.grading.serving import latency_line, serving_estimates, serving_tier

    faster_but_later = serving_estimates([pair(100, 300 + i, 1.0, 1.3 + i / 100) for i in range(8)])
    assert faster_but_later["throughput"].low > 2.0 and serving_tier(BARS, faster_but_later) == ""
    assert "over the limit of 1.00x" in latency_line(faster_but_later)
    # The same throughput at the baseline's latency or better: the throughput's lower bound picks the tier.
    steady = serving_estimates([pair(100, 160 + i, 1.0, 0.9 + i / 100) for i in range(8)])
    assert serving_tier(BARS, steady) == "silver" and "within the limit" in latency_line(steady)
    assert serving_tier(BARS, steady, max_latency_ratio=0.9) == ""


def test_a_serving_profile_records_a_window_of_steps_well_inside_any_replay():
    from tutor.harness.serving import PROFILED_STEPS, profiled_window

    def trace(*lengths):
        return [Request(i, 0.0, (1,), n) for i, n in enumerate(lengths)]

    # A replay takes at least its longest request's steps: the window opens a quarter of the way in.
    assert profiled_window(trace(3, 40, 7)) == (10, PROFILED_STEPS)
    assert profiled_window(trace(256, 12)) == (64, PROFILED_STEPS)
    assert profiled_window(trace(5000)) == (100, PROFILED_STEPS)  # never later than step 100
    assert profiled_window(trace(1, 2)) == (1, PROFILED_STEPS)  # from the second step: the first warms up


def test_a_profiled_window_records_only_its_steps(tmp_path):
    """For real on the CPU: 20 steps under the profiler with a window of steps 5 to 8 leave 3 iterations in
    the trace; a window the steps never reach is said, not a trace with nothing in it."""
    import json

    import torch
    from torch.profiler import record_function

    from tutor.harness.torch_profile import WindowNeverOpened, profiled
    from tutor.protocol import TORCH_ITER_RANGE

    def steps(count: int, profiling) -> None:
        for _ in range(count):
            with record_function(TORCH_ITER_RANGE):
                torch.ones(8).sum()
            profiling.step()

    with profiled(tmp_path / "trace.json", (5, 3)) as profiling:
        steps(20, profiling)
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert sum(e.get("name") == TORCH_ITER_RANGE for e in events) == 3
    with pytest.raises(WindowNeverOpened):
        with profiled(tmp_path / "never.json", (50, 3)) as profiling:
            steps(20, profiling)
    assert not (tmp_path / "never.json").exists()


def test_a_steps_message_carries_only_the_draws_that_changed_and_the_server_reads_them_all():
    from types import MappingProxyType

    from tutor.harness.serving import LiveDraws, apply, pack

    held, kept = LiveDraws(), {}
    for rid in range(400):  # a queue of 400: the first step's message carries them all
        held.set(rid, rid % 8)
    apply(pack(held.changes()), kept)
    assert kept == dict(held) and len(kept) == 400
    held.set(3, 5)  # a token of request 3 came back: its next draw
    held.drop(7)  # request 7 is done
    changed = held.changes()
    assert changed == {3: 5, 7: -1} and held.changes() == {}
    apply(pack(changed), kept)
    assert kept == dict(held) and 7 not in kept and MappingProxyType(kept)[3] == 5
