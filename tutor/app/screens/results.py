"""Results of one puzzle: the latest verdict, the profiles' metrics and kernels, baseline vs mine, the history.

The profile tabs show one profiler's profiles at a time (torch, ncu, nsys: their
metrics differ), the most recently used first; `f` moves to the next one on record.
"""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Header, Static, TabbedContent, TabPane

from tutor.app.threads import show_on_screen
from tutor.app.widgets.attempts_plot import AttemptsPlot, how_to_attempt
from tutor.app.widgets.kernels import KernelsView, KernelTable
from tutor.app.widgets.metrics import CompareView, ProfileView, TraceView, how_to_open
from tutor.app.widgets.verdict import VerdictView, verdict_title
from tutor.catalog import Puzzle
from tutor.profilers.registry import opener_for, profiler_name
from tutor.records import ProfileRecord, PuzzleRecord, load_record

TABS = ("verdict", "metrics", "kernels", "compare", "history", "trace")


class ResultsScreen(Screen):
    CSS_PATH = "results.tcss"
    HELP_TITLE = "the results"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", tooltip="back to the puzzle"),
        Binding("t", "switch_profile", "Baseline/mine", tooltip="show the baseline or your profile (Metrics, Kernels, Trace)"),
        Binding("f", "next_profiler", "Profiler", tooltip="show the next profiler's profiles (torch, ncu, nsys)"),
        Binding("s", "sort", "Sort", tooltip="sort the kernel table by the next column (or click a header)"),
        Binding("y", "copy_command", "Copy open cmd", tooltip="copy the line that opens the trace or report"),
        *(Binding(str(i), f"show_tab('{tab}')", tab.capitalize(), show=False, tooltip=f"the {tab} tab")
          for i, tab in enumerate(TABS, 1)),
        Binding("q", "app.quit", "Quit", show=False, tooltip="quit"),
    ]

    which: reactive[str] = reactive("baseline", init=False)  # the profile Metrics, Kernels and Trace show
    profiler: reactive[str] = reactive("", init=False)  # whose profiles the profile tabs show

    def __init__(self, puzzle: Puzzle, tab: str = "verdict") -> None:
        super().__init__()
        self.puzzle, self.first_tab = puzzle, tab
        self.record = PuzzleRecord()

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(initial=self.first_tab):
            with TabPane("1 Verdict", id="verdict"):
                with VerticalScroll():
                    yield Static(id="verdict-head")
                    yield VerdictView(details=True)
            with TabPane("2 Metrics", id="metrics"):
                yield ProfileView()
            with TabPane("3 Kernels", id="kernels"):
                yield KernelsView()
            with TabPane("4 Compare", id="compare"):
                yield CompareView()
            with TabPane("5 History", id="history"):
                yield AttemptsPlot()
            with TabPane("6 Trace", id="trace"):
                yield TraceView()
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.title = f"{self.puzzle.id} · results"
        self.load()

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        record = load_record(self.app.workspace, self.puzzle)
        show_on_screen(self, self._show, record)

    def _show(self, record: PuzzleRecord) -> None:
        self.record = record
        on_record = record.profilers()
        if self.profiler not in on_record:
            self.set_reactive(ResultsScreen.profiler, (on_record or self.puzzle.profilers)[0])
        self._show_verdict()
        self._show_profile()
        self.query_one(AttemptsPlot).show(self.puzzle, record.attempts, self.app.machine)
        self.refresh_bindings()

    def _show_verdict(self) -> None:
        record, head = self.record, self.query_one("#verdict-head", Static)
        lines = []
        latest = record.latest
        if latest is None:
            lines.append(Content(f"No attempts yet: {how_to_attempt(self.puzzle, self.app.machine)}"))
        elif latest.failure:
            lines.append(Content.assemble(("Your last attempt did not finish: ", "bold $text-error"), latest.failure))
            if record.verdict:
                lines.append(Content.styled("The last one that did:", "$foreground-muted"))
        if record.verdict:
            v = record.verdict
            style = "bold $text-success" if v.passed else "bold $text-warning"
            lines.append(Content.styled(verdict_title(v), style))
        head.update(Content("\n").join(lines))
        self.query_one(VerdictView).show(record.verdict)

    @property
    def shown_profile(self) -> ProfileRecord | None:
        """The profile the Metrics, Kernels and Trace tabs show (None when there is none on record)."""
        return self.record.profile(self.which, self.profiler)

    def _show_profile(self) -> None:
        profile, root = self.shown_profile, self.app.workspace.root
        self.query_one(ProfileView).show(profile, self.which, root, self.profiler)
        self.query_one(KernelsView).show(profile, self.which, self.profiler)
        self.query_one(TraceView).show(profile, self.which, root, self.profiler)
        self.query_one(CompareView).show(self.record.profile("baseline", self.profiler),
                                         self.record.profile("mine", self.profiler), self.profiler)
        self.refresh_bindings()

    def watch_which(self) -> None:
        self._show_profile()

    def watch_profiler(self) -> None:
        self._show_profile()

    @on(TabbedContent.TabActivated)
    def _tab_changed(self) -> None:
        self.refresh_bindings()

    @property
    def tab(self) -> str:
        return self.query_one(TabbedContent).active

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if not self.is_mounted:
            return True
        profile = self.shown_profile
        if action == "switch_profile":
            return self.tab in ("metrics", "kernels", "trace")
        if action == "next_profiler":
            return self.tab in ("metrics", "kernels", "compare", "trace") and len(self.record.profilers()) > 1
        if action == "sort":
            return self.tab == "kernels" and bool(profile and profile.metrics.kernels)
        if action == "copy_command":
            return self.tab in ("metrics", "trace") and profile is not None
        return True

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def action_switch_profile(self) -> None:
        self.which = "mine" if self.which == "baseline" else "baseline"
        self.notify(f"Showing the {self.which} profile.", timeout=2)

    def action_next_profiler(self) -> None:
        on_record = self.record.profilers()
        if on_record:
            at = on_record.index(self.profiler) if self.profiler in on_record else -1
            self.profiler = on_record[(at + 1) % len(on_record)]
            self.notify(f"Showing the profiles by {profiler_name(self.profiler)}.", timeout=2)

    def action_sort(self) -> None:
        title = self.query_one(KernelTable).next_sort()
        self.notify(f"Kernels sorted by {title}.", timeout=2)

    def action_copy_command(self) -> None:
        profile = self.shown_profile
        if profile is not None:
            opener = opener_for(profile.profiler, profile.recorded)
            self.app.copy_to_clipboard(how_to_open(profile)[2])
            self.notify(f"Copied the command that opens the {opener.noun} in {opener.viewer}.", timeout=3)
