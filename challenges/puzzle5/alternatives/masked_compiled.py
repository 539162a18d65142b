"""The static cache as Hugging Face's StaticCache and torch.compile write it: the cache allocated once at
its final length and written in place by index, every step attending over all of it with a mask on
the slots not yet filled. Every step has the same shapes, so torch.compile makes one graph for all 32
steps (no recompiles as the sequence grows) and fuses each step's small kernels; the price is reading
the whole cache every step, filled or not (0.4% more bytes on average than the filled slice), through an
attention kernel that takes a mask.
"""

import torch
import torch.nn.functional as F

BATCH, HIDDEN, HEADS, PROMPT, STEPS = 32, 1024, 8, 4096, 32


class Step(torch.nn.Module):
    def __init__(self, weights: dict, device: str):
        super().__init__()
        for name, value in weights.items():
            self.register_buffer(name, value)
        # Zeros, not empty: a masked slot gets zero weight, and zero times garbage can be NaN.
        like = {"device": device, "dtype": weights["wk"].dtype}  # the cache in the weights' type: bf16
        self.register_buffer("k", torch.zeros(BATCH, PROMPT + STEPS, HIDDEN, **like))
        self.register_buffer("v", torch.zeros(BATCH, PROMPT + STEPS, HIDDEN, **like))
        self.register_buffer("slots", torch.arange(PROMPT + STEPS, device=device))

    def forward(self, h: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """One decode step at position `t` (a 0-d tensor, so every step is the same graph)."""
        self.k.index_copy_(1, t[None], (h @ self.wk.T)[:, None])
        self.v.index_copy_(1, t[None], (h @ self.wv.T)[:, None])
        heads = lambda x: x.view(BATCH, -1, HEADS, HIDDEN // HEADS).transpose(1, 2)  # noqa: E731
        filled = (self.slots <= t)[None, None, None, :]  # the slots written so far, for every head
        a = F.scaled_dot_product_attention(heads((h @ self.wq.T)[:, None]), heads(self.k), heads(self.v),
                                           attn_mask=filled)
        return F.layer_norm(h + a.transpose(1, 2).reshape(BATCH, HIDDEN) @ self.wo.T, h.shape[-1:])


def prepare(weights: dict, device: str):
    step = Step(weights, device).eval()
    positions = [torch.tensor(PROMPT + i, device=device) for i in range(STEPS)]
    return {"module": step, "step": torch.compile(step, dynamic=False), "positions": positions}


def forward(state: dict, x: dict) -> torch.Tensor:
    module, step, h = state["module"], state["step"], x["h"]
    module.k[:, :PROMPT].copy_(x["k"])
    module.v[:, :PROMPT].copy_(x["v"])
    outs = []
    with torch.inference_mode():
        for t in state["positions"]:
            h = step(h, t)
            outs.append(h)
    return torch.stack(outs, dim=1)
