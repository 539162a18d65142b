"""The call clock's loop, its order of work checked on the CPU with the device's sync stood in for: each call's seed
sent to the worker in an ask of its own once the call before returned, each input made only once the call before it
returned and the device drained, the clock started once the harness's own work is done, L2 flushed with the first
input alone, each call timed alone (issue 76: nothing of a call exists before the call before it returned). Its
timing on a GPU: tests/test_gpu_clock.py and tests/test_every_call_checked.py."""

from contextlib import nullcontext

from conftest import loop_ms
from tutor.harness import device as device_module
from tutor.harness import gpu_clock, lockstep


def test_each_input_is_made_after_the_call_before_returned_and_the_device_drained(monkeypatch):
    events = []
    monkeypatch.setattr(gpu_clock, "device_sync", lambda: events.append("sync"))
    monkeypatch.setattr(gpu_clock, "_own_work_done", lambda: events.append("made"))
    clock = object.__new__(gpu_clock.GpuClock)  # no CUDA here: the loop's own logic alone
    clock.clocks, clock._drain_ms = {}, 0.0
    cuda = object.__new__(device_module.Device)
    cuda.cuda, cuda._clock = True, clock

    def make(seed, flush):
        events.append(("make", seed, flush))
        return f"input {seed}"

    ms = loop_ms(cuda, make, lambda x: events.append(("call", x)), [11, 12, 13], "mine")
    # Before a call, the harness's own work alone (a thread's work on the new input would still be running, and
    # count); after it, the whole device.
    assert events == [("make", 11, True), "made", ("call", "input 11"), "sync",
                      ("make", 12, False), "made", ("call", "input 12"), "sync",
                      ("make", 13, False), "made", ("call", "input 13"), "sync"]
    assert ms >= 0 and clock.clocks["mine"].loop_ms == [ms]


def test_the_cpu_loop_reads_its_calls_median_so_one_preempted_call_moves_nothing(monkeypatch):
    """On CPU a round's sample is its calls' median: a call the OS preempted (here one of three reads 1,000 times
    the others) leaves the round's sample where the other calls put it; its mean would have read 334 times."""
    ticks = iter([0, 1_000_000, 5_000_000, 1_005_000_000, 2_000_000_000, 2_001_000_000])  # calls of 1, 1000, 1 ms
    monkeypatch.setattr(device_module, "_clock_ns", lambda: next(ticks))
    made = []
    cpu = device_module.Device("cpu")
    ms = loop_ms(cpu, lambda seed, flush: made.append(seed) or seed, lambda x: None, [7, 8, 9], "mine")
    assert ms == 1.0 and made == [7, 8, 9]


class Recorded:
    """A worker's side that records each ask the coordinator sends it."""

    def __init__(self):
        self.asks = []

    def thawed(self):
        return nullcontext()

    def ask(self, op, **fields):
        self.asks.append((op, fields))
        return {"waited_ms": 0.0}


def test_each_call_of_a_round_gets_its_own_seed_in_an_ask_of_its_own():
    """No ask carries a later call's seed: a workload that reads the harness's frames and lists in one call finds
    none of the calls after it (tests/test_every_call_checked.py, through the whole harness)."""
    for cuda in (False, True):
        side, seeds = Recorded(), [101, 102, 103, 104, 105, 106]
        lockstep.time_round(side, "mine", seeds, keep=True, cuda=cuda)
        loop = seeds[1:-1] if cuda else seeds[1:]
        assert side.asks[0] == ("warm_call", {"name": "mine", "seed": 101})
        assert side.asks[1:1 + len(loop)] == [
            ("loop_call", {"name": "mine", "seed": s, "first": k == 0, "last": k == len(loop) - 1, "keep": True})
            for k, s in enumerate(loop)]
        gpu_clocks = [("gpu_call", {"name": "mine", "seed": 106, "keep": True})] if cuda else []
        assert side.asks[1 + len(loop):] == gpu_clocks
        assert all(set(fields) & {"seed", "seeds"} == {"seed"} for _, fields in side.asks)


def test_the_candidate_is_settled_against_the_rulers_floor():
    """The ruler finishes first and reads the floor from its own calls; the candidate gets that number, and reads
    none from its own (a workload that left work after every call would raise its own floor and hide it)."""

    class Ruler(Recorded):
        def ask(self, op, **fields):
            super().ask(op, **fields)
            return {"after_floor_ms": 0.021}

    ruler, learner = Ruler(), Recorded()
    theirs, _ = lockstep.finished(ruler, learner, keep_ruler=True)
    assert ruler.asks == [("finish", {"keep": True})] and theirs["after_floor_ms"] == 0.021
    assert learner.asks == [("finish", {"after_floor_ms": 0.021})]


def test_the_gpu_clock_charges_what_the_device_still_ran_before_its_call(monkeypatch):
    """The GPU clock's call waits for the harness's own work, then drains the device: what the device still ran then
    (work a thread queued on the new input) joins what ran after the end event, and is charged as work the events
    missed. Its run on a GPU: tests/test_every_call_checked.py."""
    events, ticks = [], iter([0, 2_000_000] * 3)  # the device busy 2 ms past the harness's own work, each call
    monkeypatch.setattr(gpu_clock, "_own_work_done", lambda: events.append("made"))
    monkeypatch.setattr(gpu_clock, "device_sync", lambda: events.append("drained"))
    monkeypatch.setattr(gpu_clock, "_clock_ns", lambda: next(ticks))
    clock = object.__new__(gpu_clock.GpuClock)
    clock.clocks, clock._drain_ms = {}, 0.0
    clock._run = lambda fn, held, hold_ms: (events.append("timed") or fn(), 1.0, 1.0, 0.0)  # events: 1 ms
    for _ in range(3):
        clock.time_call_ms(lambda: "out", "mine")
    assert events == ["made", "drained", "timed"] * 3
    assert clock.clocks["mine"].after_ms == [2.0] * 3
    assert gpu_clock.settle(clock.clocks) == ["mine"] and clock.clocks["mine"].gpu_call_ms(0) == 3.0


def test_a_grades_calls_a_round_are_the_puzzles_or_shorter_where_no_tier_reads_the_call_clock(workspace):
    """benchmarks/grade_stability.py --loop-calls grades with other loops: the puzzle's timing carries their length
    into the grade's request, whose rounds draw from it (lockstep). A puzzle that names none leaves the harness's
    where a tier reads the call clock (puzzle1, puzzle3's bronze) or on a CPU (puzzle0); one whose every tier reads the
    GPU clock (puzzle12) gets a quick check's loops, its call clock only keeping the learner's calls near the
    comparator's."""
    import dataclasses

    from tutor import actions
    from tutor.catalog import SHORT_GPU_LOOP_CALLS, get_puzzle
    from tutor.quick_check import QUICK_LOOP_CALLS

    def loop_calls(puzzle, named=()):
        if named:
            puzzle = dataclasses.replace(puzzle, timing=dataclasses.replace(puzzle.timing, loop_calls=named))
        return actions.check_request(workspace, puzzle, ["mine"])["timing"].get("loop_calls")

    gpu_only = get_puzzle("puzzle12")
    assert {t.clock for t in gpu_only.tiers} == {"gpu"} and SHORT_GPU_LOOP_CALLS == QUICK_LOOP_CALLS["cuda"]
    assert loop_calls(get_puzzle("puzzle1"), named=(2, 4)) == [2, 4]
    assert loop_calls(gpu_only, named=(4, 8)) == [4, 8]
    assert loop_calls(gpu_only) == list(SHORT_GPU_LOOP_CALLS)
    for puzzle_id in ("puzzle1", "puzzle3", "puzzle0"):
        assert loop_calls(get_puzzle(puzzle_id)) is None, puzzle_id
