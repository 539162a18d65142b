"""The puzzle's brief as Markdown: the story, how it is graded, and the hints revealed so far.

Both faces show it: the TUI's puzzle screen and the CLI's `show`.
"""

from __future__ import annotations

from tutor.catalog import CLOCKS, Puzzle

# A tier's clock (catalog.CLOCKS) in a table cell.
CLOCK_WORDS = {"call": "a call's time", "gpu": "GPU time", "throughput": "tokens a second"}


def story_markdown(p: Puzzle) -> str:
    """story.md without a leading heading that repeats the title (the header shows it)."""
    first, _, rest = p.story.lstrip().partition("\n")
    return rest.lstrip() if first.startswith("#") and first.lstrip("# ").strip() == p.title else p.story


# tutor.grading.floor, in a learner's words: on a GPU, a timing the hardware cannot reach is refused.
FLOOR_LINE = """\
- **Physical floor** — a call faster than this GPU can do the puzzle's least work (`least_work` in
  its spec.py: bytes from HBM, FLOPs, at the best rates this GPU has shown) is refused, whatever
  made it look fast; the verdict says how close to that floor you came.
"""


# tutor.grading.serving.check_serving_floor, in a learner's words.
SERVING_FLOOR_LINE = """\
- **Physical floor** — your replays must keep the GPU busy (NVML's samples, read by the harness)
  for at least the time the model's least FLOPs for their requests take at this GPU's best rate
  (`least_flops` in its spec.py): a server that hands out tokens with the GPU idle is refused.
"""


def correctness_line(p: Puzzle) -> str:
    if p.serving:  # tutor.harness.serving_rounds
        drawn = ("  Each step, step() gets the harness's draw for every live request's next token, drawn once\n"
                 "  the token before it came back; both servers of a pair get the same draws.\n"
                 if p.serving.draws else "")
        return ("- **Correctness** — every request of every replay gets exactly the tokens that\n"
                f"  `{p.correctness.oracle}`'s server gives it in the same pair of replays, at most one a\n"
                "  request each step (a decoder's next input is the token it just made).\n" + drawn)
    where = ("" if p.correctness.output == "any" else
             "  It must be in host memory, complete as forward() returns (the harness holds the GPU while it reads\n"
             "  it), and the caller's to keep: the next call must leave it as it was.\n")
    if p.correctness.judged:  # tutor.harness.worker.Worker.judge
        return ("- **Correctness** — every choice your decode makes is judged by the model along your own path:\n"
                "  each step's logit of the token you chose against the best of that step, within relative L2\n"
                f"  {p.correctness.max_rel_l2:g}, on {p.correctness.checks} fresh inputs drawn at grade time and on "
                "every timed call.\n" + where)
    return (f"- **Correctness** — your output stays within relative L2 error {p.correctness.max_rel_l2:g} of\n"
            f"  `{p.correctness.oracle}` on {p.correctness.checks} fresh inputs drawn at grade time.\n" + where)


def stages_line(p: Puzzle) -> str:
    """A capstone's later stages (tutor.grading.stages), in a learner's words."""
    if not p.stages:
        return ""
    each = "; ".join(f"stage {n} unlocks {st.tier}" for n, st in enumerate(p.stages, start=2))
    return ("- **Stages** — the baseline's bottleneck is stage 1. Each one that fixing the one before it shows is\n"
            "  named in answer.toml's `[[stages]]`, in order, with `[[stages.evidence]]` from a profile of **your**\n"
            f"  workload (`profile {p.id} --which mine`) taken while it showed: {each}.\n")


def speed_line(p: Puzzle) -> str:
    if p.serving:
        return (f"- **Speed** — your server and `{p.tiers[0].vs}`'s replay a trace of requests in\n"
                f"  {p.serving.replays} pairs; the harness submits each request at its arrival time and stamps\n"
                "  every token. A tier counts when the lower end of the 95% interval of your throughput ratio\n"
                "  clears it and the upper end of your p99 latency ratio stays within "
                f"{p.serving.max_latency_ratio:g}x:\n")
    return "- **Speed** — a tier counts when the lower end of the 95% interval of your speed-up clears it:\n"


def grader_rule_line(p: Puzzle) -> str:
    """A puzzle's own rule, where its grader (graders/NAME.py) states one as RULE = (name, text)."""
    from tutor.grading.puzzle_checks import grader_module

    rule = getattr(grader_module(p), "RULE", None)
    return f"- **{rule[0]}** — {rule[1]}\n" if rule else ""


def grading_markdown(p: Puzzle) -> str:
    floor = FLOOR_LINE if p.floor_checked else SERVING_FLOOR_LINE if p.serving_floor_checked else ""
    floor += grader_rule_line(p)
    elsewhere = f"\n**On other GPUs**: {p.hardware.elsewhere}\n" if p.hardware.elsewhere else ""
    tiers = "\n".join(f"| {t.name} | ≥ {t.min_speedup:g}× | `{t.vs}` | {CLOCK_WORDS[t.clock]} |" for t in p.tiers)
    clocks = "\n".join(f"- *{CLOCK_WORDS[c]}*: {CLOCKS[c]}." for c in dict.fromkeys(t.clock for t in p.tiers))
    return f"""\
## How it is graded

{correctness_line(p)}\
- **Diagnosis** — `answer.toml` names the bottleneck and cites at least {p.diagnosis.min_evidence}
  number(s) from your own latest **baseline** profile (within 10%).
{stages_line(p)}{floor}{speed_line(p)}
| tier | speed-up | measured against | on |
|---|---|---|---|
{tiers}

{clocks}

Needs: {p.hardware.needs()} · profilers: {", ".join(p.profilers)}
{elsewhere}"""


def hints_markdown(p: Puzzle, shown: int) -> str:
    if not p.hints:
        return "## Hints\n\nThis puzzle has no hints."
    revealed = "\n".join(f"{i}. {text}" for i, text in enumerate(p.hints[:shown], start=1))
    left = len(p.hints) - shown
    more = f"Press **h** to reveal the next one ({left} left)." if left else "That was the last one."
    return f"## Hints\n\n{revealed}\n\n{more}" if shown else f"## Hints\n\n{len(p.hints)} hints, none shown yet. {more}"
