"""Help: the keys of the screen it was opened from, and how the tutor works; the bottleneck taxonomy."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.content import Content
from textual.widgets import Footer, Markdown, Static

HOW_IT_WORKS = """\
## How it works

1. **Profile** the baseline (`p`): the metrics table and a trace show where the time goes.
2. **Diagnose**: in `answer.toml`, name the bottleneck (an id from the taxonomy, in the command
   palette) and cite metric names with the values *your* profile showed.
3. **Fix** `workload.py` (`e` opens it in `$EDITOR`), keeping `prepare()` and `forward()`.
4. **Grade** (`g`): correctness on fresh inputs, your diagnosis against your profile, and a
   speed-up whose 95% lower bound must clear the tier. Turn on **watch** (`w`) and every save
   re-grades.

Every run is a separate process: a crash, hang or out-of-memory shows here as a panel with the
last lines of its output (`o` shows all of it), never as a crash of the tutor. `c` stops a run.

`ctrl+p` opens the command palette: every action, every puzzle, the taxonomy and the themes.
"""


KEY_WIDTH = 10


def _keys(binding: Binding) -> str:
    names = (binding.key_display or binding.key).split(",")
    return " ".join({"question_mark": "?", "escape": "esc"}.get(k, k) for k in names)


def key_lines(title: str, bindings: list[Binding]) -> Content:
    lines = [Content.styled(title, "bold $text-accent")]
    for b in bindings:
        if b.description:
            lines.append(Content.assemble(("  " + _keys(b).ljust(KEY_WIDTH), "bold $text-primary"),
                                          b.tooltip or b.description))
    return Content("\n").join(lines)


class HelpScreen(ModalScreen):
    CSS_PATH = "modal.tcss"
    BINDINGS = [Binding("escape,question_mark,q,f1", "dismiss", "Close")]

    def __init__(self, below: Screen) -> None:
        super().__init__()
        self.below = below

    def compose(self) -> ComposeResult:
        name = getattr(self.below, "HELP_TITLE", "this screen")
        own = [b if isinstance(b, Binding) else Binding(*b) for b in type(self.below).BINDINGS]
        seen = {b.key for b in own}
        everywhere = [b for b in self.app.BINDINGS if isinstance(b, Binding) and b.key not in seen]
        everywhere.append(Binding("ctrl+p", "", "Palette", tooltip="command palette: every action, puzzle, theme"))
        with VerticalScroll(classes="dialog") as box:
            box.border_title = "Help"
            box.border_subtitle = "escape closes"
            yield Static(key_lines(f"Keys on {name}", own), classes="keys")
            yield Static(key_lines("Keys everywhere", everywhere), classes="keys")
            yield Markdown(HOW_IT_WORKS)
        yield Footer(compact=True)


class TaxonomyScreen(ModalScreen):
    """The bottleneck ids a learner can name in answer.toml."""

    CSS_PATH = "modal.tcss"
    BINDINGS = [Binding("escape,q", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        from tutor.taxonomy import bottlenecks

        text = "\n".join(f"- **`{bid}`** — {meaning}" for bid, meaning in bottlenecks().items())
        with VerticalScroll(classes="dialog") as box:
            box.border_title = "Bottleneck taxonomy"
            box.border_subtitle = "name one of these in answer.toml"
            yield Markdown(text)
        yield Footer(compact=True)
