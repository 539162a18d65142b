"""Allocate the cache once, at its final length, and write each step's key and value in place: a step
moves one token's bytes instead of copying the whole cache. With every buffer at a fixed address, the
32 steps are captured once as one CUDA graph (each step's slice length is fixed at capture), so a
call is three copies of the prompt in and one replay.
"""

import torch
import torch.nn.functional as F

BATCH, HIDDEN, HEADS, PROMPT, STEPS = 32, 1024, 8, 4096, 32


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    b, t, d = k.shape
    heads = lambda x: x.view(b, -1, HEADS, d // HEADS).transpose(1, 2)  # noqa: E731
    return F.scaled_dot_product_attention(heads(q[:, None]), heads(k), heads(v)).transpose(1, 2).reshape(b, d)


def decode(state: dict) -> None:
    w, k, v = state["w"], state["k"], state["v"]
    h = state["h"]
    for i in range(STEPS):
        t = PROMPT + i
        k[:, t] = h @ w["wk"].T  # in place: this token's key and value, nothing else moves
        v[:, t] = h @ w["wv"].T
        h = F.layer_norm(h + attend(h @ w["wq"].T, k[:, :t + 1], v[:, :t + 1]) @ w["wo"].T, h.shape[-1:])
        state["out"][:, i] = h


def prepare(weights: dict, device: str):
    like = {"device": device, "dtype": weights["wk"].dtype}  # the cache in the weights' type: bf16
    state = {"w": weights, "h": torch.zeros(BATCH, HIDDEN, **like),
             "k": torch.zeros(BATCH, PROMPT + STEPS, HIDDEN, **like),
             "v": torch.zeros(BATCH, PROMPT + STEPS, HIDDEN, **like),
             "out": torch.empty(BATCH, STEPS, HIDDEN, **like)}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # the kernels warmed up outside the capture
        decode(state)
    torch.cuda.current_stream().wait_stream(side)
    state["graph"] = torch.cuda.CUDAGraph()
    with torch.cuda.graph(state["graph"]):
        decode(state)
    return state


def forward(state: dict, x: dict) -> torch.Tensor:
    state["h"].copy_(x["h"])
    state["k"][:, :PROMPT].copy_(x["k"])
    state["v"][:, :PROMPT].copy_(x["v"])
    state["graph"].replay()
    return state["out"].clone()
