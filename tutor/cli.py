"""The `infprof-tutor` command: thin argument handling over tutor.actions.

Start-up imports neither torch nor pandas: workloads run in subprocesses and
traces are parsed only by the commands that need them.
Exit codes: 0 success/pass, 1 graded fail or failed run, 2 usage or environment problem.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from rich.console import Console

from tutor.errors import EnvironmentProblem, TutorError
from tutor.runner import RunFailed

console = Console()
err_console = Console(stderr=True)


def _progress_printer(verbose: bool = True, stages=None):
    """Stage lines and a timing counter on stderr, from harness events; each stage's time into `stages` (a
    tutor.stage_clock.StageClock), if given."""
    last = {"stage": None}

    def on_event(event: dict) -> None:
        if event["type"] == "stage" and stages is not None:
            stages.stage(event["stage"], event.get("detail", ""))
        if event["type"] == "stage" and event["stage"] != last["stage"]:
            last["stage"] = event["stage"]
            err_console.print(f"[cyan]▸[/] {event['stage']}: {event.get('detail', '')}", highlight=False)
        elif event["type"] == "progress" and verbose and err_console.is_terminal:
            err_console.print(f"  {event['stage']} {event['done']}/{event['total']}", end="\r", highlight=False)

    return on_event


def cmd_init(args) -> int:
    from tutor.workspace import init_workspace

    ws = init_workspace(Path(args.dir))
    console.print(f"Workspace ready at [bold]{ws.root}[/]. Next: cd {ws.root} && infprof-tutor list")
    return 0


def cmd_list(args) -> int:
    from tutor.calibration import here
    from tutor.catalog import all_puzzles, catalog_problems
    from tutor.cli_views import calibration_lines, puzzle_table
    from tutor.machine import readiness, this_machine
    from tutor.progress import Progress
    from tutor.workspace import require_workspace

    ws = require_workspace(args.workspace)
    progress, machine = Progress(ws.db_path), this_machine()
    puzzles = list(all_puzzles().values())
    console.print(puzzle_table(puzzles, {p.id: progress.status(p.id) for p in puzzles},
                               {p.id: readiness(p, machine) for p in puzzles}, console.width))
    for line in calibration_lines(here(progress, puzzles, machine)):
        console.print(line, highlight=False)
    for problem in catalog_problems():
        err_console.print(f"[yellow]skipped a puzzle:[/] {problem.message}", highlight=False)
    return 0


def cmd_progress(args) -> int:
    """Solved n of N, at which tiers, the time on record, and the puzzle to take next."""
    from tutor.catalog import all_puzzles
    from tutor.machine import readiness
    from tutor.progress import Progress
    from tutor.progress_summary import summarize
    from tutor.workspace import require_workspace

    puzzles = list(all_puzzles().values())
    summary = summarize(Progress(require_workspace(args.workspace).db_path), puzzles,
                        {p.id: readiness(p).ok for p in puzzles})
    for line in summary.lines():
        console.print(line, highlight=False)
    return 0


def cmd_calibrate(args) -> int:
    """The puzzles' own references graded on this card, each once and kept: what their tiers mean here."""
    from tutor.calibration import as_reference, calibrate, card_for, expectation, kept
    from tutor.catalog import all_puzzles, get_puzzle
    from tutor.machine import readiness, this_machine
    from tutor.progress import Progress
    from tutor.workspace import require_workspace

    progress, machine = Progress(require_workspace(args.workspace).db_path), this_machine()
    named = [get_puzzle(pid) for pid in args.puzzles]
    puzzles = named or list(all_puzzles().values())
    runnable = [p for p in puzzles if readiness(p, machine).ok]
    for p in puzzles:
        if p not in runnable and named:  # asked for by name: say why it cannot be, as grade would
            console.print(f"{p.id}: not on this machine ({readiness(p, machine).why})", highlight=False)
    todo = [p for p in runnable if args.again or kept(progress, p, card_for(p, machine)) is None]
    if len(todo) < len(runnable):
        console.print(f"{len(runnable) - len(todo)} of {len(runnable)} already calibrated on this card "
                      "(--again grades them again).", highlight=False)
    for i, p in enumerate(todo, start=1):
        card = card_for(p, machine)
        console.print(f"[{i}/{len(todo)}] {p.id}: its reference graded on {card}", style="bold", highlight=False)
        console.print(expectation(p, calibrate(progress, p, card, as_reference(_progress_printer())), card), highlight=False)
    return 0


def cmd_show(args) -> int:
    from tutor.catalog import all_puzzles, get_puzzle
    from tutor.cli_views import puzzle_page
    from tutor.machine import readiness
    from tutor.progress import Progress
    from tutor.progress_summary import after_gold
    from tutor.workspace import require_workspace

    ws = require_workspace(args.workspace)
    p = get_puzzle(args.puzzle)
    progress, puzzles = Progress(ws.db_path), list(all_puzzles().values())
    after = None
    if progress.status(p.id).tier == "gold":  # done here: what is next, not how to start
        chosen, words = after_gold(progress, puzzles, {q.id: readiness(q).ok for q in puzzles}, p.id)
        after = f"Solved at gold. {words}" + (f":\n  infprof-tutor show {chosen.id}" if chosen else "")
    console.print(puzzle_page(p, [str(ws.editable_path(p, n)) for n in p.editable], after))
    _print_tiers_here(progress, p)
    return 0


def _print_tiers_here(progress, puzzle) -> None:
    """Whether the puzzle's tiers were verified on this card (tutor.calibration), where it runs here."""
    from tutor.calibration import line_here
    from tutor.machine import this_machine

    line = line_here(progress, puzzle, this_machine())
    if line:
        console.print(line, style="dim", highlight=False)


def cmd_profile(args) -> int:
    from tutor import actions
    from tutor.catalog import get_puzzle
    from tutor.cli_views import how_to_open, metrics_view
    from tutor.workspace import require_workspace

    ws = require_workspace(args.workspace)
    p = get_puzzle(args.puzzle)
    if args.profiler not in p.profilers:
        raise TutorError(f"{p.id} is profiled with {', '.join(p.profilers)}, not {args.profiler}.")
    outcome = actions.profile(ws, p, args.which, _progress_printer(), profiler=args.profiler)
    console.print(metrics_view(outcome.metrics, width=console.width))
    console.print(how_to_open(args.profiler, outcome.trace_path), highlight=False, soft_wrap=True)
    return 0


def cmd_study(args) -> int:
    """Without the GPU: the baseline as profiled on the puzzle's GPU, and a grade of your diagnosis against it."""
    from tutor.catalog import get_puzzle
    from tutor.cli_views import diagnosis_view, how_to_open, metrics_view
    from tutor.study import grade_diagnosis, recorded_on, study
    from tutor.workspace import require_workspace

    ws = require_workspace(args.workspace)
    p = get_puzzle(args.puzzle)
    if args.check:
        verdict = grade_diagnosis(ws, p)
        console.print(diagnosis_view(verdict))
        return 0 if verdict.passed else 1
    outcome = study(ws, p, args.profiler)
    console.print(f"The baseline of {p.id} as profiled on {recorded_on(p)} (a recording, not your run).",
                  style="bold", highlight=False)
    console.print(metrics_view(outcome.metrics, width=console.width))
    console.print(how_to_open(args.profiler, outcome.trace_path, recorded=True), highlight=False, soft_wrap=True)
    console.print(f"Name the bottleneck in answer.toml with numbers from above, then: infprof-tutor study {p.id} --check",
                  highlight=False)
    return 0


def cmd_grade(args) -> int:
    from tutor import actions
    from tutor.catalog import get_puzzle
    from tutor.grading.answer import unreadable_answer
    from tutor.cli_views import answer_view, verdict_view
    from tutor.progress import Progress
    from tutor.stage_clock import StageClock
    from tutor.workspace import require_workspace

    ws = require_workspace(args.workspace)
    p = get_puzzle(args.puzzle)
    stages = StageClock()
    verdict = actions.grade(ws, p, _progress_printer(stages=stages))
    stages.finish()
    unreadable = unreadable_answer(verdict, ws.editable_path(p, "answer.toml"))
    # An unreadable answer.toml gets its own panel (the line at fault, how to write it), after the verdict.
    console.print(verdict_view(verdict, brief=("diagnosis",) if unreadable else ()))
    if unreadable:
        console.print(answer_view(unreadable))
    _print_tiers_here(Progress(ws.db_path), p)
    for line in stages.account():  # a long grade: where its time went, and what the next one skips
        err_console.print(line, highlight=False)
    return 0 if verdict.passed else 1


def cmd_watch(args) -> int:
    """A quick check now and after every save of the puzzle's files, until Ctrl-C; nothing is recorded."""
    from tutor.catalog import get_puzzle
    from tutor.cli_views import answer_view, error_view, quick_check_view
    from tutor.quick_check import quick_check, watch_keeper
    from tutor.saves import saves
    from tutor.workspace import require_workspace

    ws = require_workspace(args.workspace)
    p = get_puzzle(args.puzzle)
    if p.no_quick_check:  # a save would be answered by the same refusal every time
        raise TutorError(p.no_quick_check, f"Watch mode re-checks on every save; grade it instead: "
                                           f"`infprof-tutor grade {p.id}`.")
    folder = ws.puzzle_dir(p)
    running: list = []  # the latest harness: its process group has a session of its own, out of Ctrl-C's reach

    def register(run) -> None:
        running[:] = [run]

    def check(why: str) -> None:
        err_console.print(f"[bold]Quick check[/] {why}", highlight=False)
        try:
            checked = quick_check(ws, p, _progress_printer(), register, watch_keeper(ws, p))
            console.print(quick_check_view(checked))
            if checked.answer is not None:
                console.print(answer_view(checked.answer))
        except EnvironmentProblem:
            raise  # this machine cannot run it: saving again will not help
        except TutorError as e:
            console.print(error_view(e))  # a crash or a missing file: fix it and save again
        err_console.print(f"Watching {', '.join(p.editable)} in {folder}: save to check again, Ctrl-C to stop.",
                          highlight=False)

    ctrl_c_stops()
    start_warm_harness()  # this command owns it: it ends with the watch
    try:
        saved_files = saves(ws, p)  # watching already: a save during the first check is checked after it
        check("of your files")
        for saved in saved_files:
            check(f"after your save of {', '.join(path.name for path in saved)}")
    except KeyboardInterrupt:
        for run in running:
            run.cancel()
        err_console.print("Stopped watching.")
    return 0


def ctrl_c_stops() -> None:
    """Ctrl-C is how watch stops, also where it was started with SIGINT ignored or blocked (a shell's background job
    hands that on, as a test runner's worker may): the interpreter then never turns it into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def start_warm_harness() -> None:
    """Start a warm harness owned by this process, unless INFPROF_WARM=0; the first run waits for it."""
    from tutor.warm import WarmHarness, warm_mode

    if warm_mode() != "off" and WarmHarness.for_env().start(owner=os.getpid()) == "warming":
        err_console.print("Warming the harness: torch is imported once, and every check after the first starts at once.",
                          style="dim", highlight=False)


def cmd_warm(args) -> int:
    """Start a warm harness for CLI commands (it ends after --idle-min without a run), or stop or describe it."""
    from tutor.warm import WarmHarness

    harness = WarmHarness.for_env()
    if args.stop:
        console.print("Stopped the warm harness." if harness.stop() else "No warm harness was running.")
        return 0
    if not args.status and harness.start(idle_s=args.idle_min * 60) == "warming":
        err_console.print("Warming the harness (importing torch)…", highlight=False)
        if not harness.wait_ready(timeout_s=600):
            raise TutorError("The warm harness did not start.", f"Its log says why: {harness.log_path}")
    status = harness.ask("status")
    if status is None:
        console.print(f"No warm harness is {'warming' if harness.state() == 'warming' else 'running'} for this "
                      "tutor and environment: runs start cold. `infprof-tutor warm` starts one.")
        return 0 if args.status else 1
    owners = ", ".join(map(str, status["owners"])) or f"nobody (it ends after {args.idle_min:g} min without a run)"
    console.print(f"Warm harness ready (pid {status['pid']}): {', '.join(status['preloaded'])} imported; "
                  f"owned by {owners}; {status['runs']} run(s) in progress.\nLog: {harness.log_path}", highlight=False)
    return 0


def cmd_dev_check(args) -> int:
    """For puzzle authors: every puzzle (or one) checked from its folder, and graded where this machine can."""
    from tutor.catalog import all_puzzles, get_puzzle
    from tutor.cli_views import dev_check_view
    from tutor.dev_check import check_puzzle

    # Drafts too: an author checks a puzzle before learners see it.
    puzzles = [get_puzzle(args.puzzle, drafts=True)] if args.puzzle else list(all_puzzles(drafts=True).values())
    failed = 0
    for p in puzzles:
        with err_console.status(f"{p.id}: checking…") as status:
            def on_stage(what: str, pid: str = p.id) -> None:
                status.update(f"{pid}: {what}…")
                if not err_console.is_terminal:  # a log (CI, a GPU machine) shows how far a long check got
                    err_console.print(f"{time.strftime('%H:%M:%S')} {pid}: {what}…", highlight=False)
            checks = check_puzzle(p, run=not args.static, on_stage=on_stage)
        console.print(dev_check_view(p.id, checks))
        failed += sum(c.status == "failed" for c in checks)
    console.print(f"{failed} check(s) failed." if failed else "Every check passed or was skipped for a reason shown.")
    return 1 if failed else 0


def cmd_doctor(args) -> int:
    """What this machine has for each puzzle, each problem with its fix; exit 1 if a puzzle it could run is not ready."""
    from tutor.catalog import all_puzzles
    from tutor.cli_views import doctor_view
    from tutor.doctor import diagnose
    from tutor.workspace import find_workspace

    ws = find_workspace(args.workspace)
    report = diagnose(list(all_puzzles().values()), disk_at=ws.root if ws else None)
    console.print(doctor_view(report))
    return 0 if report.ok else 1


def cmd_hint(args) -> int:
    from tutor import actions
    from tutor.catalog import get_puzzle
    from tutor.workspace import require_workspace

    p = get_puzzle(args.puzzle)
    ws = require_workspace(args.workspace)
    if args.all:  # read again what was revealed, revealing nothing new
        shown = actions.revealed_hints(ws, p)
        for i, text in enumerate(shown):
            console.print(f"[bold]Hint {i + 1}/{len(p.hints)}[/]: {text}")
        if not shown:
            console.print(f"No hint revealed yet: `infprof-tutor hint {p.id}` shows the first.")
        return 0
    hint = actions.reveal_hint(ws, p)
    if hint is None:
        console.print(f"All {len(p.hints)} hints are out (`infprof-tutor hint {p.id} --all` shows them again). The story "
                      f"(infprof-tutor show {p.id}) and your profile are next.")
    else:
        console.print(f"[bold]Hint {hint[0] + 1}/{len(p.hints)}[/]: {hint[1]}")
    return 0


def cmd_review(args) -> int:
    """The reference and the honest alternatives beside your code, once the puzzle is solved."""
    from tutor.catalog import get_puzzle
    from tutor.cli_views import review_view
    from tutor.review import open_review
    from tutor.workspace import require_workspace

    console.print(review_view(open_review(require_workspace(args.workspace), get_puzzle(args.puzzle), args.early),
                              side_by_side=console.width >= 160))
    return 0


def cmd_reset(args) -> int:
    from tutor.catalog import get_puzzle
    from tutor.workspace import require_workspace

    for path, kept in require_workspace(args.workspace).reset(get_puzzle(args.puzzle)):
        console.print(f"restored {path.name} to the starter" + (", your copy kept at:" if kept else " (it was unchanged)"))
        if kept:
            console.print(str(kept), soft_wrap=True)  # whole on its own line, to paste
    return 0


def cmd_diagnose(args) -> int:
    from tutor.diagnose.capture import diagnose_command, diagnose_workload
    from tutor.diagnose.text import report_text
    from tutor.progress import Progress
    from tutor.workspace import require_workspace

    ws = require_workspace(args.workspace)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.history:
        for row in Progress(ws.db_path).workload_diagnoses(args.history):
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row["created_at"]))
            console.print(f"[bold]{when}  {row['target']}[/]", highlight=False)
            console.print(report_text(row["report"]), highlight=False, soft_wrap=True)
            console.print()
        return 0
    if args.puzzle and command:
        raise TutorError("Give a puzzle or a command, not both.", "infprof-tutor diagnose --puzzle puzzle5, or "
                         "infprof-tutor diagnose -- python serve.py")
    if args.puzzle:
        found = diagnose_workload(ws, args.puzzle, args.which, _progress_printer())
    else:
        found = diagnose_command(ws, command, kernels=args.kernels, marked=args.marked, timeout_s=args.timeout,
                                 on_event=_progress_printer())
    console.print(report_text(found.diagnosis.to_dict()), highlight=False, soft_wrap=True)
    console.print(f"\nThe trace: {found.trace}\nKept in your history: infprof-tutor diagnose --history 1",
                  highlight=False)
    return 0


def cmd_taxonomy(args) -> int:
    from tutor.taxonomy import bottlenecks

    for bid, meaning in bottlenecks().items():
        console.print(f"[bold]{bid}[/]\n  {meaning}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from tutor.profilers.registry import PROFILERS, RECORDABLE  # light: the parsers load when a profile is read

    parser = argparse.ArgumentParser(prog="infprof-tutor", description="Learn to find GPU inference bottlenecks by profiling.")
    parser.add_argument("--workspace", type=Path, default=None, help="workspace folder (default: found from here)")
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("init", help="create a workspace with every puzzle's files")
    p.add_argument("dir", nargs="?", default="infprof-workspace")
    p.set_defaults(func=cmd_init)
    sub.add_parser("list", help="puzzles and your progress").set_defaults(func=cmd_list)
    sub.add_parser("taxonomy", help="the bottleneck ids you can name").set_defaults(func=cmd_taxonomy)
    sub.add_parser("progress", help="solved n of N, your tiers, time on record, what to take next"
                   ).set_defaults(func=cmd_progress)
    sub.add_parser("doctor", help="what this machine has for each puzzle, and how to fix what is missing"
                   ).set_defaults(func=cmd_doctor)
    dev = sub.add_parser("dev", help="for puzzle authors").add_subparsers(dest="dev_command", required=True)
    p = dev.add_parser("check", help="check puzzles from their folders, and grade them where this machine can")
    p.add_argument("puzzle", nargs="?", help="one puzzle (default: every puzzle)")
    p.add_argument("--static", action="store_true", help="only what the folder says: run no workload")
    p.set_defaults(func=cmd_dev_check)
    p = sub.add_parser("calibrate", help="grade the puzzles' own references on this card, once: what their tiers "
                       "mean here (your workloads never run)")
    p.add_argument("puzzles", nargs="*", help="these puzzles (default: every one this machine runs)")
    p.add_argument("--again", action="store_true", help="grade those already calibrated on this card again")
    p.set_defaults(func=cmd_calibrate)
    p = sub.add_parser("diagnose", help="your own workload after the puzzles: the bottleneck classes its profile "
                       "supports, ranked by the time at stake",
                       description="infprof-tutor diagnose [--kernels] -- python serve.py ARGS  (or --puzzle P)")
    p.add_argument("--kernels", action="store_true", help="also profile its heaviest kernels under Nsight Compute")
    p.add_argument("--marked", action="store_true", help="profile only the steps your code wraps in "
                   "torch.profiler.record_function(\"infprof:iter\") (default: the whole command)")
    p.add_argument("--timeout", type=float, default=1800.0, help="stop the command after this many seconds")
    p.add_argument("--puzzle", help="a workload in the puzzle contract instead: this puzzle's (see --which)")
    p.add_argument("--which", default="mine", choices=["mine", "baseline"])
    p.add_argument("--history", type=int, nargs="?", const=5, default=0, help="show your last N reports")
    p.add_argument("command", nargs=argparse.REMAINDER, help="after --: the command, as you run it")
    p.set_defaults(func=cmd_diagnose)
    p = sub.add_parser("warm", help="keep a harness with torch imported, so runs start at once")
    p.add_argument("--stop", action="store_true", help="stop the warm harness")
    p.add_argument("--status", action="store_true", help="say whether one is running, and start none")
    p.add_argument("--idle-min", type=float, default=20.0, help="end after this many minutes without a run")
    p.set_defaults(func=cmd_warm)
    for name, func, help_ in (("show", cmd_show, "story, goal and grading of a puzzle"),
                              ("grade", cmd_grade, "check, time and grade your solution"),
                              ("watch", cmd_watch, "a quick check (correctness, speed) on every save; Ctrl-C stops"),
                              ("hint", cmd_hint, "reveal the next hint"),
                              ("review", cmd_review, "good solutions beside yours, once you have a tier"),
                              ("reset", cmd_reset, "restore a puzzle's starter files (each reset keeps a backup of yours)"),
                              ("study", cmd_study, "no GPU? the baseline as profiled on its GPU, and --check "
                                                   "grades your diagnosis against it"),
                              ("profile", cmd_profile, "profile a workload and show its metrics")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("puzzle")
        p.set_defaults(func=func)
        if name == "study":
            p.add_argument("--profiler", default="torch", choices=RECORDABLE)
            p.add_argument("--check", action="store_true", help="grade answer.toml against the recorded profiles")
        if name == "hint":
            p.add_argument("--all", action="store_true", help="show again the hints revealed so far")
        if name == "review":
            p.add_argument("--early", action="store_true", help="open it before solving (recorded as seen early)")
        if name == "profile":
            p.add_argument("--profiler", default="torch", choices=list(PROFILERS))
            p.add_argument("--which", default="baseline", choices=["baseline", "mine"])
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None:
        from tutor.app.app import InfprofApp  # Textual loads only for the app, never for subcommands
        from tutor.workspace import find_workspace

        explicit = args.workspace
        app = InfprofApp(find_workspace(explicit), new_workspace_dir=explicit)
        app.run()
        return app.return_code or 0
    try:
        return args.func(args)
    except KeyboardInterrupt:
        err_console.print("Interrupted.")
        return 130
    except TutorError as e:
        from tutor.cli_views import error_view

        err_console.print(error_view(e))
        # A workload that failed is a failed attempt (1); a machine or usage problem is 2.
        return 1 if isinstance(e, RunFailed) and not isinstance(e, EnvironmentProblem) else 2
    except Exception as e:  # a bug of ours: a short panel here, the traceback in a file
        import traceback

        import platformdirs

        from tutor.cli_views import error_view

        log = platformdirs.user_log_path("infprof-tutor", ensure_exists=True) / "crash.log"
        log.write_text(traceback.format_exc())
        err_console.print(error_view(TutorError(
            f"infprof-tutor hit an unexpected {type(e).__name__}: {e}",
            f"This is a bug in infprof-tutor; please report it with {log}, which holds the traceback.")))
        return 3


if __name__ == "__main__":
    sys.exit(main())
