"""Take the host out of the loop: a word is a stop word exactly when its token is one (the text is
whole words, and the search is for whole words), so the check is a lookup in a table of stop tokens,
on the GPU, in the same steps as the model. The steps run as CUDA graphs of CHUNK; after each chunk
the host asks once whether every sequence has ended (STEPS // CHUNK syncs at most, instead of a
detokenise-and-search after every step), and the output is masked after each sequence's stop word.
"""

import torch

STEPS, PAD, CHUNK = 64, -1, 16


def step(w: dict, tokens: torch.Tensor) -> torch.Tensor:
    h = w["embed"][tokens]
    h = h + torch.relu(h @ w["w1"].T) @ w["w2"].T
    return (h @ w["out"].T).argmax(dim=-1)


def chunk(s: dict, start: int) -> None:
    tokens = s["tokens"]
    for i in range(start, start + CHUNK):
        tokens = step(s["w"], tokens)
        s["out"][:, i] = tokens
        ended = s["is_stop"][tokens] & (s["ends"] == STEPS)  # this step's word is the sequence's first stop word
        s["ends"].masked_fill_(ended, i)
    s["tokens"].copy_(tokens)
    s["done"].copy_((s["ends"] < STEPS).all())


def prepare(weights: dict, device: str):
    index = {word: t for t, word in enumerate(weights["words"])}
    is_stop = torch.zeros(len(weights["words"]), dtype=torch.bool, device=device)
    is_stop[[index[word] for word in weights["stop_words"]]] = True
    batch = 64
    s = {"w": weights, "is_stop": is_stop, "tokens": torch.zeros(batch, dtype=torch.long, device=device),
         "out": torch.full((batch, STEPS), PAD, dtype=torch.long, device=device),
         "ends": torch.full((batch,), STEPS, dtype=torch.long, device=device),
         "done": torch.zeros((), dtype=torch.bool, device=device),
         "steps": torch.arange(STEPS, device=device)}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # the kernels warmed up outside any capture
        chunk(s, 0)
    torch.cuda.current_stream().wait_stream(side)
    pool = torch.cuda.graph_pool_handle()
    s["graphs"] = []
    for start in range(0, STEPS, CHUNK):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            chunk(s, start)
        s["graphs"].append(graph)
    return s


def forward(s: dict, tokens: torch.Tensor) -> torch.Tensor:
    s["tokens"].copy_(tokens)
    s["out"].fill_(PAD)
    s["ends"].fill_(STEPS)
    for graph in s["graphs"]:
        graph.replay()
        if s["done"].item():  # one sync a chunk: the only time the host waits
            break
    return s["out"].masked_fill(s["steps"] > s["ends"][:, None], PAD)
