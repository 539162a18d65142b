"""Inputs for puzzle2: a decoder MLP stack serving one token per request, at every batch size from 1 to 64.

One forward() is one slice of a server's life: STEPS decode steps, each with its
own batch size. Warm-up serves every batch size once, so graphs and compiles
happen before anything is timed and the memory they take is all there.
"""

import torch

LAYERS, HIDDEN, FFN = 8, 1024, 4096
MAX_BATCH = 64
STEPS = 8
_INPUT_STREAM = 1 << 40  # inputs never share a random stream with the weights


def make_weights(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    layers = []
    for _ in range(LAYERS):
        # std fan_in**-0.5 keeps activations' scale through the residual stack.
        w1 = torch.randn(FFN, HIDDEN, generator=g) * HIDDEN**-0.5
        w2 = torch.randn(HIDDEN, FFN, generator=g) * FFN**-0.5
        layers.append((w1.to(torch.bfloat16).to(device), w2.to(torch.bfloat16).to(device)))
    return {"layers": layers}


def _batches(sizes, g: torch.Generator, device: str) -> list[torch.Tensor]:
    return [torch.randn(int(bs), HIDDEN, generator=g).to(torch.bfloat16).to(device) for bs in sizes]


def make_input(seed: int, device: str) -> list[torch.Tensor]:
    """STEPS decode steps with batch sizes drawn from 1..MAX_BATCH."""
    g = torch.Generator().manual_seed(_INPUT_STREAM + seed)
    sizes = torch.randint(1, MAX_BATCH + 1, (STEPS,), generator=g)
    return _batches(sizes, g, device)


def warmup_inputs(seed: int, device: str) -> list[list[torch.Tensor]]:
    """Every batch size 1..MAX_BATCH once, in a shuffled order, STEPS steps per input."""
    g = torch.Generator().manual_seed(_INPUT_STREAM + seed)
    sizes = (torch.randperm(MAX_BATCH, generator=g) + 1).tolist()
    return [_batches(sizes[i:i + STEPS], g, device) for i in range(0, MAX_BATCH, STEPS)]


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): each of its STEPS decode steps
    reads every weight, at the fewest bits any quantisation within the 0.02 tolerance keeps (8; int8
    per channel errs ~0.4% a layer), and no more than L2's size can stay from one step to the next."""
    weights = LAYERS * 2 * HIDDEN * FFN
    return {"hbm_bytes": STEPS * max(0, weights - l2_bytes),
            "what": f"{STEPS} decode steps, each reading {weights / 1e6:.0f} MB of weights at 8 bits, less the "
                    f"{l2_bytes / 1e6:.0f} MB L2 can keep between steps"}
