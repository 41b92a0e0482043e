"""Hidden tests for notebook 01: fresh sizes (odd d_model too) and fresh embedding weights."""
import torch

from autograder.hidden.observe import Observations, generator, grid, hidden_test


def observe_positional_encoding(positional_encoding, trials: int = 6, seed: int = 101) -> Observations:
    seen = Observations()
    g = generator(seed)
    sizes = [(1, 1), (3, 1), (64, 7)] + [tuple(torch.randint(1, 97, (2,), generator=g).tolist()) for _ in range(trials)]
    for max_len, d_model in sizes:
        seen.close(f"positional_encoding({max_len}, {d_model})", positional_encoding(max_len, d_model))
    return seen


def observe_token_and_position_embedding(TokenAndPositionEmbedding, trials: int = 4, seed: int = 102) -> Observations:
    seen = Observations()
    g = generator(seed)
    for _ in range(trials):
        vocab, d_model, max_len = (int(v) for v in torch.randint(2, 40, (3,), generator=g))
        length = int(torch.randint(1, max_len + 1, (1,), generator=g))
        batch = tuple(torch.randint(1, 4, (int(torch.randint(0, 3, (1,), generator=g)),), generator=g).tolist())
        tokens = torch.randint(0, vocab, batch + (length,), generator=g)
        weight = torch.randn(vocab, d_model, generator=g)
        module = TokenAndPositionEmbedding(vocab, d_model, max_len)
        what = f"TokenAndPositionEmbedding({vocab}, {d_model}, {max_len})"
        seen.exact(f"{what}: the shape of embed.weight", tuple(module.embed.weight.shape), show=True)
        with torch.no_grad():
            module.embed.weight.copy_(weight)
        for device, dtype in grid():
            m = module.to(device=device, dtype=dtype)
            seen.close(f"{what} on tokens of shape {tuple(tokens.shape)} ({device.type}, {dtype})", m(tokens.to(device)))
        too_long = torch.zeros(1, max_len + 1, dtype=torch.long)
        seen.raises(f"{what} on a sequence of {max_len + 1} tokens", lambda: module.to("cpu", torch.float32)(too_long))
    return seen


test_positional_encoding = hidden_test(observe_positional_encoding)
test_token_and_position_embedding = hidden_test(observe_token_and_position_embedding)
