"""challenges/process_sweeps.py: a sweep that measures each workload in a process of its own gets each one's figures
in order, and a workload whose process fails is named with its error and skipped, not the sweep's end."""

from __future__ import annotations

import textwrap

from challenges.process_sweeps import each_in_its_own_process


def test_each_workload_runs_in_its_own_process_and_a_failed_one_is_named_and_skipped(tmp_path, capsys):
    script = tmp_path / "sweep.py"
    script.write_text(textwrap.dedent("""
        import json, os, sys
        workload = sys.argv[sys.argv.index("--workload") + 1]
        if workload == "broken.py":
            raise SystemExit("ValueError: no such expert")
        print("warming up")
        print(json.dumps({"workload": workload, "flag": sys.argv[1], "pid": os.getpid()}))
    """))
    got = list(each_in_its_own_process(str(script), ["a.py", "broken.py", "b.py"], ["--calls=3"]))
    assert [(w, f["workload"], f["flag"]) for w, f in got] == [("a.py", "a.py", "--calls=3"),
                                                               ("b.py", "b.py", "--calls=3")]
    assert got[0][1]["pid"] != got[1][1]["pid"]
    printed = capsys.readouterr().out
    assert "broken.py" in printed and "failed" in printed and "no such expert" in printed, printed
