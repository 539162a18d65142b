"""What this GPU can do at best, measured: its HBM read bandwidth and its dense bf16 matmul rate, and
for a puzzle whose work crosses the host link, its copy bandwidth each way between pinned host memory and the GPU.

A puzzle's physical floor (tutor.grading.floor) divides the least work its output needs (the spec's
`least_work`) by these. Measured rather than read from a datasheet, so a consumer card, or an H100
held at lower clocks, gets its own figures. Each GPU keeps the best it has shown (a JSON file per
GPU, out of learner code's reach): a probe slowed by a busy GPU can only lower a measurement, and
taking the best keeps it from raising the floor. The ruler runs the probe while the learner's
process is frozen: a 1 GiB read and an 8192^3 matmul, 11 times each (milliseconds each on an H100).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from tutor.protocol import peaks_file, read_peaks

READ_BYTES = 1 << 30  # far beyond any L2: every byte comes from HBM
MATMUL_N = 8192  # 1.1 TFLOP a call: long enough to reach the tensor cores' steady rate
LINK_BYTES = 256 << 20  # pinned host memory to or from the GPU: long enough to reach the link's steady rate
REPEATS = 10


def _best_ms(fn, repeats: int = REPEATS) -> float:
    """The fastest of `repeats` calls, by CUDA events, after one to warm up."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end))
    return best


def hbm_read_gbps() -> float:
    """A sum over a buffer far larger than L2: bytes read per second, in GB/s."""
    free, _ = torch.cuda.mem_get_info()
    size = min(READ_BYTES, free // 4) // 4 * 4
    buffer = torch.ones(size // 4, dtype=torch.float32, device="cuda")
    ms = _best_ms(lambda: buffer.sum())
    del buffer
    return size / (ms * 1e-3) / 1e9


def bf16_tflops() -> float:
    a = torch.randn(MATMUL_N, MATMUL_N, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(MATMUL_N, MATMUL_N, dtype=torch.bfloat16, device="cuda")
    ms = _best_ms(lambda: a @ b)
    del a, b
    return 2 * MATMUL_N**3 / (ms * 1e-3) / 1e12


def link_gbps(to_gpu: bool) -> float:
    """A copy between pinned host memory and the GPU, one way: the most the host link (PCIe, NVLink-C2C)
    carries that way, in GB/s."""
    host = torch.empty(LINK_BYTES, dtype=torch.uint8, pin_memory=True)
    device = torch.empty(LINK_BYTES, dtype=torch.uint8, device="cuda")
    source, destination = (host, device) if to_gpu else (device, host)
    ms = _best_ms(lambda: destination.copy_(source, non_blocking=True))
    del host, device
    return LINK_BYTES / (ms * 1e-3) / 1e9


def measure(host_link: bool = False) -> dict:
    """The rates every floor uses; the host link's too where the puzzle's work crosses it."""
    peaks = {"hbm_read_gbps": hbm_read_gbps(), "bf16_tflops": bf16_tflops()}
    if host_link:
        peaks["h2d_gbps"], peaks["d2h_gbps"] = link_gbps(to_gpu=True), link_gbps(to_gpu=False)
    torch.cuda.empty_cache()  # the probe's buffers are not the comparators' memory
    return peaks


def best_known(folder: str | Path | None, gpu_name: str, measured: dict) -> dict:
    """The best of `measured` and what this GPU showed before, kept on disk for the next run."""
    if folder is None:
        return {**measured, "runs": 1}
    path = peaks_file(folder, gpu_name)
    known = read_peaks(folder, gpu_name) or {}
    # A rate not measured this time (the host link, measured for few puzzles) keeps what was shown before.
    best = {key: float(value) for key, value in known.items() if key not in ("runs", *measured)}
    best.update({key: max(value, float(known.get(key, 0.0))) for key, value in measured.items()})
    best["runs"] = int(known.get("runs", 0)) + 1
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(best))
    except OSError:
        pass  # a read-only cache: this run's best is still the floor's
    return best


def floor_facts(spec, cache_folder: str | None) -> dict | None:
    """The puzzle's least work on this GPU and this GPU's best rates; None when the spec states no floor."""
    least_work = getattr(spec, "least_work", None)
    if not callable(least_work):
        return None
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    work = least_work(int(getattr(props, "L2_cache_size", 0)))
    return {**work, **best_rates(cache_folder, host_link=bool(work.get("h2d_bytes") or work.get("d2h_bytes")))}


def best_rates(cache_folder: str | None, host_link: bool = False) -> dict:
    """This GPU's best rates and its name; {"unavailable": why} when the probe could not run."""
    try:
        measured = measure(host_link=host_link)
    except RuntimeError as e:  # no room left by the workloads (OOM), a library error: no floor this grade,
        torch.cuda.empty_cache()  # never a failed grade
        return {"unavailable": f"{type(e).__name__}: {str(e)[:200]}"}
    name = torch.cuda.get_device_properties(torch.cuda.current_device()).name
    return {**best_known(cache_folder, name, measured), "gpu": name}
