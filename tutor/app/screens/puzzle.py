"""One puzzle: its brief, the files to edit, and the runs (grade, quick check, profile) with their progress and outcome.

Runs happen in a thread worker through tutor.app.runs (tutor.actions underneath);
harness events come back as messages. Watch mode runs a quick check (correctness
and a short timing, nothing recorded) on every save of an editable file, like
rustlings; `g` grades for real. Leaving the screen cancels a run in progress.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Header, Markdown, Static

from tutor.app.messages import EditFile, FilesSaved, HarnessEvent, RunFinished
from tutor.app.runs import RunKind, execute, preflight, run_kind
from tutor.app.threads import show_on_screen
from tutor import calibration
from tutor.brief import grading_markdown, hints_markdown, story_markdown
from tutor.app.widgets.files import EditableFiles
from tutor.app.widgets.puzzle_card import harness_line, readiness_line, status_line
from tutor.app.widgets.run_panel import RunPanel
from tutor.catalog import Puzzle
from tutor.editor import editor_command
from tutor.errors import TutorError
from tutor.formatting import in_workspace, short_path
from tutor.machine import readiness
from tutor.saves import saves_async


class PuzzleScreen(Screen):
    CSS_PATH = "puzzle.tcss"
    HELP_TITLE = "a puzzle"
    BINDINGS = [
        Binding("g", "run('grade')", "Grade", tooltip="check, time and grade your files"),
        Binding("p", "run('profile-baseline')", "Profile", tooltip="profile the baseline: metrics and a trace"),
        Binding("P", "run('profile-mine')", "Profile mine", show=False, tooltip="profile your workload.py"),
        Binding("c", "cancel", "Cancel", tooltip="stop the run (the workload process is killed)"),
        Binding("w", "toggle_watch", "Watch", tooltip="watch mode: every save re-checks (not a grade)"),
        Binding("h", "hint", "Hint", tooltip="reveal the next hint (recorded)"),
        Binding("s", "study", "Study",
                tooltip="no GPU? the baseline as profiled on its GPU; s again checks your diagnosis against it"),
        Binding("v", "review", "Review", show=False,
                tooltip="good solutions beside yours: once you have a tier, or after every hint"),
        Binding("e", "edit", "Edit", tooltip="open the highlighted file in $EDITOR (enter does too)"),
        Binding("r", "results", "Results", tooltip="verdict, metrics, kernels, history, the trace"),
        Binding("o", "output", "Output", show=False, tooltip="the full output tail of a failed run"),
        Binding("escape", "back", "Back", tooltip="back to the puzzle list (cancels a run)"),
        Binding("q", "app.quit", "Quit", show=False, tooltip="quit"),
    ]

    running: reactive[RunKind | None] = reactive(None, init=False)
    watching: reactive[bool] = reactive(False, init=False)

    def __init__(self, puzzle: Puzzle, start: str | None = None) -> None:
        super().__init__()
        self.puzzle, self.start = puzzle, start
        self.ws = self.app.workspace
        self._harness = None
        self.watcher_running = False  # watch mode's watcher has started: saves are seen from then on
        self._cancel_requested = False
        self._rerun_after_cancel = False
        self._check_after_run = False  # a save while a grade or profile ran: check once it ends
        self._last_problem: TutorError | None = None
        self._last_kind = "grade"
        self._next: str | None = None  # solved at gold: the puzzle to take next, in words
        self._watch_stop = None
        self.runs_started = self.runs_finished = 0  # a run can start and end between two looks at `running`

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with VerticalScroll(id="brief", classes="panel") as brief:
                brief.border_title = "Brief"
                yield Markdown(story_markdown(self.puzzle), id="story")
                yield Markdown(grading_markdown(self.puzzle), id="grading")
                yield Markdown(hints_markdown(self.puzzle, 0), id="hints")
            with Vertical(id="side"):
                files = EditableFiles(self.ws, self.puzzle, id="files", classes="panel")
                files.border_title = "Your files"
                files.border_subtitle = short_path(self.ws.puzzle_dir(self.puzzle))
                yield files
                standing = Static(id="standing", classes="panel")
                standing.border_title = "Where you stand"
                yield standing
        yield RunPanel(id="run")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.title = f"{self.puzzle.id} · {self.puzzle.title}"
        self.sub_title = f"level {self.puzzle.level}"
        self.query_one(RunPanel).idle(self._idle_text())
        self.query_one("#files").focus()
        self.watch(self.app, "machine", lambda _: self._machine_known())
        self.watch(self.app, "harness", lambda _: self.load_standing(), init=False)
        self.load_standing(show_last=True)
        if self.start:
            self.call_after_refresh(self.action_run, self.start)

    def on_unmount(self) -> None:
        self._cancel_run()
        self._stop_watching()

    # -- what the learner has on record ------------------------------------------------------------

    def _machine_known(self) -> None:
        self.load_standing()
        self.refresh_bindings()
        if not self._runs_here() and self.running is None:
            self.query_one(RunPanel).idle(self._idle_text())

    def _idle_text(self) -> Content:
        if not self._runs_here():
            why = readiness(self.puzzle, self.app.machine).why
            study = (" [b]s[/b] studies the baseline as profiled on its GPU ·"
                     if self.puzzle.hardware.device == "cuda" else "")
            return Content.assemble(("Cannot run here. ", "bold"), why, "\n",
                                    Content.from_markup(f"{study} [b]h[/b] a hint · [b]e[/b] edit a file"))
        if self._next is not None:  # solved at gold: what is next, not how to start
            return Content.from_markup(f"[b]Solved at gold.[/b] {self._next} · [b]escape[/b] back to the puzzles")
        return Content.from_markup(
            "[b]g[/b] grade your files · [b]p[/b] profile the baseline · [b]P[/b] profile yours · "
            "[b]w[/b] watch: re-check on every save · [b]e[/b] edit the highlighted file")

    @work(thread=True, exclusive=True, group="standing")
    def load_standing(self, show_last: bool = False) -> None:
        from tutor.records import load_record
        from tutor.progress import Progress

        progress = Progress(self.ws.db_path)
        status, hints = progress.status(self.puzzle.id), progress.hints_revealed(self.puzzle.id)
        record = load_record(self.ws, self.puzzle) if show_last else None
        machine = self.app.machine
        # What the tiers mean on this card: the puzzle's calibration here (tutor.calibration), where it runs here.
        tiers_here = calibration.line_here(progress, self.puzzle, machine, short=True) if machine else ""
        if status.tier == "gold":
            from tutor.progress_summary import after_gold

            puzzles = list(self.app.puzzles.values())
            self._next = after_gold(progress, puzzles, {p.id: bool(machine) and readiness(p, machine).ok
                                                        for p in puzzles}, self.puzzle.id)[1]
        show_on_screen(self, self._show_standing, status, hints, record, tiers_here)

    def _show_standing(self, status, hints: int, record, tiers_here: str = "") -> None:
        ready = readiness(self.puzzle, self.app.machine) if self.app.machine else None
        watch = (Content.styled("● watching: every save re-checks", "$text-accent") if self.watching
                 else Content.styled("○ watch off (w)", "$foreground-muted"))
        following = [Content.styled(self._next, "$text-success")] if self._next else []
        self.query_one("#standing", Static).update(Content("\n").join([
            status_line(status, "\n"), *following,
            Content.styled(f"hints {hints}/{len(self.puzzle.hints)}", "$foreground-muted"),
            readiness_line(ready), *([Content.styled(tiers_here, "$foreground-muted")] if tiers_here else []),
            watch, harness_line(self.app.harness)]))
        self.query_one("#hints", Markdown).update(hints_markdown(self.puzzle, hints))
        if record is not None and self.running is None:
            self._show_last(record)

    def _show_last(self, record) -> None:
        panel = self.query_one(RunPanel)
        latest = record.latest
        if latest is not None and latest.failure:
            panel.idle(Content.assemble(("Your last attempt did not finish: ", "bold"), latest.failure, "\n",
                                        self._idle_text()), title="Last attempt")
        elif record.verdict is not None:
            panel.verdict(record.verdict, note="last attempt")

    # -- runs ---------------------------------------------------------------------------------------

    def _runs_here(self) -> bool:
        """Whether this machine can run the puzzle (True until the machine is known: the run itself would say)."""
        return self.app.machine is None or readiness(self.puzzle, self.app.machine).ok

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The footer offers what works here: grading, profiling and watching where the puzzle runs, study where it
        # does not (a GPU puzzle without its GPU); the readiness line in "Where you stand" says why.
        if action in ("run", "toggle_watch") and not self._runs_here():
            return None  # shown greyed: it cannot run here
        if action == "study":
            return not self._runs_here() and self.puzzle.hardware.device == "cuda"
        if action == "run":
            return self.running is None
        if action == "cancel":
            return self.running is not None
        if action == "output":
            return bool(self._last_problem and self._last_problem.output_tail)
        return True

    def watch_running(self) -> None:
        self.refresh_bindings()

    def action_run(self, key: str, note: str = "") -> None:
        if self.running is not None:
            self.notify("A run is in progress: c cancels it.", severity="warning")
            return
        kind = run_kind(key, self.puzzle)
        problem = preflight(kind, self.puzzle, self.app.machine)
        if problem is not None:
            self._show_problem(problem)
            return
        self._cancel_requested, self._harness, self._last_kind = False, None, key
        self.running = kind
        self.runs_started += 1
        self.query_one(RunPanel).start(kind, note)
        self._run(kind)

    @work(thread=True, group="run")
    def _run(self, kind: RunKind) -> None:
        try:
            result = execute(kind, self.ws, self.puzzle, lambda e: self.post_message(HarnessEvent(e)), self._register,
                             watching=self.watching)
        except TutorError as e:
            self.post_message(RunFinished(kind.key, error=e))
        else:
            self.post_message(RunFinished(kind.key, result=result))

    def _register(self, harness) -> None:
        """Called from the worker thread as the subprocess is created."""
        self._harness = harness
        if self._cancel_requested:
            harness.cancel()

    @on(HarnessEvent)
    def _harness_event(self, message: HarnessEvent) -> None:
        if self._cancel_requested and self._harness is not None:
            self._harness.cancel()  # a cancel that raced the spawn: the child is surely there now
            return
        self.query_one(RunPanel).harness_event(message.event)

    @on(RunFinished)
    def _run_finished(self, message: RunFinished) -> None:
        self.running = None
        self.runs_finished += 1
        self._harness = None
        panel = self.query_one(RunPanel)
        error = message.error
        if error is not None and getattr(error, "kind", "") == "cancelled":
            if self._rerun_after_cancel:
                self._rerun_after_cancel = False
                self.action_run("check", note="after your save")
                return
            panel.idle(Content.assemble(("Run cancelled; the workload process was stopped.\n", "bold"),
                                        self._idle_text()), title="Cancelled")
        elif error is not None:
            self._show_problem(error)
        elif message.kind_key == "grade":
            self._last_problem = None
            graded = message.result
            if graded.answer is not None:
                panel.answer_problem(graded.answer, graded.verdict)
            else:
                panel.verdict(graded.verdict)
        elif message.kind_key == "check":
            self._last_problem = None
            panel.quick_check(message.result)
        else:
            self._last_problem = None
            outcome = message.result
            panel.profile(run_kind(message.kind_key, self.puzzle).which, outcome.metrics,
                          in_workspace(outcome.trace_path, self.ws.root))
        self.refresh_bindings()
        self.load_standing()
        self.query_one(EditableFiles).refresh_files()
        self._refresh_results_screens()
        if self._check_after_run and self.watching:
            self.notify("Now checking what you saved during that run; r shows that run's outcome.",
                        title="Watch mode")
            self.action_run("check", note="after your save")
        self._check_after_run = False

    def _refresh_results_screens(self) -> None:
        from tutor.app.screens.results import ResultsScreen

        for screen in self.app.screen_stack:
            if isinstance(screen, ResultsScreen) and screen.puzzle.id == self.puzzle.id:
                screen.load()

    def _show_problem(self, error: TutorError) -> None:
        self._last_problem = error
        self.query_one(RunPanel).problem(error)
        self.refresh_bindings()

    def action_cancel(self) -> None:
        if self.running is None:
            return
        self._cancel_run()
        self.query_one(RunPanel).border_subtitle = "cancelling…"

    def _cancel_run(self) -> None:
        if self.running is None:
            return
        self._cancel_requested = True
        if self._harness is not None:
            self._harness.cancel()

    def action_output(self) -> None:
        from tutor.app.screens.output import OutputScreen

        if self._last_problem and self._last_problem.output_tail:
            self.app.push_screen(OutputScreen(self._last_problem))

    def action_results(self) -> None:
        from tutor.app.screens.results import ResultsScreen

        tab = "metrics" if self._last_kind.startswith("profile") else "verdict"
        self.app.push_screen(ResultsScreen(self.puzzle, tab=tab))

    def action_back(self) -> None:
        if self.running is not None:
            self.notify(f"Cancelled the run of {self.puzzle.id}.")
        self.app.pop_screen()

    # -- hints and files -----------------------------------------------------------------------------

    def action_hint(self) -> None:
        from tutor.actions import reveal_hint

        hint = reveal_hint(self.ws, self.puzzle)
        if hint is None:
            self.notify("All hints are out. The story and your profile are next.", title="No more hints")
        self.load_standing()
        self.call_after_refresh(self.query_one("#brief").scroll_end)

    def action_study(self) -> None:
        """Open the puzzle's recordings as the baseline's profiles; once done, check the diagnosis against them."""
        from tutor.errors import TutorError
        from tutor.study import grade_diagnosis, recorded_card, recorded_profilers, study

        try:
            opened = self.ws.runs_dir.glob(f"*-{self.puzzle.id}-study-*")
            if not any(opened):
                for profiler in recorded_profilers(self.puzzle):
                    study(self.ws, self.puzzle, profiler)
                self.notify(f"The baseline as profiled on {recorded_card(self.puzzle)} is in Results (r). Write "
                            "answer.toml, then s checks your diagnosis against it.", title="Study mode")
                return
            criterion = grade_diagnosis(self.ws, self.puzzle).criteria[0]
        except TutorError as e:
            self.notify(f"{e.message} {e.advice}", title="Study mode", severity="warning")
            return
        self.notify("\n".join([criterion.summary, *criterion.details[:3]]), timeout=12,
                    title="Diagnosed (from the recording)" if criterion.passed else "Not diagnosed yet",
                    severity="information" if criterion.passed else "warning")
        self.load_standing()

    def action_review(self, early: bool = False) -> None:
        from tutor.app.screens.review import OpenEarly, ReviewScreen
        from tutor.review import ReviewLocked, open_review

        try:
            review = open_review(self.ws, self.puzzle, early)
        except ReviewLocked as locked:
            self.app.push_screen(OpenEarly(locked.message),
                                 lambda yes: self.action_review(early=True) if yes else None)
            return
        self.app.push_screen(ReviewScreen(review))

    def action_edit(self, name: str | None = None) -> None:
        files = self.query_one(EditableFiles)
        path = self.ws.editable_path(self.puzzle, name) if name else files.selected_path
        self.post_message(EditFile(path))

    @on(EditFile)
    def _edit(self, message: EditFile) -> None:
        command = editor_command()
        if command is None:
            self.notify(f"Set $EDITOR to edit from here, or open {message.path} in any editor.",
                        title="No editor", severity="warning", timeout=8)
            return
        try:
            with self.app.suspend():
                subprocess.run([*command, str(message.path)])
        except Exception as e:  # no terminal to hand over (e.g. a web driver), or the editor is not found
            self.notify(f"Could not run {command[0]}: {e}. The file is {message.path}", severity="error")
        self.query_one(EditableFiles).refresh_files()

    # -- watch mode ------------------------------------------------------------------------------------

    def action_toggle_watch(self) -> None:
        if self.watching:
            self._stop_watching()
            self.notify("Watch mode off.")
        elif self.puzzle.no_quick_check:
            self.notify(f"{self.puzzle.no_quick_check} Watch mode re-checks on every save: g grades it.",
                        title="Nothing to watch", severity="warning")
            return
        else:
            import asyncio

            self._watch_stop = asyncio.Event()
            self.watching = True
            self._watch_files()
            self.notify(f"Watching {', '.join(self.puzzle.editable)}: every save runs a quick check "
                        "(correctness and speed, not recorded); g grades.", title="Watch mode")
        self.load_standing()

    def _stop_watching(self) -> None:
        if self._watch_stop is not None:
            self._watch_stop.set()
            self._watch_stop = None
            # Its keeper's ruler holds a process, and on a GPU the GPU, that no check will ask again: ended off the
            # UI thread (a keeper in the middle of a check answers after it).
            from tutor.warm import RulerKeeper

            root, puzzle_id = self.ws.root, self.puzzle.id
            threading.Thread(target=lambda: RulerKeeper.for_puzzle(root, puzzle_id).stop(), daemon=True).start()
        self.watching = self.watcher_running = False

    @work(exclusive=True, group="watch")
    async def _watch_files(self) -> None:
        async for saved in saves_async(self.ws, self.puzzle, self._watch_stop, self._watcher_runs):
            self.post_message(FilesSaved(saved))

    def _watcher_runs(self) -> None:
        self.watcher_running = True  # every save from now on is seen

    @on(FilesSaved)
    def _files_saved(self, message: FilesSaved) -> None:
        self.query_one(EditableFiles).refresh_files()
        if not self.watching:
            return
        saved = ", ".join(p.name for p in message.paths)
        if self.running is None:
            self.action_run("check", note=f"after your save of {saved}")
        elif self.running.key == "check":
            self._rerun_after_cancel = True  # the check in progress runs stale code: restart it
            self._cancel_run()
        else:
            self._check_after_run = True  # a grade or profile the learner asked for runs to its end
