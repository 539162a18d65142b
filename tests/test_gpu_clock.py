"""Timing a call with the GPU held (tutor.harness.gpu_clock), on a real GPU."""

import time

import pytest

from conftest import loop_ms
from tutor.harness.gpu_clock import PROBE_CALLS, after_floor_ms

pytestmark = pytest.mark.gpu


def no_inputs(seed, flush) -> None:
    """The call clock's input for calls that take none."""
    return None


@pytest.fixture(scope="module")
def device():
    from tutor.harness.device import Device

    device = Device("cuda")
    assert device.timing_note == ""  # the hold compiled: calls are held
    return device


@pytest.fixture(scope="module")
def a():
    import torch

    return torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)


def timed(device, name: str, fn, calls: int = 7):
    """`fn` timed as a grade times it: its GPU clock's samples, settled, and which workloads were charged. Settled as a
    grade settles the candidate: against the floor of calls other than its own (those timed before it here)."""
    device.calibrate(name, [fn] * PROBE_CALLS)
    for _ in range(calls):
        device.time_call_ms(fn, name)
    charged, _ = device.settle(after_floor_ms({n: c for n, c in device._clock.clocks.items() if n != name}))
    clock = device._clock.clocks[name]
    return clock, [clock.gpu_call_ms(i) for i in range(calls)], charged


def test_a_workload_that_waits_for_the_gpu_is_timed_from_an_idle_gpu(device, a):
    clock, ms, _ = timed(device, "item", lambda: (a @ a).sum().item())
    print("waits for the GPU:", clock.held, ms)
    assert not clock.held and min(ms) > 0.05  # the matmul's own time, not a hold's


def test_host_work_before_the_launches_is_counted(device, a):
    def host_heavy():
        time.sleep(0.003)  # 3 ms of host before a kernel of ~0.2 ms
        return a @ a

    clock, ms, _ = timed(device, "host_heavy", host_heavy)
    loop = [loop_ms(device, no_inputs, lambda x: host_heavy(), range(4), "host_heavy") for _ in range(3)]
    print("host-heavy:", clock.held, clock.hold_ms, ms, loop)
    # The call clock (calls back to back) pays the host's 3 ms; the GPU clock, the kernel alone.
    assert clock.held and min(loop) >= 3.0 and max(ms) < 1.0


def test_the_call_clock_of_gpu_bound_calls_is_their_gpu_time(device, a):
    def matmuls():
        for _ in range(4):
            a @ a

    clock, ms, _ = timed(device, "matmuls", matmuls)
    loop = [loop_ms(device, no_inputs, lambda x: matmuls(), range(6), "matmuls") for _ in range(5)]
    print("GPU-bound: GPU", ms, "loop", loop)
    assert abs(sorted(loop)[2] / sorted(ms)[3] - 1) < 0.1


def test_work_on_a_side_stream_cannot_hide_in_the_hold(device, a):
    import torch

    side = torch.cuda.Stream()

    def cheat():  # never waits for the timed stream, never joins it: nothing on the timed stream at all
        with torch.cuda.stream(side):
            for _ in range(8):
                a @ a

    clock, ms, charged = timed(device, "side", cheat)
    print("side stream:", clock.held, clock.gpu_ms[:3], clock.after_ms[:3], ms[:3], charged)
    assert clock.held and charged == ["side"]
    assert min(ms) > 0.5 and max(clock.gpu_ms) < 0.05  # ~1.4 ms of matmuls, charged; the events saw none
    loop = [loop_ms(device, no_inputs, lambda x: cheat(), range(4), "side") for _ in range(3)]
    print("side stream, back to back:", loop)
    assert min(loop) > 0.5  # the call clock waits for the whole device: nothing to charge, nothing missed
