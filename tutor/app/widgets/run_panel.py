"""The strip under a puzzle that shows the current run's stages, or how the last one ended.

Running: one chip per harness stage (done, current, to come), a bar for
`progress` events (warm-up and timing rounds), the stage's detail and the
elapsed time. Ended: the verdict per criterion, a quick check's findings, a
profile's headline figures, or a problem panel: the last lines of the
workload's output, or the line of answer.toml that could not be read.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import ProgressBar, Static

from tutor.app.runs import STAGE_LABELS, RunKind
from tutor.app.widgets.verdict import VerdictView, verdict_title
from tutor.errors import EnvironmentProblem, TutorError
from tutor.formatting import metric_value, short_path, speedup
from tutor.grading.verdict import Verdict
from tutor.metrics import ProfileMetrics
from tutor.profilers.registry import opener_for
from tutor.stage_clock import StageClock

if TYPE_CHECKING:
    from tutor.grading.answer import AnswerError
    from tutor.quick_check import QuickCheck

MUTED = "$foreground-muted"
# RunFailed.kind -> the panel's title, in the learner's words.
PROBLEM_TITLES = {
    "timeout": "Timed out", "crashed": "The workload process died", "oom": "Out of GPU memory",
    "import_error": "A workload file failed to load", "workload_error": "Your code raised an exception",
    "bad_workload": "A workload lacks prepare() or forward()", "no_gpu": "No GPU here",
    "missing_package": "A package is missing", "bad_request": "infprof-tutor error",
    "harness_bug": "infprof-tutor error", "tampered": "Your workload reached into the harness",
}
TAIL_LINES = 4
PROFILE_HEADLINE = ("cpu.time_per_iter_us", "cpu.ops_per_iter", "gpu.busy_fraction", "kernels.per_iter",
                    "gpu.time_per_iter_us", "memory.peak_reserved_mb",
                    "ncu.duration_us", "ncu.sm_throughput_pct", "ncu.memory_throughput_pct")


def stage_chips(stages: tuple[str, ...], current: str | None, progress: tuple[int, int] | None) -> Content:
    """✓ for stages passed, ● for the current one (with N/M when counting), ○ for those to come."""
    parts = []
    index = stages.index(current) if current in stages else -1  # an unknown stage: all still to come
    for i, stage in enumerate(stages):
        label = STAGE_LABELS.get(stage, stage)
        if i < index:
            parts.append(Content.styled(f"✓ {label}", "$text-success"))
        elif i == index:
            count = f" {progress[0]}/{progress[1]}" if progress else ""
            parts.append(Content.styled(f"● {label}{count}", "bold $text-accent"))
        else:
            parts.append(Content.styled(f"○ {label}", MUTED))
    return Content("  ").join(parts)


def problem_title(e: TutorError) -> str:
    kind = getattr(e, "kind", "")
    if kind in PROBLEM_TITLES:
        return PROBLEM_TITLES[kind]
    return "Cannot run here" if isinstance(e, EnvironmentProblem) else "Problem"


def problem_lines(e: TutorError, tail_lines: int = TAIL_LINES) -> Content:
    lines = [Content.styled(e.message, "bold")]
    if e.advice:
        lines.append(Content(e.advice))
    tail = [line for line in e.output_tail.rstrip().splitlines() if line.strip()][-tail_lines:]
    if tail:
        lines.append(Content.styled("last output (o: all of it):", MUTED))
        lines.extend(Content.styled("  " + line, MUTED) for line in tail)
    return Content("\n").join(lines)


def profile_lines(which: str, metrics: ProfileMetrics, trace: str) -> Content:
    figures = [f"{name} {metric_value(name, metrics.values[name])}" for name in PROFILE_HEADLINE
               if name in metrics.values]
    opener = opener_for(metrics.profiler)
    return Content("\n").join([
        Content(" · ".join(figures)),
        Content.assemble((f"{opener.noun} ", MUTED), trace),
        Content.styled(f"r: every metric, the kernel table and how to open the {opener.noun} in {opener.viewer}. "
                       f"Cite metric names and values from the {which} profile in answer.toml.", MUTED),
    ])


def _mark(good: bool) -> Content:
    return Content.styled("✓", "bold $text-success") if good else Content.styled("✗", "bold $text-error")


def quick_check_title(q: QuickCheck) -> str:
    if not q.correct:
        return "Quick check · not correct"
    return f"Quick check · correct · {speedup(q.speedup.median)} vs {q.vs}"


def quick_check_lines(q: QuickCheck) -> Content:
    lines = [Content.assemble(_mark(good), " ", text) for good, text in q.findings()]
    if q.answer is not None:  # its finding comes last: the line at fault goes right under it
        lines += [Content.styled("  " + line, "$text-warning") for line in q.answer.excerpt()]
    lines.append(Content.styled("A quick check, not a grade: nothing is recorded. g grades for real, "
                                "with your diagnosis.", MUTED))
    return Content("\n").join(lines)


def answer_lines(e: AnswerError, v: Verdict) -> Content:
    """The line at fault and how to write the file, then the rest of the grade in one line."""
    from tutor.grading.answer import FORMAT_HINT

    lines = [Content.styled(e.message, "bold")]
    lines += [Content.styled(line, "$text-warning") for line in e.excerpt()]
    lines.append(Content(f"Fix it in {short_path(e.path)} and save: {FORMAT_HINT}."))
    rest = [Content.assemble(_mark(c.passed), f" {c.name}") for c in v.criteria if c.name != "diagnosis"]
    lines.append(Content.assemble(Content.styled("The rest of the grade (recorded): ", MUTED),
                                  Content(" · ").join(rest)))
    return Content("\n").join(lines)


class RunPanel(Vertical):
    """Told what happens by its screen; owns no run itself."""

    def compose(self) -> ComposeResult:
        yield Static(id="run-stages")
        yield ProgressBar(id="run-bar", show_eta=False)
        yield Static(id="run-body")
        yield VerdictView(details=False, id="run-verdict")
        yield Static(id="run-account")  # a long grade: where its time went (tutor.stage_clock)

    def on_mount(self) -> None:
        self._kind: RunKind | None = None
        self._started = 0.0
        self._stage: str | None = None
        self._reached = -1  # the furthest of the kind's stages seen so far
        self._timer = self.set_interval(1.0, self._tick, pause=True)
        self._stages = StageClock()
        self.query_one("#run-account").display = False

    def _set_mode(self, mode: str) -> None:
        for name in ("-running", "-passed", "-failed", "-problem", "-idle"):
            self.set_class(name == mode, name)

    def idle(self, text: Content | str, title: str = "") -> None:
        self._stop()
        self._set_mode("-idle")
        self.border_title = title
        self.border_subtitle = ""
        self._body(text)

    def start(self, kind: RunKind, note: str = "") -> None:
        self._kind, self._started, self._stage, self._reached = kind, time.monotonic(), None, -1
        self._stages = StageClock()
        self._set_mode("-running")
        self.border_title = kind.title + (f" · {note}" if note else "")
        self.query_one("#run-bar", ProgressBar).update(total=None, progress=0)
        self._show_stage(None, "", None)
        self._tick()
        self._timer.resume()

    def harness_event(self, event: dict) -> None:
        if self._kind is None:
            return
        if event["type"] == "stage":
            self._stages.stage(event["stage"], event.get("detail", ""))
            self._show_stage(event["stage"], event.get("detail", ""), None)
        elif event["type"] == "progress":
            bar = self.query_one("#run-bar", ProgressBar)
            bar.update(total=event["total"], progress=event["done"])
            self._show_stage(event["stage"], self._detail, (event["done"], event["total"]))

    def _show_stage(self, stage: str | None, detail: str, progress: tuple[int, int] | None) -> None:
        if stage != self._stage and progress is None:
            self.query_one("#run-bar", ProgressBar).update(total=None, progress=0)
        self._stage, self._detail = stage, detail
        # A second process (a memory run) starts over at "importing": the chips keep the furthest stage.
        stages = self._kind.stages
        if stage in stages:
            self._reached = max(self._reached, stages.index(stage))
        shown = stages[self._reached] if self._reached >= 0 else None
        self.query_one("#run-stages", Static).update(stage_chips(stages, shown, progress if stage == shown else None))
        what = f"{stage}: {detail}" if stage and detail else (stage or "")
        self._body(Content.styled(what, MUTED))

    def _tick(self) -> None:
        if self._kind is not None:
            self.border_subtitle = f"{time.monotonic() - self._started:.0f} s · c cancels"

    def _stop(self) -> None:
        self._kind = None
        if hasattr(self, "_timer"):
            self._timer.pause()

    def _body(self, content: Content | str) -> None:
        self.query_one("#run-body", Static).update(content)
        self.query_one("#run-body").display = True
        self.query_one(VerdictView).display = False
        self.query_one("#run-account").display = False

    def verdict(self, v: Verdict, note: str = "") -> None:
        self._stop()
        self._set_mode("-passed" if v.passed else "-failed")
        self.border_title = verdict_title(v) + (f" · {note}" if note else "")
        self.border_subtitle = "r: full results"
        self.query_one("#run-body").display = False
        view = self.query_one(VerdictView)
        view.display = True
        view.show(v)
        self._stages.finish()
        account = self._stages.account()
        self.query_one("#run-account", Static).update(Content.styled(" ".join(account), MUTED))
        self.query_one("#run-account").display = bool(account)

    def quick_check(self, q: QuickCheck, note: str = "") -> None:
        self._stop()
        self._set_mode("-passed" if q.correct and q.tier else "-failed")
        self.border_title = quick_check_title(q) + (f" · {note}" if note else "")
        self.border_subtitle = "g: grade for real"
        self._body(quick_check_lines(q))

    def answer_problem(self, e: AnswerError, v: Verdict) -> None:
        """A grade whose diagnosis failed because answer.toml cannot be read: that first, as a problem."""
        self._stop()
        self._set_mode("-problem")
        self.border_title = f"{e.path.name} cannot be read · {verdict_title(v)}"
        self.border_subtitle = "r: full results"
        self._body(answer_lines(e, v))

    def profile(self, which: str, metrics: ProfileMetrics, trace: str) -> None:
        self._stop()
        self._set_mode("-idle")
        self.border_title = f"Profile of {which}"
        self.border_subtitle = "r: metrics & trace"
        self._body(profile_lines(which, metrics, trace))

    def problem(self, e: TutorError) -> None:
        self._stop()
        self._set_mode("-problem")
        self.border_title = problem_title(e)
        self.border_subtitle = "o: output tail" if e.output_tail else ""
        self._body(problem_lines(e))
