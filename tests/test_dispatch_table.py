"""The harness's table of aten kernels (tutor.harness.dispatch_table), read in this process: a kernel registered for
one of its operators after it was taken is named, a Meta kernel (torch registers them lazily) is not, and once the
registration is gone the table reads as it was."""

from __future__ import annotations

import warnings

import torch

from tutor.harness.dispatch_table import DispatchTable


def test_the_table_names_a_kernel_registered_after_it_and_not_a_meta_one():
    table = DispatchTable({"aten::mul"})
    assert table.changed() == []
    library = torch.library.Library("aten", "IMPL")
    try:
        library.impl("mul.Tensor", lambda a, b: a, "Meta")
        assert table.changed() == []  # its dump differs, its kernels that run on a real tensor do not
        library.impl("mul.Tensor", lambda a, b: a, "CPU")
        assert [found.split(" ")[0] for found in table.changed()] == ["aten::mul.Tensor"]
    finally:
        library._destroy()
    assert table.changed() == []
    assert torch.equal(torch.ones(2) * 3, torch.full((2,), 3.0))  # mul's own kernel again


def _spec_makers():
    """Each shipped puzzle that makes its inputs with its spec (a server's requests are the coordinator's)."""
    from tutor.catalog import all_puzzles
    from tutor.harness.loading import load_module

    for puzzle in all_puzzles().values():
        spec = load_module(puzzle.folder / "spec.py", f"dispatch_{puzzle.id}", ())
        if callable(getattr(spec, "make_input", None)):
            yield puzzle.id, spec


def test_every_specs_input_making_dispatches_what_the_worker_probes_for_any_seed():
    """The check before each call's input reads only the operators a dry run of INPUT_SEEDS_PROBED inputs dispatched
    (tutor.harness.worker.Worker._input_tables): every shipped spec makes every input with those, so no seed leads
    the harness through an operator that check leaves out."""
    from tutor.harness.dispatch_table import dispatched
    from tutor.harness.worker import INPUT_SEEDS_PROBED

    for puzzle, spec in _spec_makers():
        probed = dispatched(lambda: [spec.make_input(seed, "cpu") for seed in range(INPUT_SEEDS_PROBED)])
        others = range(INPUT_SEEDS_PROBED, INPUT_SEEDS_PROBED + 3)
        later = dispatched(lambda: [spec.make_input(seed, "cpu") for seed in others])
        assert probed and later <= probed, (puzzle, later - probed)


def test_every_overload_the_input_making_calls_is_read():
    """Every overload a dispatch mode sees each shipped spec's input making call is among those `dispatched` reads
    (below that top level: the next test)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from tutor.harness.dispatch_table import aten_overloads, dispatched

    class Called(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.add(f"aten::{func._schema.name.split('::')[1]}" + (f".{func._overloadname}"
                                                                          if func._overloadname != "default" else ""))
            return func(*args, **(kwargs or {}))

    for puzzle, spec in _spec_makers():
        with Called() as called:
            spec.make_input(0, "cpu")
        read = set(aten_overloads(dispatched(lambda: spec.make_input(0, "cpu"))))
        assert called.seen <= read, (puzzle, called.seen - read)


def test_the_input_makings_table_is_a_fraction_of_the_whole_and_still_names_its_operators_kernels():
    from tutor.harness.dispatch_table import dispatched, entered

    spec = dict(_spec_makers())["puzzle1"]
    whole = DispatchTable(entered(lambda: spec.make_input(0, "cpu")))
    narrow = DispatchTable(dispatched(lambda: spec.make_input(0, "cpu")))
    assert len(narrow._overloads) * 3 < len(whole._overloads)  # each check a third of the reads or fewer
    library = torch.library.Library("aten", "IMPL")
    try:
        library.impl("normal_", lambda self, *args, **kwargs: self, "CPU")  # what randn fills its tensor with
        assert [found.split(" ")[0] for found in narrow.changed()] == ["aten::normal_"]
    finally:
        library._destroy()
    assert narrow.changed() == []


def test_under_a_profiler_already_running_the_input_making_is_not_read_and_the_whole_table_serves():
    from torch.autograd.profiler_legacy import profile

    from tutor.harness.dispatch_table import dispatched

    with profile():
        assert dispatched(lambda: torch.randn(2)) is None
    assert "aten::randn" in dispatched(lambda: torch.randn(2))


def _as_tensor(value):
    """A number as the tensor it was wrapped in (its dtype the default one of its kind), anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float, complex)):
        return value
    kind = {int: torch.int64, float: torch.get_default_dtype(), complex: torch.complex64}[type(value)]
    return torch.tensor(value, dtype=kind)


def _overloads_run(work, names: set[str]) -> set[str]:
    """The overloads of aten operators `names` whose CPU kernel `work()` runs, at any depth: each wrapped in a kernel
    that notes it and calls the one it displaced (an exact record, where the profiler names no overload)."""
    from tutor.harness.dispatch_table import aten_overloads

    ran: set[str] = set()
    library = torch.library.Library("aten", "IMPL")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Overriding a previously registered kernel"
            for overload in aten_overloads(names):
                if not torch._C._dispatch_has_kernel_for_dispatch_key(overload, "CPU"):
                    continue
                kernel = torch._C._dispatch_get_computed_kernel_for_dispatch_key(overload, torch._C.DispatchKey.CPU)

                tensors = [a.type.isSubtypeOf(torch._C.TensorType.get())
                           for a in torch._C._get_schema(*overload.partition(".")[::2]).arguments]

                def noted(keyset, *args, overload=overload, kernel=kernel, tensors=tensors, **kwargs):
                    ran.add(overload)
                    # A number the caller passed as a tensor (x * 5.0) reaches Python as a number: a tensor again.
                    args = [*(_as_tensor(a) if tensor else a for a, tensor in zip(args, tensors)), *args[len(tensors):]]
                    return kernel.call_boxed(keyset, *args, **kwargs)

                library.impl(overload.split("::")[1], noted, "CPU", with_keyset=True)
            work()
    finally:
        library._destroy()
    return ran


def test_every_cpu_kernel_the_input_making_and_the_reading_run_is_an_overload_they_read():
    """Below the top level a dispatch mode sees nothing: every CPU kernel a shipped spec's input making, and the
    reading of a round's outputs, runs at any depth is of an overload their tables read. (An operator's overloads
    narrowed to those taking as many arguments as the profiler recorded failed here: puzzle6's making ran
    sum.dim_IntList and sort.stable under a recorded sum(x) and sort(x).)"""
    from tutor.harness import call_checks
    from tutor.harness.dispatch_table import dispatched

    works = [(puzzle, lambda spec=spec: spec.make_input(0, "cpu")) for puzzle, spec in _spec_makers()]
    outputs = call_checks.probe_outputs("cpu")
    works.append(("reading", lambda: call_checks.read_round(outputs)))
    for what, work in works:
        names = dispatched(work)
        read = set(DispatchTable(names)._overloads)  # what the worker's table of them reads
        ran = _overloads_run(work, names)
        assert ran and ran <= read, (what, ran - read)


def test_the_reading_table_covers_outputs_of_every_shape_stride_and_dtype():
    """The check before a round's outputs are read covers the operators a dry run over call_checks.probe_outputs
    dispatched (Worker._reading_table): outputs of other shapes, strides, offsets and dtypes take no operator
    outside it, so no output a workload returns leads that reading through an unchecked one."""
    from tutor.harness import call_checks
    from tutor.harness.dispatch_table import dispatched

    table = dispatched(lambda: call_checks.read_round(call_checks.probe_outputs("cpu")))
    base = torch.arange(3 * 5 * 7 * 2 * 10**3, dtype=torch.float64)
    others = [base[: 3 * 5 * 7].reshape(3, 5, 7).permute(2, 0, 1), base[1:71:2].reshape(5, 7), base[5],
              base[: 2 * 3 * 4 * 5].reshape(2, 3, 4, 5).to(memory_format=torch.channels_last),
              base[:6].reshape(2, 3)[:, 1:], base[:1].expand(100000), base.reshape(-1, 2)[:, 0], base[:0].reshape(0, 3)]
    dtypes = (torch.float64, torch.float16, torch.uint8, torch.int32, torch.complex64, torch.float8_e4m3fn)
    outputs = [out.to(dtype) if dtype != torch.float8_e4m3fn else out.float().to(dtype)
               for out in others for dtype in dtypes]
    assert dispatched(lambda: call_checks.read_round(outputs, seed=7)) <= table


def test_the_reading_table_names_a_kernel_registered_for_its_sampling():
    from tutor.harness import call_checks
    from tutor.harness.dispatch_table import dispatched, entered

    table = DispatchTable(dispatched(lambda: call_checks.read_round(call_checks.probe_outputs("cpu"))))
    assert len(table._overloads) * 3 < len(DispatchTable(entered(lambda: None))._overloads)
    library = torch.library.Library("aten", "IMPL")
    try:
        library.impl("index.Tensor", lambda self, indices: self, "CPU")  # what reads the drawn places
        assert [found.split(" ")[0] for found in table.changed()] == ["aten::index.Tensor"]
    finally:
        library._destroy()
    assert table.changed() == []
