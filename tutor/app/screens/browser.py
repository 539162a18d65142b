"""The puzzle browser: every puzzle by level, its status, and whether this machine can run it."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, OptionList

from tutor.app.threads import show_on_screen
from tutor.app.widgets.puzzle_card import PuzzleCard
from tutor.app.widgets.puzzle_list import PuzzleList, PuzzleListHeader
from tutor.machine import Machine, readiness
from tutor.progress import PuzzleStatus


class BrowserScreen(Screen):
    CSS_PATH = "browser.tcss"
    HELP_TITLE = "the puzzle list"
    BINDINGS = [
        Binding("enter", "open", "Open", tooltip="open the highlighted puzzle"),
        Binding("g", "open('grade')", "Grade", tooltip="open the puzzle and grade your files"),
        Binding("p", "open('profile-baseline')", "Profile", tooltip="open the puzzle and profile its baseline"),
        Binding("r", "results", "Results", tooltip="the puzzle's verdict, metrics and history"),
        Binding("m", "app.doctor", "Machine", tooltip="what this machine has for each puzzle (infprof-tutor doctor)"),
        Binding("d", "app.diagnose", "Diagnose", tooltip="your own workload, after the puzzles (infprof-tutor "
                "diagnose)"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.statuses: dict[str, PuzzleStatus] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="puzzles", classes="panel") as box:
            box.border_title = "Puzzles"
            yield PuzzleListHeader(id="columns")
            yield PuzzleList(list(self.app.puzzles.values()), id="puzzle-list")
        yield PuzzleCard(id="card", classes="panel")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.watch(self.app, "machine", self._show_readiness)
        self.load_statuses()
        self._warn_about_broken_puzzles()

    def on_screen_resume(self) -> None:
        self.load_statuses()

    @property
    def puzzle_list(self) -> PuzzleList:
        return self.query_one(PuzzleList)

    @work(thread=True, exclusive=True, group="statuses")
    def load_statuses(self) -> None:
        from tutor.progress import Progress
        from tutor.progress_summary import summarize

        progress = Progress(self.app.workspace.db_path)
        statuses = {p: progress.status(p) for p in self.app.puzzles}
        machine, puzzles = self.app.machine, list(self.app.puzzles.values())
        summary = summarize(progress, puzzles, {p.id: bool(machine) and readiness(p, machine).ok for p in puzzles},
                            statuses)
        show_on_screen(self, self._show_statuses, statuses, summary)

    def _show_statuses(self, statuses: dict[str, PuzzleStatus], summary=None) -> None:
        self.statuses = statuses
        if summary is not None:  # the whole curriculum in a line, under the list (`infprof-tutor progress`)
            tiers = " · ".join(f"{n} {tier}" for tier, n in summary.tiers.items() if n)
            upcoming = f" · next: {summary.next_puzzle.id}" if summary.next_puzzle else ""
            self.query_one("#puzzles").border_subtitle = (f"solved {summary.solved}/{summary.total}"
                                                          + (f" · {tiers}" if tiers else "") + upcoming)
        self.puzzle_list.show(statuses=statuses)
        self._update_card()

    def _show_readiness(self, machine: Machine | None) -> None:
        if machine is not None:
            self.puzzle_list.show(readiness={p.id: readiness(p, machine) for p in self.app.puzzles.values()})
            self._update_card()

    def _warn_about_broken_puzzles(self) -> None:
        from tutor.catalog import catalog_problems

        for problem in catalog_problems():
            self.notify(problem.message, title="A puzzle was skipped", severity="warning", timeout=10)

    @on(OptionList.OptionHighlighted)
    def _update_card(self) -> None:
        pid = self.puzzle_list.highlighted_id
        puzzle = self.app.puzzles.get(pid) if pid else None
        self.query_one(PuzzleCard).show(puzzle, self.statuses.get(pid), self.puzzle_list.readiness.get(pid))

    @on(OptionList.OptionSelected)
    def _selected(self) -> None:
        self.action_open()

    def action_open(self, start: str | None = None) -> None:
        pid = self.puzzle_list.highlighted_id
        if pid:
            self.app.open_puzzle(pid, start)

    def action_results(self) -> None:
        from tutor.app.screens.results import ResultsScreen

        pid = self.puzzle_list.highlighted_id
        if pid:
            self.app.push_screen(ResultsScreen(self.app.puzzles[pid]))
