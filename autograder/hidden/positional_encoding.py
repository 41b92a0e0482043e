"""Hidden tests for notebook 01."""
import torch

from autograder.hidden.compare import HiddenTestFailed, assert_matches, assert_raises, generator, grid
from autograder.reference import positional_encoding as ref


def test_positional_encoding(positional_encoding, trials: int = 6, seed: int = 101) -> None:
    g = generator(seed)
    sizes = [(1, 1), (3, 1), (64, 7)] + [tuple(torch.randint(1, 97, (2,), generator=g).tolist()) for _ in range(trials)]
    for max_len, d_model in sizes:
        assert_matches(f"positional_encoding({max_len}, {d_model})", positional_encoding(max_len, d_model),
                       ref.positional_encoding(max_len, d_model), torch.float32)


def test_token_and_position_embedding(TokenAndPositionEmbedding, trials: int = 4, seed: int = 102) -> None:
    g = generator(seed)
    for _ in range(trials):
        vocab, d_model, max_len = (int(v) for v in torch.randint(2, 40, (3,), generator=g))
        length = int(torch.randint(1, max_len + 1, (1,), generator=g))
        batch = tuple(torch.randint(1, 4, (int(torch.randint(0, 3, (1,), generator=g)),), generator=g).tolist())
        tokens = torch.randint(0, vocab, batch + (length,), generator=g)
        expected_module = ref.TokenAndPositionEmbedding(vocab, d_model, max_len)
        student = TokenAndPositionEmbedding(vocab, d_model, max_len)
        if tuple(student.embed.weight.shape) != (vocab, d_model):
            raise HiddenTestFailed("embed.weight has the wrong shape")
        with torch.no_grad():
            student.embed.weight.copy_(torch.randn(vocab, d_model, generator=g))
            expected_module.embed.weight.copy_(student.embed.weight)
        for device, dtype in grid():
            s, e = student.to(device=device, dtype=dtype), expected_module.to(device=device, dtype=dtype)
            assert_matches(f"output for tokens of shape {tuple(tokens.shape)} ({device.type}, {dtype})",
                           s(tokens.to(device)), e(tokens.to(device)), torch.float32)
        too_long = torch.zeros(1, max_len + 1, dtype=torch.long)
        assert_raises(f"a sequence of {max_len + 1} tokens with max_len={max_len}", ValueError,
                      lambda: student.to("cpu", torch.float32)(too_long))
