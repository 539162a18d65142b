"""The memory budget's figure (tutor.harness.allocator_peak) and its judge (graders/puzzle23.py), on the CPU: the
allocator's peak statistic is injected, as the GPU's worker reads it after every round; torch's own resets are
replaced for the test's length and restored after it."""

from __future__ import annotations

import importlib
import os

import pytest
import torch

from graders import puzzle23 as puzzle23_grader
from graders.puzzle23 import criteria
from tutor.catalog import get_puzzle
from tutor.harness import allocator_peak, process_memory
from tutor.harness.allocator_peak import AllocatorPeak
from tutor.harness.gpu_busy import Nvml
from tutor.harness.process_memory import nvml_counts

MB = 2**20


def restored_after(monkeypatch) -> None:
    """Torch's resetters as they are now, once the test ends: an AllocatorPeak replaces them for good."""
    for module_name, attribute in allocator_peak.RESETTERS:
        module = importlib.import_module(module_name)
        if hasattr(module, attribute):
            monkeypatch.setattr(module, attribute, getattr(module, attribute))


@pytest.fixture
def peak(monkeypatch):
    """An AllocatorPeak over a settable peak figure; torch's resetters as they were once the test ends."""
    restored_after(monkeypatch)
    figure = {"peak": 0}
    resets = []

    def reset(device):
        resets.append(device)
        figure["peak"] = figure.get("current", 0)

    watch = AllocatorPeak(peak_bytes=lambda: figure["peak"], reset=reset,
                          outside_bytes=lambda: figure.get("outside", 500 * MB))
    watch.figure, watch.harness_resets = figure, resets
    return watch


def test_the_peak_is_the_most_read_over_the_rounds_from_what_prepare_left(peak):
    peak.figure.update(peak=900 * MB, current=300 * MB)  # prepare()'s master copy of the weights came and went
    peak.start()
    assert peak.harness_resets and peak.peak == 300 * MB  # the harness's own reset: prepare()'s peak is not a call's
    for mb in (500, 800, 800):
        peak.figure["peak"] = mb * MB
        peak.read()
    report = peak.report()
    assert (report["peak_reserved_bytes"], report["resets"], report["lowered"]) == (800 * MB, 0, 0)
    assert not peak.fault()


def test_the_harnesss_inputs_are_reported_at_their_most(peak):
    """The warm-up's inputs, then rounds' inputs made beside them: the most held at once is what both processes
    hold whatever their workloads (graders/puzzle23.py sets it aside)."""
    peak.start()
    for nbytes in (276 * MB, 966 * MB, 900 * MB):
        peak.harness_holds(nbytes)
    assert peak.report()["harness_bytes"] == 966 * MB


def test_memory_outside_the_allocator_is_recorded_at_setup_at_start_and_between(peak):
    """A workload holding memory outside torch's allocator (cupy's pool, say) raises what the device holds beyond
    this process's reserve: recorded at set-up, after prepare() and at each read, the least and the most."""
    peak.figure["outside"] = 900 * MB  # prepare() took 400 MB outside torch
    peak.start()
    for mb in (900, 2900, 900):  # a call that held 2 GB more outside torch while it ran
        peak.figure["outside"] = mb * MB
        peak.read()
    assert peak.report()["outside_bytes"] == {"at_setup": 500 * MB, "at_start": 900 * MB, "least": 900 * MB,
                                              "most": 2900 * MB}


@pytest.mark.parametrize("resetter", [
    pytest.param(lambda: torch.cuda.reset_peak_memory_stats(), id="torch.cuda"),
    pytest.param(lambda: torch.cuda.memory.reset_max_memory_allocated(), id="torch.cuda.memory"),
    pytest.param(lambda: torch._C._cuda_resetPeakMemoryStats(0), id="torch._C",  # what the others call, on CUDA
                 marks=pytest.mark.skipif(not hasattr(torch._C, "_cuda_resetPeakMemoryStats"),
                                          reason="a CPU build of torch has no allocator to reset"))])
def test_a_reset_the_workload_asks_torch_for_is_counted_and_resets_nothing(peak, resetter):
    peak.start()
    peak.figure["peak"] = 2000 * MB
    resetter()
    peak.read()
    assert peak.peak == 2000 * MB and peak.report()["resets"] == 1
    assert "reset of the allocator's peak statistics 1 time(s)" in peak.fault()


def test_a_peak_read_lower_than_the_last_shows_a_reset_made_another_way(peak):
    peak.start()
    for mb in (2000, 400):  # the second round's read: a reset made beyond torch's Python (ctypes, say)
        peak.figure["peak"] = mb * MB
        peak.read()
    assert peak.peak == 2000 * MB and peak.report()["lowered"] == 1 and "lowered" in peak.fault()


def test_a_process_nvml_cannot_see_alone_is_counted_device_wide_and_said_so(monkeypatch):
    """NVML's count for this process alone where it has one; where a read finds none (the process gone from its
    list, another PID namespace), the device's whole memory in use stands in, and the report says so from then on:
    the grader judges only counts of the process alone."""
    restored_after(monkeypatch)
    counts = iter([700 * MB, 760 * MB, None])
    monkeypatch.setattr(allocator_peak, "_process_memory", lambda: lambda: next(counts))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (60 * 1024 * MB, 80 * 1024 * MB))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda: 100 * MB)
    watch = AllocatorPeak(peak_bytes=lambda: 0, reset=lambda device: None)
    assert watch.report()["outside_source"] == allocator_peak.ALONE and watch.outside["at_setup"] == 600 * MB
    watch.read()
    assert watch.outside["most"] == 660 * MB and watch.report()["outside_source"] == allocator_peak.ALONE
    watch.read()
    assert watch.outside["most"] == 20 * 1024 * MB - 100 * MB
    assert watch.report()["outside_source"] == allocator_peak.DEVICE_WIDE
    assert puzzle23_grader.NVML == allocator_peak.ALONE  # the grader's word for it, kept free of torch


def result_with(mine_mb: float, theirs_mb: float) -> dict:
    side = lambda mb: {"peak_reserved_bytes": mb * MB, "resets": 0, "lowered": 0, "slack": 0.1}  # noqa: E731
    return {"memory": {"allocator_peak": {"mine": side(mine_mb), "theirs": side(theirs_mb)}}}


@pytest.mark.parametrize("mine_mb, passed", [(700, True), (1100, True), (1101, False), (3000, False)])
def test_the_budget_is_the_baselines_peak_and_its_slack(mine_mb, passed):
    [criterion] = criteria(get_puzzle("puzzle23", drafts=True), result_with(mine_mb, 1000))
    assert criterion.name == "memory budget" and criterion.passed == passed, criterion
    assert "budget 1100 MB" in criterion.details[0]
    if not passed:
        assert criterion.summary.startswith("Over the budget") and "--profiler memory" in criterion.details[-1]


def test_a_grade_without_the_peaks_fails_the_budget_and_says_why():
    [criterion] = criteria(get_puzzle("puzzle23", drafts=True), {"memory": {}})
    assert not criterion.passed and "no allocator peak" in criterion.summary


@pytest.mark.gpu
def test_gpu_the_allocators_own_peak_is_read_and_a_reset_by_any_route_shows(monkeypatch):
    """On a GPU, with the real allocator: a 1 GiB block's segment raises the peak read; torch's reset is counted and
    leaves it; a reset through the allocator's own entry point (kept before the patch) shows as a lowered peak."""
    restored_after(monkeypatch)
    real_reset = torch._C._cuda_resetPeakMemoryStats
    torch.zeros(1, device="cuda")  # a CUDA context, as a worker's Device has made before it installs the watch
    torch.cuda.empty_cache()
    watch = AllocatorPeak()
    watch.start()
    block = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    del block
    watch.read()
    torch.cuda.reset_peak_memory_stats()
    watch.read()
    print("peak MB", watch.peak / MB, watch.report())
    assert watch.report()["outside_bytes"]["at_setup"] > 0  # this process's CUDA context at least
    counts = nvml_counts()  # the driver's NVML (tutor.harness.gpu_busy.Nvml)
    if counts is not None and os.getpid() in counts():  # it counts this process alone
        assert watch.report()["outside_source"] == allocator_peak.ALONE
        assert watch.report()["outside_bytes"]["most"] < 2 * 2**30  # a context, not the GPU's other tenants
    else:  # no NVML, or one that sees only other PID namespaces' pids (a container's host): it says so
        assert watch.report()["outside_source"] == allocator_peak.DEVICE_WIDE
    assert watch.peak >= 2**30 and watch.report()["resets"] == 1 and watch.report()["lowered"] == 0
    torch.cuda.empty_cache()
    real_reset(torch.cuda.current_device())
    watch.read()
    assert watch.report()["lowered"] == 1 and watch.fault()


def test_the_brief_states_the_budget_under_how_it_is_graded():
    """`show` and the app say what the grade checks: a grader's own rule among the others (tutor.brief)."""
    from tutor.brief import grading_markdown

    text = grading_markdown(get_puzzle("puzzle23", drafts=True))
    assert "- **Memory budget** — your workload may hold" in text and "MEMORY_SLACK" in text
    assert "Memory budget" not in grading_markdown(get_puzzle("puzzle2"))  # a grader that states no rule


def counted_outside(result: dict, mine_mb: float, theirs_mb: float, source: str = "this process (NVML)") -> dict:
    for side, mb in (("mine", mine_mb), ("theirs", theirs_mb)):
        result["memory"]["allocator_peak"][side].update(
            outside_source=source, outside_bytes={"at_setup": 600 * MB, "at_start": 600 * MB, "least": 600 * MB,
                                                  "most": mb * MB})
    return result


@pytest.mark.parametrize("mine_outside_mb, passed", [(680, True), (810, True), (811, False), (2700, False)])
def test_memory_held_outside_torchs_allocator_counts_against_the_budget(mine_outside_mb, passed):
    """Allocator peaks of 1000 MB each, each process 600 MB outside its allocator at set-up (its CUDA context), the
    baseline's 700 MB at most over the calls: the baseline's workload held 1100 MB, a budget of 1210 MB. The
    learner's 1000 MB reserve leaves it 810 MB outside at most: a pool of its own taken past torch's allocator fails
    as surely as a reserve over the budget."""
    result = counted_outside(result_with(1000, 1000), mine_outside_mb, 700)
    [criterion] = criteria(get_puzzle("puzzle23", drafts=True), result)
    assert criterion.passed == (1000 + mine_outside_mb - 600 <= 1210) == passed, criterion
    assert f"your workload held {1000 + mine_outside_mb - 600} MB at its most" in criterion.details[0]
    assert "budget 1210 MB" in criterion.details[0]
    assert (f"your process: its caching allocator reserved 1000 MB at its peak, the harness's inputs 0 MB of it at "
            f"their most; GPU memory outside that allocator 600 MB at set-up (its CUDA context), "
            f"600-{mine_outside_mb} MB over the calls (counted for this process (NVML))" in criterion.details)


@pytest.mark.parametrize("mine_mb, passed", [(1000, True), (1040, True), (1041, False), (1100, False)])
def test_the_slack_is_a_share_of_what_the_workload_holds_not_of_the_harnesss_inputs(mine_mb, passed):
    """Both processes hold the harness's 600 MB of inputs at their most: the baseline's workload 400 MB of its
    1000 MB reserve, so 10% slack is 40 MB, not 100: a default allocator's few hundred MB of fragments cannot hide
    in the slack of memory the workload never held (1100 MB passed when the slack was a share of the whole)."""
    result = result_with(mine_mb, 1000)
    for side in ("mine", "theirs"):
        result["memory"]["allocator_peak"][side]["harness_bytes"] = 600 * MB
    [criterion] = criteria(get_puzzle("puzzle23", drafts=True), result)
    assert criterion.passed == passed, criterion
    assert "the baseline's 400 MB on the same inputs (budget 440 MB" in criterion.details[0]


def test_where_nvml_cannot_count_a_process_alone_the_allocators_peaks_are_compared_by_themselves():
    """The device-wide count holds the other process's memory too: it cannot be judged, and the grade says so."""
    result = counted_outside(result_with(1050, 1000), 9000, 700, source="the whole device")
    [criterion] = criteria(get_puzzle("puzzle23", drafts=True), result)
    assert criterion.passed and "budget 1100 MB" in criterion.details[0]
    assert any("not judged" in line for line in criterion.details)


def test_a_process_nvml_lost_count_of_beside_a_counted_baseline_fails_the_budget():
    """Both processes run on one GPU in one namespace: where the baseline's was counted alone and the learner's
    was not, the learner's process made NVML lose it (its binding patched, say), whatever the figures say."""
    result = counted_outside(result_with(800, 1000), 600, 700)
    result["memory"]["allocator_peak"]["mine"]["outside_source"] = "the whole device"
    [criterion] = criteria(get_puzzle("puzzle23", drafts=True), result)
    assert not criterion.passed and "lost count of yours" in criterion.summary


def test_the_guard_watches_the_harnesss_nvml_reader_as_it_watches_the_harness(monkeypatch):
    """NVML counts each process's memory for the budget through the harness's own binding (tutor.harness.gpu_busy):
    a change to it from learner code is a change to the harness, which the guard refuses."""
    from types import ModuleType, SimpleNamespace

    from tutor.harness.worker import Worker

    strict, libraries = Worker._namespaces(SimpleNamespace(spec=ModuleType("spec"), device=object()))
    assert strict["tutor.harness.gpu_busy.Nvml"] is Nvml and strict["tutor.harness.process_memory"] is process_memory


def test_what_is_set_aside_is_the_baselines_figure_whatever_the_learners_process_reports():
    """The learner's process reports its own harness inputs too, where its code could reach the figure: the
    baseline's, on the same seeds and out of that code's reach, is what both are judged less."""
    result = result_with(1100, 1000)
    result["memory"]["allocator_peak"]["theirs"]["harness_bytes"] = 600 * MB
    result["memory"]["allocator_peak"]["mine"]["harness_bytes"] = 1000 * MB
    [criterion] = criteria(get_puzzle("puzzle23", drafts=True), result)
    assert not criterion.passed and "your workload held 500 MB" in criterion.details[0]


def test_nvmls_count_read_outside_the_learners_process_bounds_what_it_reports_from_below():
    """The coordinator's count of the learner's process between its calls (tutor.harness.process_memory): a
    process that reported less than NVML saw it hold is judged by what NVML saw."""
    result = counted_outside(result_with(800, 1000), 700, 700)  # reports 800 + 700 - 600 = 900 MB: inside 1210
    result["memory"]["observed_bytes"] = {"mine": 2400 * MB, "theirs": 1700 * MB}
    [criterion] = criteria(get_puzzle("puzzle23", drafts=True), result)
    assert not criterion.passed and "your workload held 1800 MB" in criterion.details[0]
    assert "your process as NVML counted it between its calls, read outside it: 2400 MB at most" in criterion.details
    result["memory"]["observed_bytes"]["mine"] = 1200 * MB  # an honest count: between calls, under the peak
    [criterion] = criteria(get_puzzle("puzzle23", drafts=True), result)
    assert criterion.passed and "your workload held 900 MB" in criterion.details[0]


def test_each_sides_processes_are_counted_at_their_most_and_an_unseen_process_not_as_nothing():
    counts = iter([{10: 700 * MB, 11: 100 * MB, 20: 900 * MB}, {10: 650 * MB, 20: 1200 * MB}, {}])
    watch = process_memory.ProcessMemory(reader=lambda: next(counts))
    watch.observe("ruler", [10, 11])
    watch.observe("candidate", [20])
    watch.observe("candidate", [20])  # NVML lost sight of it: its most stays
    assert watch.report() == {"ruler": 800 * MB, "candidate": 1200 * MB}


class FakeNvml:
    """libnvidia-ml's nvmlDeviceGetComputeRunningProcesses_v3 as the NVML docs state it: asked with too small a
    buffer, it says how many processes there are and NVML_ERROR_INSUFFICIENT_SIZE."""

    def __init__(self, processes):
        self.processes, self.calls = processes, 0

    def nvmlDeviceGetComputeRunningProcesses_v3(self, device, count, buffer):
        self.calls += 1
        wanted = count._obj
        if buffer is None or wanted.value < len(self.processes):
            wanted.value = len(self.processes)
            return 7 if self.processes else 0
        for slot, (pid, used) in zip(buffer, self.processes):
            slot.pid, slot.used_bytes = pid, used
        wanted.value = len(self.processes)
        return 0


def test_nvmls_count_of_each_process_is_read_in_two_calls_and_an_untold_one_left_out():
    nvml = Nvml.__new__(Nvml)
    nvml.device = None
    nvml.lib = FakeNvml([(10, 700 * MB), (11, 2**64 - 1), (20, 1200 * MB)])
    assert nvml.process_bytes() == {10: 700 * MB, 20: 1200 * MB} and nvml.lib.calls == 2
    nvml.lib = FakeNvml([])
    assert nvml.process_bytes() == {} and nvml.lib.calls == 1

