"""Hidden tests for notebook 02: fresh shapes with zero to four batch axes (T_q above, below and equal to T_k, sizes of
1), every device and dtype, large scores, and the gradients."""
import torch

from autograder.authoring.hidden.observe import HiddenTestFailed, Observations, generator, grid, hidden_test


def _pair(result, what: str):
    if not (isinstance(result, tuple) and len(result) == 2):
        raise HiddenTestFailed(f"{what}: expected a tuple (output, weights)")
    return result


def observe_attention(attention, trials: int = 8, seed: int = 201) -> Observations:
    seen = Observations()
    g = generator(seed)
    sizes = [((), 1, 1, 1, 1), ((1,), 3, 3, 2, 2), ((), 5, 2, 3, 4), ((2,), 1, 6, 3, 2), ((2,), 6, 1, 3, 2),
             ((2, 1, 3, 1), 4, 3, 5, 2)]
    for _ in range(trials):
        batch = tuple(torch.randint(1, 4, (int(torch.randint(0, 4, (1,), generator=g)),), generator=g).tolist())
        T_q, T_k, d_k, d_v = (int(v) for v in torch.randint(1, 13, (4,), generator=g))
        sizes.append((batch, T_q, T_k, d_k, d_v))
    for batch, T_q, T_k, d_k, d_v in dict.fromkeys(sizes):  # a repeated shape would repeat a name
        spread = float(torch.empty(1).uniform_(0.5, 4.0, generator=g))
        Q = spread * torch.randn(*batch, T_q, d_k, generator=g, dtype=torch.float64)
        K = spread * torch.randn(*batch, T_k, d_k, generator=g, dtype=torch.float64)
        V = torch.randn(*batch, T_k, d_v, generator=g, dtype=torch.float64)
        what = f"Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}"
        for device, dtype in grid():
            q, k, v = (t.to(device, dtype, copy=True) for t in (Q, K, V))  # copies: a change in place stays here
            case = f"{what} ({device.type}, {dtype})"
            output, weights = _pair(attention(q, k, v), case)
            seen.close(f"weights for {case}", weights, dtype)
            seen.close(f"output for {case}", output, dtype)
            for name, tensor in zip("QKV", (q, k, v)):
                seen.exact(f"{case}: input {name} after the call (it must not be changed in place)", tensor)
    # Large scores in float32 (in the hundreds): a softmax that overflows gives inf or NaN. Not larger: float32
    # rounding of scores in the thousands would move correct weights by more than the tolerance.
    Q = 8 * torch.randn(3, 9, 32, generator=g, dtype=torch.float32)
    K = 8 * torch.randn(3, 11, 32, generator=g, dtype=torch.float32)
    V = torch.randn(3, 11, 4, generator=g, dtype=torch.float32)
    case = (f"large scores (Q and K times 8): Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)} "
            f"(cpu, torch.float32)")
    output, weights = _pair(attention(Q, K, V), case)
    seen.close(f"weights for {case}", weights, torch.float32)
    seen.close(f"output for {case}", output, torch.float32)
    # Gradients: every weight and value depends smoothly on Q, K and V.
    Q, K, V = (torch.randn(2, T, d, generator=g, dtype=torch.float64).requires_grad_() for T, d in ((4, 3), (5, 3), (5, 2)))
    upstream = torch.randn(2, 4, 2, generator=g, dtype=torch.float64)
    case = f"gradients for Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}"
    output, _ = _pair(attention(Q, K, V), case)
    (output * upstream).sum().backward()
    for name, tensor in zip("QKV", (Q, K, V)):
        seen.close(f"{case}: the gradient reaching {name}", tensor.grad, torch.float64)
    return seen


test_attention = hidden_test(observe_attention)
