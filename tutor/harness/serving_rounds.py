"""A serving grade's rounds (issue 18): the puzzle's server (the ruler's, its oracle) and the learner's replay
the same trace of requests, in pairs, in an order drawn each pair.

Each replay runs here, in the coordinator (tutor.harness.serving.replay): this process submits each request
when its arrival time has come and stamps each token as the step that made it returns, so no number a
workload reports decides its speed. A side is asked one step at a time through its pipe; the learner's side
is thawed for its whole replay (its steps pay no thaw) while the ruler idles. Every request's tokens must
equal the oracle's in the same pair: the oracle serves the same requests, and the puzzle's model makes its
greedy tokens independent of how requests are batched. Where the puzzle asks for them, each token's logit
must be the oracle's too, within the puzzle's tolerance over each replay: tokens a server could read from
somewhere else than the model, its logits it could not.

On a GPU the coordinator also reads how busy the GPU was during each replay, from NVML's own samples
(tutor.harness.gpu_busy): the evidence of how much of a replay the model ran, and, against the spec's
least_flops for the trace at the GPU's best rate, the floor a server that never runs the model falls under.
"""

from __future__ import annotations

import random
import secrets
from contextlib import nullcontext
from pathlib import Path

from tutor.harness import serving
from tutor.harness.events import EventSink
from tutor.harness.gpu_busy import BusyWatch, Nvml, NvmlUnavailable
from tutor.harness.loading import load_module
from tutor.harness.lockstep import WHO, Candidate, Side, with_sides

_order = random.SystemRandom()
MISMATCHES_SHOWN = 3  # requests whose tokens differ, named in the result; the count is always whole


def serve_and_compare(request: dict, sink: EventSink) -> dict:
    return with_sides(request, sink, _serve_and_compare)


def _serve_and_compare(request: dict, sink: EventSink, ruler: Side, learner: Candidate) -> dict:
    candidate, oracle = request["candidate"], request["oracle"]
    prepared = {}
    for side, name in ((ruler, oracle), (learner, candidate)):
        sink.stage("preparing", name)
        side.ask("prepare", name=name)
        prepared[side.role] = side.ask("prepared")
    spec = load_module(Path(request["spec"]), "spec", ("make_trace",))
    settings = request["serving"]
    # The ruler's word for the GPU, never the learner's process's: both sides run on it.
    watch = busy_watch(request, prepared[ruler.role].get("gpu_uuid"))
    busy = {"oracle": [], "mine": []} if isinstance(watch, BusyWatch) else {"unavailable": watch}
    pairs, mismatches, checked, stalled, least, gaps = [], [], 0, [], [], []
    # The first pair warms both servers up (compiles, graph captures, allocator growth) and is not counted.
    for r in range(settings["replays"] + 1):
        seed = secrets.randbelow(2**62)
        trace = serving.draw_trace(spec, seed)
        draws = serving.Draws(settings["draws"]) if settings.get("draws") else None  # the pair's, kept here
        turns = [(ruler, oracle), (learner, candidate)]
        _order.shuffle(turns)
        served = {}
        for side, name in turns:
            sink.stage("replaying", f"{WHO[side.role]}: {'warm-up replay' if r == 0 else f'replay {r}'} of "
                       f"{len(trace)} requests")
            served[name], window = replay(side, name, trace, settings["limit_s"], stalled, watch, draws)
            if r > 0 and window:
                busy["mine" if name == candidate else "oracle"].append(window)
        checked += len(trace)
        mismatches += differing(served[candidate], served[oracle])
        if settings.get("logits"):
            gaps.append(logit_gap(served[candidate], served[oracle]))
        if r > 0:
            pairs.append((serving.figures(served[oracle]), serving.figures(served[candidate])))
            least.append(serving.least_flops(spec, trace))
        sink.progress("replaying", r + 1, settings["replays"] + 1)
    violations = learner.ask("finish").get("violations", [])
    rates = ruler.ask("finish").get("rates")
    if stalled:
        violations.append("GPU work your process left running kept the GPU busy when the puzzle's server was "
                          "to start its replay: step() must finish its work before it returns")
    return {"pairs": pairs, "requests_checked": checked, "mismatches": len(mismatches),
            "mismatched": mismatches[:MISMATCHES_SHOWN], "violations": violations,
            **({"logits": logits_over(gaps)} if settings.get("logits") else {}),
            **({"gpu_busy": busy_figures(watch, busy, least, rates)} if request["device"] == "cuda" else {})}


def replay(side: Side, name: str, trace: list[serving.Request], limit_s: float, stalled: list[str],
           watch: BusyWatch | str | None = None, draws: serving.Draws | None = None
           ) -> tuple[list[serving.Served], tuple[int, int] | None]:
    """One replay of `trace` by a fresh server of `name`, each submit and step a message to its process (with
    `draws`, each step carries the live requests' draws), and its window in wall-clock microseconds (NVML's
    clock) when a `watch` reads how busy the GPU was; `name` joins `stalled` if the GPU never went quiet
    before it."""
    if side.ask("open_server", name=name)["waited_ms"] < 0:
        stalled.append(name)
    watching = isinstance(watch, BusyWatch)
    if watching:
        watch.read()  # nothing NVML held before the window is lost to its buffer

    def step(*drawn: serving.LiveDraws) -> dict:  # with draws, what changed since the last step goes along
        changes = {"draws": serving.pack(drawn[0].changes())} if drawn else {}
        return side.ask("step", name=name, **changes)["tokens"]

    with side.thawed() if isinstance(side, Candidate) else nullcontext():
        start = watch.now_us() if watching else 0
        served = serving.replay(
            trace,
            submit=lambda rid, prompt, max_new: side.ask("submit", name=name, rid=rid, prompt=list(prompt),
                                                         max_new=max_new),
            step=(lambda *drawn: (watch.poll(), step(*drawn))[1]) if watching else step,
            limit_s=limit_s, draw=draws)
        window = (start, watch.now_us()) if watching else None
    side.ask("close_server", name=name)
    return served, window


def busy_watch(request: dict, gpu_uuid: str | None) -> BusyWatch | str:
    """A watch on the GPU the ruler named, or why there is none (no GPU, no NVML)."""
    if request["device"] != "cuda" or gpu_uuid is None:
        return "no GPU"
    try:
        return BusyWatch(Nvml(uuid=gpu_uuid))
    except NvmlUnavailable as e:
        return str(e)


def busy_figures(watch: BusyWatch | str, busy: dict, least: list[float | None], rates: dict | None) -> dict:
    """Each counted replay's seconds and, over the NVML periods wholly inside it, the milliseconds they cover
    and the busy milliseconds in them (a side's list each); with the least milliseconds each pair's trace
    needs at the GPU's best bf16 rate where the spec states its FLOPs. Or why not read."""
    if not isinstance(watch, BusyWatch):
        return busy
    if not watch.settle(max(end for side in ("oracle", "mine") for _, end in busy[side])):
        return {"unavailable": watch.failed or "NVML gave no utilization sample after the last replay"}
    figures = {side: [dict(zip(("busy_ms", "covered_ms"), (round(ms, 2) for ms in watch.inner_busy_ms(*w))),
                           seconds=round((w[1] - w[0]) / 1e6, 4)) for w in busy[side]] for side in ("oracle", "mine")}
    if not all(r["covered_ms"] for r in figures["mine"]):
        return {"unavailable": "a replay of yours was shorter than NVML's sampling periods"}
    if rates and "bf16_tflops" in rates and all(f is not None for f in least):
        figures["least_ms"] = [round(f / (rates["bf16_tflops"] * 1e12) * 1e3, 4) for f in least]
        figures["rates"] = {"bf16_tflops": rates["bf16_tflops"], "gpu": rates.get("gpu", "")}
    return figures


def logit_gap(mine: list[serving.Served], oracle: list[serving.Served]) -> dict:
    """One replay's logits against the oracle's, over the tokens both gave alike: the squared differences and
    the oracle's squares summed, and how many tokens came without a logit, the learner's and the oracle's."""
    expected = {s.request.rid: s for s in oracle}
    gap = {"diff_sq": 0.0, "ref_sq": 0.0, "missing": 0, "tokens": 0, "oracle_missing": 0}
    for s in mine:
        want = expected[s.request.rid]
        for token, logit, good, ref in zip(s.tokens, s.logits, want.tokens, want.logits):
            if token != good:
                continue
            if ref is None:  # the puzzle's own server: nothing to hold the learner's to
                gap["oracle_missing"] += 1
                continue
            gap["tokens"] += 1
            if logit is None:
                gap["missing"] += 1
                continue
            gap["diff_sq"] += (logit - ref) ** 2
            gap["ref_sq"] += ref ** 2
    return gap


def logits_over(gaps: list[dict]) -> dict:
    """Every replay's logits against the oracle's: the relative L2 error of each replay and of the worst."""
    errors = [(g["diff_sq"] / g["ref_sq"]) ** 0.5 if g["ref_sq"] else 0.0 for g in gaps]
    return {"rel_l2": max(errors, default=0.0), "by_replay": [round(e, 8) for e in errors],
            "missing": sum(g["missing"] for g in gaps), "tokens": sum(g["tokens"] for g in gaps),
            "oracle_missing": sum(g["oracle_missing"] for g in gaps)}


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
