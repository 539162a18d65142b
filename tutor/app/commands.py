"""What the command palette (ctrl+p) offers: the app's commands, after those of the screen shown."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Iterable

from textual.app import SystemCommand

from tutor.profilers.registry import PROFILERS, opener_for, profiler_name

if TYPE_CHECKING:
    from tutor.app.app import InfprofApp
    from tutor.app.screens.puzzle import PuzzleScreen
    from tutor.app.screens.results import ResultsScreen


def app_commands(app: InfprofApp) -> Iterable[SystemCommand]:
    if app.workspace is not None:
        for p in app.puzzles.values():
            yield SystemCommand(f"Open {p.id}", p.title, partial(app.open_puzzle, p.id))
            yield SystemCommand(f"Grade {p.id}", "check, time and grade your solution", partial(app.open_puzzle, p.id, "grade"))
            yield SystemCommand(f"Profile {p.id} baseline", "profile the baseline: metrics and a trace",
                                partial(app.open_puzzle, p.id, "profile-baseline"))
    yield SystemCommand("Help", "Keys and how the tutor works", app.action_help)
    yield SystemCommand("Bottleneck taxonomy", "The ids you can name in answer.toml", app.action_taxonomy)
    yield SystemCommand("This machine (doctor)", "What this machine has for each puzzle, and how to fix what is "
                        "missing", app.action_doctor)


def puzzle_commands(screen: PuzzleScreen) -> Iterable[SystemCommand]:
    p = screen.puzzle.id
    yield SystemCommand("Grade", f"check, time and grade your {p} files (g)", lambda: screen.action_run("grade"))
    yield from _profile_commands(screen)
    if screen.running is not None:
        yield SystemCommand("Cancel the run", "stop the workload process (c)", screen.action_cancel)
    yield SystemCommand("Quick check", "correctness and speed now, not recorded (what watch mode runs)",
                        lambda: screen.action_run("check"))
    yield SystemCommand("Watch mode on/off", "a quick check on every save (w)", screen.action_toggle_watch)
    yield SystemCommand("Reveal a hint", "the next hint, recorded (h)", screen.action_hint)
    for name in screen.puzzle.editable:
        yield SystemCommand(f"Edit {name}", f"open {p}/{name} in $EDITOR", lambda n=name: screen.action_edit(n))
    yield SystemCommand("Results", "verdict, metrics, kernels, history (r)", screen.action_results)
    yield SystemCommand("Study mode", "no GPU? open the baseline as profiled on its GPU, then check your "
                        "diagnosis against it (s)", screen.action_study)
    yield SystemCommand("Review", "the reference and honest alternatives beside your code, once solved (v)",
                        screen.action_review)


def _profile_commands(screen: PuzzleScreen) -> Iterable[SystemCommand]:
    """Profile the baseline or mine with each profiler the puzzle lists; one not installed says so."""
    first = screen.puzzle.profilers[0]
    for profiler in screen.puzzle.profilers:
        record = PROFILERS[profiler]  # the catalog admits only profilers the registry has
        problem = record.problem(screen.app.machine)
        gives = f"not available here: {problem.message}" if problem else record.gives
        for which, title, key in (("baseline", "Profile the baseline", "p"), ("mine", "Profile mine", "P")):
            if profiler == first:
                yield SystemCommand(title, f"{gives} ({key})", lambda w=which: screen.action_run(f"profile-{w}"))
            else:
                yield SystemCommand(f"{title} with {profiler}", gives,
                                    lambda w=which, f=profiler: screen.action_run(f"profile-{w}-{f}"))


def results_commands(screen: ResultsScreen) -> Iterable[SystemCommand]:
    from tutor.app.screens.results import TABS

    for i, tab in enumerate(TABS, 1):
        yield SystemCommand(f"Show {tab}", f"the {tab} tab ({i})", lambda t=tab: screen.action_show_tab(t))
    yield SystemCommand("Switch baseline/mine profile", "which profile Metrics, Kernels and Trace show (t)",
                        screen.action_switch_profile)
    for profiler in screen.record.profilers():
        yield SystemCommand(f"Show the {profiler} profiles", f"Metrics, Kernels, Compare and Trace by "
                            f"{profiler_name(profiler)} (f)", lambda p=profiler: setattr(screen, "profiler", p))
    if screen.shown_profile:
        opener = opener_for(screen.shown_profile.profiler, screen.shown_profile.recorded)
        yield SystemCommand(f"Copy the {opener.viewer} command", f"the line that opens the {opener.noun} (y)",
                            screen.action_copy_command)
