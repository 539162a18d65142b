"""Where a learner stands over the whole curriculum: what is solved and at which tier, the time on record, and the
puzzle to take next. Read by `infprof-tutor progress`, `show` and the app alike."""

from __future__ import annotations

from dataclasses import dataclass

from tutor.catalog import Puzzle
from tutor.progress import TIER_ORDER, Progress, PuzzleStatus

# Two actions further apart than this are two sittings: the time between them is not counted as work.
SITTING_GAP_S = 30 * 60


@dataclass(frozen=True)
class Summary:
    total: int
    solved: int
    tiers: dict[str, int]  # gold, silver, bronze: how many puzzles reached each as their best
    diagnosed: int  # named from a recording, not yet solved
    active_s: float  # the time between actions on record, sittings apart left out
    next_puzzle: Puzzle | None
    next_why: str

    def lines(self) -> list[str]:
        tiers = ", ".join(f"{n} {tier}" for tier, n in self.tiers.items() if n)
        done = f"Solved {self.solved} of {self.total}" + (f" ({tiers})" if tiers else "")
        if self.diagnosed:
            done += f"; {self.diagnosed} more diagnosed from a recording"
        minutes = round(self.active_s / 60)
        spent = f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"
        lines = [done + ".", f"Time on record: about {spent} (breaks of over {SITTING_GAP_S // 60} min left out)."]
        if self.next_puzzle is not None:
            p = self.next_puzzle
            lines += [f"Next: {p.id}, {p.title} ({self.next_why}):", f"  infprof-tutor show {p.id}"]
        else:
            lines.append("Every puzzle is solved at gold.")
        return lines


def active_seconds(times: list[float]) -> float:
    return sum(b - a for a, b in zip(times, times[1:]) if b - a <= SITTING_GAP_S)


def next_puzzle(puzzles: list[Puzzle], statuses: dict[str, PuzzleStatus], runs_here: dict[str, bool],
                after: str | None = None) -> tuple[Puzzle | None, str]:
    """The puzzle to take next, in the curriculum's order (after `after`, where given, wrapping round): the first
    not yet solved that this machine runs; else the first not yet solved, to study; else the first short of gold."""
    order = puzzles
    if after is not None and after in [p.id for p in puzzles]:
        at = [p.id for p in puzzles].index(after) + 1
        order = puzzles[at:] + puzzles[:at]
    unsolved = [p for p in order if statuses[p.id].status != "solved"]
    for p in unsolved:
        if runs_here.get(p.id):
            return p, "not solved yet, and it runs here"
    if unsolved:
        return unsolved[0], "not solved yet; without its GPU here, study its recorded profile"
    short = [p for p in order if statuses[p.id].tier != TIER_ORDER[-1]]
    return (short[0], f"solved at {statuses[short[0].id].tier or 'no tier'}; gold is still open") if short else (None, "")


def after_gold(progress: Progress, puzzles: list[Puzzle], runs_here: dict[str, bool], puzzle: str
               ) -> tuple[Puzzle | None, str]:
    """Once `puzzle` is solved at gold: the next puzzle after it, and what to say of it (show and the app)."""
    chosen, why = next_puzzle(puzzles, {p.id: progress.status(p.id) for p in puzzles}, runs_here, after=puzzle)
    return chosen, f"Next: {chosen.id}, {chosen.title} ({why})" if chosen else "Every puzzle is solved at gold."


def summarize(progress: Progress, puzzles: list[Puzzle], runs_here: dict[str, bool],
              statuses: dict[str, PuzzleStatus] | None = None) -> Summary:
    """`statuses`, where the caller has read them already (the app's puzzle list), are not read again."""
    statuses = statuses or {p.id: progress.status(p.id) for p in puzzles}
    solved = [s for s in statuses.values() if s.status == "solved"]
    tiers = {tier: sum(s.tier == tier for s in solved) for tier in reversed(TIER_ORDER[1:])}
    chosen, why = next_puzzle(puzzles, statuses, runs_here)
    return Summary(len(puzzles), len(solved), tiers, sum(s.status == "diagnosed" for s in statuses.values()),
                   active_seconds(progress.activity_times()), chosen, why)
