"""A serving grade's rounds (issue 18): the puzzle's server (the ruler's, its oracle) and the learner's replay
the same trace of requests, in pairs, in an order drawn each pair.

Each replay runs here, in the coordinator (tutor.harness.serving.replay): this process submits each request
when its arrival time has come and stamps each token as the step that made it returns, so no number a
workload reports decides its speed. A side is asked one step at a time through its pipe; the learner's side
is thawed for its whole replay (its steps pay no thaw) while the ruler idles. Every request's tokens must
equal the oracle's in the same pair: the oracle serves the same requests, and the puzzle's model makes its
greedy tokens independent of how requests are batched.
"""

from __future__ import annotations

import random
import secrets
from contextlib import nullcontext
from pathlib import Path

from tutor.harness import serving
from tutor.harness.events import EventSink
from tutor.harness.loading import load_module
from tutor.harness.lockstep import WHO, Candidate, Side, with_sides

_order = random.SystemRandom()
MISMATCHES_SHOWN = 3  # requests whose tokens differ, named in the result; the count is always whole


def serve_and_compare(request: dict, sink: EventSink) -> dict:
    return with_sides(request, sink, _serve_and_compare)


def _serve_and_compare(request: dict, sink: EventSink, ruler: Side, learner: Candidate) -> dict:
    candidate, oracle = request["candidate"], request["oracle"]
    for side, name in ((ruler, oracle), (learner, candidate)):
        sink.stage("preparing", name)
        side.ask("prepare", name=name)
        side.ask("prepared")
    spec = load_module(Path(request["spec"]), "spec", ("make_trace",))
    settings = request["serving"]
    pairs, mismatches, checked, stalled = [], [], 0, []
    # The first pair warms both servers up (compiles, graph captures, allocator growth) and is not counted.
    for r in range(settings["replays"] + 1):
        seed = secrets.randbelow(2**62)
        trace = serving.draw_trace(spec, seed)
        turns = [(ruler, oracle), (learner, candidate)]
        _order.shuffle(turns)
        served = {}
        for side, name in turns:
            sink.stage("replaying", f"{WHO[side.role]}: {'warm-up replay' if r == 0 else f'replay {r}'} of "
                       f"{len(trace)} requests")
            served[name] = replay(side, name, trace, settings["limit_s"], stalled)
        checked += len(trace)
        mismatches += differing(served[candidate], served[oracle])
        if r > 0:
            pairs.append((serving.figures(served[oracle]), serving.figures(served[candidate])))
        sink.progress("replaying", r + 1, settings["replays"] + 1)
    violations = learner.ask("finish").get("violations", [])
    ruler.ask("finish")
    if stalled:
        violations.append("GPU work your process left running kept the GPU busy when the puzzle's server was "
                          "to start its replay: step() must finish its work before it returns")
    return {"pairs": pairs, "requests_checked": checked, "mismatches": len(mismatches),
            "mismatched": mismatches[:MISMATCHES_SHOWN], "violations": violations}


def replay(side: Side, name: str, trace: list[serving.Request], limit_s: float,
           stalled: list[str]) -> list[serving.Served]:
    """One replay of `trace` by a fresh server of `name`, each submit and step a message to its process;
    `name` joins `stalled` if the GPU never went quiet before it."""
    if side.ask("open_server", name=name)["waited_ms"] < 0:
        stalled.append(name)
    with side.thawed() if isinstance(side, Candidate) else nullcontext():
        served = serving.replay(
            trace,
            submit=lambda rid, prompt, max_new: side.ask("submit", name=name, rid=rid, prompt=list(prompt),
                                                         max_new=max_new),
            step=lambda: side.ask("step", name=name)["tokens"],
            limit_s=limit_s)
    side.ask("close_server", name=name)
    return served


def differing(mine: list[serving.Served], oracle: list[serving.Served]) -> list[dict]:
    """The requests whose tokens are not the oracle's, each with where they first part."""
    expected = {s.request.rid: s.tokens for s in oracle}
    out = []
    for s in mine:
        want = expected[s.request.rid]
        if s.tokens != want:
            at = next((i for i, (a, b) in enumerate(zip(s.tokens, want)) if a != b), min(len(s.tokens), len(want)))
            out.append({"rid": s.request.rid, "at": at, "got": s.tokens[at:at + 4], "expected": want[at:at + 4]})
    return out
