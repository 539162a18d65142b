"""The learner's attempts over time: speed-up (with its 95% lower bound and the tier lines) and their time."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from tutor.catalog import Puzzle
from tutor.records import Attempt


def how_to_attempt(puzzle: Puzzle, machine) -> str:
    """What makes an attempt of this puzzle on this machine: a grade where it runs, study mode where it does not."""
    from tutor.machine import readiness

    if machine is not None and not readiness(puzzle, machine).ok and puzzle.hardware.device == "cuda":
        return "this machine cannot run it; s on the puzzle studies the baseline as profiled on its GPU."
    return "g on the puzzle grades your files."


class AttemptsPlot(Vertical):
    """Two textual-plotext plots over attempt numbers; failed runs are counted, not plotted."""

    DEFAULT_CSS = """
    AttemptsPlot { height: 1fr; }
    AttemptsPlot > .attempts-head { height: auto; }
    AttemptsPlot > PlotextPlot { height: 1fr; min-height: 6; }
    """

    def compose(self) -> ComposeResult:
        from textual_plotext import PlotextPlot

        yield Static(classes="attempts-head")
        yield PlotextPlot(id="speedup-plot")
        yield PlotextPlot(id="time-plot")

    def show(self, puzzle: Puzzle, attempts: list[Attempt], machine=None) -> None:
        from textual_plotext import PlotextPlot

        head = self.query_one(".attempts-head", Static)
        timed = [a for a in attempts if a.speedup is not None]
        failed = len(attempts) - len(timed)
        for plot in self.query(PlotextPlot):
            plot.display = bool(timed)
        if not timed:
            head.update(f"No graded attempts yet: {how_to_attempt(puzzle, machine)}" +
                        (f" ({failed} attempt(s) did not finish.)" if failed else ""))
            return
        best = max(timed, key=lambda a: a.speedup)
        head.update(f"{len(attempts)} attempt(s), best {best.speedup:.2f}x (#{best.number})"
                    + (f", {failed} did not finish" if failed else ""))

        vs = puzzle.tiers[0].vs
        plt = self.query_one("#speedup-plot", PlotextPlot).plt
        plt.clear_figure()
        x = [a.number for a in timed]
        plt.plot(x, [a.speedup for a in timed], marker="braille", label="median")
        plt.scatter(x, [a.speedup_low or 0 for a in timed], marker="dot", label="95% low")
        tiers = [t for t in puzzle.tiers if t.vs == vs]
        for tier in tiers:
            plt.hline(tier.min_speedup)
        top = max(max(a.speedup for a in timed), *(t.min_speedup for t in tiers)) * 1.1
        labelled = spaced_ticks(tiers, top)
        plt.yticks([t.min_speedup for t in labelled], [f"{t.name} {t.min_speedup:g}x" for t in labelled])
        plt.title(f"speed-up vs {vs} per attempt")
        if len(x) <= 12:
            plt.xticks(x)
        plt.ylim(0, top)

        plt = self.query_one("#time-plot", PlotextPlot).plt
        plt.clear_figure()
        mine = [(a.number, a.mine_ms) for a in timed if a.mine_ms is not None]
        plt.plot([n for n, _ in mine], [ms for _, ms in mine], marker="braille")
        plt.title("your median time per forward() (ms)")
        if len(x) <= 12:
            plt.xticks(x)
        for plot in self.query(PlotextPlot):
            plot.refresh()


def spaced_ticks(tiers, top: float, gap: float = 0.25) -> list:
    """The tier lines that get a label: the highest first, then each at least `gap` of the axis below the last.

    The tier lines are the only ticks, so each says which tier it is; two ticks on one row of a short plot
    would show either label at random (plotext's choice), so a line too close to a higher one stays unlabelled.
    """
    kept = []
    for tier in sorted(tiers, key=lambda t: -t.min_speedup):
        if not kept or kept[-1].min_speedup - tier.min_speedup >= gap * top:
            kept.append(tier)
    return kept
