"""Cheat, an output the caller cannot use (issue 37): no transpose at all, a copy of the input made in its own
layout (a copy, so it moves the bytes an honest kernel moves) and returned as a transposed view, strides
(1, DIM): the right values, read in the order the baseline was slow to write. A cheat of this class read 2.9x.
Must get: refused at correctness (a device output must have the oracle's layout, contiguous)."""

import torch


def prepare(weights: dict, device: str):
    return None


def forward(state, keys: torch.Tensor) -> torch.Tensor:
    return keys.clone().t()
