"""Inputs for puzzle22: the logits processor of a server whose batch changes size every decode step.

One forward() is STEPS decode steps. Each step hands over the logits of the requests in flight, [batch, VOCAB] in
bf16, batch drawn from 1..MAX_BATCH (requests join and finish every step), with each request's temperature; the
processor returns the log-probabilities of the next token in fp32, the vocabulary's bias added. Warm-up serves
every batch size once, so whatever compiles for a size has compiled before anything is timed.
"""

import torch

VOCAB = 128256  # a Llama-3 vocabulary
MAX_BATCH = 256  # a server's most requests in flight (vLLM's default max_num_seqs)
STEPS = 8
_WEIGHT_STREAM, _INPUT_STREAM, _WARMUP_STREAM = 1 << 45, 1 << 46, 1 << 47


def make_weights(seed: int, device: str) -> dict:
    """The vocabulary's logit bias [VOCAB] in fp32 (small: a nudge, not a mask)."""
    g = torch.Generator().manual_seed(_WEIGHT_STREAM + seed)
    return {"bias": (torch.randn(VOCAB, generator=g) * 0.1).to(device)}


def _steps(sizes, stream: int, device: str) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A step per batch size: (logits [batch, VOCAB] bf16, temperature [batch] fp32 in 0.5..1.5), drawn on the
    device: 260 rows of logits drawn on the CPU took a fifth of a second, and every timed call has its own."""
    g = torch.Generator(device=device).manual_seed(stream)
    return [((torch.randn(int(b), VOCAB, generator=g, device=device) * 4).to(torch.bfloat16),
             0.5 + torch.rand(int(b), generator=g, device=device)) for b in sizes]


def make_input(seed: int, device: str) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """STEPS decode steps, each with a batch size drawn from 1..MAX_BATCH."""
    g = torch.Generator().manual_seed(_INPUT_STREAM + seed)
    return _steps(torch.randint(1, MAX_BATCH + 1, (STEPS,), generator=g).tolist(), _INPUT_STREAM + seed, device)


def warmup_inputs(seed: int, device: str) -> list[list[tuple[torch.Tensor, torch.Tensor]]]:
    """Every batch size 1..MAX_BATCH once, in a shuffled order, STEPS steps an input."""
    g = torch.Generator().manual_seed(_INPUT_STREAM + seed)
    sizes = (torch.randperm(MAX_BATCH, generator=g) + 1).tolist()
    return [_steps(sizes[i:i + STEPS], _WARMUP_STREAM + seed * MAX_BATCH + i, device)
            for i in range(0, MAX_BATCH, STEPS)]


# The rows a call's steps hold, summed, at the least its median call can hold: 8 draws from 1..256 sum to 1028 on
# average (SD 209); the median of a grade's timed calls sits under 550 rows about as often as never.
LEAST_MEDIAN_ROWS = 550


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor), for the median call (the floor is held
    against a median): read LEAST_MEDIAN_ROWS rows of bf16 logits once and write their fp32 log-probabilities once,
    less what L2 can hold of the logits just made."""
    moved = LEAST_MEDIAN_ROWS * VOCAB * (2 + 4)
    return {"hbm_bytes": max(0, moved - l2_bytes),
            "what": f"{LEAST_MEDIAN_ROWS} rows of {VOCAB} logits read in bf16 and written as fp32 log-probabilities "
                    f"(the least a median call of {STEPS} steps holds), less what L2 keeps"}
