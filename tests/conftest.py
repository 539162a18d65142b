"""Shared fixtures: an isolated config dir and workspace, and a factory for throwaway workloads."""

from __future__ import annotations

import contextlib
import functools
import os
import textwrap
import weakref
from pathlib import Path

import pytest

# One thread a process for every process the tests start too (a sweep, a workload, a rank): torch's default of a
# thread a core put two threads beside each of make test's two processes a core, and each ran slower for it.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# And no pool of compile processes for a torch.compile (Inductor starts one a core, each importing torch and
# Inductor: 3 core-seconds more for puzzle0's compiled alternative's grade, beside make test's processes).
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")


@functools.cache
def has_cuda() -> bool:
    """Whether GPU tests can run here. torch is imported at the first ask, by a process that collects tests: the
    xdist controller, which runs none, never imports it (2 s of CPU here, before its test processes start)."""
    try:
        import torch
    except ImportError:
        return False
    # One thread a test process: make test runs more processes than cores, and the tests' own torch work (a scene
    # decoded on the CPU) ran two threads each beside them. The harness's runs set their own.
    torch.set_num_threads(1)
    # device_count asks NVML; is_available asks the CUDA driver, after which a forked child can never use CUDA
    # (torch poisons fork), and the rank-group tests fork their ranks from this process.
    return torch.cuda.device_count() > 0


def recording(puzzle: str, name: str) -> Path:
    """A baseline profile recorded on the puzzle's card and shipped in its folder (metrics.json, trace.json.gz,
    ncu.csv; recorded_on.txt names the card where it is not the H100)."""
    return Path(__file__).parent.parent / "challenges" / puzzle / "recordings" / f"baseline_{name}"


def reference_ncu(puzzle: str) -> Path:
    """A kernel puzzle's reference under Nsight Compute (a learner's fixed kernel, for its CPU tests), as recorded
    on a Hopper card (its Device column names which)."""
    return Path(__file__).parent / "fixtures" / f"{puzzle}_reference_ncu.csv"


def puzzle_file(puzzle, relative: str, sizes: dict | None = None):
    """A file of a puzzle's folder as a module of its own, loaded as the harness loads workloads (by path). With
    `sizes`, each size constant the module defines set to it: the same code on a scene the CPU can run."""
    from tutor.harness.loading import load_module

    module = load_module(puzzle.folder / relative, f"{puzzle.id}_{relative.replace('/', '_')}", ())
    for name, value in (sizes or {}).items():
        if hasattr(module, name):
            setattr(module, name, value)
    return module


def resized_copies(puzzle, names: list[str], lines: dict[str, str], folder: Path) -> dict[str, Path]:
    """Copies of a puzzle's files (spec, workloads) in `folder`, each of `lines` (a size line as the file has it)
    replaced by its value: the same code on a scene a CPU runs in a fraction of the time, for a harness run, which
    loads files by path. Every file must hold one of the lines at least, and every line be found in one."""
    paths, found = {}, set()
    for name in names:
        source = (puzzle.folder / name).read_text()
        held = {line for line in lines if line in source}
        assert held, f"{name}: none of its size lines found"
        found |= held
        for line, replaced in lines.items():
            source = source.replace(line, replaced)
        paths[name] = folder / name.replace("/", "_")
        paths[name].write_text(source)
    assert found == set(lines), f"size lines in none of {names}: {set(lines) - found}"
    return paths


# puzzle4's scene at a CPU's sizes, as resized_copies replaces its files' size lines: a quarter of the vocabulary and
# half the width, where the memory still chooses and any other token still trails far behind (at a quarter of the
# width it does not); its bf16 steps at full width, on a CPU without bf16 arithmetic, take seconds a call.
PUZZLE4_NARROW = {
    "VOCAB, HIDDEN, FFN, MEMORY, BATCH, STEPS, PROMPT = 4096, 512, 2048, 256, 16, 96, 8":
        "VOCAB, HIDDEN, FFN, MEMORY, BATCH, STEPS, PROMPT = 1024, 256, 1024, 128, 16, 96, 8",
    "STEPS, EOS, MEMORY, HIDDEN = 96, 0, 256, 512": "STEPS, EOS, MEMORY, HIDDEN = 96, 0, 128, 256",
    "STEPS, EOS, CHUNK, MEMORY, PROMPT, HIDDEN = 96, 0, 8, 256, 8, 512":
        "STEPS, EOS, CHUNK, MEMORY, PROMPT, HIDDEN = 96, 0, 8, 128, 8, 256",
    "STEPS, EOS, CHUNK, MEMORY, HIDDEN = 96, 0, 8, 256, 512": "STEPS, EOS, CHUNK, MEMORY, HIDDEN = 96, 0, 8, 128, 256"}


def kernel_constant(source: str, name: str) -> int:
    """An integer constant a CUDA source sets (`constexpr int T = 32, ...`, `#define`-free), read from the text."""
    import re

    return int(re.search(rf"\b{name} = (\d+)", source).group(1))


def ptxas_kernel(tmp_path, puzzle, relative: str):
    """The one kernel of a workload's KERNEL source as ptxas reports it for sm_90 (registers, spills, stack):
    compiled here with nvcc, run nowhere."""
    from tutor.profilers import ptxas

    source = tmp_path / "kernel.cu"
    source.write_text(puzzle_file(puzzle, relative).KERNEL)
    [kernel] = ptxas.compile_report(source)
    print(relative, kernel)
    return kernel


class VirtualClock:
    """A clock the test moves: called, the time in seconds; wait() and sleep() move it on, never back."""

    def __init__(self, now: float = 0.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)

    sleep = wait


def float32_step(hidden: int):
    """puzzle4's and puzzle8's baseline step with every product in float32 (on weights the caller widened): a
    larger difference than any honest kernel's order of sums makes."""
    import torch

    def step(w: dict, tokens, memory):
        mixed = memory @ w["mix"]
        h = w["embed"][tokens] + mixed[:, :hidden]
        h = h + torch.relu(h @ w["w1"].T) @ w["w2"].T
        return (h @ w["out"].T).argmax(dim=-1), torch.tanh(mixed[:, hidden:] + h @ w["write"])

    return step


def memory_unread(spec, weights: dict) -> dict:
    """puzzle4's or puzzle8's model with the memory's read-back into each step's input cut: what a table of hidden
    states holds."""
    mix = weights["mix"].clone()
    mix[:, :spec.HIDDEN] = 0
    return {**weights, "mix": mix}


@contextlib.contextmanager
def exact_bf16_products():
    """Every bf16 matrix product this process's own torch code asks for on the CPU (@, matmul, mm, addmm, bmm,
    baddbmm, mv, addmv, F.linear) made in float64, where its sums are exact whatever their order, and rounded to bf16.
    torch's own kernel on a CPU without bf16 units (AVX2) sums in float32 and rounds at the end: the same product
    within a rounding step (2 elements of 19200 one apart in a 64x512 by 512x300 product), 2-20 times sooner
    (64x1024 by 1024x1024: 147 ms in torch's own, 14 ms with the second transposed, 6.5 ms so). Caught where the code
    calls them (a TorchFunctionMode), so a product autocast lowers to bf16 stays torch's own."""
    import torch
    from torch.overrides import TorchFunctionMode

    T, F = torch.Tensor, torch.nn.functional
    products = {torch.matmul, T.__matmul__, T.__rmatmul__, T.matmul, torch.mm, T.mm, torch.addmm, T.addmm, torch.bmm,
                T.bmm, torch.baddbmm, T.baddbmm, torch.mv, T.mv, torch.addmv, T.addmv, F.linear}

    widened = WidenedWeights()

    class ExactProducts(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in products and "out" not in kwargs:  # every other torch call passes straight through
                tensors = [a for a in args if isinstance(a, torch.Tensor)]
                if tensors and all(t.dtype == torch.bfloat16 and t.device.type == "cpu" for t in tensors):
                    wide = [widened(a) if isinstance(a, torch.Tensor) else a for a in args]
                    return func(*wide, **kwargs).to(torch.bfloat16)
            return func(*args, **kwargs)

    with ExactProducts():
        yield


class WidenedWeights:
    """A bf16 tensor in float64, for `exact_bf16_products`: a weight's (a large tensor, or a view of one, such as
    its transpose) made once and kept while the weight lives unchanged (its version counter, which every in-place
    write to it or to a view of it moves); any other made afresh. A scene's steps multiply the same weights
    thousands of times: widening each every time was a fifth of their products' time."""

    LARGE = 1 << 16  # elements: an activation is made afresh each step, a weight is not

    def __init__(self):
        self.kept = {}  # id(base) -> (weakref to base, its version then, base in float64)

    def __call__(self, t):
        import torch

        base = t if t._base is None else t._base
        if base.numel() < self.LARGE or base.is_inference():  # an inference tensor keeps no version: made afresh
            return t.double()
        entry = self.kept.get(id(base))
        if entry is None or entry[0]() is not base or entry[1] != base._version:
            wide = torch.empty_strided(base.size(), base.stride(), dtype=torch.float64)
            wide.copy_(base)
            entry = self.kept[id(base)] = (weakref.ref(base, lambda _, key=id(base): self.kept.pop(key, None)),
                                           base._version, wide)
        return entry[2].as_strided(t.size(), t.stride(), t.storage_offset() - base.storage_offset())


@pytest.fixture(scope="module", autouse=True)
def bf16_products_exact(request):
    """In a module marked `bf16_products_exact`, module-wide (its fixtures compute as its tests do): the products
    of `exact_bf16_products`. For the tests of a scene's properties at a CPU's sizes, whose time was mostly such
    products; a harness run is never changed. Not where a module's steps are many small products (puzzle18's and
    27's): the mode's Python call a product costs more there than it saves. Nor where CUDA is: there the module's
    GPU tests run their styles as a learner's code runs, with no mode around them."""
    if request.node.get_closest_marker("bf16_products_exact") is None or has_cuda():
        yield
        return
    with exact_bf16_products():
        yield


def loop_ms(device, make, call, seeds, name: str) -> float:
    """A loop of the call clock on `device` (tutor.harness.device.Device), its calls on the inputs `make(seed, flush)`
    makes of `seeds`, L2 flushed before the first: as a grade's worker times them, a call an ask (Worker.loop_call)."""
    return device.loop_sample(name, [device.call_ms(lambda flush, seed=seed: make(seed, flush), call, k == 0)
                                     for k, seed in enumerate(seeds)])


def relative_l2(got, expected) -> float:
    """‖got − expected‖ / ‖expected‖ in float64: the harness's correctness measure (tutor.harness.checks.compare)."""
    import torch

    got, expected = got.double(), expected.double()
    return (torch.linalg.vector_norm(got - expected) / torch.linalg.vector_norm(expected)).item()


def reached(grade: dict, bars: float = 1.0) -> str:
    """The tier a recorded grade (benchmarks/grades_fixture.py's rows) reads under today's bars, each multiplied by
    `bars`; a serving grade's from its replay pairs, as tutor.grading.serving reads them."""
    import dataclasses

    from tutor.catalog import get_puzzle
    from tutor.grading.performance import tier_reached
    from tutor.grading.serving import puzzle_serving_tier, serving_estimates
    from tutor.stats import Estimate

    puzzle = get_puzzle(grade["puzzle"], drafts=True)
    if bars != 1.0:
        puzzle = dataclasses.replace(puzzle, tiers=[dataclasses.replace(t, min_speedup=t.min_speedup * bars)
                                                    for t in puzzle.tiers])
    if not grade["rules_passed"]:
        return ""
    if "serving_pairs" in grade:
        return puzzle_serving_tier(puzzle, serving_estimates([tuple(pair) for pair in grade["serving_pairs"]]))
    speedups = {clock: {vs: Estimate(**e) for vs, e in by_vs.items()} for clock, by_vs in grade["speedups"].items()}
    return tier_reached(puzzle, speedups)


def harness_check(puzzle, mine: str | Path, run_dir: Path, baseline: Path | None = None, spec: Path | None = None,
                  device: str = "cpu", checks: int = 1, warmup: int = 1, rounds: int = 2, judged: bool = False) -> dict:
    """A puzzle's workload `mine` (a file of its folder, or a path) checked against its baseline (or `baseline`) as a
    grade checks it, the puzzle's spec or `spec` (a CPU's sizes); a multi-GPU puzzle one process a rank (gloo on the
    CPU, NCCL on GPUs). The harness's result."""
    from tutor.runner import run_harness

    mine_path = mine if isinstance(mine, Path) else puzzle.folder / mine
    ranks = {"ranks": puzzle.hardware.gpus} if puzzle.hardware.gpus > 1 else {}
    request = {"mode": "check", "device": device, "seed": 5, "spec": str(spec or puzzle.folder / "spec.py"), **ranks,
               "workloads": {"baseline": str(baseline or puzzle.folder / "baseline.py"), "mine": str(mine_path)},
               "prepare": ["baseline", "mine"], "time": ["baseline", "mine"], "candidate": "mine",
               "oracle": "baseline", "correctness": {"checks": checks, "judged": judged},
               "timing": {"warmup": warmup, "rounds": rounds}}
    return run_harness(request, run_dir / f"run-{mine_path.parent.name}-{mine_path.name}", 300).result


def assert_every_call_checked_on_each_rank(puzzle, sizes_line: str, small_line: str, tmp_path: Path) -> None:
    """A multi-GPU puzzle graded as the GPUs grade it, on gloo ranks at a CPU's sizes (`small_line` for the spec's
    `sizes_line`): the reference right on every check and every timed call of every rank; its cheat that blanks
    the calls it takes for unchecked right on the checks, wrong on those calls."""
    spec = resized_copies(puzzle, ["spec.py"], {sizes_line: small_line}, tmp_path)["spec.py"]
    errors = {}
    for style in ("solution/workload.py", "cheats/reads_which_call_is_checked.py"):
        result = harness_check(puzzle, style, tmp_path, spec=spec)
        errors[style] = ([c.get("rel_l2", float("inf")) for c in result["checks"]],
                         [c.get("rel_l2", float("inf")) for c in result["timed_checks"]])
        assert not result["violations"], result["violations"]
    print(errors)
    checks, timed = errors["solution/workload.py"]
    assert len(timed) >= 4 and max(checks + timed) <= puzzle.correctness.max_rel_l2
    checks, timed = errors["cheats/reads_which_call_is_checked.py"]
    assert max(checks) <= puzzle.correctness.max_rel_l2 < 0.5 < max(timed)


def graded_counts(grades: list[dict]) -> dict[str, int]:
    """How many recorded grades each workload has."""
    return {w: sum(g["which"] == w for g in grades) for w in {g["which"] for g in grades}}


def assert_each_cheat_refused(puzzle, recorded: Path, refusals: dict[str, set[str]], times: int,
                              owed: frozenset[str] = frozenset()) -> None:
    """A cheats fixture (`benchmarks/grade_cheats.py ... --json`, wrapped with its card and command): every cheat of the
    puzzle's cheats/ but those still `owed` their grades graded `times` times, each grade earning no tier and refused
    by exactly the criteria named."""
    import json

    grades = json.loads(recorded.read_text())["grades"]
    assert sorted(g["which"] for g in grades) == sorted(w for w in refusals for _ in range(times))
    assert {f"cheats/{p.stem}" for p in puzzle.folder.glob("cheats/*.py")} == set(refusals) | owed
    for grade in grades:
        assert grade["tier"] == "" and {r.split(":")[0] for r in grade["refused_by"]} == refusals[grade["which"]], grade


def ncu_learner_profiles(baseline_csv: Path, mine_csv: Path, mine_code: str = "graded"):
    """A learner's newest Nsight Compute profiles of the baseline and of their workload, from recorded
    ncu exports; `mine_code` is the code their profile of mine ran ("graded": the code being graded)."""
    from tutor.grading.puzzle_checks import LearnerProfiles
    from tutor.profilers import ncu

    rows = {(which, "ncu"): {"metrics_json": ncu.extract(csv).to_json(), "code_hash": mine_code}
            for which, csv in (("baseline", baseline_csv), ("mine", mine_csv))}
    return LearnerProfiles(rows, "graded")


def pytest_addoption(parser):
    parser.addoption("--warm", action="store_const", const="require", dest="warm", default="off",
                     help="run every harness run through one warm harness (tutor.warm); a run that cannot fails")
    parser.addoption("--warm-when-ready", action="store_const", const="use", dest="warm",
                     help="fork each harness run from one warm harness where it can, else start it cold")
    parser.addoption("--also-cold", default="", metavar="FILES",
                     help="with --warm or --warm-when-ready: each test of these files (comma-separated, as "
                          "tests/NAME.py) runs twice, its harness runs forked from the warm harness and started cold")


def pytest_generate_tests(metafunc):
    """--also-cold's tests, twice in one pass: the test processes share the cold runs out with everything else,
    where a second pass ran them on their own (its long tests one after another, most processes idle)."""
    files = {f.strip() for f in metafunc.config.getoption("also_cold").split(",") if f.strip()}
    twins = not metafunc.definition.get_closest_marker("cold_only")  # a test cold either way would run twice alike
    if metafunc.config.getoption("warm") != "off" and f"tests/{metafunc.definition.path.name}" in files and twins:
        metafunc.fixturenames.append("harness_start")
        metafunc.parametrize("harness_start", ["warm", "cold"])


@pytest.fixture(scope="session")
def warm_runtime(request, tmp_path_factory, worker_id):
    """With --warm or --warm-when-ready: a warm harness owned by this test session, and the folder its socket is in.

    pytest-xdist's test processes share one (each an owner of it, as the app and the CLI of one learner share
    theirs): one torch, Dynamo and Inductor import, 6 s of CPU, where each process paid its own."""
    if request.config.getoption("warm") == "off":
        yield None
        return
    import os

    if worker_id == "master":
        os.environ["INFPROF_RUNTIME_DIR"], harness = start_warm_harness("ipw", preload_all=True)
        yield os.environ["INFPROF_RUNTIME_DIR"]
        harness.stop()
        return
    folder = tmp_path_factory.getbasetemp().parent / "warm"  # the workers' shared folder (short: a socket path)
    folder.mkdir(mode=0o700, exist_ok=True)
    with exclusively(folder / "start.lock"):  # one process starts it, the others wait and own it too
        own_warm_harness(str(folder), preload_all=True)
    yield str(folder)  # it ends once every process that owns it has ended


def start_warm_harness(prefix: str, preload_all: bool = False):
    """A warm harness owned by this test process, in a new runtime folder: (the folder, the harness).

    Sets INFPROF_RUNTIME_DIR to the folder; the caller restores it if it must."""
    import tempfile

    folder = tempfile.mkdtemp(prefix=prefix)  # short: a socket path has 108 bytes
    return folder, own_warm_harness(folder, preload_all)


def started_keeper(workspace, puzzle_id: str, monkeypatch, wait_s: float = 90.0):
    """A watch session's ruler keeper for `puzzle_id`, owned by this test process, in a runtime folder of the test's
    (its socket path is short), ready."""
    import os
    import tempfile

    from tutor.warm import RulerKeeper

    monkeypatch.setenv("INFPROF_RUNTIME_DIR", tempfile.mkdtemp(prefix="ipk"))
    monkeypatch.setenv("INFPROF_WARM", "1")
    keeper = RulerKeeper.for_puzzle(workspace.root, puzzle_id)
    keeper.start(owner=os.getpid())
    assert keeper.wait_ready(timeout_s=wait_s, owner=os.getpid()), keeper.log_path.read_text()
    return keeper


def own_warm_harness(folder: str, preload_all: bool = False):
    """The warm harness of runtime folder `folder`, started unless it runs, this test process one of its owners.
    `preload_all`: with Dynamo and Inductor preloaded, as on a GPU machine, where a CPU build's would have torch
    alone: the session's harness, whose torch.compile runs each imported them again (2.5 s of CPU a run).

    Sets INFPROF_RUNTIME_DIR to the folder."""
    import os

    from tutor.harness.zygote import PRELOAD_ENV
    from tutor.warm import WarmHarness
    os.environ["INFPROF_RUNTIME_DIR"] = folder
    harness = WarmHarness.for_env()
    with pytest.MonkeyPatch.context() as patch:  # its process alone: not the runs it forks, nor later harnesses
        if preload_all:
            patch.setenv(PRELOAD_ENV, "all")
        harness.start(owner=os.getpid())
    assert harness.wait_ready(owner=os.getpid()), harness.log_path.read_text()
    return harness


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    cuda = has_cuda()  # before any test: it sets this process's torch threads too
    for item in items:
        if "gpu" in item.keywords and not cuda:
            item.add_marker(skip)
    # The `first` tests ahead of the rest, in order otherwise (a stable sort; every xdist worker sorts alike): the
    # wheel's install, 35 s of one process, was the suite's last test, the other processes done 20-30 s before it.
    items.sort(key=lambda item: item.get_closest_marker("first") is None)
    items[:] = waiting_files_spread(items)


def waiting_files_spread(items: list) -> list:
    """`items` with the files marked `waits` spread evenly through the others, each file's tests kept together (its
    module fixtures made once). In name order test_ranks' and test_runner's waits fell together, and test_warm's
    ended the suite: a core idle while two test processes waited (47 core-seconds of one run's idle time, read
    from /proc/stat second by second beside each test's start and end)."""
    waiting: dict = {}  # file -> its tests, in order
    for item in items:
        if item.get_closest_marker("waits") and not item.get_closest_marker("first"):
            waiting.setdefault(item.path, []).append(item)
    others = [item for item in items if item.path not in waiting]
    step, ordered, at = len(others) / (len(waiting) + 1), [], 0
    for i, block in enumerate(waiting.values()):
        cut = round(step * (i + 1))
        ordered += others[at:cut] + block
        at = cut
    return ordered + others[at:]


@pytest.fixture(scope="session", autouse=True)
def session_extension_builds(tmp_path_factory):
    """The gpu tests' load_inline builds in a folder of this session's: a run killed mid-build elsewhere can
    leave a lock in the default ~/.cache/torch_extensions on which every later build waits forever."""
    import os
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(tmp_path_factory.mktemp("torch_extensions")))


@pytest.fixture(autouse=True)
def isolated_config(tmp_path, monkeypatch, warm_runtime, request):
    """Keep the remembered-workspace file and $INFPROF_WORKSPACE out of the developer's home."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("INFPROF_WORKSPACE", raising=False)
    # No ruler keeper for the CLI's and the app's watch tests: its start (torch and the libraries a warm harness
    # preloads) cost 8 core-seconds a test; tests/test_keeper.py starts its own.
    monkeypatch.setenv("INFPROF_KEEP_RULER", "0")
    # Every run cold, unless the session runs warm (--warm, --warm-when-ready; an --also-cold twin runs cold) or a
    # test starts a warm harness of its own (tests/test_warm.py): a developer's open TUI must not serve the suite's
    # runs.
    cold = getattr(request.node, "callspec", None) and request.node.callspec.params.get("harness_start") == "cold"
    if warm_runtime and not cold:
        monkeypatch.setenv("INFPROF_WARM", request.config.getoption("warm"))
        monkeypatch.setenv("INFPROF_RUNTIME_DIR", warm_runtime)
    else:
        monkeypatch.setenv("INFPROF_WARM", "0")
    import tutor.workspace as ws
    monkeypatch.setattr(ws, "_REMEMBERED", tmp_path / "xdg" / "infprof-tutor" / "workspace")


@pytest.fixture
def cold_runs(monkeypatch):
    """Every harness run started cold, whatever the session's --warm: for the app's snapshots, whose app would show
    the session's warm harness as its own. (tests/test_app.py forks its runs from the session's harness where the
    session runs warm, as a learner's app forks from the harness it starts.)"""
    monkeypatch.setenv("INFPROF_WARM", "0")


def shrink_puzzle0(folder: Path) -> None:
    """puzzle0's folder made small in place: its rows cut from 2048 to 256 and its rounds from 15 to 10, the same
    grade, the baseline's per-row loop 8x shorter (a 131 ms call, timed up to 4 times a round for 15 rounds a grade,
    was most of the suite's time), and a third fewer rounds (the timing of each grade the most of its CPU then)."""
    for name, line, small in (("spec.py", "ROWS = 2048\n", "ROWS = 256\n"),
                              ("puzzle.toml", "rounds = 15\n", "rounds = 10\n")):
        text = (folder / name).read_text()
        assert line in text, f"{name}: no {line!r}"
        (folder / name).write_text(text.replace(line, small))


@pytest.fixture(scope="session")
def small_puzzle0(tmp_path_factory):
    """puzzle0 whole, made small (`shrink_puzzle0`), in a folder of its own."""
    import shutil

    from tutor.catalog import get_puzzle, load_puzzle
    folder = tmp_path_factory.mktemp("small") / "puzzle0"
    shutil.copytree(get_puzzle("puzzle0").folder, folder)
    shrink_puzzle0(folder)
    return load_puzzle(folder)


def shared_folder(tmp_path_factory, worker_id: str) -> Path:
    """A folder every test process of this session sees, for what one of them makes for all (under a lock): the one
    above pytest-xdist's workers' own; a session without xdist has its own folder."""
    return tmp_path_factory.getbasetemp().parent if worker_id != "master" else tmp_path_factory.getbasetemp()


@contextlib.contextmanager
def exclusively(lock_path: Path):
    """Held by one test process at a time: the one that makes something for all, while the others wait for it."""
    import fcntl

    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def puzzle0_profile(tmp_path_factory, worker_id) -> dict:
    """The full-size puzzle0 baseline's torch profile, taken once for all the session's test processes (9 s of CPU
    each time): the row a progress db keeps of it, for `with_puzzle0_profile`."""
    from tutor import actions
    from tutor.catalog import get_puzzle
    from tutor.progress import Progress
    from tutor.workspace import init_workspace

    shared = shared_folder(tmp_path_factory, worker_id)
    with exclusively(shared / "puzzle0-profile.lock"):
        ws = init_workspace(shared / "puzzle0-profiled", remember=False)
        if not Progress(ws.db_path).latest_profiles("puzzle0", "baseline"):
            actions.profile(ws, get_puzzle("puzzle0"), "baseline")
        [row] = Progress(ws.db_path).latest_profiles("puzzle0", "baseline")
    return row


@pytest.fixture
def with_puzzle0_profile(workspace, puzzle0_profile):
    """`workspace` holding the full-size puzzle0 baseline's profile as its own, as if the learner had just taken it."""
    from tutor.metrics import ProfileMetrics
    from tutor.progress import Progress

    row = puzzle0_profile
    Progress(workspace.db_path).record_profile("puzzle0", "baseline", row["code_hash"],
                                               ProfileMetrics.from_json(row["metrics_json"]), Path(row["trace_path"]),
                                               Path(row["run_dir"]))
    return workspace


@pytest.fixture
def small_catalog(monkeypatch, small_puzzle0):
    """The catalog with the small puzzle0 in place of puzzle0: for tests of the tutor's own flows (the app, the CLI,
    the quick check), which grade and profile puzzle0 for real but assert nothing of its size."""
    from tutor import catalog

    monkeypatch.setattr(catalog, "_scan", scan_with_small_puzzle0(catalog._scan, small_puzzle0))
    return small_puzzle0


def scan_with_small_puzzle0(real, small):
    """The catalog's `_scan` (`real`) with `small` in place of puzzle0: `small_catalog`'s, and a subprocess's that
    must see the same catalog (tests/test_cli.py's watch)."""
    def scan(root):
        found, problems = real(root)
        return {pid: small if pid == "puzzle0" else p for pid, p in found.items()}, problems
    return scan


@pytest.fixture
def workspace(tmp_path):
    from tutor.workspace import init_workspace
    return init_workspace(tmp_path / "ws")


SPEC = """
import torch
def make_weights(seed, device):
    return {"w": torch.ones(4)}
def make_input(seed, device):
    # Never all zeros: x * 2 == x there, and a wrong workload would pass (1 seed in 97 did). And rarely the same
    # twice: with 97 values, a host buffer filled again by the next call held the same answer 1 check in 97.
    return torch.full((4,), float(seed % 65521 + 1))
"""

IDENTITY = """
import torch
def prepare(weights, device):
    return weights
def forward(state, x):
    return x * state["w"]
"""


@pytest.fixture
def make_request(tmp_path):
    """Build a harness request over workload sources given as strings."""

    def build(mode: str = "check", **sources: str) -> dict:
        folder = tmp_path / "puzzle"
        folder.mkdir(exist_ok=True)
        (folder / "spec.py").write_text(textwrap.dedent(SPEC))
        paths = {}
        for name, src in {"baseline": IDENTITY, **sources}.items():
            (folder / f"{name}.py").write_text(textwrap.dedent(src))
            paths[name] = str(folder / f"{name}.py")
        names = list(paths)
        return {
            "mode": mode, "device": "cpu", "seed": 1234, "spec": str(folder / "spec.py"),
            "workloads": paths, "prepare": names, "time": names,
            "candidate": names[-1], "oracle": "baseline", "correctness": {"checks": 2},
            "timing": {"warmup": 1, "rounds": 3},
        }

    return build


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def pytest_runtest_logfinish(nodeid, location):
    """What a test leaves alive, frozen once its garbage is collected: the collector's full passes in a test process
    then walk only what the running test made, not torch's, Textual's and every earlier test's objects again (the
    collector's CPU in the suite, `perf record -a -F 199` around it, with tutor.harness.collector's freeze in the
    harness: 169 core-seconds of 1127 before, 43 of 896 after; docs/development.md, the suite's time)."""
    import gc

    gc.collect()
    gc.freeze()
