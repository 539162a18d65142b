"""No torch.compile at all: a Triton program a row, written once for any batch size. It reads the row's logits
twice (a running max and sum of exponentials over the vocabulary, then each log-probability written), with the
temperature and the bias applied as it reads, and writes each step's rows straight into the call's one output:
no graph per size, no eager fallback, and no torch.cat copy at the end.
"""

import torch
import triton
import triton.language as tl

BLOCK = 4096  # logits a program reads at a time


@triton.jit
def _log_probs(logits, temperature, bias, out, vocab, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    inv_t = 1.0 / tl.load(temperature + row)
    cols = tl.arange(0, BLOCK)
    # Per lane, a running max and sum of exponentials; a finite start keeps exp(m - m_new) a number.
    m = tl.full([BLOCK], -1e30, tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, vocab, BLOCK):
        inside = start + cols < vocab
        x = tl.load(logits + row * vocab + start + cols, mask=inside, other=0.0).to(tl.float32) * inv_t
        x = tl.where(inside, x + tl.load(bias + start + cols, mask=inside, other=0.0), float("-inf"))
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    top = tl.max(m, axis=0)
    lse = top + tl.log(tl.sum(s * tl.exp(m - top), axis=0))
    for start in range(0, vocab, BLOCK):
        inside = start + cols < vocab
        x = tl.load(logits + row * vocab + start + cols, mask=inside, other=0.0).to(tl.float32) * inv_t
        x += tl.load(bias + start + cols, mask=inside, other=0.0)
        tl.store(out + row * vocab + start + cols, x - lse, mask=inside)


def prepare(weights: dict, device: str):
    return weights


def forward(state: dict, steps: list) -> torch.Tensor:
    vocab = steps[0][0].shape[1]
    out = torch.empty(sum(logits.shape[0] for logits, _ in steps), vocab, device=steps[0][0].device)
    row = 0
    for logits, temperature in steps:
        rows = logits.shape[0]
        _log_probs[(rows,)](logits, temperature, state["bias"], out[row:row + rows], vocab, BLOCK=BLOCK)
        row += rows
    return out
