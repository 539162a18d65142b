"""What the harness's own work dispatches through: every aten operator's kernels, as they were before learner code
loaded.

The harness makes inputs, flushes L2 and reads outputs with aten operators. A workload that registers a kernel of
its own for one of them (torch.library's Library("aten", "IMPL"), register_kernel, ...) would run inside that work:
its forward could be done while the harness made the call's input, or answer from what it saw there. So before the
harness dispatches anything in a process that learner code has run in, the table is read again, and an operator
whose kernels changed stops the run. The operators are those the harness's own work entered (`entered`) in a dry
run of it before learner code loaded: reading all of aten's 3,000 again cost 60 ms a check on a 2-core machine,
these a few. Meta kernels are left out: torch registers them lazily (torch.compile's imports do), and they never
run on a real tensor. The check before each call's input is made reads a narrower table, the operators a dry run
of the spec's input making dispatched (`dispatched`, the profiler's view: every level of it), and the one before a
round's outputs are read those their reading dispatched: a quarter of the 190 overloads every piece of the
harness's work needs, or less (tests/test_dispatch_table.py).
"""

from __future__ import annotations

import torch
from torch.overrides import _get_current_function_mode_stack

IGNORED_KEYS = ("Meta:", "Meta (inactive):")  # a Meta kernel, and one a later Meta kernel displaced


# What the harness's copies, views, factories and reads run below the torch functions it calls (a `.to("cpu")` is
# _to_copy and copy_, a randn with a generator normal_): torch's profiler listed these for them on the CPU, and
# a function mode does not see below the torch function. (The profiler would see both, but its first start costs
# over a second a process, and a dispatch mode's imports torch._dynamo: two seconds more where nothing compiles.)
INTERNALS = frozenset(f"aten::{name}" for name in (
    "_copy_from", "_copy_from_and_resize", "_local_scalar_dense", "_pin_memory", "_reshape_alias", "_to_copy",
    "_unsafe_view", "abs", "add", "alias", "all", "arange", "as_strided", "cat", "chunk", "clone", "contiguous",
    "copy_", "detach", "detach_", "div", "empty", "empty_like", "empty_strided", "eq", "equal", "expand", "fill_",
    "flatten", "gather", "index", "index_select", "is_pinned", "is_same_size", "isfinite", "item", "lift_fresh",
    "linalg_vector_norm", "masked_fill", "max", "min", "mul", "narrow", "ne", "neg", "norm", "normal_", "ones",
    "permute", "pin_memory", "pow", "rand", "randint", "randn", "random_", "record_stream", "reshape", "resize_",
    "select", "set_", "slice", "split", "sqrt", "squeeze", "stack", "sub", "sum", "t", "to", "transpose", "unbind",
    "uniform_", "unsqueeze", "view", "where", "zero_", "zeros"))


def entered(work) -> set[str]:
    """The aten operators `work()` may dispatch to: each torch function it calls, by the aten name it goes by (a
    composite such as reshape is a kernel of its own, run before the view it becomes), and INTERNALS."""
    from torch.overrides import TorchFunctionMode

    seen: set[str] = set()

    class Functions(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.add(f"aten::{getattr(func, '__name__', '').strip('_')}")
            return func(*args, **(kwargs or {}))

    with Functions():
        work()
    return seen | INTERNALS


def dispatched(work) -> set[str] | None:
    """The aten operators `work()` dispatches at every level (a copy's empty_strided and copy_ beneath its
    _to_copy), as torch's profiler records them; None where that profiler cannot run here. Its legacy form, the CPU's
    records alone: no Kineto, whose start costs over a second a process (1.4 ms here, 2 s for Kineto's). A table of
    them reads each one's every overload, not the one its arguments suggest: an operator runs another overload of its
    own below what the profiler records (sum(x) runs sum.dim_IntList's kernel; tests/test_dispatch_table.py)."""
    try:
        from torch.autograd.profiler_legacy import profile
    except ImportError:
        return None
    try:
        with profile() as recorded:
            work()
    except Exception:  # noqa: BLE001 - a profiler already running, or none here: the whole table serves
        return None
    return {event.name for event in recorded.function_events if event.name.startswith("aten::")}


def aten_overloads(names: set[str] | None = None) -> list[str]:
    """Every overload of the aten operators `names` (or of all of them), as the dispatcher names them."""
    return [name for name in torch._C._dispatch_get_all_op_names()
            if name.startswith("aten::") and (names is None or name.split(".")[0] in names)]


def kernel_lines(dump: str) -> frozenset[str]:
    """An overload's registrations, a line per dispatch key, from torch's dispatcher's dump of it."""
    return frozenset(line for line in dump.splitlines() if not line.startswith(IGNORED_KEYS))


def dispatch_keys_in_force() -> str:
    """The dispatch keys this thread adds or leaves out of every call (inference mode's, a dispatch mode left
    entered), and the torch function modes entered: one of those sees every torch function the harness calls, and
    changes no dispatch key."""
    return (f"{torch._C._dispatch_tls_local_include_set()} {torch._C._dispatch_tls_local_exclude_set()}, "
            f"torch function modes {function_modes()}")


def function_modes() -> list[str]:
    """The torch function modes entered on this thread, by name; torch.set_default_device() enters one for good."""
    return [DEFAULT_DEVICE if type(m).__name__ == "DeviceContext" else type(m).__name__
            for m in _get_current_function_mode_stack()]


DEFAULT_DEVICE = "DeviceContext, which torch.set_default_device() enters for good (pass device= instead)"


class DispatchTable:
    """Taken before learner code loads; `changed()` names the aten operators whose kernels are not as they were,
    and the thread's dispatch keys if they changed."""

    def __init__(self, names: set[str] | None = None) -> None:
        self._overloads = aten_overloads(names)  # listed once: an overload added later is none the harness calls
        self._dumps = {name: torch._C._dispatch_dump(name) for name in self._overloads}  # as last read
        self._before = {name: kernel_lines(dump) for name, dump in self._dumps.items()}
        self._keys = dispatch_keys_in_force()

    def changed(self) -> list[str]:
        found = [] if dispatch_keys_in_force() == self._keys else [
            "the dispatch keys and torch function modes in force for every call (a mode such as inference_mode, "
            f"autocast or a TorchFunctionMode entered and not left: {dispatch_keys_in_force()}, where they were "
            f"{self._keys})"]
        for name in self._overloads:
            dump = torch._C._dispatch_dump(name)
            if dump == self._dumps[name]:  # the dump as last read: most of a check's 189 overloads, 0.02 ms each
                continue
            lines, before = kernel_lines(dump), self._before[name]
            if lines == before:  # a Meta kernel registered lazily, and nothing else
                self._dumps[name] = dump
                continue
            # The kernel now in force first; the one it displaced reads "(inactive)" beside it.
            added = sorted(lines - before, key=lambda line: "(inactive)" in line) or sorted(before - lines)
            found.append(f"{name} ({added[0].split(' :: ')[0]})")
        return found
