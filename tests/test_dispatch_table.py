"""The harness's table of aten kernels (tutor.harness.dispatch_table), read in this process: a kernel registered for
one of its operators after it was taken is named, a Meta kernel (torch registers them lazily) is not, and once the
registration is gone the table reads as it was."""

from __future__ import annotations

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
