"""Every profiler the tutor drives, one record each, read by the CLI, the TUI and tutor.actions alike.

A record says what the profiler is called and gives, how to tell whether its tool is here, how a
profile is taken (tutor.profilers.capture), how a learner opens what it wrote, what of a baseline's profile
a puzzle ships in recordings/ for study mode, and whether it explains a kernel ([kernel_evidence]). Adding
a profiler is one record here, its capture function and its parser.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from tutor.errors import EnvironmentProblem, TutorError
from tutor.profilers import capture, ncu, nsys_run, ptxas
from tutor.profilers.openers import Opener
from tutor.protocol import NVTX_ITER_RANGE, NVTX_KERNELS_RANGE, TORCH_ITER_RANGE

if TYPE_CHECKING:
    from tutor.catalog import Puzzle
    from tutor.machine import Machine
    from tutor.metrics import ProfileMetrics

PERFETTO_SCRIPT = "https://github.com/google/perfetto/raw/main/tools/open_trace_in_ui"


def _metrics_json(path: Path) -> ProfileMetrics:
    from tutor.metrics import ProfileMetrics

    return ProfileMetrics.from_json(path.read_text())


@dataclass(frozen=True)
class Recording:
    """What of a profile of its baseline a puzzle ships in recordings/, made on a GPU (benchmarks/measure_draft.py)."""
    name: str  # in recordings/
    kept: str  # the file of the profile's run folder it is a copy of
    read: Callable[[Path], ProfileMetrics] = _metrics_json
    opened: str = ""  # what study mode hands the learner to open, in recordings/ ("": the recording itself)
    opener: Opener | None = None  # how that file opens, where not in the profiler's own viewer


@dataclass(frozen=True)
class Profiler:
    id: str  # puzzle.toml `profilers`, `profile --profiler`
    name: str  # in the learner's words
    gives: str
    opener: Opener
    capture: Callable  # (request, run_dir, puzzle, on_event, register) -> (ProfileMetrics, the file to open)
    find_tool: Callable[[Machine | None], object]  # raises EnvironmentProblem (what is missing, how to get it)
    # What a profile's headline shows: empty for the timeline's figures per forward() (by device, the
    # faces choose); else these metrics, which describe `subject`.
    headline: tuple[str, ...] = ()
    subject: str = "per forward()"
    runs_workload: bool = True  # False: it reads the source alone, so it needs no GPU (ptxas)
    # The names of the metrics it alone gives; "" where they are the timeline's, which torch gives too.
    metric_prefix: str = ""
    recording: Recording | None = None  # None: study mode ships no recording of it
    explains_kernels: bool = False  # a [kernel_evidence] table cites its metrics (one profiler does)

    def problem(self, machine: Machine | None = None) -> EnvironmentProblem | None:
        """Why this profiler cannot run here, or None."""
        try:
            self.find_tool(machine)
        except EnvironmentProblem as e:
            return e
        return None


def _torch_installed(machine: Machine | None) -> None:
    if machine is not None and not machine.torch_installed:
        raise EnvironmentProblem("PyTorch is not installed in the tutor's environment.", "Reinstall with `make run`.")


def _cuda_torch(machine: Machine | None) -> None:
    """The allocator's history exists only in a CUDA build of torch (a CPU puzzle never lists this profiler)."""
    _torch_installed(machine)
    if machine is not None and machine.torch_cuda is None:
        raise EnvironmentProblem("The memory profiler reads the CUDA allocator, and this PyTorch is a CPU-only build.",
                                 "Install a CUDA build of torch (README: 'Using a GPU machine').")


PROFILERS: dict[str, Profiler] = {p.id: p for p in (
    Profiler(
        "torch", "the PyTorch profiler", "metrics, kernels and a trace for Perfetto",
        Opener("trace", "PyTorch profiler, Chrome JSON", "Perfetto",
               f"curl -sL {PERFETTO_SCRIPT} | python3 - -i {{path}}",
               "with Perfetto's own script",
               "in a browser: https://ui.perfetto.dev → Open trace file",
               "on a remote machine add -n and forward the port: ssh -L 9001:127.0.0.1:9001 HOST",
               (f"each forward() sits in an {TORCH_ITER_RANGE} range: the metrics count only what is inside them",
                "gaps between kernels on the GPU rows are idle time; the host rows above them say why")),
        capture.torch_profile, _torch_installed,
        recording=Recording("baseline_metrics.json", "metrics.json", opened="baseline_trace.json.gz")),
    Profiler(
        "ncu", "Nsight Compute",
        "each kernel's speed of light, occupancy and stall reasons; a report for ncu-ui",
        Opener("report", "Nsight Compute, .ncu-rep", "Nsight Compute", "ncu-ui {path}",
               "in Nsight Compute's GUI",
               "in Nsight Compute: File → Open File",
               "on a remote machine, copy the report to one with Nsight Compute: scp HOST:<path> .",
               (f"one result per kernel launch inside the harness's {NVTX_KERNELS_RANGE} range (one forward())",
                "Details → GPU Speed Of Light: how close the kernel comes to the compute or the memory peak",
                "Occupancy and Launch Statistics: what limits the warps per SM (registers, shared memory, block)",
                "Warp State Statistics: the stall reasons say what the warps wait on")),
        capture.ncu_profile, lambda machine: ncu.find_usable_ncu(),
        headline=("ncu.duration_us", "ncu.sm_throughput_pct", "ncu.memory_throughput_pct",
                  "ncu.achieved_occupancy_pct", "ncu.registers_per_thread"),
        subject="top kernel (most GPU time)", metric_prefix="ncu.",
        recording=Recording(
            "baseline_ncu.csv", "ncu.csv", ncu.extract,
            # Study mode ships ncu's raw page as CSV, not its report: nothing for ncu-ui to open.
            opener=Opener("page", "Nsight Compute's raw page of the recorded report, CSV", "the terminal",
                          "column -s, -t < {path} | less -S", "as columns",
                          "the Kernels tab reads it; any spreadsheet opens the CSV",
                          "on a remote machine, copy the CSV here first (scp HOST:<path> .)",
                          ("one row per profiled kernel, one column per metric the report collected",))),
        explains_kernels=True),
    Profiler(
        "nsys", "Nsight Systems",
        "a timeline of kernels, copies, CUDA API calls and NVTX ranges; a report for nsys-ui",
        Opener("report", "Nsight Systems, .nsys-rep", "Nsight Systems", "nsys-ui {path}",
               "in Nsight Systems' GUI",
               "in Nsight Systems: File → Open",
               "on a remote machine, copy the report to one with Nsight Systems: scp HOST:<path> .",
               (f"the NVTX rows: each forward() sits in an {NVTX_ITER_RANGE} range inside {NVTX_KERNELS_RANGE}",
                "gaps on the CUDA HW rows are idle GPU time; the CUDA API and OS runtime rows say why")),
        capture.nsys_profile, lambda machine: nsys_run.find_nsys()),
    Profiler(
        "memory", "PyTorch's memory snapshot",
        "the CUDA allocator's history: peaks per phase, allocation sites, graph pools; a snapshot for "
        "PyTorch's memory viewer",
        Opener("snapshot", "CUDA allocator snapshot, pickle", "PyTorch's memory viewer",
               "python -m torch.cuda._memory_viz trace_plot -o memory.html {path}",
               "as a page: the command writes memory.html, which opens in any browser",
               "in a browser: https://pytorch.org/memory_viz → drag the snapshot onto the page",
               "on a remote machine, copy the snapshot here first (scp HOST:<path> .): the viewer runs in your browser",
               ("Active Memory Timeline: one band per live allocation, over the recorded events; hover a band for "
                "the stack that made it",
                "prepare, warm-up and the profiled calls follow each other: a band that appears and vanishes in "
                "every call is memory allocated per call (a weight dequantised, an activation)",
                "Allocator State History: the segments, and which CUDA graph pool holds each")),
        capture.memory_profile, _cuda_torch,
        headline=("allocator.allocated_mb_per_iter", "allocator.allocs_per_iter", "allocator.warmup.peak_allocated_mb",
                  "allocator.iterations.peak_allocated_mb", "allocator.graph_pool_mb"),
        subject="the allocator, over prepare, warm-up and the profiled calls", metric_prefix="allocator.",
        recording=Recording(
            "baseline_memory_metrics.json", "metrics.json",
            # The snapshot itself is the learner's own profile's: study mode ships the figures read from it.
            opener=Opener("figures", "the allocator's figures read from the recorded snapshot, JSON", "the terminal",
                          "python3 -m json.tool {path} | less", "page by page",
                          "the metrics above are all of it; the snapshot for PyTorch's memory viewer comes from "
                          "a memory profile on your own GPU",
                          "on a remote machine: cat it over ssh (ssh HOST cat <path>)",
                          ("every figure of the table, each with its meaning: the same names answer.toml cites",
                           "the phases (prepare, warm-up, the profiled calls) each have their own peaks")))),
    Profiler(
        "ptxas", "ptxas (nvcc -Xptxas -v)",
        "each kernel's registers, spill bytes and stack frame, from the compiler alone: no GPU needed",
        Opener("report", "ptxas's account per kernel, JSON", "a text viewer", "less {path}",
               "in the terminal",
               "in any editor",
               "on a remote machine: cat it over ssh (ssh HOST cat <path>)",
               ("registers: what each thread of the kernel holds (a launch bound can cap it)",
                "spill stores and loads: bytes per thread sent to local memory (DRAM behind L1) because registers "
                "ran out; 0 is the goal",
                "stack frame: per-thread local memory, spills and local arrays together")),
        capture.ptxas_report, lambda machine: ptxas.find_nvcc(),
        headline=("ptxas.spill_store_bytes", "ptxas.spill_load_bytes", "ptxas.max_registers",
                  "ptxas.max_stack_frame_bytes"),
        subject="the kernel source, compiled for sm_90", runs_workload=False, metric_prefix="ptxas."),
)}


# The timeline's profiler: every puzzle lists it, `profile` runs it unless told otherwise, and its metrics (the
# timeline's, kernels.*, gpu.*, ...) carry no prefix of their own.
TIMELINE = next(p.id for p in PROFILERS.values() if not p.metric_prefix and p.recording)


def profiler_giving(metric: str) -> str:
    """The profiler a metric comes from: the one whose own names it carries, else the timeline's."""
    return next((p.id for p in PROFILERS.values() if p.metric_prefix and metric.startswith(p.metric_prefix)),
                TIMELINE)


RECORDABLE = [p.id for p in PROFILERS.values() if p.recording]  # what study mode may open
KERNEL_PROFILER = next(p for p in PROFILERS.values() if p.explains_kernels)


def recording_path(puzzle: Puzzle, profiler_id: str) -> Path:
    """Where `puzzle` ships its baseline's recording of this profiler for study mode (a GPU's: a CPU puzzle's
    own profile, tutor.catalog.RECORDED_BASELINE, is for `dev check` alone)."""
    return puzzle.recordings_dir / PROFILERS[profiler_id].recording.name


def get_profiler(profiler_id: str) -> Profiler:
    try:
        return PROFILERS[profiler_id]
    except KeyError:
        raise TutorError(f"infprof-tutor has no profiler called {profiler_id!r}.",
                         f"Choose one of: {', '.join(PROFILERS)}.") from None


def profiler_name(profiler_id: str) -> str:
    """The profiler's name in the learner's words (its id when unknown, e.g. in an old record)."""
    return PROFILERS[profiler_id].name if profiler_id in PROFILERS else profiler_id


def opener_for(profiler_id: str, recorded: bool = False) -> Opener:
    """The profiler's opener (its recording's, for a file study mode handed out, where that differs); an unknown
    profiler's file is treated as a Chrome trace (torch's)."""
    profiler = PROFILERS.get(profiler_id, PROFILERS["torch"])
    if recorded and profiler.recording and profiler.recording.opener:
        return profiler.recording.opener
    return profiler.opener
