"""tutor.harness.foreign_code: while the harness works, Python code that is not its own, the spec's, torch's or the
standard library's is named and stops the run; theirs runs unremarked. Through the real harness, a thread's kernel
registered inside the harness's input making: tests/test_every_call_checked.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tutor.harness.foreign_code import ForeignCode
from tutor.harness.loading import HarnessFailure, load_module


def _watch_of(tmp_path: Path):
    """A spec of its own in `tmp_path`, loaded, and a watch that trusts it."""
    (tmp_path / "spec.py").write_text("import torch\ndef make_input(seed, device):\n    return torch.ones(3) * seed\n")
    spec = load_module(tmp_path / "spec.py", f"foreign_spec_{tmp_path.name}", ())
    return spec, ForeignCode(str(tmp_path / "spec.py"))


def test_the_harness_work_runs_its_own_and_names_anyone_elses(tmp_path: Path):
    spec, watch = _watch_of(tmp_path)
    (tmp_path / "mine.py").write_text("def kernel(x):\n    return x\n")
    mine = load_module(tmp_path / "mine.py", "foreign_mine", ())
    with watch.watched("making an input"):  # the spec's, torch's (Python and C) and the standard library's
        spec.make_input(2, "cpu").float().mul(2).tolist()
        json.dumps({"a": [1]})
        torch.nn.functional.relu(torch.ones(2))
        from email import message  # noqa: F401 - the frozen importlib's _handle_fromlist runs it
    with pytest.raises(HarnessFailure) as info, watch.watched("making an input"):
        mine.kernel(1)
    assert info.value.kind == "tampered"
    assert f"(making an input): kernel() in {tmp_path / 'mine.py'}, line 1" in info.value.message
    with watch.watched("making an input"):  # what it saw is not held against the next piece of work
        spec.make_input(3, "cpu")


@pytest.mark.parametrize("under", ["torch", "spec", "frozen"])
def test_code_of_the_workloads_compiled_under_a_trusted_files_name_is_named(tmp_path: Path, under: str):
    spec, watch = _watch_of(tmp_path)
    name = {"torch": torch._tensor.__file__, "spec": str(tmp_path / "spec.py"), "frozen": "<frozen os>"}[under]
    namespace: dict = {}
    exec(compile("def make_input(seed, device):\n    return 'the answer'\n", name, "exec"), namespace)
    with pytest.raises(HarnessFailure) as info, watch.watched("making an input"):
        namespace["make_input"](1, "cpu")
    assert info.value.kind == "tampered" and f"make_input() in {name}, line 1" in info.value.message
    with watch.watched("making an input"):  # the spec's own, compiled from its file, still runs
        spec.make_input(1, "cpu")


def test_a_trusted_file_changed_after_the_harness_started_is_not_trusted(tmp_path: Path):
    spec, watch = _watch_of(tmp_path)
    (tmp_path / "spec.py").write_text((tmp_path / "spec.py").read_text() + "# rewritten\n")
    with pytest.raises(HarnessFailure, match="make_input"), watch.watched("making an input"):
        spec.make_input(1, "cpu")


def test_a_trace_function_set_while_the_harness_works_is_refused(tmp_path: Path):
    import sys

    spec, watch = _watch_of(tmp_path)

    def tracer(frame, event, arg):  # a workload's, run on every line of the harness's work, unseen by a profiler
        return tracer

    with pytest.raises(HarnessFailure) as info, watch.watched("making an input"):
        sys.settrace(tracer)
        spec.make_input(1, "cpu")
    sys.settrace(None)
    assert info.value.kind == "tampered" and "trace, profile or sys.monitoring" in info.value.message


@pytest.mark.skipif(not hasattr(__import__("sys"), "monitoring"), reason="sys.monitoring is Python 3.12's")
def test_a_monitoring_tool_in_force_while_the_harness_works_is_refused(tmp_path: Path):
    import sys

    spec, watch = _watch_of(tmp_path)
    monitoring, calls = sys.monitoring, []
    monitoring.use_tool_id(3, "mine")
    try:
        monitoring.register_callback(3, monitoring.events.PY_START, lambda code, offset: calls.append(code))
        monitoring.set_events(3, monitoring.events.PY_START)
        with pytest.raises(HarnessFailure, match="sys.monitoring"), watch.watched("making an input"):
            spec.make_input(1, "cpu")
    finally:
        monitoring.set_events(3, 0)
        monitoring.free_tool_id(3)
    assert calls  # its callback ran inside the work, which the profile function alone would not have seen
