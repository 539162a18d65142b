"""The team's prototype, the bar for silver and gold: one CUDA graph a step and the cache allocated once and
written in place, the rest as the baseline has it: the graph ends with the step's fp32 logits, copied to the
host, where the next token is picked, as the baseline picks it. Each step's hundreds of launches are one; the host
still waits for every step. Its time moves far less from grade to grade than the baseline's, which the host's
speed sets (MEASUREMENTS.md: 72.6-75.5 ms a call in 18 grades of 20 on one H200, up to 86 ms on its slowest host).
"""

import torch
import torch.nn.functional as F

STEPS = 16
ROPE_THETA, NORM_EPS = 500000.0, 1e-5


def rms_norm(x, weight):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + NORM_EPS)).to(x.dtype) * weight


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return (x.float() * cos + rotated.float() * sin).to(x.dtype)


class Decoder:
    """Static buffers sized from the first inputs it sees, and one step captured over them (on CUDA)."""

    def __init__(self, weights: dict):
        self.w = weights
        self.graph = None
        self.shape = None

    def build(self, inputs: dict) -> None:
        layers, batch, kv_heads, prompt, head_dim = inputs["k"].shape
        device = inputs["k"].device
        self.heads, self.kv_heads, self.head_dim = self.w["layers"][0]["wq"].shape[1] // head_dim, kv_heads, head_dim
        full = (layers, batch, kv_heads, prompt + STEPS, head_dim)
        self.k = torch.zeros(full, dtype=inputs["k"].dtype, device=device)
        self.v = torch.zeros(full, dtype=inputs["v"].dtype, device=device)
        self.token = torch.zeros(batch, dtype=torch.long, device=device)
        self.position = torch.zeros(1, dtype=torch.long, device=device)
        self.logits = torch.zeros(batch, self.w["embed"].shape[0], device=device)
        inv = 1.0 / (ROPE_THETA ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
        angles = torch.arange(prompt + STEPS, device=device).float()[:, None] * inv[None]
        self.cos, self.sin = torch.cat([angles, angles], -1).cos(), torch.cat([angles, angles], -1).sin()
        self.slots = torch.arange(prompt + STEPS, device=device)
        self.shape = tuple(inputs["k"].shape)
        if device.type == "cuda":
            self.graph = torch.cuda.CUDAGraph()
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(2):  # warm the kernels up before capture
                    self.step()
            torch.cuda.current_stream().wait_stream(stream)
            with torch.cuda.graph(self.graph):
                self.step()

    def step(self) -> None:
        """Every sequence's logits at self.position, from self.token into self.logits; the cache written in place."""
        w, heads, kv_heads, head_dim = self.w, self.heads, self.kv_heads, self.head_dim
        batch = self.token.shape[0]
        cos, sin = self.cos[self.position], self.sin[self.position]
        mask = (self.slots <= self.position)[None, None, None]  # the positions filled so far
        x = w["embed"][self.token][:, None]
        for i, lw in enumerate(w["layers"]):
            h = rms_norm(x, lw["attn_norm"])
            q = rope((h @ lw["wq"]).view(batch, 1, heads, head_dim).transpose(1, 2), cos, sin)
            k = rope((h @ lw["wk"]).view(batch, 1, kv_heads, head_dim).transpose(1, 2), cos, sin)
            v = (h @ lw["wv"]).view(batch, 1, kv_heads, head_dim).transpose(1, 2)
            self.k[i].index_copy_(2, self.position, k)
            self.v[i].index_copy_(2, self.position, v)
            att = F.scaled_dot_product_attention(q, self.k[i], self.v[i], attn_mask=mask, enable_gqa=True)
            x = x + att.transpose(1, 2).reshape(batch, 1, heads * head_dim) @ lw["wo"]
            h = rms_norm(x, lw["mlp_norm"])
            x = x + (F.silu(h @ lw["w_gate"]) * (h @ lw["w_up"])) @ lw["w_down"]
        # The baseline's fp32 output layer, its logits left in a buffer of the graph's for the host to read.
        self.logits.copy_(rms_norm(x, w["norm"])[:, 0].float() @ w["embed"].float().T)

    def __call__(self, inputs: dict) -> torch.Tensor:
        if self.shape != tuple(inputs["k"].shape):
            self.build(inputs)
        prompt = inputs["k"].shape[3]
        self.k[:, :, :, :prompt].copy_(inputs["k"])
        self.v[:, :, :, :prompt].copy_(inputs["v"])
        self.token.copy_(inputs["last"])
        chosen = []
        for t in range(STEPS):
            self.position.fill_(prompt + t)
            if self.graph is not None:
                self.graph.replay()
            else:
                self.step()
            token = self.logits.cpu().argmax(-1).to(self.token.device)  # picked on the host, as the baseline does
            chosen.append(token)
            self.token.copy_(token)
        return torch.stack(chosen, dim=1)


def prepare(weights: dict, device: str):
    return Decoder(weights)


def forward(decoder: Decoder, inputs: dict) -> torch.Tensor:
    return decoder(inputs)
