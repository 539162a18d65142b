"""Puzzle 27: what the judge sees of a decode that does less than the model, at the scene's sizes.

    PYTHONPATH=. python challenges/puzzle27/sweeps/judge_reach.py [--device cpu|cuda] [--seed 3] [--json OUT]

The grade judges a decode along its own path (spec.judge): each step's logit of the token chosen against the best
of that step. This decodes one input exactly (the spec's own model, step by step) and with each shortcut a workload
might take to read fewer bytes a step: a layer skipped, attention over the last positions only or none, the
weights rounded to int8 (per output column, or per 128 rows of a column) or fp8. Printed per decode: the judged
relative L2 (puzzle.toml's tolerance is what it is held to) and at how many of the call's choices it parts from
the exact decode. At the scene's sizes it takes about 2.5 minutes on two CPU cores (the weights 2.5 GB);
`--small` runs tests/test_puzzle27.py's small model, a check of the script, not a number.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F

from stages import CPU_SIZES  # the sweeps' small model (this folder is the script's first on sys.path)

FOLDER = Path(__file__).parents[1]


def decode(spec, weights: dict, inputs: dict, skip: tuple = (), window: int | None = None) -> torch.Tensor:
    """Greedy tokens [BATCH, STEPS] from the spec's model, step by step, leaving out the layers in `skip` and, with
    `window`, attending to the last `window` positions only (0: no attention)."""
    layers, batch, kv_heads, prompt, head_dim = inputs["k"].shape
    keys, values = list(inputs["k"]), list(inputs["v"])
    token, chosen = inputs["last"], []
    for t in range(spec.STEPS):
        cos, sin = spec.rope(torch.tensor([prompt + t], device=token.device))
        x = weights["embed"][token][:, None]
        for i, w in enumerate(weights["layers"]):
            if i in skip:
                continue
            h = spec.rms_norm(x, w["attn_norm"])
            q = spec.apply_rope((h @ w["wq"]).view(batch, 1, spec.HEADS, head_dim).transpose(1, 2), cos, sin)
            k = spec.apply_rope((h @ w["wk"]).view(batch, 1, kv_heads, head_dim).transpose(1, 2), cos, sin)
            v = (h @ w["wv"]).view(batch, 1, kv_heads, head_dim).transpose(1, 2)
            keys[i], values[i] = torch.cat([keys[i], k], dim=2), torch.cat([values[i], v], dim=2)
            if window != 0:
                seen = slice(-window, None) if window else slice(None)
                att = F.scaled_dot_product_attention(q, keys[i][:, :, seen], values[i][:, :, seen], enable_gqa=True)
                x = x + att.transpose(1, 2).reshape(batch, 1, spec.HEADS * head_dim) @ w["wo"]
            h = spec.rms_norm(x, w["mlp_norm"])
            x = x + (F.silu(h @ w["w_gate"]) * (h @ w["w_up"])) @ w["w_down"]
        token = (spec.rms_norm(x, weights["norm"])[:, 0] @ weights["embed"].T).float().argmax(-1)
        chosen.append(token)
    return torch.stack(chosen, dim=1)


def rounded(weights: dict, kind: str) -> dict:
    """The weights as a workload storing them in fewer bits would compute with: each matrix rounded to `kind`
    (int8 scaled per column, int8 scaled per 128 rows of a column, fp8 e4m3 per column) and back to bf16."""
    def one(t: torch.Tensor) -> torch.Tensor:
        if t.dim() < 2:
            return t
        x = t.float()
        if kind == "int8 per 128":
            group = 128 if x.shape[0] % 128 == 0 else x.shape[0]  # a small model's columns in one group
            x = x.reshape(x.shape[0] // group, group, -1)
        scale = x.abs().amax(-2, keepdim=True) / (448.0 if kind == "fp8" else 127.0)
        q = (x / scale).to(torch.float8_e4m3fn).float() if kind == "fp8" else (x / scale).round().clamp(-127, 127)
        return (q * scale).reshape(t.shape).to(torch.bfloat16)

    return {"embed": one(weights["embed"]), "norm": weights["norm"],
            "layers": [{name: one(w) for name, w in layer.items()} for layer in weights["layers"]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    from tutor.harness.loading import load_module

    spec = load_module(FOLDER / "spec.py", "p27_spec", ())
    for name, value in (CPU_SIZES if args.small else {}).items():
        setattr(spec, name, value)
    weights, inputs = spec.make_weights(0, args.device), spec.make_input(args.seed, args.device)
    last = spec.LAYERS - 1
    shortcuts = {"exact": {}, "the last layer skipped": {"skip": (last,)},
                 "a middle layer skipped": {"skip": (spec.LAYERS // 2,)},
                 "attention over the last 512 positions": {"window": 512}, "no attention": {"window": 0},
                 "int8 per column": {"bits": "int8"}, "int8 per 128": {"bits": "int8 per 128"}, "fp8": {"bits": "fp8"}}
    rows, exact = [], None
    with torch.no_grad():
        for name, how in shortcuts.items():
            model = rounded(weights, how.pop("bits")) if "bits" in how else weights
            tokens = decode(spec, model, inputs, **how)
            exact = tokens if exact is None else exact
            scored, best = spec.judge(weights, inputs, tokens)
            rows.append({"decode": name, "judged_rel_l2": float((scored - best).norm() / best.norm()),
                         "parts_from_exact": int((tokens != exact).sum()), "choices": tokens.numel()})
            print(f"{name:40s} judged {rows[-1]['judged_rel_l2']:.2e}  differs from the exact decode at "
                  f"{rows[-1]['parts_from_exact']} of {tokens.numel()} choices", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
