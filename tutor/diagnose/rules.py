"""One rule per bottleneck class: the numbers of a profile that show it, and how much of a call is at stake.

A rule fires only on evidence past its thresholds (each named below, each set so that the puzzles' baselines and
reference solutions, profiled on Hopper, fall on the right side of it: benchmarks/diagnose_accuracy.py). What a
rule puts at stake is a share of the call: the time the evidence says could go, or, for a memory class, the share
of the reserve it holds. Kernel-level rules read Nsight Compute's figures (ncu.*), which describe the kernels it
profiled; they weigh their share by those kernels' share of the GPU's time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

IDLE_GPU = 0.5  # gpu.busy_fraction under which the host, not the GPU, sets the call's pace
MANY_KERNELS = 50  # kernels a call, and
SHORT_KERNEL_US = 20.0  # their mean length, that make launches the pace
HOST_SHARE = 0.35  # share of the host's window outside every operator that is the host's own work
HOST_PER_KERNEL_US = 50.0  # host time in operators per kernel past any launch's cost: work inside the operators
SHARE = 0.3  # share of the GPU's time a kind of kernel needs to count (copies, collectives, memcpys)
DRAM_BOUND_PCT = 60.0  # ncu.dram_throughput_pct of a kernel whose pace is its bytes
ROOFLINE_PCT = 80.0  # and of one at DRAM's roof: nothing left to find in how it moves them (report.unclear says so)
REREAD = 1.5  # bytes the SMs request over the bytes DRAM moves: data read more than once, which L2 could serve
WASTED_SECTORS = 24.0  # sectors a request past which a warp's accesses are scattered (4 is a warp of floats)
NARROW_WARP = 20.0  # ncu.threads_per_instruction under which a warp's lanes sit idle
LOW_OCCUPANCY_PCT = 25.0
LOW_HIT_PCT = 30.0
BANK_WAVEFRONTS = 4.0  # shared-memory wavefronts a load: 1 is conflict-free
STALL_SHARE = 0.3  # a stall reason's share of all the stalls, to be the kernel's wait
ATOMIC_BUSIEST_PCT = 40.0
SPLIT_REDUCTION = (0.2, 0.8)  # reduction kernels' share beside the kernels whose partials they sum
LAST_WAVE_LOSS = 0.2  # share of the SMs' time a partial last wave leaves idle
IMBALANCE = 1.5  # one rank's matmul time over the other's
RECOMPILE_SHARE = 0.05  # a recompile's cost is paid once, outside a warm call: a little each, up to ...
RECOMPILES_AT_MOST = 0.5  # ... half a call; past the limit the compiled code is abandoned: the whole call
DISPATCH_US = 5.0  # a few microseconds of dispatch an aten call on the host, at least (CPU workloads)
MB = 2**20


@dataclass
class Evidence:
    metric: str
    value: float
    why: str  # the threshold it passed, in words


@dataclass
class Finding:
    bottleneck: str
    share: float  # of the call's time at stake (of the reserve, for a memory class)
    at_stake: str  # the share in words: "12.3 ms a call (37%)"
    evidence: list[Evidence]
    where: str
    refines: str = ""  # the coarser class this one explains, when both fire
    memory: bool = False


@dataclass
class Profile:
    """What the rules read: merged metric values (torch, ncu, memory, host.*) and the torch profile's kernel table."""

    values: dict[str, float]
    kernels: list[dict] = field(default_factory=list)
    per: str = "a call"  # what a share is of: a call, or the run when the whole command was one window

    def get(self, name: str, default: float = 0.0) -> float:
        v = self.values.get(name)
        return default if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

    def has(self, prefix: str) -> bool:
        return any(k.startswith(prefix) for k in self.values)

    @property
    def on_gpu(self) -> bool:
        return "gpu.busy_fraction" in self.values

    @property
    def call_us(self) -> float:
        """A call's length: the host's window, or the GPU's busy time over its busy share where the GPU is behind."""
        host = self.get("host.window_us_per_iter") or self.get("cpu.time_per_iter_us")
        busy = self.get("gpu.busy_fraction")
        return max(host, self.get("gpu.time_per_iter_us") / busy if busy > 0 else 0.0, 1e-9)

    @property
    def idle_us(self) -> float:
        return max(0.0, self.call_us - self.get("gpu.time_per_iter_us")) if self.on_gpu else 0.0

    def gpu_share(self, us: float) -> float:
        return min(1.0, us / self.call_us)

    def kernels_share(self) -> float:
        """The share of the call the GPU's kernels take: what a kernel-level finding can save at most."""
        return self.gpu_share(self.get("gpu.time_per_iter_us")) if self.on_gpu else 1.0

    def stall_share(self, *reasons: str) -> float:
        stalls = {k: v for k, v in self.values.items() if k.startswith("ncu.stall.") and k != "ncu.stall.selected"}
        total = sum(stalls.values())
        return sum(self.get(f"ncu.stall.{r}") for r in reasons) / total if total > 0 else 0.0

    def top_kernel(self, category: str | None = None) -> str:
        for k in self.kernels:
            if category is None or k.get("category") == category:
                return k.get("name", "")
        return ""


def _time(p: Profile, us: float) -> str:
    spent = f"{us / 1e6:.3g} s" if us >= 1e6 else f"{us / 1000:.3g} ms"
    return f"{spent} {p.per} ({p.gpu_share(us):.0%})"


def _finding(p: Profile, bottleneck: str, us: float, evidence: list[Evidence], where: str, **kw) -> Finding:
    return Finding(bottleneck, p.gpu_share(us), _time(p, us), evidence, where, **kw)


def _ev(p: Profile, metric: str, why: str) -> Evidence:
    return Evidence(metric, p.get(metric), why)


# -- the host sets the pace ------------------------------------------------------------------------------------


def cpu_overhead(p: Profile) -> Finding | None:
    if not p.on_gpu:  # a CPU workload: many operators, each a few microseconds of dispatch
        ops, call = p.get("cpu.ops_per_iter"), p.get("cpu.time_per_iter_us")
        if ops >= 1000 and call > 0 and call / ops <= 50:
            us = min(call, ops * DISPATCH_US)
            return Finding("cpu_overhead", us / call, f"{us / 1000:.3g} ms {p.per} ({us / call:.0%}), at "
                           f"{DISPATCH_US:g} us of dispatch an operator", [
                               _ev(p, "cpu.ops_per_iter", "1000 operator calls a call or more"),
                               Evidence("cpu.us_per_op", call / ops, "50 us an operator or less: dispatch, not math")],
                           "the CPU view's operators by calls: the same few operators called thousands of times")
        return None
    if p.get("gpu.busy_fraction") >= IDLE_GPU:
        return None
    window, kernels = p.get("host.window_us_per_iter"), p.get("kernels.per_iter")
    outside, in_ops = p.get("host.outside_ops_us_per_iter"), p.get("host.in_ops_us_per_iter")
    busy = _ev(p, "gpu.busy_fraction", f"under {IDLE_GPU:g}: the GPU waits for the host")
    if window > 0 and outside >= HOST_SHARE * window:
        return _finding(p, "cpu_overhead", min(p.idle_us, outside), [busy, Evidence(
            "host.outside_ops_us_per_iter", outside, f"{outside / window:.0%} of the host's window, past "
            f"{HOST_SHARE:.0%}: the workload's own Python between operators")],
            "the trace's host row between operators, where no aten call runs: the Python there")
    if kernels > 0 and in_ops / kernels >= HOST_PER_KERNEL_US:
        return _finding(p, "cpu_overhead", min(p.idle_us, in_ops), [busy, Evidence(
            "host.in_ops_us_per_kernel", in_ops / kernels, f"{HOST_PER_KERNEL_US:g} us or more of host time in "
            "operators for each kernel they launch: work inside the operators, not their launches")],
            "the operators that take the host's time on the trace, against the few kernels they launch")
    return None


def launch_overhead(p: Profile) -> Finding | None:
    kernels = p.get("kernels.per_iter")
    if not p.on_gpu or p.get("gpu.busy_fraction") >= IDLE_GPU or kernels < MANY_KERNELS:
        return None
    mean_us = p.get("gpu.time_per_iter_us") / kernels
    if mean_us > SHORT_KERNEL_US:
        return None
    return _finding(p, "launch_overhead", min(p.idle_us, p.get("host.in_ops_us_per_iter") or p.idle_us), [
        _ev(p, "kernels.per_iter", f"{MANY_KERNELS} kernels a call or more"),
        Evidence("kernels.mean_us", mean_us, f"{SHORT_KERNEL_US:g} us a kernel or less"),
        _ev(p, "gpu.busy_fraction", f"under {IDLE_GPU:g}: the GPU waits between kernels"),
        _ev(p, "launch.api_us_per_iter", "the host's time in launch calls alone")],
        "the GPU row of the trace: short kernels with gaps between them, each gap a launch on the host row")


def host_sync(p: Profile) -> Finding | None:
    syncs = p.get("sync.calls_per_iter")
    if not p.on_gpu or syncs < 1 or p.get("gpu.busy_fraction") >= IDLE_GPU:
        return None
    # Each wait drains the GPU's queue: the host's waits, and its blocking copies' time, at least.
    us = min(p.idle_us, p.get("host.wait_us_per_iter") + p.get("host.memcpy_us_per_iter"))
    if us <= 0:
        return None
    return _finding(p, "host_sync", us, [
        _ev(p, "sync.calls_per_iter", "a host wait for the GPU in every call"),
        _ev(p, "host.wait_us_per_iter", "the host's time waiting"),
        _ev(p, "gpu.busy_fraction", f"under {IDLE_GPU:g}")],
        "cudaStreamSynchronize and blocking cudaMemcpy on the host row (.item(), .cpu(), .tolist()), and the "
        "idle GPU after each")


def h2d_d2h_copy(p: Profile) -> Finding | None:
    if not p.on_gpu:
        return None
    moved = p.get("memcpy.d2h_bytes_per_iter") + p.get("memcpy.h2d_bytes_per_iter")
    host_us = p.get("host.memcpy_us_per_iter")
    routed = p.get("host.comm_us_per_iter") if host_us > 0 else 0.0  # tensors sent between processes on the host
    gpu_us = p.get("kernels.category.memcpy.us_per_iter")
    us = max(host_us, gpu_us) + routed
    if moved < MB or (p.get("kernels.category.memcpy.share") < SHARE and us < 0.2 * p.call_us):
        return None
    evidence = [_ev(p, "memcpy.d2h_bytes_per_iter", "bytes to the host a call"),
                _ev(p, "memcpy.h2d_bytes_per_iter", "bytes from the host a call"),
                _ev(p, "host.memcpy_us_per_iter", "the host's time in copy calls"),
                _ev(p, "memcpy.pageable_per_iter", "copies to or from pageable memory")]
    if routed:
        evidence.append(_ev(p, "host.comm_us_per_iter", "the host's time sending them between processes"))
    return _finding(p, "h2d_d2h_copy", us, evidence, "Memcpy DtoH / HtoD on the GPU row and cudaMemcpyAsync on "
                    "the host row: what waits for them")


def batching_policy(p: Profile) -> Finding | None:
    waited, latency = p.get("serving.waited_p50_s"), p.get("serving.latency_p50_s")
    if latency <= 0 or waited < 0.5 * latency or p.get("gpu.busy_fraction", 1.0) >= IDLE_GPU:
        return None
    return Finding("batching_policy", waited / latency, f"{waited:.3g} s of a request's {latency:.3g} s median "
                   f"latency ({waited / latency:.0%}) spent waiting", [
                       _ev(p, "serving.waited_p50_s", "half a request's latency or more before its first token"),
                       _ev(p, "serving.tokens_per_step", "requests a step serves"),
                       _ev(p, "gpu.busy_fraction", f"under {IDLE_GPU:g}: the GPU has room for more")],
                   "the steps on the trace: how many requests each serves while others queue")


# -- what the GPU's kernels do ----------------------------------------------------------------------------------


def global_memory_traffic(p: Profile) -> Finding | None:
    copy_share = p.get("kernels.category.copy.share")
    if copy_share >= SHARE:
        return _finding(p, "global_memory_traffic", p.get("kernels.category.copy.us_per_iter"), [
            _ev(p, "kernels.category.copy.share", f"{SHARE:.0%} of the GPU's time or more in copy kernels")],
            f"the copy kernels ({p.top_kernel('copy') or 'copy'}): what they copy, and whether the math needs it")
    if DRAM_BOUND_PCT <= p.get("ncu.dram_throughput_pct") < ROOFLINE_PCT:
        return _finding(p, "global_memory_traffic", p.kernels_share() * p.call_us, [
            _ev(p, "ncu.dram_throughput_pct", f"{DRAM_BOUND_PCT:g}% of DRAM's bandwidth or more: bound by bytes"),
            _ev(p, "ncu.dram_bytes", "the bytes it moves, against what the math needs")],
            "the profiled kernels' bytes against the bytes their inputs and outputs hold")
    return None


def dequantization_overhead(p: Profile) -> Finding | None:
    elementwise, gemm = p.get("kernels.category.elementwise.share"), p.get("kernels.category.gemm.share")
    converting = sum(k.get("share", 0.0) or 0.0 for k in p.kernels if k.get("category") == "elementwise"
                     and "copy_kernel" in k.get("full_name", k.get("name", "")))
    if elementwise < 0.4 or gemm <= 0 or converting < 0.2:
        return None
    return _finding(p, "dequantization_overhead", p.get("kernels.category.elementwise.us_per_iter"), [
        _ev(p, "kernels.category.elementwise.share", "40% of the GPU's time or more in elementwise kernels"),
        Evidence("kernels.converting.share", converting, "20% or more in kernels that convert a dtype"),
        _ev(p, "kernels.category.gemm.share", "beside the matmuls that read what they convert")],
        "the elementwise kernels before each matmul: each writes a wide copy of weights the matmul then reads",
        refines="global_memory_traffic")


def tensor_cores_idle(p: Profile) -> Finding | None:
    if p.get("ncu.fma_pipe_pct") < 40 or p.get("ncu.tensor_pipe_pct") >= 5 or p.get(
            "kernels.category.gemm.share") < 0.5:
        return None
    return _finding(p, "tensor_cores_idle", p.get("kernels.category.gemm.us_per_iter"), [
        _ev(p, "ncu.fma_pipe_pct", "the FMA pipes 40% busy or more"),
        _ev(p, "ncu.tensor_pipe_pct", "the tensor pipes under 5%"),
        _ev(p, "kernels.category.gemm.share", "matmuls half the GPU's time or more")],
        f"the matmul kernels ({p.top_kernel('gemm')}): their operands' dtype, and the pipe they run on")


def _kernel_finding(p: Profile, bottleneck: str, loss: float, evidence: list[Evidence], where: str,
                    **kw) -> Finding:
    """A finding inside the profiled kernels: `loss` of their time, weighed by their share of the call."""
    us = loss * p.kernels_share() * p.call_us
    return _finding(p, bottleneck, us, evidence, where, **kw)


def register_spills(p: Profile) -> Finding | None:
    waits = p.stall_share("lg_throttle", "long_scoreboard")
    if p.get("ncu.spill_instructions") <= 0 or waits < STALL_SHARE:
        return None
    return _kernel_finding(p, "register_spills", waits, [
        _ev(p, "ncu.spill_instructions", "instructions that store registers to local memory or load them back"),
        _ev(p, "ncu.registers_per_thread", "the registers each thread got"),
        Evidence("ncu.stall.lg_throttle", p.get("ncu.stall.lg_throttle"),
                 f"with long_scoreboard, {waits:.0%} of the stalls: the warps wait on local memory")],
        "the kernel's SASS: STL and LDL in its inner loop", refines="global_memory_traffic")


def atomics_contention(p: Profile) -> Finding | None:
    busiest, average = p.get("ncu.l2_atomic_busiest_pct"), p.get("ncu.l2_atomic_busy_pct")
    if busiest < ATOMIC_BUSIEST_PCT or busiest < 10 * max(average, 0.1):
        return None
    return _kernel_finding(p, "atomics_contention", 1 - average / busiest, [
        _ev(p, "ncu.l2_atomic_busiest_pct", f"L2's busiest atomic unit {ATOMIC_BUSIEST_PCT:g}% busy or more"),
        _ev(p, "ncu.l2_atomic_busy_pct", "ten times the average unit or more: a few addresses take every update"),
        _ev(p, "ncu.dram_throughput_pct", "DRAM meanwhile")],
        "the kernel's atomics: how many threads update each address", refines="global_memory_traffic")


def bank_conflicts(p: Profile) -> Finding | None:
    waits = p.stall_share("mio_throttle", "short_scoreboard")
    if p.get("ncu.shared_wavefronts_per_load") < BANK_WAVEFRONTS or waits < STALL_SHARE:
        return None
    return _kernel_finding(p, "bank_conflicts", waits, [
        _ev(p, "ncu.shared_wavefronts_per_load", f"{BANK_WAVEFRONTS:g} wavefronts a shared load or more (1 is "
            "conflict-free)"),
        Evidence("ncu.stall.mio_throttle", p.get("ncu.stall.mio_throttle"),
                 f"with short_scoreboard, {waits:.0%} of the stalls: the shared-memory pipe")],
        "the kernel's shared-memory loads: which bank each lane of a warp reads")


def uncoalesced_access(p: Profile) -> Finding | None:
    sides = [(p.get(f"ncu.global_{s}_sectors"), p.get(f"ncu.global_{s}_sectors_per_request"), s)
             for s in ("load", "store")]
    total = sum(sectors for sectors, _, _ in sides)
    wasted = sum(sectors * (1 - 4 / spr) for sectors, spr, _ in sides if spr >= WASTED_SECTORS)
    if total <= 0 or wasted <= 0:
        return None
    worst = max(sides, key=lambda s: s[1])[2]
    return _kernel_finding(p, "uncoalesced_access", wasted / total, [
        _ev(p, f"ncu.global_{worst}_sectors_per_request", f"{WASTED_SECTORS:g} sectors a request or more: a "
            "warp's 32 accesses land in as many sectors"),
        _ev(p, "ncu.dram_throughput_pct", "DRAM meanwhile")],
        f"the kernel's global {worst}s: the stride between neighbouring threads' addresses",
        refines="global_memory_traffic")


def warp_divergence(p: Profile) -> Finding | None:
    lanes = p.get("ncu.threads_per_instruction", 32.0)
    if "ncu.threads_per_instruction" not in p.values or lanes >= NARROW_WARP:
        return None
    return _kernel_finding(p, "warp_divergence", 1 - lanes / 32, [
        _ev(p, "ncu.threads_per_instruction", f"under {NARROW_WARP:g} of a warp's 32 lanes an instruction"),
        _ev(p, "ncu.sm_throughput_pct", "the SMs busy meanwhile")],
        "the kernel's branches and loops whose trip count differs between neighbouring threads")


def wave_tile_quantization(p: Profile) -> Finding | None:
    waves = p.get("ncu.waves_per_sm")
    if waves <= 0 or waves > 4:
        return None
    loss = (math.ceil(waves) - waves) / math.ceil(waves)
    if loss < LAST_WAVE_LOSS:
        return None
    return _kernel_finding(p, "wave_tile_quantization", loss, [
        _ev(p, "ncu.waves_per_sm", f"a last wave {1 - (math.ceil(waves) - waves):.0%} full"),
        _ev(p, "ncu.grid_size", "blocks in the grid"),
        _ev(p, "ncu.occupancy_limit_shared_mem", "blocks an SM holds at once")],
        "the grid against the SMs: how many blocks the last wave runs while the rest of the GPU waits")


def low_occupancy(p: Profile) -> Finding | None:
    occupancy = p.get("ncu.achieved_occupancy_pct", 100.0)
    if ("ncu.achieved_occupancy_pct" not in p.values or occupancy > LOW_OCCUPANCY_PCT
            or p.get("ncu.dram_throughput_pct") >= DRAM_BOUND_PCT or p.stall_share("long_scoreboard") < STALL_SHARE):
        return None
    limits = {k: p.get(k) for k in ("ncu.occupancy_limit_shared_mem", "ncu.occupancy_limit_registers",
                                    "ncu.occupancy_limit_warps")}
    limiter = min(limits, key=limits.get)
    return _kernel_finding(p, "low_occupancy", 1 - p.get("ncu.dram_throughput_pct") / 80, [
        _ev(p, "ncu.achieved_occupancy_pct", f"{LOW_OCCUPANCY_PCT:g}% of the warps an SM holds or fewer"),
        _ev(p, limiter, "the limit that sets it"),
        _ev(p, "ncu.dram_throughput_pct", "DRAM far from its bandwidth while the warps wait on loads")],
        "the kernel's launch: its block size, registers and shared memory against what an SM holds")


def l2_misses(p: Profile) -> Finding | None:
    requested = 32 * (p.get("ncu.global_load_sectors") + p.get("ncu.global_store_sectors"))
    dram = p.get("ncu.dram_bytes")
    # A stream reads each byte once and misses by nature: only data read again is L2's to keep.
    if ("ncu.l2_hit_rate_pct" not in p.values or p.get("ncu.l2_hit_rate_pct") > LOW_HIT_PCT
            or p.get("ncu.dram_throughput_pct") < 50 or dram <= 0 or requested < REREAD * dram):
        return None
    return _kernel_finding(p, "l2_misses", 1 - p.get("ncu.l2_hit_rate_pct") / 100, [
        _ev(p, "ncu.l2_hit_rate_pct", f"L2 finds {LOW_HIT_PCT:g}% of what the SMs ask for or less"),
        Evidence("ncu.requested_over_dram", requested / dram, f"the SMs ask for {REREAD:g} times the bytes DRAM "
                 "moves or more: data read again, which L2 could have kept"),
        _ev(p, "ncu.dram_throughput_pct", "DRAM busy")],
        "the order in which the grid's blocks walk the data: what two blocks in flight share",
        refines="global_memory_traffic")


def inter_sm_traffic(p: Profile) -> Finding | None:
    share = p.get("kernels.category.reduction.share")
    low, high = SPLIT_REDUCTION
    if not low <= share <= high or p.get("kernels.per_iter") > 10:
        return None
    return _finding(p, "inter_sm_traffic", p.get("kernels.category.reduction.us_per_iter"), [
        _ev(p, "kernels.category.reduction.share", f"{low:.0%}-{high:.0%} of the GPU's time in reduction kernels"),
        _ev(p, "kernels.per_iter", "beside the few kernels whose partial results they sum")],
        f"the reduction kernel ({p.top_kernel('reduction')}) after each kernel that writes partials")


# -- across GPUs, and the compiler and allocator ----------------------------------------------------------------


def _comm_kernels(p: Profile, p2p: bool) -> float:
    return sum(k.get("share", 0.0) or 0.0 for k in p.kernels if k.get("category") == "comm"
               and ("SendRecv" in k.get("name", "")) == p2p)


def collective_communication(p: Profile) -> Finding | None:
    share = p.get("kernels.category.comm.share")
    if share < SHARE or _comm_kernels(p, p2p=True) >= _comm_kernels(p, p2p=False):
        return None
    return _finding(p, "collective_communication", p.get("kernels.category.comm.us_per_iter"), [
        _ev(p, "kernels.category.comm.share", f"{SHARE:.0%} of the GPU's time or more in NCCL's kernels"),
        _ev(p, "comm.kernels_per_iter", "collectives a call"),
        _ev(p, "comm.bus_gbps", "their bus rate, against the link's (comm.link_peak_gbps)")],
        "NCCL's kernels on the GPU row: how many, how long each, and what they move")


def pipeline_bubbles(p: Profile) -> Finding | None:
    if p.get("kernels.category.comm.share") < SHARE or _comm_kernels(p, p2p=True) < _comm_kernels(p, p2p=False):
        return None
    return _finding(p, "pipeline_bubbles", p.get("kernels.category.comm.us_per_iter"), [
        _ev(p, "kernels.category.comm.share", f"{SHARE:.0%} of the GPU's time or more in NCCL's send/receive"),
        _ev(p, "rank1.kernels.category.comm.share", "on the other rank too"),
        _ev(p, "comm.link_peak_share", "of the link's rate while they run: they wait, not move")],
        "each rank's receives on the GPU row: what the rank would compute while it waits for the other stage",
        refines="collective_communication")


def load_imbalance(p: Profile) -> Finding | None:
    mine, theirs = p.get("kernels.category.gemm.us_per_iter"), p.get("rank1.kernels.category.gemm.us_per_iter")
    if not p.has("rank1.") or min(mine, theirs) <= 0 or max(mine, theirs) / min(mine, theirs) < IMBALANCE:
        return None
    return _finding(p, "load_imbalance", abs(mine - theirs), [
        _ev(p, "kernels.category.gemm.us_per_iter", "rank 0's matmul time a call"),
        _ev(p, "rank1.kernels.category.gemm.us_per_iter", f"rank 1's: one {IMBALANCE:g} times the other or more")],
        "both ranks' GPU rows side by side: the one that computes while the other waits in a collective")


def recompilation(p: Profile) -> Finding | None:
    recompiles = p.get("compile.recompiles")
    if recompiles < 1:
        return None
    abandoned = p.get("compile.recompile_limit_hits") > 0
    share = 1.0 if abandoned else min(RECOMPILES_AT_MOST, RECOMPILE_SHARE * recompiles)
    return Finding("recompilation", share, "every call past the limit runs uncompiled" if abandoned else
                   "seconds a recompile, outside the profiled calls", [
                       _ev(p, "compile.recompiles", "compiles again for new shapes or guards"),
                       _ev(p, "compile.recompile_limit_hits", "frames that hit the limit and run eagerly since")],
                   "TORCH_LOGS=recompiles: which guard failed, and for what shape")


def graph_pools(p: Profile) -> Finding | None:
    pool, reserved = p.get("memory.graph_pool_mb"), p.get("memory.reserved_mb")
    if p.get("graphs.captured") < 8 or reserved <= 0 or pool < 0.3 * reserved:
        return None
    return Finding("graph_pools", pool / reserved, f"{pool:.0f} MB of {reserved:.0f} MB reserved "
                   f"({pool / reserved:.0%})", [
                       _ev(p, "graphs.captured", "8 graphs or more"),
                       _ev(p, "memory.graph_pool_mb", "30% of the reserve or more in their private pools")],
                   "the graphs captured per shape, and the pool each keeps", memory=True)


def memory_fragmentation(p: Profile) -> Finding | None:
    alloc_us, window = p.get("host.alloc_us_per_iter"), p.get("host.window_us_per_iter")
    segments = p.get("allocator.segment_allocs_per_iter")
    if window > 0 and alloc_us >= 0.1 * window:
        return _finding(p, "memory_fragmentation", alloc_us, [
            _ev(p, "host.alloc_us_per_iter", "10% of the host's window or more in cudaMalloc and cudaFree"),
            _ev(p, "allocator.segment_allocs_per_iter", "segments the caching allocator asks CUDA for a call")],
            "cudaMalloc and cudaFree on the host row, and the allocator's segments in the memory profile")
    frag, reserved = p.get("allocator.fragmentation_mb"), p.get("allocator.reserved_mb")
    if segments >= 1 or (reserved > 0 and frag >= 0.3 * reserved):
        share = max(frag / reserved if reserved else 0.0, min(1.0, segments / 10))
        return Finding("memory_fragmentation", share, f"{segments:g} segments a call from CUDA, {frag:.0f} MB "
                       "reserved past what tensors use", [
                           _ev(p, "allocator.segment_allocs_per_iter", "a warm caching allocator asks for none"),
                           _ev(p, "allocator.fragmentation_mb", "reserved and unused")],
                       "the memory profile's segments: which sizes leave blocks no later request fits", memory=True)
    return None


RULES: list[Callable[[Profile], Finding | None]] = [
    cpu_overhead, launch_overhead, host_sync, h2d_d2h_copy, batching_policy, global_memory_traffic,
    dequantization_overhead, tensor_cores_idle, register_spills, atomics_contention, bank_conflicts,
    uncoalesced_access, warp_divergence, wave_tile_quantization, low_occupancy, l2_misses, inter_sm_traffic,
    collective_communication, pipeline_bubbles, load_imbalance, recompilation, graph_pools, memory_fragmentation,
]
