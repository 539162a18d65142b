"""The one metrics model every profiler backend produces.

`values` is a flat name -> number map: these names are what a learner cites as
evidence in answer.toml, so they are stable and documented in METRIC_DOCS.
`kernels` is the per-kernel table (one dict per kernel name) for display.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

# Names a learner can cite, with what they mean. Backends may add more
# (e.g. per-category shares) following the same patterns.
METRIC_DOCS: dict[str, str] = {
    "iterations": "forward() calls inside the profiled window (a serving puzzle's: server steps)",
    "cpu.time_per_iter_us": "host wall time of one forward() call",
    "cpu.ops_per_iter": "aten operator calls per forward() (dispatcher round-trips)",
    "cpu.allocs_per_iter": "host or device allocations per forward()",
    "gpu.time_per_iter_us": "summed kernel time per forward()",
    "gpu.busy_fraction": "share of the window in which some kernel ran (1.0 = never idle)",
    "gpu.idle_us_per_iter": "time per forward() with no kernel running",
    "kernels.per_iter": "GPU kernels launched per forward()",
    "kernels.category.<cat>.share": "share of GPU kernel time in category <cat>",
    "kernels.category.<cat>.us_per_iter": "kernel time per forward() in category <cat>",
    "host.window_us_per_iter": "the host's time per forward(), the mean of the profiled calls (diagnose)",
    "host.in_ops_us_per_iter": "host time per forward() inside aten operators, dispatch and launches included",
    "host.outside_ops_us_per_iter": "host time per forward() in no operator and no CUDA call: the workload's Python",
    "host.memcpy_us_per_iter": "host time per forward() inside CUDA copy calls (a blocking copy waits there)",
    "host.wait_us_per_iter": "host time per forward() inside CUDA synchronize calls",
    "host.alloc_us_per_iter": "host time per forward() inside cudaMalloc, cudaFree and their driver calls",
    "host.comm_us_per_iter": "host time per forward() in communication between processes (gloo, c10d)",
    "launch.latency_us_median": "median time from the launch API call to the kernel start",
    "launch.api_us_per_iter": "host time spent inside CUDA launch API calls per forward()",
    "memcpy.h2d_bytes_per_iter": "host-to-device bytes copied per forward()",
    "memcpy.d2h_bytes_per_iter": "device-to-host bytes copied per forward()",
    "memcpy.h2d_gbps": "achieved host-to-device bandwidth",
    "memcpy.d2h_gbps": "achieved device-to-host bandwidth",
    "memcpy.pageable_per_iter": "copies per forward() from pageable (unpinned) host memory",
    # A rank's collectives (multi-GPU puzzles: NCCL kernels in rank 0's trace, their messages as torch records them).
    "comm.kernels_per_iter": "NCCL kernels (collectives, sends, receives) per forward() on this rank",
    "comm.bytes_per_iter": "bytes the collectives' messages carried per forward() (each one's input)",
    "comm.bus_gbps": "the collectives' bus bandwidth: what each GPU's link carried (NCCL's convention, 2(n-1)/n of an "
                     "all-reduce's message) over their kernels' time, which includes waiting for the other ranks",
    "comm.overlap_share": "share of the collectives' kernel time during which another kernel ran beside them",
    "comm.link_peak_gbps": "the link's best bus bandwidth, measured by the harness on these GPUs after the profile "
                           "(an all-reduce of 64 MiB, the best of 5)",
    "comm.link_peak_share": "comm.bus_gbps over comm.link_peak_gbps: how much of the link the collectives used",
    "sync.calls_per_iter": "host-device synchronisations per forward()",
    "graphs.replays_per_iter": "CUDA graph launches per forward()",
    "memory.peak_allocated_mb": "peak memory held by tensors",
    "memory.peak_reserved_mb": "peak memory reserved by the caching allocator",
    "memory.reserved_mb": "memory the caching allocator holds after warm-up and profiling",
    "memory.graph_pool_mb": "memory held in CUDA graphs' private pools",
    "memory.graph_pools": "CUDA graphs' private pools: one per graph means no graph reuses another's memory",
    "graphs.captured": "CUDA graphs captured since the workload loaded (warm-up included)",
    "compile.graphs": "graphs torch.compile compiled since the workload loaded (1 + recompiles)",
    "compile.graph_breaks": "graph breaks torch.compile met: Python it ran eagerly between compiled graphs",
    "compile.recompiles": "times torch.compile compiled a function again because a guard failed (a new shape, dtype...)",
    "compile.recompile_limit_hits": "functions torch.compile stopped compiling at its recompile limit: a shape it "
                                    "has no graph for runs eagerly from then on",
    "compile.cudagraph_skips": "times torch.compile(mode='reduce-overhead') ran a graph without a CUDA graph",
    # The memory profiler (the CUDA allocator's history; tutor.profilers.memory_snapshot). Phases: prepare
    # (the weights made and prepare()), warmup (warm-up calls), iterations (the profiled calls).
    "allocator.<phase>.peak_allocated_mb": "most memory held by tensors at once during <phase>",
    "allocator.<phase>.peak_reserved_mb": "most memory the caching allocator held from CUDA during <phase>",
    "allocator.<phase>.largest_alloc_mb": "the largest single allocation during <phase>",
    "allocator.<phase>.allocs": "allocations made during <phase>",
    "allocator.allocated_mb_per_iter": "memory allocated per profiled forward() (a bf16 copy of a weight shows here)",
    "allocator.freed_mb_per_iter": "memory freed per profiled forward()",
    "allocator.allocs_per_iter": "allocations per profiled forward() (a CUDA graph replay makes none)",
    "allocator.segment_allocs_per_iter": "times per profiled forward() the caching allocator asked CUDA for memory "
                                         "(a warm allocator asks for none)",
    "allocator.segment_frees_per_iter": "times per profiled forward() the caching allocator gave memory back to CUDA "
                                        "(each cudaFree waits for the GPU)",
    "allocator.peak_allocated_mb": "most memory held by tensors at once, over the whole recording",
    "allocator.fragmentation_mb": "memory reserved but not held by a tensor, at the peak: the allocator's slack",
    "allocator.graph_pools": "CUDA graphs' private memory pools at the end",
    "allocator.graph_pool_mb": "memory in CUDA graphs' private pools at the end",
    "allocator.reserved_mb": "memory the caching allocator held at the end",
    "allocator.events": "allocator events recorded (allocations, frees, segments)",
    # ptxas's report of a CUDA source (tutor.profilers.ptxas), read at compile time: no GPU needed.
    "ptxas.kernels": "kernels ptxas compiled",
    "ptxas.spill_store_bytes": "bytes per thread the kernels store to local memory because registers ran out",
    "ptxas.spill_load_bytes": "bytes per thread the kernels load back from local memory after spilling",
    "ptxas.max_registers": "the most registers per thread any kernel uses",
    "ptxas.max_stack_frame_bytes": "the largest per-thread stack frame (local arrays and spills)",
    # Nsight Compute: the kernel with the most GPU time in the profiled range.
    "ncu.kernels_profiled": "kernel launches Nsight Compute profiled",
    "ncu.total_us": "summed duration of the profiled kernels",
    "ncu.duration_us": "top kernel: mean duration of one launch",
    "ncu.sm_throughput_pct": "top kernel: SM throughput, % of peak (compute speed of light)",
    "ncu.memory_throughput_pct": "top kernel: busiest memory unit, % of peak (memory speed of light)",
    "ncu.dram_throughput_pct": "top kernel: DRAM bandwidth used, % of peak",
    "ncu.dram_gbps": "top kernel: DRAM bandwidth achieved, GB/s (read + write)",
    "ncu.dram_bytes": "top kernel: bytes moved to and from DRAM per launch",
    "ncu.l2_hit_rate_pct": "top kernel: L2 sector hit rate",
    "ncu.l1_hit_rate_pct": "top kernel: L1/TEX sector hit rate",
    "ncu.achieved_occupancy_pct": "top kernel: active warps per SM, % of the maximum",
    "ncu.theoretical_occupancy_pct": "top kernel: occupancy its launch config allows",
    "ncu.registers_per_thread": "top kernel: registers per thread",
    "ncu.grid_size": "top kernel: blocks launched",
    "ncu.block_size": "top kernel: threads per block",
    "ncu.waves_per_sm": "top kernel: blocks / (SMs x blocks resident per SM); a fraction leaves SMs idle in the last wave",
    "ncu.static_shared_bytes": "top kernel: static shared memory per block",
    "ncu.dynamic_shared_bytes": "top kernel: dynamic shared memory per block",
    "ncu.occupancy_limit_registers": "top kernel: blocks per SM the register use allows",
    "ncu.occupancy_limit_shared_mem": "top kernel: blocks per SM the shared memory use allows",
    "ncu.occupancy_limit_warps": "top kernel: blocks per SM the warp count allows",
    "ncu.occupancy_limit_blocks": "top kernel: blocks per SM the hardware block limit allows",
    "ncu.sm_active_cycles": "top kernel: cycles an SM sub-partition was active",
    "ncu.spill_instructions": "top kernel: instructions executed that spill registers to local memory or load them back",
    "ncu.threads_per_instruction": "top kernel: threads active per warp instruction; 32 unless branches split warps",
    "ncu.l2_atomic_busy_pct": "top kernel: how busy L2's atomic units were, % of peak, averaged over L2's slices",
    "ncu.l2_atomic_busiest_pct": "top kernel: how busy the busiest L2 slice's atomic unit was, % of peak",
    "ncu.tensor_pipe_pct": "top kernel: cycles its tensor pipe (the matrix units) was busy, % of the SMs' active cycles",
    "ncu.fma_pipe_pct": "top kernel: cycles its FMA pipe (fp32 multiply-adds on the CUDA cores) was busy, % of the SMs' active cycles",
    "ncu.shared_load_bank_conflicts": "top kernel: extra shared-memory wavefronts its loads took because of bank conflicts",
    "ncu.shared_load_wavefronts": "top kernel: shared-memory wavefronts its loads took (one per conflict-free warp load)",
    "ncu.shared_load_instructions": "top kernel: warp-level shared-memory load instructions executed",
    "ncu.shared_wavefronts_per_load": "top kernel: wavefronts per shared load; 1 without bank conflicts, 32 at worst",
    "ncu.global_load_sectors": "top kernel: 32-byte sectors its global loads moved",
    "ncu.global_load_requests": "top kernel: warp-level global load requests",
    "ncu.global_store_sectors": "top kernel: 32-byte sectors its global stores moved",
    "ncu.global_store_requests": "top kernel: warp-level global store requests",
    "ncu.global_load_sectors_per_request": "top kernel: sectors per global load request; 4 when a warp loads 32 neighbouring floats, 32 at worst",
    "ncu.global_store_sectors_per_request": "top kernel: sectors per global store request; 4 when a warp stores 32 neighbouring floats, 32 at worst",
    "ncu.stall.<reason>": "top kernel: cycles per issued instruction warps spent stalled on <reason>",
    # A server's profiled replay (serving puzzles; tutor.harness.serving): from the harness's own stamps over
    # the whole replay. The trace holds a window of its steps (serving.profiled_window: up to 300, from a
    # quarter of the way into its longest request), each step() one iteration of the per-iteration metrics.
    "serving.requests": "requests in the profiled replay's trace",
    "serving.tokens": "tokens the server returned over the replay",
    "serving.makespan_s": "seconds from the first request's arrival to the last token",
    "serving.tokens_per_s": "tokens a second over the replay: its throughput",
    "serving.latency_p50_s": "median request latency: arrival to last token",
    "serving.latency_p99_s": "99th-percentile request latency",
    "serving.waited_p50_s": "median wait for a request's first token: queueing and prefill",
    "serving.waited_p99_s": "99th-percentile wait for a request's first token",
    "serving.tokens_per_step": "requests given a token a step, over the steps that gave any: the batch's occupancy",
}


@dataclass
class ProfileMetrics:
    """What one profiling run showed, in the form graders and views read."""

    values: dict[str, float]
    kernels: list[dict] = field(default_factory=list)  # or, from the memory profiler, allocation sites
    profiler: str = "torch"
    device: str = "cpu"
    # Lines to plot, by name (the memory profiler's allocated and reserved MB over its events).
    series: dict = field(default_factory=dict)

    def to_json(self) -> str:
        data = {"profiler": self.profiler, "device": self.device, "values": self.values, "kernels": self.kernels}
        if self.series:
            data["series"] = self.series
        return json.dumps(data, indent=1)

    @classmethod
    def from_json(cls, text: str) -> "ProfileMetrics":
        data = json.loads(text)
        return cls(values=data["values"], kernels=data.get("kernels", []),
                   profiler=data.get("profiler", "torch"), device=data.get("device", "cpu"),
                   series=data.get("series", {}))

    def save(self, path: Path) -> None:
        path.write_text(self.to_json())

    @classmethod
    def load(cls, path: Path) -> "ProfileMetrics":
        return cls.from_json(path.read_text())


def describe(name: str) -> str:
    """The documented meaning of a metric name, matching <cat>-style patterns."""
    if name in METRIC_DOCS:
        return METRIC_DOCS[name]
    parts = name.split(".")
    if parts[0].startswith("rank") and parts[0].removeprefix("rank").isdigit() and len(parts) > 1:
        mine = describe(".".join(parts[1:]))  # another rank's figure (tutor.profilers.capture): rank 0's meaning
        return f"rank {parts[0].removeprefix('rank')}: {mine}" if mine else ""
    if len(parts) == 3 and parts[:2] == ["ncu", "stall"]:
        return METRIC_DOCS["ncu.stall.<reason>"].replace("<reason>", parts[2])
    if len(parts) == 3 and parts[0] == "allocator":
        return METRIC_DOCS.get(f"allocator.<phase>.{parts[2]}", "").replace("<phase>", parts[1])
    if len(parts) == 4 and parts[:2] == ["kernels", "category"]:
        return METRIC_DOCS.get(f"kernels.category.<cat>.{parts[3]}", "").replace("<cat>", parts[2])
    return ""
