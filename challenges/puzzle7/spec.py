"""Inputs for puzzle7: a ranking service scores 8 request batches a call, each 8192 rows of 1024 fp32
features that arrive in ordinary (pageable) host memory, as a feature store or a tokenizer hands them over.

The inputs are on the host whatever the device, fresh for every call: no copy of them can be on the
GPU before the call starts, and none can be pinned ahead of it. fp32 end to end, with a tolerance
(1e-5) that fp32 arithmetic in any order meets (3e-7 from float64 on the CPU) and a cast to 16 bits
for the trip does not (1.5e-4 through fp16, 1.2e-3 through bf16; TF32 matmuls fail it as well).
"""

import torch

BATCHES, ROWS, FEATURES, HIDDEN = 8, 8192, 1024, 2048
_INPUT_STREAM = 1 << 40


def make_weights(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"w1": (torch.randn(FEATURES, HIDDEN, generator=g) * FEATURES**-0.5).to(device),
            "w2": (torch.randn(HIDDEN, generator=g) * HIDDEN**-0.5).to(device)}


def make_input(seed: int, device: str) -> list:
    """BATCHES tensors [ROWS, FEATURES], fp32, in pageable host memory. Drawn on `device` and brought back:
    the harness makes a fresh input for every timed call, and the CPU alone takes about 0.3 s to draw
    256 MB of normals (a GPU draws them at once; the trip back is outside the timers)."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    return [torch.randn(ROWS, FEATURES, generator=g, device=device).cpu() for _ in range(BATCHES)]


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): every feature crosses the host
    link once, at 4 bytes (16 bits fail the tolerance), at the best rate pinned memory reaches."""
    return {"h2d_bytes": BATCHES * ROWS * FEATURES * 4,
            "what": f"{BATCHES} batches of {ROWS} x {FEATURES} fp32 features copied to the GPU"}
