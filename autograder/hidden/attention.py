"""Hidden tests for notebook 02."""
import torch

from autograder.hidden.compare import HiddenTestFailed, assert_matches, generator, grid
from autograder.reference import attention as ref


def _pair(result, what):
    if not (isinstance(result, tuple) and len(result) == 2):
        raise HiddenTestFailed(f"{what}: expected a tuple (output, weights)")
    return result


def test_attention(attention, trials: int = 8, seed: int = 201) -> None:
    g = generator(seed)
    sizes = [((), 1, 1, 1, 1), ((1,), 3, 3, 2, 2)]
    for _ in range(trials):
        batch = tuple(torch.randint(1, 4, (int(torch.randint(0, 4, (1,), generator=g)),), generator=g).tolist())
        T_q, T_k, d_k, d_v = (int(v) for v in torch.randint(1, 13, (4,), generator=g))
        sizes.append((batch, T_q, T_k, d_k, d_v))
    for batch, T_q, T_k, d_k, d_v in sizes:
        spread = float(torch.empty(1).uniform_(0.5, 4.0, generator=g))
        Q = spread * torch.randn(*batch, T_q, d_k, generator=g, dtype=torch.float64)
        K = spread * torch.randn(*batch, T_k, d_k, generator=g, dtype=torch.float64)
        V = torch.randn(*batch, T_k, d_v, generator=g, dtype=torch.float64)
        what = f"Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}"
        for device, dtype in grid():
            q, k, v = (t.to(device, dtype) for t in (Q, K, V))
            copies = [t.clone() for t in (q, k, v)]
            output, weights = _pair(attention(q, k, v), what)
            expected_output, expected_weights = ref.attention(*copies)
            assert_matches(f"weights for {what} ({device.type}, {dtype})", weights, expected_weights, dtype)
            assert_matches(f"output for {what} ({device.type}, {dtype})", output, expected_output, dtype)
            if not all(torch.equal(a, b) for a, b in zip(copies, (q, k, v))):
                raise HiddenTestFailed(f"{what}: the inputs were changed in place")
    # Large scores in float32: a softmax that overflows gives inf or NaN.
    Q, K, V = 50 * torch.randn(3, 9, 32, generator=g), 50 * torch.randn(3, 11, 32, generator=g), torch.randn(3, 11, 4, generator=g)
    output, weights = _pair(attention(Q, K, V), "large scores")
    expected_output, expected_weights = ref.attention(Q, K, V)
    assert_matches("weights for large scores", weights, expected_weights, torch.float32)
    assert_matches("output for large scores", output, expected_output, torch.float32)
