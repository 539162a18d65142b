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
