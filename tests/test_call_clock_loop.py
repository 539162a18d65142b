"""The CUDA call clock's loop (tutor.harness.gpu_clock.GpuClock.loop_ms), its order of work checked on the CPU with
the device's sync stood in for: each input made only once the call before it returned and the device drained, L2
flushed with the first input alone, each call timed alone between two syncs (issue 76: nothing of a call exists
before the call before it returned). Its timing on a GPU: tests/test_gpu_clock.py."""

from tutor.harness import gpu_clock


def test_each_input_is_made_after_the_call_before_returned_and_the_device_drained(monkeypatch):
    events = []
    monkeypatch.setattr(gpu_clock, "_device_sync", lambda: events.append("sync"))
    clock = object.__new__(gpu_clock.GpuClock)  # no CUDA here: the loop's own logic alone
    clock.clocks, clock._drain_ms = {}, 0.0

    def make(seed, flush):
        events.append(("make", seed, flush))
        return f"input {seed}"

    ms = clock.loop_ms(make, lambda x: events.append(("call", x)), [11, 12, 13], "mine")
    assert events == [("make", 11, True), "sync", ("call", "input 11"), "sync",
                      ("make", 12, False), "sync", ("call", "input 12"), "sync",
                      ("make", 13, False), "sync", ("call", "input 13"), "sync"]
    assert ms >= 0 and clock.clocks["mine"].loop_ms == [ms]


def test_the_cpu_loop_reads_its_calls_median_so_one_preempted_call_moves_nothing(monkeypatch):
    """On CPU a round's sample is its calls' median: a call the OS preempted (here one of three reads 1,000 times
    the others) leaves the round's sample where the other calls put it; its mean would have read 334 times."""
    from tutor.harness import device as device_module

    ticks = iter([0, 1_000_000, 5_000_000, 1_005_000_000, 2_000_000_000, 2_001_000_000])  # calls of 1, 1000, 1 ms
    monkeypatch.setattr(device_module, "_clock_ns", lambda: next(ticks))
    made = []
    cpu = device_module.Device("cpu")
    ms = cpu.loop_ms(lambda seed, flush: made.append(seed) or seed, lambda x: None, [7, 8, 9], "mine")
    assert ms == 1.0 and made == [7, 8, 9]
