"""Hidden tests for notebook 01: fresh sizes (odd d_model, sizes of 1) and fresh embedding weights on any number of
batch axes, up to exactly max_len tokens, and the starting scale of the embedding at two sizes. The layer runs on a
stand-in table, so a mistake in the table costs once."""
import torch

from autograder.authoring.hidden.observe import Observations, generator, grid, hidden_test
from course.checks.positional_encoding import INIT_TOLERANCE
from course.checks.stand_ins import earlier_pieces_replaced

INIT_VOCAB, INIT_SIZES = 1024, (16, 64)  # 16,384 and 65,536 entries: a sample standard deviation within 1%


def observe_positional_encoding(positional_encoding, trials: int = 6, seed: int = 101) -> Observations:
    seen = Observations()
    g = generator(seed)
    sizes = [(1, 1), (3, 1), (1, 8), (2, 2), (64, 7), (5, 3), (200, 33)]
    sizes += [tuple(torch.randint(1, 97, (2,), generator=g).tolist()) for _ in range(trials)]
    for max_len, d_model in dict.fromkeys(sizes):  # a repeated size would repeat a name
        seen.close(f"positional_encoding({max_len}, {d_model})", positional_encoding(max_len, d_model))
    return seen


def observe_offset_rotation(offset_rotation, trials: int = 6, seed: int = 103) -> Observations:
    """Fixed and fresh offsets (negative, zero, large) and even sizes in float64, the default dtype, every device
    and dtype, and the ValueError for odd sizes."""
    seen = Observations()
    g = generator(seed)
    cases = [(0, 2), (1, 2), (-1, 4), (7, 10), (-25, 32), (1000, 64)]
    cases += [(int(torch.randint(-60, 61, (1,), generator=g)), 2 * int(torch.randint(1, 49, (1,), generator=g)))
              for _ in range(trials)]
    for k, d_model in dict.fromkeys(cases):
        seen.close(f"offset_rotation({k}, {d_model}, dtype=torch.float64)",
                   offset_rotation(k, d_model, dtype=torch.float64), torch.float64)
    seen.close("offset_rotation(3, 6) in the default dtype", offset_rotation(3, 6))
    for device, dtype in grid():
        seen.close(f"offset_rotation(-9, 12, dtype={dtype}, device={device.type!r})",
                   offset_rotation(-9, 12, dtype=dtype, device=device), dtype)
    for d_model in (1, 7):
        seen.raises(f"offset_rotation(2, {d_model}): an odd d_model", lambda: offset_rotation(2, d_model))
    return seen


def sinusoids(max_len: int, d_model: int) -> torch.Tensor:
    """Stands in for the notebook's `positional_encoding` (observed in its own cell), so that a table mistake costs
    points once."""
    frequency = torch.pow(10000.0, -torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angle = torch.outer(torch.arange(max_len, dtype=torch.float64), frequency)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)[:, :d_model].to(torch.get_default_dtype())


def _embedding_cases(g: torch.Generator, trials: int) -> list[tuple[int, int, int, tuple]]:
    """(vocab_size, d_model, max_len, token shape): sizes of 1, odd d_model, exactly max_len tokens, many batch
    axes, then fresh random ones."""
    cases = [(2, 1, 1, (1,)), (5, 7, 4, (3, 4)), (9, 4, 6, (2, 1, 3, 2, 5)), (3, 5, 8, (8,))]
    for _ in range(trials):
        vocab, d_model, max_len = (int(v) for v in torch.randint(2, 40, (3,), generator=g))
        length = int(torch.randint(1, max_len + 1, (1,), generator=g))
        batch = tuple(torch.randint(1, 4, (int(torch.randint(0, 3, (1,), generator=g)),), generator=g).tolist())
        cases.append((vocab, d_model, max_len, batch + (length,)))
    return cases


def observe_token_and_position_embedding(TokenAndPositionEmbedding, trials: int = 4, seed: int = 102) -> Observations:
    seen = Observations()
    g = generator(seed)
    with earlier_pieces_replaced(TokenAndPositionEmbedding, positional_encoding=sinusoids):
        for vocab, d_model, max_len, shape in _embedding_cases(g, trials):
            tokens = torch.randint(0, vocab, shape, generator=g)
            weight = torch.randn(vocab, d_model, generator=g)
            module = TokenAndPositionEmbedding(vocab, d_model, max_len)
            what = f"TokenAndPositionEmbedding({vocab}, {d_model}, {max_len})"
            seen.exact(f"{what}: the shape of embed.weight", tuple(module.embed.weight.shape), show=True)
            seen.exact(f"{what}: its max_len attribute (generate and sample read model.embedding.max_len)",
                       getattr(module, "max_len", None), show=True)
            seen.exact(f"{what}: its trained parameters (the positional table is a buffer, not trained)",
                       sorted(name for name, p in module.named_parameters() if p.requires_grad), show=True)
            with torch.no_grad():
                module.embed.weight.copy_(weight)
            if shape[-1] == max_len:
                full = f"{what} on exactly max_len={max_len} tokens: the exception it raises (only longer sequences may)"
                seen.raises(full, lambda: module(tokens))
                if seen.values()[full] != "nothing":
                    continue  # its values cannot be observed; the line above already fails the test
            for device, dtype in grid():
                m = module.to(device=device, dtype=dtype)
                seen.close(f"{what} on tokens of shape {tuple(tokens.shape)} ({device.type}, {dtype})",
                           m(tokens.to(device)))
            too_long = torch.zeros(1, max_len + 1, dtype=torch.long)
            seen.raises(f"{what} on a sequence of {max_len + 1} tokens", lambda: module.to("cpu", torch.float32)(too_long))
        for d_model in INIT_SIZES:  # two sizes: a fixed scale that happens to fit one of them fails the other
            weight = TokenAndPositionEmbedding(INIT_VOCAB, d_model, 4).embed.weight.detach().double()
            seen.claim(f"TokenAndPositionEmbedding({INIT_VOCAB}, {d_model}, 4): a new layer's embed.weight must start "
                       f"with standard deviation 1/sqrt(d_model) = {d_model ** -0.5:.3f} (within {INIT_TOLERANCE:.0%}; "
                       "PyTorch's default for nn.Embedding is 1)", abs(weight.std().item() * d_model ** 0.5 - 1) <= INIT_TOLERANCE)
    return seen


test_positional_encoding = hidden_test(observe_positional_encoding)
test_offset_rotation = hidden_test(observe_offset_rotation)
test_token_and_position_embedding = hidden_test(observe_token_and_position_embedding)
