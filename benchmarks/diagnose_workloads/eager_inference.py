"""A plain eager inference script: a ResNet-style stack of convolutions in fp32 over batches of images, results
copied back to the host one batch at a time. `python benchmarks/diagnose_workloads/eager_inference.py`."""

import torch

torch.manual_seed(0)
dev = "cuda" if torch.cuda.is_available() else "cpu"
layers = []
for c_in, c_out in [(3, 64), (64, 128), (128, 256), (256, 256)]:
    layers += [torch.nn.Conv2d(c_in, c_out, 3, padding=1), torch.nn.BatchNorm2d(c_out), torch.nn.ReLU(),
               torch.nn.MaxPool2d(2)]
model = torch.nn.Sequential(*layers, torch.nn.Flatten(), torch.nn.LazyLinear(1000)).to(dev).eval()
results = []
with torch.no_grad():
    for _ in range(20):
        images = torch.randn(32, 3, 224, 224)
        logits = model(images.to(dev))
        results.append(logits.softmax(-1).cpu())
print("classified", sum(r.shape[0] for r in results), "images")
