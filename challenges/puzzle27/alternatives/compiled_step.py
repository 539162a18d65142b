"""Alternative: a step compiled as gpt-fast compiles one, torch.compile(mode="reduce-overhead", fullgraph=True).

The weights become the parameters of a module (cudagraph trees read parameters in place; plain tensors a function
closes over would be copied into the graph's pool) and the cache each layer's buffers, allocated once at their
final length and written in place; the position is a tensor, so every step is the same graph and nothing
recompiles. The next token is the argmax on the GPU and the output layer multiplies in bf16, as the reference's.
On a CPU (the tests) the module runs eagerly: the compiler is the GPU's to exercise.
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


def frozen(tensor):
    return torch.nn.Parameter(tensor, requires_grad=False)


class Decoder(torch.nn.Module):
    """The model's weights as parameters and the cache as buffers, sized for one shape of inputs."""

    def __init__(self, weights: dict, cache_shape: tuple, dtype: torch.dtype):
        super().__init__()
        _, batch, kv_heads, prompt, head_dim = cache_shape
        device = weights["embed"].device
        self.embed, self.norm = frozen(weights["embed"]), frozen(weights["norm"])
        self.layers = torch.nn.ModuleList()
        for w in weights["layers"]:
            layer = torch.nn.Module()
            for name, tensor in w.items():
                setattr(layer, name, frozen(tensor))
            # A cache of its own a layer, as gpt-fast's KVCache: a slice of one buffer for all layers, written in
            # place, was copied whole by inductor (functionalised) every step.
            for name in ("k_cache", "v_cache"):
                layer.register_buffer(name, torch.zeros(batch, kv_heads, prompt + STEPS, head_dim, dtype=dtype,
                                                        device=device))
            self.layers.append(layer)
        self.heads = weights["layers"][0]["wq"].shape[1] // head_dim
        self.kv_heads, self.head_dim = kv_heads, head_dim
        inv = 1.0 / (ROPE_THETA ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
        angles = torch.arange(prompt + STEPS, device=device).float()[:, None] * inv[None]
        angles = torch.cat([angles, angles], -1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())
        self.register_buffer("slots", torch.arange(prompt + STEPS, device=device))

    def forward(self, token: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """The next token of every sequence, the cache written at `position` ([1], on the device)."""
        batch, heads, kv_heads, head_dim = token.shape[0], self.heads, self.kv_heads, self.head_dim
        cos, sin = self.cos[position], self.sin[position]
        mask = (self.slots <= position)[None, None, None]
        x = self.embed[token][:, None]
        for lw in self.layers:
            h = rms_norm(x, lw.attn_norm)
            q = rope((h @ lw.wq).view(batch, 1, heads, head_dim).transpose(1, 2), cos, sin)
            k = rope((h @ lw.wk).view(batch, 1, kv_heads, head_dim).transpose(1, 2), cos, sin)
            v = (h @ lw.wv).view(batch, 1, kv_heads, head_dim).transpose(1, 2)
            lw.k_cache[:, :, position] = k
            lw.v_cache[:, :, position] = v
            att = F.scaled_dot_product_attention(q, lw.k_cache, lw.v_cache, attn_mask=mask, enable_gqa=True)
            x = x + att.transpose(1, 2).reshape(batch, 1, heads * head_dim) @ lw.wo
            h = rms_norm(x, lw.mlp_norm)
            x = x + (F.silu(h @ lw.w_gate) * (h @ lw.w_up)) @ lw.w_down
        return (rms_norm(x, self.norm)[:, 0] @ self.embed.T).float().argmax(-1)


class State:
    def __init__(self, weights: dict, device: str):
        self.weights, self.device = weights, device
        self.decoder, self.step, self.shape = None, None, None

    def build(self, inputs: dict) -> None:
        self.shape = tuple(inputs["k"].shape)
        self.decoder = Decoder(self.weights, self.shape, inputs["k"].dtype)
        compiled = self.device == "cuda"
        self.step = torch.compile(self.decoder, mode="reduce-overhead", fullgraph=True) if compiled else self.decoder


def prepare(weights: dict, device: str):
    return State(weights, device)


def forward(state: State, inputs: dict) -> torch.Tensor:
    if state.shape != tuple(inputs["k"].shape):
        state.build(inputs)
    prompt = inputs["k"].shape[3]
    with torch.no_grad():
        for layer, k, v in zip(state.decoder.layers, inputs["k"], inputs["v"]):
            layer.k_cache[:, :, :prompt].copy_(k)
            layer.v_cache[:, :, :prompt].copy_(v)
        token, chosen = inputs["last"], []
        for t in range(STEPS):
            position = torch.full((1,), prompt + t, dtype=torch.long, device=token.device)
            token = state.step(token, position).clone()  # a graph's output is overwritten by its next replay
            chosen.append(token)
    return torch.stack(chosen, dim=1)
