"""A Hugging Face-style greedy decode loop, written as a model's own generate() often is: a Llama-like decoder at
a 1B model's shapes with random weights, the KV cache grown with torch.cat, the next token picked on the host.
Nobody tuned it for `infprof-tutor diagnose`: `python benchmarks/diagnose_workloads/decode_loop.py [--steps N]`."""

import argparse

import torch
import torch.nn.functional as F

HIDDEN, FFN, LAYERS, HEADS, VOCAB = 2048, 8192, 16, 32, 32000


def main(steps: int) -> None:
    torch.manual_seed(0)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    dt = torch.bfloat16 if dev == "cuda" else torch.float32
    w = [{k: torch.randn(*s, device=dev, dtype=dt) * s[0] ** -0.5 for k, s in
          {"qkv": (HIDDEN, 3 * HIDDEN), "o": (HIDDEN, HIDDEN), "up": (HIDDEN, 2 * FFN), "down": (FFN, HIDDEN)}.items()}
         for _ in range(LAYERS)]
    emb = torch.randn(VOCAB, HIDDEN, device=dev, dtype=dt) * 0.02
    tokens = [1] * 8
    cache = [None] * LAYERS
    for _ in range(steps):
        x = emb[torch.tensor(tokens[-1:], device=dev)]
        for n, lw in enumerate(w):
            h = F.layer_norm(x.float(), (HIDDEN,)).to(dt)
            q, k, v = (h @ lw["qkv"]).chunk(3, dim=-1)
            kv = torch.stack([k, v])
            cache[n] = kv if cache[n] is None else torch.cat([cache[n], kv], dim=1)
            att = F.scaled_dot_product_attention(q.view(1, HEADS, 1, -1), cache[n][0].view(1, -1, HEADS, 64).transpose(1, 2),
                                                 cache[n][1].view(1, -1, HEADS, 64).transpose(1, 2))
            x = x + att.reshape(1, HIDDEN) @ lw["o"]
            gate, up = (F.layer_norm(x.float(), (HIDDEN,)).to(dt) @ lw["up"]).chunk(2, dim=-1)
            x = x + (F.silu(gate) * up) @ lw["down"]
        logits = x.float() @ emb.float().T
        tokens.append(int(logits.argmax()))  # the host reads every token
    print("decoded", len(tokens) - 8, "tokens")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=64)
    main(parser.parse_args().steps)
