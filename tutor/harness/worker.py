"""One side of a grade: a forked process that loads, prepares, runs and times only its own workloads.

The ruler holds the puzzle's oracle and comparators and never loads learner code; the
candidate holds the learner's workload alone. The coordinator (tutor.harness.lockstep)
sends each an operation at a time over a pipe and reads the reply (tutor.harness.wire).
Whatever learner code changes in its own process (torch's flags, dynamo's config,
library tables, the allocator, the environment) never reaches a comparator.
"""

from __future__ import annotations

import builtins
import contextlib
import gc
import json
import os
import random
import secrets
import sys
import time
import traceback
from collections.abc import Mapping
from multiprocessing.connection import Connection
from pathlib import Path
from types import MappingProxyType

import torch

from tutor.harness import call_checks, peaks, serving, shards, wire
from tutor.harness.allocator_peak import AllocatorPeak
from tutor.harness.checks import own_copy
from tutor.harness.compile_report import CompileWatch
from tutor.harness.device import Device
from tutor.harness.dispatch_table import DispatchTable, dispatched, entered
from tutor.harness.foreign_code import ForeignCode
from tutor.harness.gpu_clock import PROBE_CALLS
from tutor.harness.guard import Guard, SideWork
from tutor.harness.loading import HarnessFailure, call_workload, load_module, warmup_inputs
from tutor.harness.memory_facts import CaptureCounter, graph_pool_mb, memory_facts

WORKLOAD_API = ("prepare", "forward")
SPEC_API = ("make_weights", "make_input")
# A serving puzzle's (a request with "serving"): a server that takes requests and steps, replayed against
# the spec's trace of requests by the coordinator (tutor.harness.serving_rounds).
SERVING_WORKLOAD_API = ("prepare", "server")
SERVING_SPEC_API = ("make_weights", "make_trace")


# A multi-GPU puzzle's spec also says what each rank holds (tutor.harness.shards).
RANKED_SPEC_API = (*SPEC_API, "shard")


def apis(request: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the spec and each workload must define for this request: a serving puzzle's (a request with
    "serving", grade or profile alike), a multi-GPU puzzle's or a forward() puzzle's."""
    if "serving" in request:
        return SERVING_SPEC_API, SERVING_WORKLOAD_API
    return (RANKED_SPEC_API if request.get("ranks", 1) > 1 else SPEC_API), WORKLOAD_API


def step_tokens(name: str, server, draws: Mapping[int, int] | None = None) -> dict[int, list[int]]:
    """One step of `name`'s server, its tokens as host integers: in a grade's worker and in a profile alike.
    `draws`: the live requests' draws, where the puzzle draws (tutor.harness.serving)."""
    where = f"{name}'s server.step()"
    return host_tokens(call_workload(where, server.step, *(() if draws is None else (draws,))), where)


def setup(request: dict, timing: bool, role: str) -> Device:
    """What every workload process does before it loads any workload: its device, clocks, seeds and caches."""
    use_compile_caches(request, role)
    if request["device"] == "cuda" and not torch.cuda.is_available():
        raise HarnessFailure("no_gpu", f"torch sees none (torch {torch.__version__}, built for CUDA "
                             f"{torch.version.cuda})")
    if request["device"] == "cuda":
        share_autotuning()
    if request["device"] == "cpu":
        torch.set_num_threads(1)  # CPU puzzles time one thread, so speedups compare across machines
    # Not the request's seed: a workload can read that (sys.argv), and must not predict anything from it.
    # Each process draws its own: a forked child would otherwise share its parent's generator state.
    random.seed()
    torch.manual_seed(secrets.randbelow(2**62))
    return Device(request["device"], flush_l2=timing)


def use_compile_caches(request: dict, role: str) -> None:
    """torch.compile's, triton's and torch's C++/CUDA extension builds on disk in the workspace, one
    folder for each side of a grade.

    Kept between runs, so the second grade of unchanged code neither compiles nor autotunes again.
    One per side: the ruler's (comparators, and the baseline profiled alone) is out of learner code's
    reach (request["protected"]), which could otherwise leave a slow kernel under a comparator's key
    (a load_inline build is found by its name alone). Each library reads its variable when it first
    compiles, not at import.
    """
    folder = request.get("caches", {}).get(role)
    if folder:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(folder, "inductor")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(folder, "triton")
        os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(folder, "extensions")


def share_autotuning() -> None:
    """Keep triton's autotune results on disk, so every run of a workload (grade, profile, ncu) runs one config.

    Without it each process tunes anew; under ncu, whose serialised launches distort the timings, the
    autotuner picked another GemLite kernel (2 waves instead of 1) than the graded runs did.
    """
    try:
        import triton
        triton.knobs.autotuning.cache = True
    except (ImportError, AttributeError):
        pass  # no triton, or one without knobs: each run tunes on its own


class Worker:
    """The workloads of one process, and the operations the coordinator may ask of them."""

    def __init__(self, request: dict, names: list[str], candidate: str | None):
        self.request, self.names, self.candidate = request, names, candidate
        self.device = setup(request, timing=True, role="candidate" if candidate else "ruler")
        # Before any workload loads, so every capture is counted, torch.compile's included.
        self.captures = CaptureCounter() if self.device.cuda else None
        self.compiled = CompileWatch() if candidate else None
        # Before learner code: from here on it cannot open the reference solution or the progress db.
        self.guard = Guard(request.get("protected", {})) if candidate else None
        self.serving = "serving" in request
        self.spec_api, self.workload_api = apis(request)
        self.spec = load_module(Path(request["spec"]), "spec", self.spec_api)
        # And what the harness's own operators dispatch to, read again before each use (tutor.harness.dispatch_table).
        self.dispatch = DispatchTable(entered(self._own_work)) if candidate else None
        # Before each input: its making's operators alone, and with the L2 flush's where one follows (a loop's first)
        self.input_dispatch = self._input_tables() if candidate else None
        self.reading_dispatch = self._reading_table() if candidate else None  # before a round's outputs are read
        self.foreign = ForeignCode(request["spec"]) if candidate else None  # and what runs inside that work
        if request.get("correctness", {}).get("judged") and not callable(getattr(self.spec, "judge", None)):
            raise HarnessFailure("bad_request", "puzzle.toml's [correctness] judged = true, but its spec.py has no "
                                                "judge(state, inputs, output): the puzzle is broken")
        # A puzzle with a memory budget: the allocator's peak, kept out of the workloads' reach before they load.
        self.peak = AllocatorPeak() if self.device.cuda and hasattr(self.spec, "MEMORY_SLACK") else None
        self.modules, self.states, self.resident, self.servers = {}, {}, {}, {}
        self.draws: dict[str, dict[int, int]] = {}  # each server's live requests' draws (tutor.harness.serving)
        self.samples: dict[str, list[float]] = {name: [] for name in names if name in request["time"]}
        self.side: SideWork | None = None
        self.pool_by_round: list[float] = []
        self.warm: list = []
        self._warm_bytes = 0  # what the warm-up's inputs hold, kept to the end beside every round's
        self.kept: dict[str, list[call_checks.Kept]] = {}  # each workload's outputs of its last round
        self._loop_ms: list[float] = []  # the times of the loop's calls so far (loop_call)
        self._loop_made: list = []  # and the inputs they were made
        self.prepared_bytes = 0
        self._shared = None
        self.shard_bytes = 0  # with ranks: the bytes of this rank's shard, all a rank may keep past its slack

    # -- operations ---------------------------------------------------------------------------

    def set_up(self) -> dict:
        """Nothing more: the worker is built by its first message (its CUDA context, device and clocks), and a
        coordinator that asks this first shows that apart from preparing the workloads."""
        return {}

    def prepare(self, name: str) -> dict:
        if name == self.candidate:
            self.guard.freeze(*self._namespaces())
        self.modules[name] = load_module(Path(self.request["workloads"][name]), name, self.workload_api)
        with self._checked_work("making the weights"):  # learner code ran at import: weights made with checked ones
            master = self._master_weights()  # made before the count starts: no workload's to keep
            before = self.device.allocated_bytes()
            weights = own_copy(master)
            del master
        self.states[name] = call_workload(f"{name}.prepare()", self.modules[name].prepare, weights, self.device.name)
        del weights
        # What prepare() left alive: lets a puzzle check, say, that weights really are stored in fp8.
        self.resident[name] = self.device.allocated_bytes() - before
        return {}

    def prepared(self) -> dict:
        """Every workload is prepared: free the weights' master copy, poison free memory, build the warm-up inputs."""
        self._shared = None
        self.device.poison_free_memory()
        self.prepared_bytes = self.device.allocated_bytes()
        if self.peak:
            self.peak.start()
        if not self.serving:  # a server warms up as it serves: its first replay is the coordinator's to discard
            with self._checked_work("making the warm-up inputs"):
                self.warm = warmup_inputs(self.spec, self.request["seed"] + 7, self.device.name)
            self._warm_bytes = shards.tensor_bytes(self.warm)
            self._harness_holds()
        # The coordinator reads how busy this GPU is during each replay (tutor.harness.gpu_busy): which GPU.
        return {"warm_inputs": len(self.warm), "gpu_uuid": self.device.uuid(), "memory_budget": self.peak is not None}

    def warm_up(self, index: int) -> dict:
        with self.device.range("warmup"):
            for name in self.names:
                self.forward(name, self.warm[index % len(self.warm)])
        self.device.synchronize()
        if self.candidate and self.device.cuda:  # how the graph pools grow as new shapes are served
            self.pool_by_round.append(graph_pool_mb())
        if self.peak:
            self.peak.read()
        return {}

    def calibrate(self) -> dict:
        """Held or from an idle GPU: each workload's host, seen while the GPU is held. Then the checks begin."""
        for name in self.names if self.device.cuda else []:
            inputs = self._inputs([secrets.randbelow(2**62) for _ in range(PROBE_CALLS)])
            self._harness_holds(inputs)
            self.device.calibrate(name, [lambda x=x, name=name: self.forward(name, x) for x in inputs])
        self.side = SideWork()
        return {}

    def run(self, name: str, seed: int) -> dict:
        """One untimed call on the input `seed` makes: its output, for the correctness checks.

        Where the output must be on the host (the request's correctness output "host"), the GPU is held
        while the call is made and its output read: a copy to the host that forward() did not wait for is
        read unfinished, however fast the host. Then another call, which must leave that output as it was.
        """
        x = self._input(seed)
        on_host = self.request.get("correctness", {}).get("output") == "host"
        if on_host:
            self.device.hold_ms(HOST_OUTPUT_HOLD_MS)
        returned = self.forward(name, x)
        with self._checked_work("reading an output"):  # before the harness reads the output with its operators
            out = wire.portable(returned)
        if on_host:
            out = self._kept(name, returned, out)
        self.device.synchronize()
        self._verify()
        return {"out": out}

    def _kept(self, name: str, returned, out: dict) -> dict:
        """`out`, read as forward() returned it, unless `returned` changes after: once its copies end, or with the next
        call. The caller reads its results at once, and keeps them."""
        if "problem" in out or out["cuda"]:
            return out  # a GPU tensor fails the check on its own (tutor.grading.performance.check_correctness)
        if not self._still(returned, out["tensor"]):
            return {"problem": call_checks.STILL_WRITTEN}
        self.forward(name, self._input(secrets.randbelow(2**62)))
        if not self._still(returned, out["tensor"]):
            return {"problem": "the next call changed the output this call returned: forward() must return results "
                               "the caller keeps (a fresh tensor each call, not a buffer it fills again)"}
        return out

    def _still(self, returned, then) -> bool:
        """Whether `returned` still holds what was read from it, once the device is done, read with checked work."""
        self.device.synchronize()
        with self._checked_work("reading an output"):
            return _same(returned, then)

    # A round of `name`, a call an ask, each sent once the call before returned, with only its own seed: nothing of a
    # later call (its input, or the seed it is made from) exists in the process while an earlier one runs.
    def warm_call(self, name: str, seed: int) -> dict:
        """The round's untimed first call, on the input `seed` makes: it warms the host (tutor.harness.gpu_clock).
        A comparator first waits out GPU work the learner's process left running."""
        waited = self.device.wait_quiet(limit_s=QUIET_LIMIT_S) if name != self.candidate else 0.0
        self.kept[name] = []  # every workload timed alike; only the candidate's and the oracle's are read
        x = self._input(seed)
        self.kept[name].append(call_checks.Kept(self.forward(name, x)))
        return {"waited_ms": waited if waited is not None else -1.0}

    def loop_call(self, name: str, seed: int, first: bool, last: bool, keep: bool) -> dict:
        """One call of the call clock's loop, on the input `seed` makes (tutor.harness.device.Device.call_ms). Each
        call's seed comes in an ask of its own, sent once the call before returned: while a call runs, no later call's
        seed exists in the process, nor its input (issue 76; when a loop's seeds came in one ask, its first call could
        read them all from the harness's frames). Every output is kept in the clock, as it returned
        (tutor.harness.call_checks), for `sampled` to read after. The `last` call takes the loop's sample; without
        `keep` (a workload whose outputs no check reads), its outputs are dropped then."""
        if first:
            self._loop_ms, self._loop_made = [], []
        made, kept = self._loop_made, self.kept[name]  # the loop's inputs so far, for a memory budget (AllocatorPeak)

        def make(flush: bool):
            [x] = self._inputs([seed], flush)
            made.append(x)
            self._harness_holds(made)
            return x

        def call(x):
            kept.append(call_checks.Kept(self.forward(name, x)))

        self._loop_ms.append(self.device.call_ms(make, call, flush=first))
        del made
        if last:
            self.samples[name].append(self.device.loop_sample(name, self._loop_ms))  # the call clock's sample
            with self._let_go():
                self._loop_ms, self._loop_made = [], []
            self._verify()
            if not keep and not self.device.cuda:  # the round's last ask on CPU
                del self.kept[name]
        return {}

    def gpu_call(self, name: str, seed: int, keep: bool) -> dict:
        """The GPU clock's call (CUDA only), on the input `seed` makes, timed alone from a cold L2; its output kept."""
        x = self._input(seed)
        _, out = self.device.time_call_ms(lambda: self.forward(name, x), name)
        self.kept[name].append(call_checks.Kept(out))  # after the events
        with self._let_go():
            del out, x
        self._verify()
        if not keep:
            del self.kept[name]
        return {}

    def sampled(self, name: str, seed: int, whole: int) -> dict:
        """Every output `name`'s last round kept, in call order, at the places `seed` draws, and the output of call
        `whole` whole: the coordinator draws both only after the round, so no call could know whether or where it
        is read (None for an output too large to copy each round: call_checks.read_whole)."""
        with self._checked_work("reading the outputs", table=self.reading_dispatch):
            kept = self.kept.pop(name, [])
            samples = call_checks.samples(kept, seed)
            if "problem" in samples[whole]:
                return {"samples": samples, "whole": samples[whole]}
            read = call_checks.read_whole(seed, kept[whole].tensor)
        return {"samples": samples, "whole": read[0][1] if read else None}

    def judge(self, name: str, seed: int, out: dict) -> dict:
        """A path-dependent output (a greedy decode's tokens: bf16's rounding in another order may pick another of
        two near-equal tokens, and every later token follows it) judged along its own path by the oracle `name`:
        the spec's judge(state, inputs, output) gives what each of its choices scored and the best each could have,
        for tutor.harness.checks.compare. An output only as right as its choices, whatever path it took."""
        if "problem" in out:
            return {"scored": out, "best": out}
        output = out["tensor"].reshape(out.get("shape", out["tensor"].shape)).to(self.device.name)
        scored, best = call_workload("spec.judge", self.spec.judge, self.states[name], self._input(seed), output)
        return {"scored": wire.portable(scored), "best": wire.portable(best)}

    def open_server(self, name: str) -> dict:
        """A fresh server of `name` for one replay: nothing queued, nothing left from the replay before. The
        ruler's waits out GPU work the learner's process left running first, as a comparator's call does."""
        waited = self.device.wait_quiet(limit_s=QUIET_LIMIT_S) if name != self.candidate else 0.0
        self.servers[name] = call_workload(f"{name}.server()", self.modules[name].server, self.states[name])
        self.draws[name] = {}
        self._verify()
        return {"waited_ms": waited if waited is not None else -1.0}

    # submit() and step() are inside the replay's clock, so the guard's check (milliseconds) waits for
    # close_server(): the clock is the coordinator's, out of any patch's reach, and what was patched still shows.
    def submit(self, name: str, rid: int, prompt: list[int], max_new: int) -> dict:
        call_workload(f"{name}'s server.submit()", self.servers[name].submit, rid, tuple(prompt), max_new)
        return {}

    def step(self, name: str, draws: bytes | None = None) -> dict:
        """One scheduling step: the tokens it produced, as host integers (the coordinator stamps them on arrival).
        `draws`: what changed of the live requests' draws since the last step (tutor.harness.serving.pack); the
        server reads them all, read-only."""
        if draws is None:
            return {"tokens": step_tokens(name, self.servers[name])}
        serving.apply(draws, self.draws[name])
        return {"tokens": step_tokens(name, self.servers[name], MappingProxyType(self.draws[name]))}

    def close_server(self, name: str) -> dict:
        del self.servers[name]
        self._verify()
        return {}

    def rewind(self) -> dict:
        """A kept ruler's next check (tutor.harness.lockstep.KeptRuler): its workloads stay prepared and warm; its
        samples, its outputs kept for the checks and its clocks start afresh (calibrate comes next)."""
        if self.candidate or self.peak or self.serving:
            raise HarnessFailure("bad_request", "only a ruler without a memory budget is kept between checks")
        self.samples = {name: [] for name in self.samples}
        self.kept = {}
        self.device.forget_clocks()
        return {}

    def finish(self, keep: bool = False, after_floor_ms: float = 0.0) -> dict:
        """Every sample, settled; memory; for the candidate what fair play saw, for the ruler the puzzle's facts.
        `keep`: a kept ruler, which serves the next check after this one (the worker's loop goes on).
        `after_floor_ms`: the candidate's GPU clock is settled against the ruler's floor, read by the ruler from its
        own calls (gpu_clock.after_floor_ms), never from calls of learner code."""
        charged, floor = self.device.settle(after_floor_ms if self.candidate else None)
        result = {"samples_ms": self.samples, "host_timed": charged, "after_floor_ms": floor,
                  "gpu_samples_ms": {n: ms for n, ms in self.device.gpu_samples_ms().items() if n in self.samples},
                  "clocks": self.device.clocks(), "timing_note": self.device.timing_note,
                  "resident_bytes": self.resident,
                  # Memory kept after prepare(): caches built lazily in forward() show up here.
                  "growth_bytes": self.device.allocated_bytes(full=True) - self.prepared_bytes}
        if self.peak:  # both processes' own: the budget compares the candidate's with the ruler's
            result["allocator_peak"] = {**self.peak.report(), "slack": float(self.spec.MEMORY_SLACK)}
        if self.candidate:
            # On CUDA the clocks already wait for the whole device; with ranks, gloo's own threads do the collectives;
            # a server is thawed only for its own replay, whose wall clock counts whatever its threads do.
            if not self.device.cuda and self.request.get("ranks", 1) == 1 and not self.serving:
                hidden = self.side.violation()
                if hidden:
                    self.guard.note(hidden)
            if self.shard_bytes:  # a rank keeps its shard and its buffers, no other rank's weights
                import torch.distributed as dist
                kept = sum(self.resident.values()) + result["growth_bytes"] - self._warm_bytes
                over = shards.over_shard(dist.get_rank(), kept, self.shard_bytes, self.spec.RANK_SLACK_BYTES)
                if over:
                    self.guard.note(over)
                result["rank_kept"] = {"rank": dist.get_rank(), "kept_bytes": kept, "shard_bytes": self.shard_bytes,
                                       "slack_bytes": self.spec.RANK_SLACK_BYTES}
            if self.peak and self.peak.fault():
                self.guard.note(self.peak.fault())
            self.guard.verify()
            result["violations"] = self.guard.violations
            result["compile"] = self.compiled.report()
            if result["compile"] and self.captures:
                result["compile"]["graphs_captured"] = self.captures.captures
            if self.device.cuda:  # the memory of the very process that was timed, after serving every input
                result["memory_facts"] = {**memory_facts(self.captures), "graph_pool_mb_by_warmup": self.pool_by_round}
        else:
            if callable(getattr(self.spec, "facts", None)):  # what the comparators did, for a puzzle's grader
                result["facts"] = call_workload("spec.facts", self.spec.facts, self.states)
            if self.device.cuda:  # the least time a call can take here (learner code is frozen meanwhile)
                result["floor"] = peaks.floor_facts(self.spec, self.request.get("peaks_cache"))
                if self.serving:  # a replay's least GPU time: the spec's least_flops at this GPU's best rate
                    result["rates"] = peaks.best_rates(self.request.get("peaks_cache"))
        return result

    # -- helpers ------------------------------------------------------------------------------

    def forward(self, name: str, x):
        if self.side is not None and not self.device.cuda:  # every workload's calls alike, the ruler's too
            out = self.side.call(call_workload, f"{name}.forward()", self.modules[name].forward, self.states[name], x)
        else:
            out = call_workload(f"{name}.forward()", self.modules[name].forward, self.states[name], x)
        call_checks.refuse_modes_left_entered()
        if self.foreign:  # and no interpreter hook left set: it would run in the harness's code after the clock
            self.foreign.refuse_hooks_left(f"{name}.forward()")
        return out

    def _input(self, seed: int):
        return self._inputs([seed])[0]

    def _inputs(self, seeds: list[int], flush: bool = False) -> list:
        """The inputs `seeds` make, then L2 written over if `flush`, with the harness's own operators: refused if
        learner code changed them."""
        with self._checked_work(table=self.input_dispatch[flush] if self.input_dispatch else None):
            return self._made(seeds, flush)

    def _made(self, seeds: list[int], flush: bool) -> list:
        """The inputs `seeds` make, then L2 written over if `flush`: the work `_inputs` checks, and its dry runs."""
        inputs = [call_workload("spec.make_input", self.spec.make_input, seed, self.device.name) for seed in seeds]
        if flush:
            self.device.flush_l2()
        return inputs

    @contextlib.contextmanager
    def _checked_work(self, what: str = "making an input", table: DispatchTable | None = None):
        """The harness's own operators checked (`_own_operators`), then used, with the garbage collector held off from
        the check to the end of the work: a collection in between could run learner code (the __del__ of a cycle it
        left) after the check, and register a kernel that the work then runs. A thread is not held off: what runs
        inside the work is watched too (tutor.harness.foreign_code)."""
        with _collector_held():
            self._own_operators(table or self.dispatch)
            with self._watched(what):
                yield

    @contextlib.contextmanager
    def _let_go(self):
        """The harness letting go of its inputs (or a call's output) after a clock stopped, watched: a finalizer
        a workload tied to one (weakref.finalize) would run its code there, untimed, before the round is checked.
        The collector held off meanwhile: what it would run there is not the inputs' own."""
        with _collector_held(), self._watched("letting a call's input go"):
            yield

    def _watched(self, what: str):
        """`what`, the harness's own work, watched for learner code where learner code runs in this process."""
        return self.foreign.watched(what) if self.foreign else contextlib.nullcontext()

    def _own_work(self) -> None:
        """The harness's own work in a candidate's process, once, before learner code loads: an input made, L2
        flushed, an output kept, sampled and read as a round's are."""
        if self.serving:
            return  # a server's requests are made by the coordinator, its tokens read as numbers
        [x] = self._made([0], flush=True)
        out = (x if isinstance(x, torch.Tensor) else torch.ones(8, device=self.device.name)).float()
        call_checks.read_round([out])
        self.device.synchronize()

    def _own_operators(self, table: DispatchTable | None) -> None:
        """Before the harness dispatches its own work in a process learner code has run in: the kernels of every aten
        operator `table` holds as they were before it loaded, or the run stops (its work would have run the
        learner's)."""
        changed = table.changed() if table else []
        if changed:
            self.guard.note("your workload changed what the harness's own operators run: " + "; ".join(changed[:3]))
            raise HarnessFailure("tampered", "Your workload changed what the operators the harness uses to make "
                                 f"inputs, flush caches and read outputs run: {'; '.join(changed[:3])}. The harness's "
                                 "own work would run your code. Register a kernel of yours as an operator of your "
                                 "own namespace (torch.library.custom_op(\"mylib::name\", ...)) and call it from "
                                 "forward(), and enter modes such as autocast or inference_mode in a with block "
                                 "inside forward().")

    def _input_tables(self) -> dict[bool, DispatchTable | None]:
        """By whether an L2 flush follows: the operators a call's input making dispatches, read in a dry run of
        INPUT_SEEDS_PROBED inputs (tutor.harness.dispatch_table.dispatched), and the flush's beside them. Most calls
        make an input alone, and a check reads each operator's every overload (tens of microseconds each on a GPU's
        host). The whole table where that cannot be read, or for a server, whose requests the coordinator makes."""
        if not self.serving:
            making = dispatched(lambda: self._made(list(range(INPUT_SEEDS_PROBED)), flush=False))
            flush = dispatched(self.device.flush_l2)
            if making and flush is not None:
                return {False: DispatchTable(making), True: DispatchTable(making | flush)}
        return dict.fromkeys((False, True), self.dispatch)

    def _reading_table(self) -> DispatchTable | None:
        """The operators reading a round's outputs dispatches (`sampled`), read in a dry run over outputs of every
        kind that reading takes a way of its own for (call_checks.probe_outputs): a check each round of a quarter of
        the whole table. The whole table where that cannot be read, or for a server."""
        if self.serving:
            return self.dispatch
        outputs = call_checks.probe_outputs(self.device.name)
        names = dispatched(lambda: call_checks.read_round(outputs))
        return DispatchTable(names) if names else self.dispatch

    def _harness_holds(self, inputs=()) -> None:
        """For a memory budget: the harness's inputs alive now, the warm-up's and these (AllocatorPeak)."""
        if self.peak:
            self.peak.harness_holds(self._warm_bytes + shards.tensor_bytes(list(inputs)))

    def _master_weights(self):
        """One set of weights per process; each workload gets its own copy of it. With ranks, this rank's shard
        alone, and no freed block of the GPU holds the rest (tutor.harness.shards)."""
        if self._shared is None:
            self._shared = shards.given_weights(self.spec, self.request, self.device.name)
            if self.request.get("ranks", 1) > 1:
                self.shard_bytes = shards.tensor_bytes(self._shared)
                self.device.poison_free_memory()
        return self._shared

    def _verify(self) -> None:
        if self.guard:  # every call: a patch undone before the end still counts
            self.guard.verify()
        if self.peak:  # after every round: a peak lower than the last read was reset
            self.peak.read()

    def _namespaces(self) -> tuple[dict, dict]:
        """What learner code must leave alone: every change to `strict` counts, to `libraries` only its own."""
        harness = [m for m in list(sys.modules.values()) if getattr(m, "__name__", "").startswith("tutor.")]
        strict = {m.__name__: m for m in (*harness, time, os, json, random, secrets)}
        strict.update({f"{m.__name__}.{c.__name__}": c for m in harness for c in vars(m).values()
                       if isinstance(c, type) and c.__module__ == m.__name__})
        strict.update({"random.SystemRandom": random.SystemRandom, "torch.cuda.Event": torch.cuda.Event,
                       "torch.cuda.Stream": torch.cuda.Stream,  # the clocks' events are recorded on one made here
                       "spec": self.spec, "device": self.device})
        libraries = {"builtins": builtins, "torch": torch, "torch.Tensor": torch.Tensor, "torch.cuda": torch.cuda,
                     "torch.nn.functional": torch.nn.functional, "torch.nn.Module": torch.nn.Module,
                     "torch.linalg": torch.linalg}
        return strict, libraries


# Inputs made in the dry run that reads which operators an input's making dispatches: every shipped spec makes the
# same ones for any seed (tests/test_dispatch_table.py), and two cover a branch one seed might skip.
INPUT_SEEDS_PROBED = 2
# How long a comparator waits for GPU work the candidate's process left behind before that is a violation.
QUIET_LIMIT_S = 5.0
# How long the GPU is held while a host output is made and read: a forward() that does not wait for its copies
# returns in a few milliseconds of launches, so only a host over 100 times slower could read them finished.
HOST_OUTPUT_HOLD_MS = 300.0
OPERATIONS = ("set_up", "prepare", "prepared", "warm_up", "calibrate", "run", "warm_call", "loop_call", "gpu_call",
              "sampled", "judge", "open_server", "submit", "step", "close_server", "finish", "rewind")


@contextlib.contextmanager
def _collector_held():
    """The garbage collector off until the block ends (and on again if it was): a collection could run learner code."""
    held = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if held:
            gc.enable()


def _same(now: torch.Tensor, then: torch.Tensor) -> bool:
    """Whether a tensor still holds what was read from it (NaN where NaN was: such an output fails on its own)."""
    return torch.equal(now, then) or not torch.isfinite(then).all()


def host_tokens(produced, where: str) -> dict[int, list]:
    """A step's {request id: new tokens} as plain numbers, each token an integer or, with its logit, an [integer,
    float] pair (tutor.harness.serving); a tensor of them is read back to the host here."""
    if not isinstance(produced, dict):
        raise HarnessFailure("workload_error", f"{where} returned {type(produced).__name__}, not a dict of "
                             "{request id: [new tokens]}", where=where)
    tokens = {}
    for rid, new in produced.items():
        try:
            values = new.tolist() if isinstance(new, torch.Tensor) else list(new)
            tokens[int(rid)] = [_host_token(t) for t in values]
        except (TypeError, ValueError) as e:
            raise HarnessFailure("workload_error", f"{where} gave request {rid!r} {type(new).__name__}, not a "
                                 f"list of token ids or (token id, logit) pairs ({e})", where=where) from e
    return tokens


def _host_token(t):
    if isinstance(t, (tuple, list)):
        token, logit = t  # exactly two: anything else is the server's mistake, named above
        return [int(token), float(logit.item() if isinstance(logit, torch.Tensor) else logit)]
    return int(t.item() if isinstance(t, torch.Tensor) else t)


def rank_handler(request: dict, names: list[str], candidate: str | None):
    """A rank's answers in a multi-GPU grade (tutor.harness.ranks): the worker a one-process side has, on
    this rank's GPU (torch.distributed set up by then), built at the first message."""
    workers: list[Worker] = []

    def handle(rank: int, world: int, message: dict) -> dict:
        if not workers:
            workers.append(Worker(request, names, candidate))
        return answer(workers[0], {k: v for k, v in message.items() if k != "aligned"})
    return handle


def answer(worker: Worker, message: dict) -> dict:
    """The worker's reply to one message: its operation, with the message's fields."""
    op = message.pop("op")
    if op not in OPERATIONS:
        raise HarnessFailure("bad_request", f"unknown worker operation {op!r}")
    return getattr(worker, op)(**message)


# How long a worker keeps its core busy for the next message before it sleeps on the pipe: a round's asks (a call
# each) follow each other within this, so each call finds the host as warm as the call before left it (a worker
# woken from its pipe ran host-bound calls 2-6x slower: benchmarks/hold_effect.py).
AWAKE_S = 0.002
_now_s = time.perf_counter  # bound before any learner code loads


def awake(conn: Connection) -> Connection:
    """`conn` once a message is waiting on it, or AWAKE_S from now: busy until then, not asleep in the kernel."""
    deadline = _now_s() + AWAKE_S
    while not conn.poll(0) and _now_s() < deadline:
        pass
    return conn


# benchmarks/profile_harness.py --workers DIR: each worker's own functions profiled (cProfile), kept in DIR.
PROFILE_ENV = "INFPROF_PROFILE_WORKERS"


def serve(conn: Connection, request: dict, names: list[str], candidate: str | None) -> None:
    """The worker's loop (`_serve`), under cProfile where PROFILE_ENV names a folder for its stats."""
    folder = os.environ.get(PROFILE_ENV)
    if not folder:
        return _serve(conn, request, names, candidate)
    import cProfile

    profiler = cProfile.Profile()

    def kept() -> None:  # before the last reply: a learner's side may be killed once it is sent
        profiler.disable()
        profiler.dump_stats(os.path.join(folder, f"{'candidate' if candidate else 'ruler'}-{os.getpid()}.prof"))

    profiler.enable()
    _serve(conn, request, names, candidate, kept)


def _serve(conn: Connection, request: dict, names: list[str], candidate: str | None, last=lambda: None) -> None:
    """One operation in, one reply out, until `finish` or the coordinator hangs up; `last()` before the last reply."""
    worker = None
    while True:
        try:
            message = wire.recv(awake(conn))
        except EOFError:
            return
        try:
            if worker is None:
                worker = Worker(request, names, candidate)
            op = message["op"]
            reply = answer(worker, message)
        except HarnessFailure as f:
            print(f.tb or f.message, file=sys.stderr)
            wire.send(conn, {"error": {"kind": f.kind, "message": f.message, "where": f.where, "tb": f.tb[-4000:]}})
            return
        except Exception as e:  # a harness bug: still reported
            tb = traceback.format_exc()
            print(tb, file=sys.stderr)
            wire.send(conn, {"error": {"kind": "harness_bug", "message": f"{type(e).__name__}: {e}",
                                       "where": "harness", "tb": tb[-4000:]}})
            return
        if op == "finish" and not message.get("keep"):
            last()
            wire.send(conn, reply, op=op)
            return
        wire.send(conn, reply, op=op)
