"""Honest alternative (torch.compile for the kernels, a CUDA graph by hand for the launches).

The same fp8 GEMV as compiled_fp8_gemv.py (a multiply and a sum that inductor fuses with the
fp8-to-fp32 conversion, so each weight byte is read once), compiled without cudagraph trees;
the eight generated kernels are then captured once with torch.cuda.CUDAGraph. A replay costs
the host one launch, where cudagraph trees spent ~0.8 ms a call checking guards and inputs.
"""

import torch

FP8_MAX = 448.0  # largest float8_e4m3fn


def quantize(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    scale = w.float().abs().amax(dim=1).clamp_min(1e-12) / FP8_MAX  # one scale per output row
    return (w.float() / scale[:, None]).to(torch.float8_e4m3fn), scale


def stack(x, w8s, scales):
    h = x.float()
    for w8, scale in zip(w8s, scales):
        h = ((w8.to(torch.float32) * h).sum(dim=1) * scale).to(torch.bfloat16).float()[None, :]
    return h.to(torch.bfloat16)


class Graphed:
    def __init__(self, weights, device: str):
        self.w8s, self.scales = zip(*(quantize(w) for w in weights))  # the graph reads these in place
        compiled = torch.compile(stack, fullgraph=True, dynamic=False)
        self.static_x = torch.zeros(1, weights[0].shape[1], dtype=torch.bfloat16, device=device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # compile and autotune outside the capture
            for _ in range(3):
                compiled(self.static_x, self.w8s, self.scales)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_y = compiled(self.static_x, self.w8s, self.scales)

    def __call__(self, x):
        self.static_x.copy_(x)
        self.graph.replay()
        return self.static_y.clone()


def prepare(weights: dict, device: str):
    with torch.inference_mode():
        return Graphed(weights["weights"], device)


def forward(model, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return model(x)
