"""The suite's own tools: the order it hands its tests out in (tests/conftest.py: the tests marked `first`, the
wheel's install, ahead of every other), the plugin that counts each test's CPU (benchmarks/suite_cpu.py), the
timer of the whole suite (benchmarks/suite_time.py), the bf16 products the scene tests make in float64
(conftest.exact_bf16_products), and how the benchmarks read what they time (grade_latency's stages, kernel_build's
ninja log)."""

from __future__ import annotations


def test_the_tests_marked_first_lead(request):
    marked = [i.get_closest_marker("first") is not None for i in request.session.items]
    assert marked == sorted(marked, reverse=True)


def test_the_suite_cpu_plugin_reads_the_machines_busy_time_and_names_each_tests_share():
    """benchmarks/suite_cpu.py, where docs/development.md's figures of the suite's CPU come from."""
    from pathlib import Path

    from tutor.harness.loading import load_module

    plugin = load_module(Path(__file__).parents[1] / "benchmarks" / "suite_cpu.py", "suite_cpu", ())
    before = plugin.busy_seconds()
    sum(i * i for i in range(2_000_000))  # some CPU of this process's own
    assert plugin.busy_seconds() > before > 0
    assert plugin.share("tests/test_runner.py::test_cancel_kills_the_workload[cold]") == "--also-cold's cold twins"
    assert plugin.share("tests/test_app.py::test_hints_are_revealed_one_at_a_time") == "the app's tests and snapshots"
    assert plugin.share("tests/test_puzzle9.py::test_ptxas_finds_the_baselines_spills[baseline.py-True]") == (
        "CUDA sources compiled for ptxas's counts")
    assert plugin.share("tests/test_puzzle4.py::test_no_table_answers_a_call") == "the puzzles' other tests"
    assert plugin.share("tests/test_cli.py::test_list") == "the rest"
    assert plugin.share("fc/tests/test_app.py::test_hints_are_revealed_one_at_a_time") == (
        "the app's tests and snapshots")  # run from a clone, whose folder pytest may name first


def test_the_process_log_has_a_line_for_each_fresh_python_and_counts_them_by_kind(tmp_path):
    """benchmarks/process_log, where docs/development.md's count of the suite's fresh interpreters comes from."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    folder = Path(__file__).parents[1] / "benchmarks" / "process_log"
    log = tmp_path / "processes.jsonl"
    env = {**os.environ, "INFPROF_PROCESS_LOG": str(log), "PYTHONPATH": str(folder)}
    # The second's forked child exits through Python, as its parent does: only the parent is logged.
    for code in ("import json", "import os, sys; pid = os.fork(); os.waitpid(pid, 0) if pid else sys.exit(0)"):
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["argv"], r["torch"]) for r in rows] == [(["-c"], False)] * 2 and all(r["cpu_s"] >= 0 for r in rows)
    summary = subprocess.run([sys.executable, str(folder / "sitecustomize.py"), str(log)], capture_output=True,
                             text=True, check=True).stdout
    assert summary.split()[2:4] == ["2", "x"] and summary.split()[4] == "-c"


def test_suite_time_reads_pytests_counts_and_the_machines_busy_time():
    """benchmarks/suite_time.py, where docs/development.md's timings of make test come from."""
    from pathlib import Path

    from tutor.harness.loading import load_module

    timer = load_module(Path(__file__).parents[1] / "benchmarks" / "suite_time.py", "suite_time", ())
    output = ("....s. [100%]\n========= snapshot report summary =========\n22 snapshots passed.\n"
              "1570 passed, 224 skipped, 14 warnings in 298.40s (0:04:58)\n")
    assert timer.summary_line(output) == "1570 passed, 224 skipped, 14 warnings in 298.40s (0:04:58)"
    assert timer.summary_line("== 1 failed, 3 passed in 2.00s ==\n") == "1 failed, 3 passed in 2.00s"
    assert timer.summary_line("make: *** [Makefile:33: test] Error 4\n") == "no summary"
    assert timer.busy_seconds() > 0


def test_suite_time_names_the_processes_a_run_left_running():
    """A process of the suite's still alive after it, found by the marker in its environment (its cache folder)."""
    import os
    import subprocess
    import sys
    import uuid
    from pathlib import Path

    from tutor.harness.loading import load_module

    timer = load_module(Path(__file__).parents[1] / "benchmarks" / "suite_time.py", "suite_time", ())
    marker = f"XDG_CACHE_HOME=/tmp/{uuid.uuid4().hex}"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             env={**os.environ, "XDG_CACHE_HOME": marker.split("=", 1)[1]})
    try:
        assert [line for line in timer.left_running(marker) if "time.sleep(60)" in line]
    finally:
        child.kill()
        child.wait()
    assert timer.left_running(marker) == []


def test_grade_latency_sums_a_serving_grades_replays_by_side():
    """benchmarks/grade_latency.py's rows: a serving grade's replay stages (each names its side and replay) summed
    by side, the warm-up pair apart, so its table shows the puzzle's server's seconds against the learner's."""
    from pathlib import Path

    from tutor.harness.loading import load_module

    latency = load_module(Path(__file__).parents[1] / "benchmarks" / "grade_latency.py", "grade_latency", ())
    rows = [latency.stage_row("replaying", f"{who}: {which} of 512 requests")
            for which in ("warm-up replay", "replay 1", "replay 2") for who in ("the puzzle's workloads", "your workload")]
    assert rows == ["replaying, the puzzle's workloads (warm-up)", "replaying, your workload (warm-up)",
                    *["replaying, the puzzle's workloads", "replaying, your workload"] * 2]
    assert latency.stage_row("preparing", "baseline") == "preparing baseline"
    assert latency.stage_row("timing", "40 interleaved rounds") == "timing"


def test_exact_bf16_products_are_torchs_within_a_rounding_step_and_alike_whatever_the_path():
    """conftest.exact_bf16_products: a product, a fused one, one with an nn.Parameter and F.linear's each within a
    bf16 rounding step of torch's own, and bitwise alike between the paths that torch's own makes alike."""
    import torch

    from conftest import exact_bf16_products

    gen = torch.Generator().manual_seed(0)
    a, b, c = (torch.randn(shape, generator=gen).bfloat16() for shape in ((64, 512), (300, 512), (64, 300)))
    weight = torch.nn.Parameter(b, requires_grad=False)
    own = (a @ b.T, torch.addmm(c, a, b.T), a @ weight.T, torch.nn.functional.linear(a, b))
    with exact_bf16_products():
        exact = (a @ b.T, torch.addmm(c, a, b.T), a @ weight.T, torch.nn.functional.linear(a, b))
    for mine, theirs in zip(exact, own):
        assert mine.dtype == torch.bfloat16
        step = theirs.float().abs() * 2 ** -7 + 1e-30  # one bf16 rounding step, at the most
        assert ((mine.float() - theirs.float()).abs() <= step).all()
    assert torch.equal(exact[0], exact[2]) and torch.equal(exact[0], exact[3]) and torch.equal(own[0], own[2])
    # The mode did make them: 2**24 + 1 - 2**24 is 1 summed exactly, 0 in float32 (2**24 + 1 rounds to 2**24).
    x, y = torch.tensor([[2.0 ** 24, 1.0, -2.0 ** 24]]).bfloat16(), torch.ones(3, 1).bfloat16()
    with exact_bf16_products():
        assert float(x @ y) == 1.0
    assert float(x @ y) == 0.0


def test_a_weight_widened_once_is_widened_again_once_written():
    """conftest.WidenedWeights, under exact_bf16_products: a large weight is widened once and kept, but a write into
    it (its version moves), a view of it at an offset, and a tensor made in inference mode (no version to read) each
    give the product of the values as they are."""
    import torch

    from conftest import exact_bf16_products

    gen = torch.Generator().manual_seed(1)
    x, w = torch.randn(4, 512, generator=gen).bfloat16(), torch.randn(512, 256, generator=gen).bfloat16()
    with torch.inference_mode():
        frozen = w.clone()

    def exact(a, b):
        return (a.double() @ b.double()).bfloat16()

    with exact_bf16_products():
        first = x @ w
        w.mul_(2)  # by a power of two: the exact product doubles, and so does its rounding
        second = x @ w
        part = x[:, :256] @ w[256:]
        with torch.inference_mode():
            before = x @ frozen
            frozen.mul_(2)
            after = x @ frozen
    assert torch.equal(first, exact(x, w / 2)) and torch.equal(second, first * 2)
    assert torch.equal(part, exact(x[:, :256], w[256:]))
    assert torch.equal(after, before * 2)


def test_kernel_build_reads_each_step_and_the_builds_span_from_ninjas_log(tmp_path):
    """benchmarks/kernel_build.py: ninja's log (start and end in ms, tab-separated), its two sources compiled side by
    side, then the link: each step's seconds, and the build's from the first start to the last end."""
    from pathlib import Path

    from tutor.harness.loading import load_module

    timer = load_module(Path(__file__).parents[1] / "benchmarks" / "kernel_build.py", "kernel_build", ())
    (tmp_path / ".ninja_log").write_text("# ninja log v7\n0\t1512\t1764460000000000000\tcuda.cuda.o\t3f2a\n"
                                         "1\t17503\t1764460000000000000\tmain.o\t9b1c\n"
                                         "17504\t18001\t1764460000000000000\tpuzzle12_94e190594794.so\t77d0\n")
    steps, span = timer.ninja_steps(tmp_path)
    assert steps == {"cuda.cuda.o": 1.512, "main.o": 17.502, "puzzle12_94e190594794.so": 0.497} and span == 18.001


def test_the_files_that_wait_are_spread_through_the_others_each_kept_whole():
    """tests/conftest.waiting_files_spread: each `waits` file's tests together, the files apart, the rest in order."""
    from pathlib import Path

    from conftest import waiting_files_spread

    class Item:
        def __init__(self, path, n, waits=False, first=False):
            self.path, self.name, self.marks = Path(path), f"{path}:{n}", {"waits": waits, "first": first}

        def get_closest_marker(self, name):
            return self.marks.get(name) or None

    items = ([Item("w1", i, waits=True) for i in range(3)] + [Item("a", i) for i in range(6)]
             + [Item("w2", i, waits=True) for i in range(2)] + [Item("b", i) for i in range(6)])
    names = [i.name for i in waiting_files_spread(items)]
    assert names == ["a:0", "a:1", "a:2", "a:3", "w1:0", "w1:1", "w1:2", "a:4", "a:5", "b:0", "b:1", "w2:0", "w2:1",
                     "b:2", "b:3", "b:4", "b:5"]
