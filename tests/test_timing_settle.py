"""Which clock a workload is charged: events, unless the host clock shows they missed its work."""

from tutor.harness.device import Device


def settle(events: dict, host: dict):
    device = Device("cpu")
    device._host_ms = host
    samples = {k: list(v) for k, v in events.items()}
    return device.settle(samples), samples


def test_sync_jitter_in_some_samples_keeps_event_timing():
    events = {"mine": [0.100] * 15}
    host = {"mine": [0.105] * 10 + [0.180] * 5}  # a third of the wake-ups are slow
    charged, samples = settle(events, host)
    assert charged == [] and samples["mine"] == events["mine"]


def test_work_the_events_missed_is_charged_in_full():
    events = {"baseline": [1.4] * 15, "mine": [0.02] * 15}
    host = {"baseline": [1.41] * 15, "mine": [1.43] * 15}  # mine's work ran on a side stream
    charged, samples = settle(events, host)
    assert charged == ["mine"] and samples["mine"] == host["mine"] and samples["baseline"] == events["baseline"]
