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


def test_the_harness_work_runs_its_own_and_names_anyone_elses(tmp_path: Path):
    (tmp_path / "spec.py").write_text("import torch\ndef make_input(seed, device):\n    return torch.ones(3) * seed\n")
    (tmp_path / "mine.py").write_text("def kernel(x):\n    return x\n")
    spec, mine = (load_module(tmp_path / f"{name}.py", f"foreign_{name}", ()) for name in ("spec", "mine"))
    watch = ForeignCode(str(tmp_path / "spec.py"))
    with watch.watched("making an input"):  # the spec's, torch's (Python and C) and the standard library's
        spec.make_input(2, "cpu").float().mul(2).tolist()
        json.dumps({"a": [1]})
        torch.nn.functional.relu(torch.ones(2))
    with pytest.raises(HarnessFailure) as info, watch.watched("making an input"):
        mine.kernel(1)
    assert info.value.kind == "tampered"
    assert f"(making an input): kernel() in {tmp_path / 'mine.py'}, line 1" in info.value.message
    with watch.watched("making an input"):  # what it saw is not held against the next piece of work
        spec.make_input(3, "cpu")
