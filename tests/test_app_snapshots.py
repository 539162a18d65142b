"""SVG snapshots of the main screens (pytest-textual-snapshot), every one at 80x24, some at 120x36 too.

Deterministic by construction: HOME is the test's tmp folder (paths read ~/ws),
the machine is stated (no GPU), the theme is fixed, attempts and profiles are
seeded with fixed numbers, and nothing shows a time of day.
Update after an intended change: pytest tests/test_app_snapshots.py --snapshot-update
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tutor.app.app import InfprofApp
from tutor.app.messages import HarnessEvent, RunFinished
from tutor.app.runs import GRADE
from tutor.app.screens.puzzle import PuzzleScreen
from tutor.app.screens.results import ResultsScreen
from tutor.app.widgets.run_panel import RunPanel
from tutor.machine import Machine
from tutor.metrics import ProfileMetrics
from tutor.progress import Progress
from tutor.runner import RunFailed
from tutor.workspace import init_workspace

# The app starts and shows its own warm harness: every run of these cold, whatever the session's --warm.
pytestmark = pytest.mark.usefixtures("cold_runs")

CPU_ONLY = Machine(nvidia_driver=False, gpu_count=0, torch_installed=True, torch_cuda=None)
SMALL, LARGE = (80, 24), (120, 36)

# Figures from the H100 fixture traces (tests/fixtures/h2d_sync, graph_replay), rounded and
# fixed here so these pictures do not move when the trace reader changes.
H100_BASELINE = ProfileMetrics(device="cuda", values={
    "iterations": 4.0, "cpu.time_per_iter_us": 513.8, "cpu.ops_per_iter": 9.0, "cpu.allocs_per_iter": 11.0,
    "kernels.per_iter": 7.0, "gpu.time_per_iter_us": 33.23, "gpu.busy_fraction": 0.1007,
    "gpu.idle_us_per_iter": 615.9, "launch.api_us_per_iter": 72.48, "sync.calls_per_iter": 2.0,
    "graphs.replays_per_iter": 0.0, "launch.latency_us_median": 10.78, "memory.peak_reserved_mb": 1536.0,
    "kernels.category.memcpy.share": 0.5078, "kernels.category.memcpy.us_per_iter": 35.02,
    "kernels.category.gemm.share": 0.2913, "kernels.category.gemm.us_per_iter": 20.09,
    "kernels.category.elementwise.share": 0.1115, "kernels.category.elementwise.us_per_iter": 7.688,
    "kernels.category.reduction.share": 0.0791, "kernels.category.reduction.us_per_iter": 5.456,
    "kernels.category.memset.share": 0.0103, "kernels.category.memset.us_per_iter": 0.712,
    "memcpy.h2d_bytes_per_iter": 1572864.0, "memcpy.pageable_per_iter": 1.0,
}, kernels=[
    {"name": "Memcpy HtoD (Pageable -> Device)", "category": "memcpy", "count": 4, "total_us": 86.11,
     "mean_us": 21.53, "share": 0.312},
    {"name": "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_",
     "category": "gemm", "count": 4, "total_us": 67.78, "mean_us": 16.94, "share": 0.246},
    {"name": "Memcpy HtoD (Pinned -> Device)", "category": "memcpy", "count": 4, "total_us": 48.42,
     "mean_us": 12.10, "share": 0.175},
    {"name": "at::native::reduce_kernel", "category": "reduction", "count": 4, "total_us": 21.82,
     "mean_us": 5.46, "share": 0.079},
    {"name": "at::native::unrolled_elementwise_kernel", "category": "elementwise", "count": 4,
     "total_us": 12.00, "mean_us": 3.00, "share": 0.044},
    {"name": "Memset (Device)", "category": "memset", "count": 4, "total_us": 2.85, "mean_us": 0.71,
     "share": 0.010},
])
H100_MINE = ProfileMetrics(device="cuda", values={
    "iterations": 4.0, "cpu.time_per_iter_us": 43.94, "cpu.ops_per_iter": 0.0, "cpu.allocs_per_iter": 0.0,
    "kernels.per_iter": 4.0, "gpu.time_per_iter_us": 33.47, "gpu.busy_fraction": 0.3393,
    "gpu.idle_us_per_iter": 65.16, "launch.api_us_per_iter": 21.29, "sync.calls_per_iter": 0.0,
    "graphs.replays_per_iter": 1.0, "launch.latency_us_median": 15.45, "memory.peak_reserved_mb": 1024.0,
    "kernels.category.gemm.share": 0.9541, "kernels.category.gemm.us_per_iter": 31.93,
    "kernels.category.elementwise.share": 0.0459, "kernels.category.elementwise.us_per_iter": 1.536,
}, kernels=[
    {"name": "cutlass::Kernel2", "category": "gemm", "count": 4, "total_us": 69.73, "mean_us": 17.43, "share": 0.521},
])

# Nsight Compute's view of puzzle1's baseline on the H100 (challenges/puzzle1/recordings/baseline_ncu.csv), rounded.
NCU_KERNEL_ROWS = [  # name, total µs, share, SM %, memory %, achieved occupancy %, registers per thread
    ("at::elementwise_kernel", 445.8, 0.349, 49.2, 63.0, 83.9, 18),
    ("at::unrolled_elementwise_kernel", 430.5, 0.337, 68.5, 34.7, 91.9, 32),
    ("at::vectorized_elementwise_kernel", 241.5, 0.189, 6.7, 82.5, 82.6, 32),
    ("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_TNT", 128.1, 0.100, 7.2, 65.3, 14.6, 168),
    ("cublasLt::splitKreduce_kernel", 33.1, 0.026, 3.6, 7.8, 10.7, 32),
]
H100_NCU_BASELINE = ProfileMetrics(device="cuda", profiler="ncu", values={
    "ncu.kernels_profiled": 40.0, "ncu.total_us": 1279.0, "ncu.duration_us": 55.72, "ncu.sm_throughput_pct": 49.22,
    "ncu.memory_throughput_pct": 63.0, "ncu.dram_gbps": 2111.6, "ncu.dram_bytes": 117909007.8,
    "ncu.achieved_occupancy_pct": 83.85, "ncu.theoretical_occupancy_pct": 100.0, "ncu.registers_per_thread": 18.0,
    "ncu.waves_per_sm": 31.03, "ncu.stall.long_scoreboard": 20.37,
}, kernels=[
    {"name": name, "count": 8, "total_us": total, "mean_us": total / 8, "share": share, "sm_throughput_pct": sm,
     "memory_throughput_pct": mem, "achieved_occupancy_pct": occupancy, "registers_per_thread": regs}
    for name, total, share, sm, mem, occupancy, regs in NCU_KERNEL_ROWS])


def verdict(speedup: float, low: float, mine_ms: float, diagnosed: bool, tier: str) -> dict:
    perf = [f"mine: median {mine_ms:.4g} ms over 15 rounds", "baseline: median 78.1 ms over 15 rounds",
            f"bronze: >= 5x vs baseline: you are {speedup:.2f}x (95% CI {low:.2f}-{speedup * 1.04:.2f}), "
            + ("met" if low >= 5 else "not met")]
    criteria = [
        {"name": "correctness", "passed": True, "summary": "Output matches baseline on 3 fresh inputs.",
         "details": ["input 1: relative L2 error 1.21e-07, ok", "input 2: relative L2 error 1.19e-07, ok"]},
        {"name": "diagnosis", "passed": diagnosed,
         "summary": "Right bottleneck, backed by your profile." if diagnosed else "answer.toml names no bottleneck.",
         "details": ["bottleneck 'cpu_overhead': right."] if diagnosed else []},
        {"name": "performance", "passed": bool(tier),
         "summary": f"Tier reached: {tier}." if tier else
         "Not yet 5x faster than baseline (the lower bound of the 95% interval counts).", "details": perf},
    ]
    passed = diagnosed and bool(tier)
    return {"puzzle": "puzzle0", "criteria": criteria, "tier": tier if tier else "",
            "speedups": {"baseline": {"median": speedup, "low": low, "high": speedup * 1.04, "n": 15}},
            "timings_ms": {"mine": mine_ms, "baseline": 78.1},
            "next_hint": "" if passed else "A hint is available: infprof-tutor hint puzzle0", "passed": passed}


ATTEMPTS = [(1.0, 0.94, 78.0, False, ""), (1.1, 1.02, 71.0, False, ""), (4.2, 3.9, 18.6, True, ""),
            (12.0, 11.1, 6.5, True, "bronze"), (53.0, 50.0, 1.47, True, "gold")]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("EDITOR", raising=False)
    return tmp_path


@pytest.fixture
def ws(home):
    return init_workspace(home / "ws")


def seed_attempts(ws, crashed_last: bool = False) -> None:
    progress = Progress(ws.db_path)
    for speedup, low, ms, diagnosed, tier in ATTEMPTS:
        progress.record_attempt("puzzle0", "c0de", diagnosed and bool(tier), tier, speedup, low,
                                verdict(speedup, low, ms, diagnosed, tier), ws.runs_dir / "grade")
    if crashed_last:
        progress.record_attempt("puzzle0", "c0df", False, "", None, None,
                                {"error": "crashed", "message": "The workload process crashed with SIGSEGV."},
                                ws.runs_dir / "grade")


def seed_gpu_profiles(ws, ncu: bool = False) -> None:
    """puzzle1's torch profiles (baseline and mine); with `ncu`, then an Nsight Compute baseline (the newest)."""
    progress = Progress(ws.db_path)
    profiles = [("baseline", H100_BASELINE, "trace.json"), ("mine", H100_MINE, "trace.json")]
    if ncu:
        profiles.append(("baseline", H100_NCU_BASELINE, "profile.ncu-rep"))
    for i, (which, metrics, name) in enumerate(profiles):
        path = ws.runs_dir / f"20250101-12000{i}-puzzle1-profile-{which}-0000" / name
        path.parent.mkdir(parents=True)
        path.write_text("{}")
        progress.record_profile("puzzle1", which, "c0de", metrics, path, path.parent)


def app_for(ws, theme: str = "textual-dark") -> InfprofApp:
    app = InfprofApp(ws, machine=CPU_ONLY)
    app.theme = theme
    return app


async def settle(pilot) -> None:
    """Let workers (db reads) finish and their results reach the screen."""
    for _ in range(2):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def open_screen(screen_factory, *keys: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.push_screen(screen_factory(pilot.app))
        await settle(pilot)
        if keys:
            await pilot.press(*keys)
            await settle(pilot)
    return run_before


def needs_puzzle1(ws) -> None:
    if "puzzle1" not in InfprofApp(ws).puzzles:
        pytest.skip("no CUDA puzzle in the catalog")


# -- the browser ---------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_browser(snap_compare, ws, size):
    seed_attempts(ws)
    assert snap_compare(app_for(ws), terminal_size=size, run_before=settle)


def test_browser_on_a_gpu_puzzle_says_why_it_cannot_run(snap_compare, ws):
    needs_puzzle1(ws)
    assert snap_compare(app_for(ws), terminal_size=SMALL, run_before=settle, press=["down"])


def test_browser_in_a_light_theme(snap_compare, ws):
    """Every colour comes from the theme's variables: a light theme needs no styles of its own."""
    seed_attempts(ws)
    assert snap_compare(app_for(ws, theme="textual-light"), terminal_size=SMALL, run_before=settle)


# -- a puzzle --------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_puzzle_fresh(snap_compare, ws, size):
    assert snap_compare(app_for(ws), terminal_size=size,
                        run_before=open_screen(lambda app: PuzzleScreen(app.puzzles["puzzle0"])))


def test_puzzle_after_a_gold_grade(snap_compare, ws):
    seed_attempts(ws)
    assert snap_compare(app_for(ws), terminal_size=LARGE,
                        run_before=open_screen(lambda app: PuzzleScreen(app.puzzles["puzzle0"])))


def test_puzzle_while_grading(snap_compare, ws):
    async def run_before(pilot) -> None:
        await open_screen(lambda app: PuzzleScreen(app.puzzles["puzzle0"]))(pilot)
        screen = pilot.app.screen
        screen.running = GRADE  # a run shown as it streams, without a subprocess behind it
        panel = screen.query_one(RunPanel)
        panel.start(GRADE)
        for event in ({"type": "stage", "stage": "starting", "detail": "starting the workload process"},
                      {"type": "stage", "stage": "importing", "detail": "torch"},
                      {"type": "stage", "stage": "warmup", "detail": "compiling and warming up"},
                      {"type": "stage", "stage": "checking", "detail": "mine against baseline"},
                      {"type": "stage", "stage": "timing", "detail": "15 interleaved rounds"},
                      {"type": "progress", "stage": "timing", "done": 7, "total": 15}):
            screen.post_message(HarnessEvent(event))
        await pilot.pause()
        panel._timer.pause()
        panel.border_subtitle = "3 s · c cancels"

    assert snap_compare(app_for(ws), terminal_size=SMALL, run_before=run_before)


def test_puzzle_problem_panel(snap_compare, ws):
    async def run_before(pilot) -> None:
        await open_screen(lambda app: PuzzleScreen(app.puzzles["puzzle0"]))(pilot)
        tail = ("Traceback (most recent call last):\n  File \"workload.py\", line 12, in forward\n"
                "    while True: pass\nKeyboardInterrupt\n")
        error = RunFailed("timeout", "The workload did not finish within 300 s and was stopped.", tail)
        pilot.app.screen.post_message(RunFinished("grade", error=error))
        await pilot.pause()

    assert snap_compare(app_for(ws), terminal_size=SMALL, run_before=run_before)


def test_output_tail(snap_compare, ws):
    async def run_before(pilot) -> None:
        await open_screen(lambda app: PuzzleScreen(app.puzzles["puzzle0"]))(pilot)
        tail = "".join(f"step {i}: loss 0.{i:03d}\n" for i in range(30)) + (
            "Traceback (most recent call last):\n  File \"workload.py\", line 31, in forward\n"
            "    return torch.stack(rows)\nRuntimeError: stack expects a non-empty TensorList\n")
        error = RunFailed("workload_error", "forward() raised RuntimeError in your workload.", tail)
        pilot.app.screen.post_message(RunFinished("grade", error=error))
        await pilot.pause()
        await pilot.press("o")
        await settle(pilot)

    assert snap_compare(app_for(ws), terminal_size=SMALL, run_before=run_before)


# -- results ---------------------------------------------------------------------------------------


def test_results_verdict(snap_compare, ws):
    seed_attempts(ws)
    assert snap_compare(app_for(ws), terminal_size=SMALL,
                        run_before=open_screen(lambda app: ResultsScreen(app.puzzles["puzzle0"])))


def test_results_history(snap_compare, ws):
    seed_attempts(ws, crashed_last=True)
    assert snap_compare(app_for(ws), terminal_size=SMALL,
                        run_before=open_screen(lambda app: ResultsScreen(app.puzzles["puzzle0"], "history")))


@pytest.mark.parametrize("tab, size", [("kernels", SMALL), ("metrics", SMALL), ("metrics", LARGE),
                                       ("compare", SMALL), ("trace", SMALL)],
                         ids=["kernels-80x24", "metrics-80x24", "metrics-120x36", "compare-80x24", "trace-80x24"])
def test_results_of_gpu_profiles(snap_compare, ws, tab, size):
    needs_puzzle1(ws)
    seed_gpu_profiles(ws)
    assert snap_compare(app_for(ws), terminal_size=size,
                        run_before=open_screen(lambda app: ResultsScreen(app.puzzles["puzzle1"], tab)))


@pytest.mark.parametrize("tab", ["kernels", "trace"])
def test_results_of_an_nsight_compute_profile(snap_compare, ws, tab):
    needs_puzzle1(ws)
    seed_gpu_profiles(ws, ncu=True)
    assert snap_compare(app_for(ws), terminal_size=SMALL,
                        run_before=open_screen(lambda app: ResultsScreen(app.puzzles["puzzle1"], tab)))


# -- help and set-up --------------------------------------------------------------------------------


def test_help_on_a_puzzle(snap_compare, ws):
    async def run_before(pilot) -> None:
        await open_screen(lambda app: PuzzleScreen(app.puzzles["puzzle0"]))(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(app_for(ws), terminal_size=SMALL, run_before=run_before)


def test_taxonomy(snap_compare, ws):
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.action_taxonomy()
        await settle(pilot)

    assert snap_compare(app_for(ws), terminal_size=SMALL, run_before=run_before)


def test_workspace_setup(snap_compare, home):
    app = InfprofApp(None, machine=CPU_ONLY, new_workspace_dir=Path(home) / "infprof-workspace")
    app.theme = "textual-dark"
    assert snap_compare(app, terminal_size=SMALL, run_before=settle)


def test_the_readme_screenshot_is_the_current_snapshot():
    """docs/screenshots/puzzle.svg is a copy of a snapshot this file checks, so the README shows the real app."""
    root = Path(__file__).parent.parent
    snapshot = Path(__file__).parent / "__snapshots__" / "test_app_snapshots" / "test_puzzle_after_a_gold_grade.svg"
    assert (root / "docs" / "screenshots" / "puzzle.svg").read_bytes() == snapshot.read_bytes(), (
        "copy the updated snapshot to docs/screenshots/puzzle.svg")
