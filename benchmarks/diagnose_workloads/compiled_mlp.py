"""A torch.compile'd MLP serving requests of varied batch sizes, as a small inference service would: each batch
padded to nothing, compiled with the defaults. `python benchmarks/diagnose_workloads/compiled_mlp.py`."""

import random

import torch

torch.manual_seed(0)
dev = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).to(dev).eval()
serve = torch.compile(model)
random.seed(0)
with torch.inference_mode():
    for _ in range(200):
        batch = random.randint(1, 64)
        out = serve(torch.randn(batch, 1024, device=dev))
    print("served", float(out.sum()))
