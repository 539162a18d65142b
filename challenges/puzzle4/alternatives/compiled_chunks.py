"""torch.compile over a chunk of CHUNK steps (mode="reduce-overhead": the chunk runs as one CUDA graph), the
prompt read by a compiled graph of its own, and one blocking check per chunk: the library does the graph
capture the reference does by hand.

The weights are the modules' parameters, so the graphs read them in place: cudagraph trees copy any other
tensor input into their own memory at every replay.
"""

import torch

STEPS, EOS, CHUNK, MEMORY, HIDDEN = 96, 0, 8, 256, 512


class Steps(torch.nn.Module):
    def __init__(self, weights: dict):
        super().__init__()
        for name, value in weights.items():
            self.register_parameter(name, torch.nn.Parameter(value, requires_grad=False))

    def step(self, tokens, memory):
        mixed = memory @ self.mix
        h = self.embed[tokens] + mixed[:, :HIDDEN].to(torch.bfloat16)
        h = torch.addmm(h, torch.relu(h @ self.w1.T), self.w2.T)
        tokens = (h @ self.out.T).argmax(dim=-1)
        memory = torch.tanh(torch.addmm(mixed[:, HIDDEN:], h.float(), self.write))
        return tokens, memory


class Prompt(Steps):
    def forward(self, prompts: torch.Tensor) -> torch.Tensor:
        """The memory after reading every prompt token but the last."""
        memory = torch.zeros(prompts.shape[0], MEMORY, device=prompts.device)
        for j in range(prompts.shape[1] - 1):
            _, memory = self.step(prompts[:, j], memory)
        return memory


class Chunk(Steps):
    def forward(self, tokens, memory):
        """CHUNK greedy steps: their tokens, one column each, the state after, and whether any sequence runs on."""
        columns = []
        for _ in range(CHUNK):
            tokens, memory = self.step(tokens, memory)
            columns.append(tokens)
        return torch.stack(columns, dim=1), tokens, memory, (tokens != EOS).any()


def prepare(weights: dict, device: str):
    compile = lambda m: torch.compile(m.eval(), mode="reduce-overhead", fullgraph=True)  # noqa: E731
    return compile(Prompt(weights)), compile(Chunk(weights))


def forward(compiled, prompts: torch.Tensor) -> torch.Tensor:
    prompt, chunk = compiled
    out = torch.full((prompts.shape[0], STEPS), EOS, dtype=torch.long, device=prompts.device)
    with torch.inference_mode():
        memory, tokens = prompt(prompts).clone(), prompts[:, -1]
        for start in range(0, STEPS, CHUNK):
            columns, tokens, memory, running = chunk(tokens, memory)
            out[:, start:start + CHUNK] = columns
            # out of the graph's memory before the next replay
            tokens, memory = tokens.clone(), memory.clone()
            if not running.item():
                break
    return out
