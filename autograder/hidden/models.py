"""Models and weights the hidden tests give to the student's code: random weights by parameter name, and the
exact next-token probabilities of a model. Nothing here solves an exercise: this module is loaded into graded
kernels, where the reference never is."""
import torch


def random_state(module: torch.nn.Module, g: torch.Generator) -> dict:
    """Random float64 values for every parameter (norm weights around 1), by name."""
    state = {}
    for name, p in module.named_parameters():
        centre = 1.0 if "norm" in name and name.endswith("weight") else 0.0
        scale = 0.3 if p.dim() == 1 else p.shape[-1] ** -0.5
        state[name] = centre + scale * torch.randn(p.shape, generator=g, dtype=torch.float64)
    return state


def next_probabilities(model, tokens, temperature, top_k) -> torch.Tensor:
    """softmax(logits / temperature) of the last position, top-k filtered: (B, V)."""
    with torch.no_grad():
        logits = model(tokens[:, -model.embedding.max_len:])[:, -1] / temperature
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return logits.softmax(-1)


def pair_probabilities(model, prompt, temperature, top_k) -> torch.Tensor:
    """Exact probability of each pair (first, second) of new tokens after `prompt` (1, T0): (V, V)."""
    first = next_probabilities(model, prompt, temperature, top_k)[0]  # (V,)
    V = first.shape[0]
    extended = torch.cat([prompt.expand(V, -1), torch.arange(V)[:, None]], dim=1)  # every possible first token
    second = next_probabilities(model, extended, temperature, top_k)  # (V, V)
    return first[:, None] * second
