"""Fair play inside the candidate's process: what learner code may not read, change or hide.

The comparators live in another process (tutor.harness.lockstep), out of reach by
construction. The learner's own time is measured in the process its code runs in, so
none of this is a sandbox: a determined cheat can still walk the heap. What it does is
turn the cheats within easy reach (patching the timer, the harness or torch, reading the
reference solution, writing the progress db, working on a side thread) into a named
violation that fails the grade, instead of a speed-up.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import operator
import os
import resource
import signal
import sys
import threading
import time
import types

from tutor.harness import processes
from tutor.harness.genuine_code import GenuineCode, folder, package_place

# Libraries that legitimately patch torch (torch._dynamo wraps Module.__init__ and manual_seed).
LIBRARIES = ("torch", "triton", "torchao", "gemlite", "functorch")
# Libraries whose own audit hooks torch.compile's imports add, and so may be added while a workload runs: filelock
# adds one on Python 3.12 to keep its locks safe across a fork (Inductor's caches lock with it).
AUDITING_LIBRARIES = (*LIBRARIES, "filelock")
_BUILTIN = (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType,
            types.ClassMethodDescriptorType, types.GetSetDescriptorType, types.MemberDescriptorType)
# Audit events that name a file (first two arguments) and that start a process (any argument).
FILE_EVENTS = {"open", "sqlite3.connect", "os.link", "os.symlink", "os.rename", "shutil.copyfile",
               "shutil.copytree", "os.truncate", "os.remove", "os.chmod", "os.utime"}
SPAWN_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn"}
# CPU puzzles run on one thread: more CPU than this off the timed thread means hidden work.
# Honest puzzle0 grades (reference, baseline, torch.compile) measure 0.0-0.8 ms; the cheats in
# tests/test_anticheat.py (a side thread, a child process) measure 10-50 ms at the tests' small puzzle0.
SIDE_WORK_MIN_MS = 3.0
# Of the CPU time the timed thread spent inside the calls meanwhile: CPU against CPU, so a loaded machine, which
# stretches the calls' wall clock and not their CPU, moves neither side (against the timed wall clock, half the work
# on a thread once passed unseen in a loaded test run). The harness's own work on that thread is left out: it is
# several times a small puzzle's calls.
SIDE_WORK_FRACTION = 0.2

_process_ns, _thread_ns = time.process_time_ns, time.thread_time_ns


# The process's guards, which its one audit hook asks: kept for the process's life, as Python keeps the hook (a
# profile's guard is made and never held). A tuple, rebound as each is made (before learner code loads): a change
# to it shows as a change of this module's namespace, which the guard compares after every call.
_GUARDS: tuple[Guard, ...] = ()


def _audit_for_guards(event: str, args: tuple) -> None:
    for guard in _GUARDS:
        guard._audit(event, args)


class Guard:
    """Collects violations."""

    def __init__(self, protected: dict[str, list[str]]):
        self.violations: list[str] = []
        self._frozen: dict[str, dict] = {}
        # (label, real path, is a folder, what a shell command reading it would contain)
        self._protected = [(label, os.path.realpath(p), os.path.isdir(p), _token(p))
                           for label, paths in protected.items() for p in paths]
        self._genuine = GenuineCode()
        self._auditing = tuple(folder(place) for place in filter(None, map(package_place, AUDITING_LIBRARIES)))
        global _GUARDS
        if not _GUARDS:
            sys.addaudithook(_audit_for_guards)  # one hook a process, added before learner code loads
        _GUARDS = (*_GUARDS, self)

    def note(self, violation: str) -> None:
        if violation not in self.violations:
            self.violations.append(violation)

    def _from_an_auditing_library(self, code: types.CodeType | None) -> bool:
        """Whether `code` is an auditing library's own (AUDITING_LIBRARIES), as its file compiles it."""
        return (code is not None and os.path.realpath(code.co_filename).startswith(self._auditing)
                and self._genuine(code))

    # -- files: the reference solution and the progress db stay out of reach -----------------

    def _audit(self, event: str, args: tuple) -> None:
        if event == "sys.addaudithook":
            # A hook of learner code would run inside the harness's own work (ctypes' events fire as it reads
            # outputs), after its check of its operators; Python adds none that one before it refuses.
            if self._from_an_auditing_library(_adder()):
                return
            self.note("your workload added an audit hook (sys.addaudithook): Python runs it inside the harness's "
                      "own work, which must run no code of yours")
            raise RuntimeError("infprof-tutor: a workload may not add an audit hook while it is graded")
        if not self._protected:
            return
        if event in FILE_EVENTS:
            for arg in args[:2]:
                if isinstance(arg, (str, bytes, os.PathLike)):
                    path = os.fsdecode(arg)
                    if path.startswith("file:"):  # an SQLite URI
                        path = path[5:].split("?")[0]
                    real = os.path.realpath(path)
                    for label, protected, folder, _ in self._protected:
                        # A folder's files; a file and its siblings by prefix (progress.db-wal, -shm).
                        if real == protected or real.startswith(protected + os.sep if folder else protected):
                            self._deny(label, real)
        elif event in SPAWN_EVENTS:
            command = repr([a for a in args if not isinstance(a, dict)])  # not the environment
            for label, _, _, token in self._protected:
                if token in command:
                    self._deny(label, token)

    def _deny(self, label: str, what: str) -> None:
        self.note(f"your workload tried to open {label} ({what}) while it was graded")
        raise PermissionError(f"infprof-tutor: a workload may not open {label} while it is graded ({what})")

    # -- tampering: what must be the same after the workloads ran as before they loaded ----------

    def freeze(self, strict: dict[str, object], libraries: dict[str, object]) -> None:
        """Remember `strict` namespaces (any change counts) and `libraries` (a change made by learner code counts)."""
        self._frozen = {"strict": {k: _Snapshot(v) for k, v in strict.items()},
                        "libraries": {k: _Snapshot(v) for k, v in libraries.items()}, "hooks": _hooks()}
        self._namespaces = {**strict, **libraries}

    def verify(self) -> None:
        if not self._frozen:
            return
        changed = {"strict": [], "libraries": []}
        for kind in changed:
            for label, snapshot in self._frozen[kind].items():
                items = _items(self._namespaces[label])
                if snapshot.unchanged(items):
                    continue  # as it was at the last verify, which noted whatever it found
                snapshot.seen(items)
                before, now = snapshot.members, _with_code(items)
                for key in before.keys() | now.keys():
                    old, new = before.get(key, (None, None)), now.get(key, (None, None))
                    if old[0] is new[0] and old[1] is new[1]:
                        continue
                    if key not in before and key.startswith("__"):
                        continue  # torch.compile adds __compiled_fn_*, __resume_at_* to a module it compiles
                    if kind == "strict" or _foreign(old[0], new[0]):
                        changed[kind].append(f"{label}.{key}")
        if changed["strict"]:
            self.note("the harness or its timer was modified: " + ", ".join(sorted(changed["strict"])))
        if changed["libraries"]:
            self.note("torch or Python built-ins were patched, and the harness times you with them: "
                      + ", ".join(sorted(changed["libraries"])))
        hooks = _hooks()
        moved = [name for name, value in hooks.items() if value != self._frozen["hooks"][name]]
        if moved:
            self.note("a hook that runs inside the harness's code was installed: " + ", ".join(moved))


def _below_ns() -> int:
    """CPU time of the processes below this one: those it waited for, and those still there (with the ones they
    waited for)."""
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (int((waited.ru_utime + waited.ru_stime) * 1e9)
            + sum(processes.cpu_ns(pid) for pid in processes.descendants(os.getpid())))


class SideWork:
    """CPU time spent off the timed thread since it started, on other threads or in processes of the workload's own:
    on CPU, such work escapes the clock."""

    def __init__(self) -> None:
        self._process, self._thread, self._below = _process_ns(), _thread_ns(), _below_ns()
        self._in_calls = 0

    def call(self, fn, *args):
        """fn(*args), its CPU time on this thread counted."""
        began = _thread_ns()
        try:
            return fn(*args)
        finally:
            self._in_calls += _thread_ns() - began

    def violation(self) -> str | None:
        off_thread = (_process_ns() - self._process) - (_thread_ns() - self._thread)
        side_ms = (off_thread + _below_ns() - self._below) / 1e6
        own_ms = self._in_calls / 1e6
        if side_ms <= max(SIDE_WORK_MIN_MS, SIDE_WORK_FRACTION * own_ms):
            return None
        return (f"{side_ms:.1f} ms of CPU time ran on other threads or processes while your workload was checked and "
                f"timed (its calls took {own_ms:.1f} ms of CPU on the thread that made them): CPU puzzles are timed on "
                "one thread, so the work must run on the thread that calls forward() (no threads or processes of "
                "your own, no torch.set_num_threads)")


def _token(path: str) -> str:
    """What a command line that reads `path` would contain: the file name, or parent/folder."""
    head, name = os.path.split(os.path.normpath(path))
    return name if os.path.splitext(name)[1] else f"{os.path.basename(head)}/{name}"


class _Snapshot:
    """A namespace's members as freeze() found them, and the state verify() last compared with them as flat tuples:
    verify() runs after every call, and a namespace as it was at the last verify, whose comparison would come out
    the same again, is told apart at C speed (some 5,000 members, name by name, were nearly half the CPU of a
    30-round check of a trivial workload). The last state, not the first: torch.save adds __slotnames__ to
    torch.Tensor the first time the worker sends a tensor, and every verify after compared it name by name again."""

    def __init__(self, namespace) -> None:
        items = _items(namespace)
        self.members = _with_code(items)
        self.seen(items)

    def seen(self, items: dict) -> None:
        """`items` compared with the members: the next verify need not compare them again."""
        self.names, self.values = tuple(items), tuple(items.values())
        self.functions = tuple(f for f in map(_function, self.values) if f is not None)
        self.codes = tuple(map(_CODE, self.functions))

    def unchanged(self, items: dict) -> bool:
        """The same names in the same order as when last seen, each the same object, each function's body the same."""
        return (tuple(items) == self.names and all(map(operator.is_, items.values(), self.values))
                and all(map(operator.is_, map(_CODE, self.functions), self.codes)))


def _items(namespace) -> dict:
    """name -> object, as learner code would patch it: a module's globals, or each name a class has."""
    if isinstance(namespace, type):
        # What inspect.getattr_static finds for each name of dir(): the nearest class of the MRO that holds it.
        # Read from the MRO's own dicts, as it does, 20 times faster (torch.Tensor's 800 names took 3.5 ms that
        # way, the harness's classes 9 ms more).
        found = {}
        for klass in reversed(namespace.__mro__):
            found.update(vars(klass))
    else:
        found = dict(vars(namespace))
    found.pop("__warningregistry__", None)  # Python adds it to a module whose code raised a warning
    return found


def _with_code(items: dict) -> dict[str, tuple]:
    """name -> (object, its code): a swapped function body counts as a change too."""
    return {k: (v, _code(v)) for k, v in items.items()}


_CODE = operator.attrgetter("__code__")


def _function(value):
    """The plain function behind `value`, or None."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    return value if isinstance(value, types.FunctionType) else None


def _code(value):
    function = _function(value)
    return None if function is None else function.__code__


def _foreign(old, new) -> bool:
    """A change to a library namespace made by learner code, not by the library itself."""
    if new is None:
        return old is not None and (callable(old) or isinstance(old, types.ModuleType))
    if not (callable(new) or isinstance(new, types.ModuleType)):
        return False  # flags and caches
    if isinstance(old, _BUILTIN) and inspect.unwrap(new) is not old:
        return True  # a C function swapped for anything, even another torch function
    target = getattr(new, "func", new)  # functools.partial
    target = getattr(target, "__func__", target)  # bound methods
    origin = target.__name__ if isinstance(target, types.ModuleType) else getattr(target, "__module__", None)
    return not (isinstance(origin, str) and origin.split(".")[0] in (*LIBRARIES, "builtins"))


def _adder() -> types.CodeType | None:
    """The code that called sys.addaudithook, from inside the audit hook it raised: the first frame outside this
    module."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals is globals():
        frame = frame.f_back
    return frame.f_code if frame is not None else None


def _hooks() -> dict[str, object]:
    """Ways to run code inside other workloads without changing a namespace."""
    import torch

    hooks = {"sys.settrace": sys.gettrace(), "sys.setprofile": sys.getprofile(),
             "threading.settrace": threading.gettrace(), "threading.setprofile": threading.getprofile(),
             "gc.callbacks": tuple(map(id, gc.callbacks)),
             "sys.monitoring": monitoring_tools(),
             "a torch function mode": torch._C._len_torch_function_stack(),
             "a torch dispatch mode": torch._C._len_torch_dispatch_stack()}
    for which in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF"):
        hooks[f"signal.setitimer({which})"] = signal.getitimer(getattr(signal, which))
    for sig, name in _signal_names():
        try:
            hooks[f"a {name} handler"] = id(signal.getsignal(sig))
        except (ValueError, OSError):
            pass
    return hooks


def monitoring_tools() -> tuple[int, ...]:
    """The ids of sys.monitoring's tools in use (Python 3.12 on): numbers, which no workload's object stands in for
    in a comparison (a tool's name could be a str of its own with an __eq__ of its own)."""
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:
        return ()
    return tuple(tool for tool in range(6) if monitoring.get_tool(tool) is not None)


@functools.cache
def _signal_names() -> tuple[tuple[int, str], ...]:
    """Each signal this system has, with its name (read once: an enum lookup a signal was a third of a verify)."""
    names = []
    for sig in signal.valid_signals():
        with contextlib.suppress(ValueError):
            names.append((sig, signal.Signals(sig).name))
    return tuple(names)
