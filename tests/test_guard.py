"""The harness's tamper check (tutor.harness.guard) on its own, in this process: what it reads of a class, and that
a patch anywhere along a class's bases is found."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from types import ModuleType, SimpleNamespace

import pytest

from tutor.harness import guard
from tutor.harness.worker import Worker


def test_a_classs_members_are_what_getattr_static_finds_for_each_name_of_dir():
    # The definition the faster reading replaced (verify() runs after every call), on every class the harness watches.
    strict, libraries = Worker._namespaces(SimpleNamespace(spec=ModuleType("spec"), device=object()))
    classes = [v for v in {**strict, **libraries}.values() if isinstance(v, type)]
    assert len(classes) > 20
    for cls in classes:
        read = guard._items(cls)
        expected = {name: inspect.getattr_static(cls, name, None) for name in dir(cls) if name != "__warningregistry__"}
        assert read.keys() == expected.keys(), cls
        assert all(read[name] is expected[name] for name in expected), cls


class Base:
    def timed(self):
        return 1


class Timer(Base):
    pass


def test_a_patch_on_a_base_class_or_a_swapped_function_body_is_a_change():
    watched = guard.Guard({})
    watched.freeze({"Timer": Timer}, {})
    watched.verify()
    assert not [v for v in watched.violations if "modified" in v]  # untouched: the quick comparison passes it
    original = Base.timed
    try:
        Base.timed = lambda self: 0
        watched.verify()
    finally:
        Base.timed = original
    assert "the harness or its timer was modified: Timer.timed" in watched.violations

    watched = guard.Guard({})
    watched.freeze({"Timer": Timer}, {})
    body = Base.timed.__code__
    try:
        Base.timed.__code__ = (lambda self: 0).__code__
        watched.verify()
    finally:
        Base.timed.__code__ = body
    assert "the harness or its timer was modified: Timer.timed" in watched.violations


def test_its_cost_benchmark_times_a_verify_that_finds_nothing(monkeypatch, capsys):
    """benchmarks/guard_cost.py, where docs/harness.md's figure of a verify's cost comes from."""
    import json
    import sys
    from pathlib import Path

    from tutor.harness.loading import load_module

    bench = load_module(Path(__file__).parents[1] / "benchmarks" / "guard_cost.py", "guard_cost", ())
    monkeypatch.setattr(sys, "argv", ["guard_cost.py", "--calls", "5", "--json"])
    bench.main()
    figures = json.loads(capsys.readouterr().out)
    assert figures["verify_ms"] > 0 and figures["freeze_ms"] > 0 and figures["members"] > 1000


def test_a_namespace_changed_harmlessly_once_is_still_watched_after():
    # torch.save adds __slotnames__ to a class it pickles: no violation, and a patch after it is still found.
    watched = guard.Guard({})
    watched.freeze({"Timer": Timer}, {})
    original = Base.timed
    try:
        Timer.__slotnames__ = []
        watched.verify()
        watched.verify()
        assert not [v for v in watched.violations if "modified" in v]
        Base.timed = lambda self: 0
        watched.verify()
    finally:
        Base.timed = original
        del Timer.__slotnames__
    assert "the harness or its timer was modified: Timer.timed" in watched.violations


# Audit hooks cannot be removed: each case runs in a process of its own, with a guard made before the hook's adder.
AUDIT_HOOK_ADDED = """
import sys
from tutor.harness.guard import Guard
guard = Guard({{}})
{add}
print(guard.violations)
"""


def _violations_after(add: str) -> str:
    done = subprocess.run([sys.executable, "-c", AUDIT_HOOK_ADDED.format(add=textwrap.dedent(add))],
                          capture_output=True, text=True, timeout=120)
    return done.stdout + done.stderr


def test_an_audit_hook_a_library_torch_imports_adds_is_its_own():
    fork = pytest.importorskip("filelock._core._fork")
    if not hasattr(fork, "_register_fork_hooks"):
        pytest.skip("this filelock adds no audit hook")
    # filelock adds its fork-safety hook on Python 3.12 alone, where torch.compile's imports load it; said so here.
    out = _violations_after("""
        from filelock._core import _fork
        sys.version_info = (3, 12)
        _fork._register_fork_hooks()
    """)
    assert out.strip().endswith("[]"), out


def test_an_audit_hook_of_the_workloads_is_refused_even_under_a_librarys_file_name():
    import filelock

    # Python drops a hook that an earlier hook refused, and the RuntimeError with it: the violation is what remains.
    out = _violations_after(f"""
        ran = []
        exec(compile("def add():\\n    sys.addaudithook(lambda event, args: ran.append(event))\\n",
                     {filelock.__file__!r}, "exec"))
        add()
        open("/dev/null").close()
        print("its hook ran" if ran else "its hook never ran")
    """)
    assert "its hook never ran" in out and "added an audit hook (sys.addaudithook)" in out, out
