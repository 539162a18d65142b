"""Help: the keys of the screen it was opened from, and how the tutor works; the bottleneck taxonomy;
what this machine has for the puzzles (tutor.doctor, as `infprof-tutor doctor` says it)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical, VerticalScroll
from textual.screen import Screen
from textual import work
from textual.widgets import LoadingIndicator, Markdown, Static

from tutor.app.screens.dialog import Dialog
from tutor.app.threads import show_on_screen

HOW_IT_WORKS = """\
## How it works

1. **Profile** the baseline (`p`): the metrics table and a trace show where the time goes.
2. **Diagnose**: in `answer.toml`, name the bottleneck (an id from the taxonomy, in the command
   palette) and cite metric names with the values *your* profile showed.
3. **Fix** `workload.py` (`e` opens it in `$EDITOR`), keeping `prepare()` and `forward()`.
4. **Grade** (`g`): correctness on fresh inputs, your diagnosis against your profile, and a
   speed-up whose 95% lower bound must clear the tier. Turn on **watch** (`w`) and every save
   runs a quick check: correctness and speed in a few seconds, not recorded (only `g` grades).

Every run is a separate process: a crash, hang or out-of-memory shows here as a panel with the
last lines of its output (`o` shows all of it), never as a crash of the tutor. `c` stops a run.

`ctrl+p` opens the command palette: every action (profiling with each of the puzzle's profilers
too), every puzzle, the taxonomy and the themes.
"""


def _keys(binding: Binding) -> str:
    names = (binding.key_display or binding.key).split(",")
    return " ".join({"question_mark": "?", "escape": "esc"}.get(k, k) for k in names)


class KeyTable(Vertical):
    """A title, then one row per binding: its keys, and what it does (wrapped beside the keys, not under them)."""

    DEFAULT_CSS = """
    KeyTable { height: auto; margin-bottom: 1; }
    KeyTable > .key-title { color: $text-accent; text-style: bold; }
    KeyTable > Grid { grid-size: 2; grid-columns: 12 1fr; grid-rows: auto; height: auto; }
    KeyTable .key { padding-left: 2; color: $text-primary; text-style: bold; }
    """

    def __init__(self, title: str, bindings: list[Binding]) -> None:
        super().__init__()
        self.heading, self.bindings = title, [b for b in bindings if b.description]

    def compose(self) -> ComposeResult:
        yield Static(self.heading, classes="key-title")
        with Grid():
            for b in self.bindings:
                yield Static(_keys(b), classes="key")
                yield Static(b.tooltip or b.description)


class HelpScreen(Dialog):
    """The keys of the screen below (each with what it does), the keys of every screen, how the tutor works."""

    BINDINGS = [Binding("escape,question_mark,q,f1", "dismiss", "Close")]
    DIALOG_TITLE = "Help"

    def __init__(self, below: Screen) -> None:
        super().__init__()
        self.below = below

    def compose_body(self) -> ComposeResult:
        name = getattr(self.below, "HELP_TITLE", "this screen")
        own = [b if isinstance(b, Binding) else Binding(*b) for b in type(self.below).BINDINGS]
        seen = {b.key for b in own}
        everywhere = [b for b in self.app.BINDINGS if isinstance(b, Binding) and b.key not in seen]
        everywhere.append(Binding("ctrl+p", "", "Palette", tooltip="command palette: every action, puzzle, theme"))
        yield KeyTable(f"Keys on {name}", own)
        yield KeyTable("Keys everywhere", everywhere)
        yield Markdown(HOW_IT_WORKS)


class TaxonomyScreen(Dialog):
    """The bottleneck ids a learner can name in answer.toml."""

    DIALOG_TITLE = "Bottleneck taxonomy"
    DIALOG_SUBTITLE = "name one of these in answer.toml"

    def compose_body(self) -> ComposeResult:
        from tutor.taxonomy import bottlenecks

        yield Markdown("\n".join(f"- **`{bid}`** — {meaning}" for bid, meaning in bottlenecks().items()))


FINDING_MARK = {"ok": "✓", "problem": "✗", "note": "•"}


def _finding_item(f) -> str:
    fix = f"\n\n    {f.fix}" if f.fix else ""
    return f"- {FINDING_MARK[f.state]} **{f.area}**: {f.detail}{fix}"


class DoctorScreen(Dialog):
    """What this machine has for each puzzle and how to fix what is missing: `infprof-tutor doctor`'s report."""

    DIALOG_TITLE = "This machine"
    DIALOG_SUBTITLE = "infprof-tutor doctor · escape closes"
    WIDE = True

    def compose_body(self) -> ComposeResult:
        yield LoadingIndicator()

    def on_mount(self) -> None:
        self.diagnose()

    @work(thread=True, exclusive=True, group="doctor")
    def diagnose(self) -> None:
        from tutor.doctor import diagnose

        report = diagnose(list(self.app.puzzles.values()), self.app.machine,
                          self.app.workspace.root if self.app.workspace else None)
        show_on_screen(self, self._show, report)

    def _show(self, report) -> None:
        from tutor.doctor import puzzle_state

        verdict = ("Every puzzle this machine can run is ready." if report.ok else
                   "**Something here stops a puzzle this machine could run**: its fix is under it.")
        text = "\n".join(["## This machine", *map(_finding_item, report.findings), "", "## Puzzles",
                          *(_finding_item(puzzle_state(c)) for c in report.puzzles), "", verdict])
        box = self.query_one(".dialog")
        self.query_one(LoadingIndicator).remove()
        box.mount(VerticalScroll(Markdown(text)))
