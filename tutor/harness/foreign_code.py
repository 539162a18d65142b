"""Learner code caught running inside the harness's own work (issue 76: the harness never runs learner code).

Before each piece of its own work in a learner's process (making an input, flushing L2, reading an output) the
harness checks the dispatcher's table (tutor.harness.dispatch_table), and holds the garbage collector off until the
work ends. A thread of the workload is not held off: it can register a kernel after the check, for an operator the
work then runs, and remove it before the next check (tests/test_every_call_checked.py: such a thread served every
call from answers worked out while the harness made the inputs). So, while the harness works, a profile function on
its thread sees every Python function that runs there: one whose code is neither the harness's, the spec's, torch's
nor the standard library's is the workload's, however it got there, and stops the run. Code is told by the file it
was compiled from, and must be what that file compiles to: a workload's own code compiled under the name of torch's
files is not. A trace or profile function of the workload's in force on the harness's thread while it works (a
thread's threading.settrace_all_threads) stops the run too, as does a sys.monitoring tool not in use before; one
that forward() leaves set stops it as forward() returns (refuse_hooks_left), before the harness's code runs
under it. A kernel compiled from C++, or such a hook, set and removed again by a thread within one piece
of that work would still pass unseen: making the inputs where no learner code runs is the whole answer
(docs/harness.md).
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

import torch

from tutor.harness.genuine_code import GenuineCode, folder, package_place
from tutor.harness.guard import monitoring_tools
from tutor.harness.loading import HarnessFailure

# Bound when the harness imports, before any learner code: a workload that swaps them changes nothing here.
_get_profile, _set_profile, _get_trace = sys.getprofile, sys.setprofile, sys.gettrace
_TUTOR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the tutor package, the harness in it


# Packages torch's own Python calls into as it runs (typing_extensions' deprecation wrappers, a tensor's numpy()).
TORCH_RUNS = ("typing_extensions", "numpy")


class ForeignCode:
    """Watches the harness's own work for Python code that is not its own, the spec's, torch's or the standard
    library's."""

    def __init__(self, spec_file: str) -> None:
        places = [os.path.dirname(torch.__file__), _TUTOR, *filter(None, map(package_place, TORCH_RUNS))]
        self._folders = tuple(folder(p) for p in places if os.path.isdir(p))
        self._files = {os.path.realpath(p) for p in [spec_file, *places] if os.path.isfile(p)}
        self._stdlib = folder(os.path.dirname(os.__file__))
        self._genuine = GenuineCode()  # and made from that file's own source, not only named after it
        self._trusted: dict[object, bool] = {}  # per code object, once decided
        self._seen: list[str] = []
        self._tools = monitoring_tools()  # sys.monitoring's tools in use before learner code loaded
        self._profile, self._trace = _get_profile(), _get_trace()  # and its hooks then: a profiler's of the harness's
        self._watch = self._see  # one bound method, told by identity: a workload's hook could answer == as it likes

    @contextmanager
    def watched(self, what: str):
        """`what`, the harness's work, watched; refused as tampered if code of the workload ran in it, or a hook of
        its own was in force (`_theirs`). Under the profile function in force before learner code loaded (a
        benchmark's profiler of the harness itself), unwatched."""
        if self._profile is not None and not self._theirs(self._profile):
            yield
            return
        if self._theirs(None):  # refused before the work runs under it
            raise _hook_refused(what)
        _set_profile(self._watch)
        try:
            yield
        finally:
            hooked = self._theirs(self._watch)
            _set_profile(None)
        if hooked:
            raise _hook_refused(what)
        if self._seen:
            ran, self._seen = self._seen, []
            raise HarnessFailure("tampered", f"Code of your workload ran inside the harness's own work ({what}): "
                                 f"{'; '.join(dict.fromkeys(ran))}. The harness's operators ran it after they "
                                 "were checked: a kernel registered for an aten operator (by a thread, or in a "
                                 "moment between checks) runs inside the harness's work. Register a kernel of yours "
                                 "as an operator of your own namespace (torch.library.custom_op(\"mylib::name\", "
                                 "...)) and call it from forward().")

    def refuse_hooks_left(self, where: str) -> None:
        """After learner code returns to the harness (`where`): a trace, profile or sys.monitoring function it left
        set would run inside the harness's own code next, with the clock stopped (where a profile function could
        work out and write the output the harness keeps) or as the next input is made, so the run stops."""
        if self._theirs(self._profile):
            raise HarnessFailure("tampered", f"{where} returned with a trace, profile or sys.monitoring function of "
                                 "yours still set: Python would run it inside the harness's own work, after the "
                                 "clock stops. Set one inside forward() and put back what was there before it "
                                 "returns.")

    def _theirs(self, profile) -> bool:
        """Whether an interpreter hook is in force that the harness did not set: a profile function other than
        `profile` (the one in force before learner code loaded, or the watch's own while it watches), a trace
        function other than the one in force then, or a sys.monitoring tool not in use then (a trace function's and
        a monitoring tool's callbacks raise no profile events)."""
        return _get_profile() is not profile or _get_trace() is not self._trace or monitoring_tools() != self._tools

    def _see(self, frame, event: str, arg) -> None:
        if event != "call":
            return
        code = frame.f_code
        trusted = self._trusted.get(code)
        if trusted is None:
            trusted = self._trusted[code] = self._is_trusted(code.co_filename) and self._genuine(code)
        if not trusted:
            self._seen.append(f"{code.co_name}() in {code.co_filename}, line {frame.f_lineno}")

    def _is_trusted(self, filename: str) -> bool:
        if filename.startswith("<frozen "):  # the standard library's own frozen modules
            return True
        path = os.path.realpath(filename)
        if path in self._files or path.startswith(self._folders):
            return True
        # The standard library's, not the packages installed beside it (a base Python's site-packages is in its folder).
        inside = path[len(self._stdlib):].split(os.sep) if path.startswith(self._stdlib) else ["site-packages"]
        return not {"site-packages", "dist-packages"} & set(inside)


def _hook_refused(what: str) -> HarnessFailure:
    return HarnessFailure("tampered", f"A trace, profile or sys.monitoring function of your workload's was in force on "
                          f"the harness's thread while it worked ({what}): it runs code of your workload inside the "
                          "harness's work. Leave sys.settrace, sys.setprofile, their threading forms and "
                          "sys.monitoring alone.")
