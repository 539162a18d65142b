"""The puzzle catalog: every folder under challenges/ with a puzzle.toml, read into `Puzzle`s.

Pure data: reading the catalog imports neither torch nor pandas, so `list` stays fast.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import challenges
import graders

from tutor.errors import TutorError

CHALLENGES_DIR = Path(challenges.__file__).parent
GRADERS_DIR = Path(graders.__file__).parent


@dataclass(frozen=True)
class Hardware:
    device: str = "cpu"  # "cpu" or "cuda"
    min_compute_capability: float = 0.0
    gpus: int = 0
    packages: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()  # programs it needs on PATH (a kernel puzzle's nvcc and ninja)
    elsewhere: str = ""  # what to expect on other GPUs than the one the puzzle was measured on

    def needs(self) -> str:
        """What a machine needs to run the puzzle, in one line for both faces."""
        if self.device == "cpu":
            return "CPU only"
        need = f"{self.gpus} CUDA GPU(s)" if self.gpus > 1 else "1 CUDA GPU"
        if self.min_compute_capability:
            need += f", compute capability >= {self.min_compute_capability:g}"
        if self.packages:
            need += f"; packages: {', '.join(self.packages)}"
        if self.tools:
            need += f"; tools: {', '.join(self.tools)}"
        return need


CLOCKS = {
    "call": "the whole call as its caller waits for it, in a serving loop: each on a fresh input, till the GPU is done",
    "gpu": "the GPU's work alone, the host's launches kept out of it (CUDA puzzles)",
    "throughput": "tokens a second over a replay of a trace of requests, at a p99 latency within the puzzle's limit "
                  "(serving puzzles)",
}


# An alternative that passes every rule but whose speed earns no tier on the machines measured.
NO_TIER = "none"

# The baseline's PyTorch profile a puzzle ships in recordings/, by device: a GPU puzzle's as its machine recorded
# it (study mode opens it), a CPU puzzle's recorded here.
RECORDED_BASELINE = {"cuda": "baseline_metrics.json", "cpu": "cpu_baseline_metrics.json"}


@dataclass(frozen=True)
class Tier:
    name: str
    vs: str  # the workload the speedup is measured against
    min_speedup: float
    clock: str = "call"  # a key of CLOCKS: which of each call's times the speedup compares


# Where forward()'s output must be when it returns: anywhere, or in host memory, complete as forward() returns and
# the caller's to keep (tutor.harness.worker.Worker.run checks it; tutor.brief says it to the learner).
OUTPUTS = ("any", "host")


@dataclass(frozen=True)
class Correctness:
    oracle: str
    max_rel_l2: float
    checks: int = 3
    output: str = "any"  # one of OUTPUTS
    # The output depends on its own path (a greedy decode's tokens): judged along it by spec.judge in the oracle's
    # process (tutor.harness.worker.Worker.judge), each choice's score against the best it could have had.
    judged: bool = False


# Calls in a round's loop on a GPU where fewer will do (a grade's: 4-8, tutor.harness.lockstep.LOOP_CALLS): a quick
# check's, and a grade's where no tier reads the call clock (Puzzle.loop_calls).
SHORT_GPU_LOOP_CALLS = (2, 4)


@dataclass(frozen=True)
class Timing:
    warmup: int = 5
    rounds: int = 30
    profile_iterations: int = 5
    timeout_s: float = 600.0  # a hang is killed after this
    # Calls in a round's loop, drawn between the two each round; empty: the harness's (lockstep.LOOP_CALLS).
    loop_calls: tuple[int, ...] = ()


@dataclass(frozen=True)
class Serving:
    """A serving puzzle's grade (tutor.harness.serving_rounds): its server and the learner's replay a trace in
    `replays` pairs (and one warm-up pair), each in at most `limit_s`; a tier needs the p99 latency ratio's
    upper bound within `max_latency_ratio` of the baseline's."""

    replays: int = 5
    limit_s: float = 120.0
    max_latency_ratio: float = 1.0
    # Each token comes with its logit, checked against the oracle server's within correctness.max_rel_l2: the
    # model's work beyond its tokens, which a server that reads the answer elsewhere cannot give.
    logits: bool = False
    # Where a token is drawn as well as decided (a sampler's choice), how many values the harness's draw for each
    # token takes: step() gets each live request's (tutor.harness.serving). 0: step() takes nothing.
    draws: int = 0


@dataclass(frozen=True)
class Diagnosis:
    accepted: tuple[str, ...]
    supporting: tuple[str, ...] = ()
    relevant_metrics: tuple[str, ...] = ("*",)
    min_evidence: int = 1
    # Where more than one class is accepted: for each, the metrics (patterns) that tell it from the others; the
    # evidence must cite one of its own, so naming a class takes the number that shows it, not a guess.
    telling: dict[str, tuple[str, ...]] = field(default_factory=dict)


# A later stage's condition on the profile that shows it (tutor.grading.stages): "metric > number" or "<".
STAGE_CONDITION = re.compile(r"^\s*([\w.*]+)\s*([<>])\s*(-?[\d.]+(?:e-?\d+)?)\s*$")


@dataclass(frozen=True)
class Stage:
    """A bottleneck that a fix of the one before it reveals (a capstone's [[stages]], after [diagnosis]'s first):
    named and backed in answer.toml's [[stages]] from a profile of the learner's own workload in which `shows`
    holds; the tiers from `tier` on need it, and every stage before it."""

    name: str
    tier: str
    diagnosis: Diagnosis
    shows: tuple[str, ...] = ()  # conditions the cited profile must meet: the bottleneck is the one it shows
    # The puzzle's file (an alternative that fixes the stages before it) whose profile shows this stage: recorded
    # as recordings/stage<N>_metrics.json (benchmarks/measure_draft.py), for study mode and dev check.
    shown_by: str = ""


@dataclass(frozen=True)
class Puzzle:
    id: str
    title: str
    level: int
    summary: str
    folder: Path
    hardware: Hardware
    editable: tuple[str, ...]
    workloads: dict[str, str]  # name -> module file inside the puzzle folder
    correctness: Correctness
    timing: Timing
    tiers: tuple[Tier, ...]
    diagnosis: Diagnosis
    hints: tuple[str, ...] = ()
    profilers: tuple[str, ...] = ("torch",)
    # The profilers a full grade reads (their tools must be here): the first of `profilers` unless it says.
    grade_profilers: tuple[str, ...] = ("torch",)
    grader: str = ""  # optional module under graders/ with extra checks
    # The first tier a kernel puzzle's [kernel_evidence] is needed for (tutor.grading.kernel_evidence); "" if none.
    kernel_evidence_for: str = ""
    # Honest solutions in other styles (alternatives/<name>.py) -> the tier each must reach at least.
    alternatives: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    extra: dict = field(default_factory=dict, hash=False, compare=False)
    # Why learners do not see it yet (its tiers not measured on its machine, say); "" once it ships.
    draft: str = ""
    serving: Serving | None = None  # a server replayed against a trace, not a forward() called on inputs
    stages: tuple[Stage, ...] = ()  # the bottlenecks after the first, each revealed by fixing the one before

    @property
    def story(self) -> str:
        return (self.folder / "story.md").read_text()

    def starter_file(self, name: str) -> Path:
        """The pristine copy of an editable file: starter/<name>, or for workload.py the baseline itself."""
        path = self.folder / "starter" / name
        if name == "workload.py" and not path.exists():
            return self.workload_path("baseline")
        return path

    @property
    def solution_dir(self) -> Path:
        return self.folder / "solution"

    def workload_path(self, name: str) -> Path:
        return self.folder / self.workloads[name]

    @property
    def recordings_dir(self) -> Path:
        """The baseline's profiles recorded on the puzzle's machine (study mode, `dev check`)."""
        return self.folder / "recordings"

    @property
    def floor_checked(self) -> bool:
        """A GPU puzzle's calls are held to the physical floor (tutor.grading.floor)."""
        return self.hardware.device == "cuda" and not self.serving

    @property
    def loop_calls(self) -> tuple[int, ...]:
        """Calls in each round's loop of the call clock, drawn between the two: the puzzle's own where it names them;
        on a GPU where every tier reads the GPU clock, SHORT_GPU_LOOP_CALLS, since the call clock then only keeps the
        learner's calls near the comparator's (a median, tutor.grading.performance.HOST_GUARD) and every call is
        checked however many a round makes; else none, the harness's (tutor.harness.lockstep.LOOP_CALLS)."""
        if self.timing.loop_calls:
            return self.timing.loop_calls
        if self.hardware.device == "cuda" and self.tiers and all(t.clock == "gpu" for t in self.tiers):
            return SHORT_GPU_LOOP_CALLS
        return ()

    @property
    def no_quick_check(self) -> str:
        """Why this puzzle has no quick check (and so nothing to watch), or ""."""
        if self.serving:
            return (f"{self.id} is a serving puzzle: its server is judged over whole replays of a trace, which a "
                    "quick check cannot shorten.")
        return ""

    @property
    def serving_floor_checked(self) -> bool:
        """A GPU serving puzzle's replays are held to theirs by how busy they kept the GPU
        (tutor.grading.serving.check_serving_floor)."""
        return self.hardware.device == "cuda" and self.serving

    def recorded_stage(self, number: int) -> Path:
        """Where the profile that shows later stage `number` (2, 3, ...) is recorded, as the baseline's is."""
        return self.recordings_dir / f"stage{number}_metrics.json"

    @property
    def recorded_baseline(self) -> Path:
        """The baseline's PyTorch profile in recordings/: there once the puzzle was measured on its machine."""
        return self.recordings_dir / RECORDED_BASELINE[self.hardware.device]

    def alternative_path(self, name: str) -> Path:
        return self.folder / "alternatives" / f"{name}.py"

    def solution_path(self, which: str = "reference") -> Path:
        """A workload.py known to pass: "reference" (the solution's), or "alternatives/NAME"; or one known to
        cheat, "cheats/NAME" (a grade must refuse it, or its puzzle's MEASUREMENTS.md says why it cannot)."""
        if which.startswith("alternatives/"):
            return self.alternative_path(which.split("/", 1)[1])
        if which.startswith("cheats/"):
            return self.folder / "cheats" / f"{which.split('/', 1)[1]}.py"
        return self.solution_dir / "workload.py"


def load_puzzle(folder: Path) -> Puzzle:
    """Read one puzzle folder; a malformed puzzle.toml raises TutorError naming the field."""
    meta_path = folder / "puzzle.toml"
    try:
        with meta_path.open("rb") as f:
            meta = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise TutorError(f"{meta_path} is not valid TOML: {e}", "Fix the file, or reinstall the tutor.") from e
    try:
        workloads = dict(meta["workloads"])
        corr = meta["correctness"]
        diag = meta["diagnosis"]
        stages = tuple(Stage(name=st["name"], tier=st["tier"], diagnosis=_diagnosis(st),
                             shows=tuple(st.get("shows", ())), shown_by=st.get("shown_by", ""))
                       for st in meta.get("stages", ()))
        puzzle = Puzzle(
            id=meta["id"],
            title=meta["title"],
            level=int(meta["level"]),
            summary=meta.get("summary", ""),
            folder=folder,
            hardware=Hardware(**{**meta.get("hardware", {}), **{key: tuple(meta.get("hardware", {}).get(key, ()))
                                                                 for key in ("packages", "tools")}}),
            editable=tuple(meta["files"]["editable"]),
            workloads=workloads,
            correctness=Correctness(**corr),
            timing=Timing(**meta.get("timing", {})),
            tiers=tuple(Tier(**t) for t in meta["tiers"]),
            diagnosis=_diagnosis(diag),
            hints=tuple(meta.get("hints", ())),
            profilers=tuple(meta.get("profilers", ("torch",))),
            grade_profilers=tuple(meta.get("grade_profilers", meta.get("profilers", ("torch",))[:1])),
            grader=meta.get("grader", ""),
            kernel_evidence_for=str(meta.get("kernel_evidence", {}).get("required_for", "")),
            alternatives=dict(meta.get("alternatives", {})),
            extra=meta.get("extra", {}),
            draft=str(meta.get("draft", "")),
            serving=Serving(**meta["serving"]) if "serving" in meta else None,
            stages=stages,
        )
    except (KeyError, TypeError, ValueError) as e:
        raise TutorError(f"{meta_path} is missing or has a bad field: {e}", "Fix the puzzle metadata.") from e
    _check_references(puzzle, meta_path)
    return puzzle


def _diagnosis(table: dict) -> Diagnosis:
    if set(table.get("telling", {})) - set(table["accepted"]):
        raise ValueError(f"[diagnosis] telling names classes it does not accept: {sorted(table['telling'])}")
    return Diagnosis(accepted=tuple(table["accepted"]), supporting=tuple(table.get("supporting", ())),
                     relevant_metrics=tuple(table.get("relevant_metrics", ("*",))),
                     min_evidence=int(table.get("min_evidence", 1)),
                     telling={name: tuple(patterns) for name, patterns in table.get("telling", {}).items()})


def _check_stages(p: Puzzle, meta_path: Path) -> None:
    """Each later stage unlocks a tier after the first, in the tiers' order, and its conditions parse."""
    order = list(dict.fromkeys(t.name for t in p.tiers))
    unlocked = [order.index(st.tier) if st.tier in order else -1 for st in p.stages]
    for st, at in zip(p.stages, unlocked):
        if at < 1:
            raise TutorError(f"{meta_path}: stage '{st.name}' unlocks tier '{st.tier}': it must name a tier after the "
                             f"first ({order[1:]}); the first tier is [diagnosis]'s", "Fix the puzzle metadata.")
        if st.shown_by and not (p.folder / st.shown_by).is_file():
            raise TutorError(f"{meta_path}: stage '{st.name}' is shown by {st.shown_by}, which does not exist",
                             "Fix the puzzle metadata.")
        bad = [c for c in st.shows if not STAGE_CONDITION.match(c)]
        if bad:
            raise TutorError(f"{meta_path}: stage '{st.name}' has conditions {bad}: write each as \"metric > number\" "
                             "or \"metric < number\"", "Fix the puzzle metadata.")
    if unlocked != sorted(unlocked):
        raise TutorError(f"{meta_path}: [[stages]] must unlock their tiers in the tiers' order", "Fix the puzzle metadata.")


def _check_references(p: Puzzle, meta_path: Path) -> None:
    _check_stages(p, meta_path)
    names = set(p.workloads) | {"mine"}
    if "baseline" not in p.workloads:
        raise TutorError(f"{meta_path}: [workloads] needs a 'baseline'", "Fix the puzzle metadata.")
    if p.correctness.output not in OUTPUTS:
        raise TutorError(f"{meta_path}: [correctness] output = '{p.correctness.output}' is not one of {sorted(OUTPUTS)}",
                         "Fix the puzzle metadata.")
    for ref in [p.correctness.oracle, *(t.vs for t in p.tiers)]:
        if ref not in names:
            raise TutorError(f"{meta_path}: '{ref}' is not a workload name ({sorted(names)})", "Fix the puzzle metadata.")
    # Why a puzzle's tiers have the call clock alone, if they do.
    call_only = (" (a CPU puzzle has one clock)" if p.hardware.device != "cuda" else
                 " (a multi-GPU puzzle is timed by its slowest rank's calls: a collective's GPU time includes its"
                 " wait for the other ranks)" if p.hardware.gpus > 1 else "")
    allowed = {"throughput"} if p.serving else {"call"} if call_only else {"call", "gpu"}
    # A serving grade replays the oracle's server beside the learner's, and its speed-ups are against that server.
    for t in (t for t in p.tiers if p.serving and t.vs != p.correctness.oracle):
        raise TutorError(f"{meta_path}: tier '{t.name}' is measured against '{t.vs}', but a serving grade replays "
                         f"the oracle's server ('{p.correctness.oracle}') beside yours and measures against it",
                         "Fix the puzzle metadata: give every tier vs = the [correctness] oracle.")
    for t in (t for t in p.tiers if t.clock not in allowed):
        if p.serving:
            raise TutorError(f"{meta_path}: tier '{t.name}' has clock '{t.clock}': a serving puzzle's tiers are "
                             "on 'throughput'", "Fix the puzzle metadata.")
        needs = " ('throughput' needs a [serving] section)" if t.clock == "throughput" else ""
        raise TutorError(f"{meta_path}: tier '{t.name}' has clock '{t.clock}': use 'call'"
                         + (call_only or " or 'gpu'") + needs, "Fix the puzzle metadata.")
    tiers = {t.name for t in p.tiers}
    for name, tier in p.alternatives.items():
        if not p.alternative_path(name).is_file():
            raise TutorError(f"{meta_path}: alternative '{name}' has no file alternatives/{name}.py", "Fix the puzzle metadata.")
        if tier not in tiers | {NO_TIER}:
            raise TutorError(f"{meta_path}: alternative '{name}' expects tier '{tier}', not one of "
                             f"{sorted(tiers | {NO_TIER})}",
                             "Fix the puzzle metadata.")
    if p.kernel_evidence_for and p.kernel_evidence_for not in [t.name for t in p.tiers][1:]:
        raise TutorError(f"{meta_path}: [kernel_evidence] required_for = '{p.kernel_evidence_for}' must name a tier "
                         "after the first", "Fix the puzzle metadata.")
    if p.grader and not (GRADERS_DIR / f"{p.grader}.py").is_file():
        raise TutorError(f"{meta_path}: grader '{p.grader}' has no module graders/{p.grader}.py", "Fix the puzzle metadata.")
    from tutor.profilers.registry import PROFILERS  # the registry reads Puzzle: imported once the catalog is

    unknown = [name for name in p.profilers if name not in PROFILERS]
    if unknown or not p.profilers:
        raise TutorError(f"{meta_path}: profilers {unknown or '[]'} are not among the tutor's ({', '.join(PROFILERS)})",
                         "Fix the puzzle metadata.")
    if not set(p.grade_profilers) <= set(p.profilers):
        raise TutorError(f"{meta_path}: grade_profilers {list(p.grade_profilers)} must be among its profilers "
                         f"{list(p.profilers)}", "Fix the puzzle metadata.")
    for name, file in p.workloads.items():
        if not (p.folder / file).is_file():
            raise TutorError(f"{meta_path}: workload '{name}' file {file} does not exist", "Fix the puzzle metadata.")


@cache
def _scan(root: Path) -> tuple[dict[str, Puzzle], tuple[TutorError, ...]]:
    found, problems = [], []
    for folder in sorted(root.iterdir()):
        if (folder / "puzzle.toml").is_file():
            try:
                found.append(load_puzzle(folder))
            except TutorError as e:
                problems.append(e)
    return {p.id: p for p in sorted(found, key=_catalog_order)}, tuple(problems)


def _catalog_order(p: Puzzle) -> tuple:
    """By level, then by id as a person counts: puzzle9 before puzzle10."""
    return (p.level, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", p.id)])


def drafts_shown() -> bool:
    """INFPROF_DRAFTS=1 shows puzzles still being made (for their authors, on the machine that measures them)."""
    return os.environ.get("INFPROF_DRAFTS") == "1"


def all_puzzles(root: Path = CHALLENGES_DIR, drafts: bool | None = None) -> dict[str, Puzzle]:
    """Every well-formed puzzle, ordered by level then id; one broken folder hides only itself.
    Drafts only when asked (`drafts`, else INFPROF_DRAFTS=1)."""
    shown = drafts_shown() if drafts is None else drafts
    return {pid: p for pid, p in _scan(root)[0].items() if shown or not p.draft}


def catalog_problems(root: Path = CHALLENGES_DIR) -> tuple[TutorError, ...]:
    """Why any puzzle folder could not be read (shown by `list`)."""
    return _scan(root)[1]


def get_puzzle(puzzle_id: str, drafts: bool | None = None) -> Puzzle:
    puzzles = all_puzzles(drafts=drafts)
    if puzzle_id not in puzzles:
        draft = all_puzzles(drafts=True).get(puzzle_id)
        if draft is not None:  # a puzzle being made: hidden, not missing
            raise TutorError(f"{puzzle_id} is a draft, not yet shipped: {draft.draft}.",
                             "Drafts are for their authors: set INFPROF_DRAFTS=1 to see and run them.")
        raise TutorError(f"No puzzle named '{puzzle_id}'.", f"Known puzzles: {', '.join(puzzles)}. Try `infprof-tutor list`.")
    return puzzles[puzzle_id]
