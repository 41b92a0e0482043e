"""Hidden tests for notebook 03: fresh sizes on every device here (T_q above, below and equal to T_k, sizes of
1, lengths of 0 and of T); masked attention with no mask, causal, random, padding and broadcast masks, fully masked
rows, many batch axes and large scores, on every device and dtype. Only real tensors: a function may read sizes and
lengths on the host."""
import torch

from autograder.authoring.hidden.observe import HiddenTestFailed, Observations, generator, grid, hidden_test
from course.device import available_devices


def observe_causal_mask(causal_mask, trials: int = 10, seed: int = 301) -> Observations:
    seen = Observations()
    g = generator(seed)
    sizes = [(1, None), (1, 1), (1, 6), (6, 1), (4, 1), (7, None), (3, 8), (8, 3), (5, 5)]
    sizes += [tuple(int(v) for v in torch.randint(1, 20, (2,), generator=g)) for _ in range(trials)]
    for T_q, T_k in dict.fromkeys(sizes):  # a repeated size would repeat a name
        args = (T_q,) if T_k is None else (T_q, T_k)
        call = "causal_mask(" + ", ".join(str(a) for a in args)
        seen.exact(f"{call})", causal_mask(*args))
        for device in available_devices():
            seen.exact(f"{call}, device=torch.device({device.type!r}))", causal_mask(*args, device=device))
            seen.exact(f"{call}, device={device.type!r})", causal_mask(*args, device=device.type))
    return seen


def observe_padding_mask(padding_mask, trials: int = 8, seed: int = 302) -> Observations:
    seen = Observations()
    g = generator(seed)
    cases = [((0,), 1), ((1,), 1), ((0,), 4), ((4,), 4), ((0, 5, 2, 5), 5), ((3, 0, 0), 6)]
    for _ in range(trials):
        B, T = (int(v) for v in torch.randint(1, 12, (2,), generator=g))
        cases.append((tuple(torch.randint(0, T + 1, (B,), generator=g).tolist()), T))
    for lengths, T in dict.fromkeys(cases):  # a repeated case would repeat a name
        for device in available_devices():
            given = torch.tensor(lengths, dtype=torch.long, device=device)
            what = f"padding_mask(lengths {list(lengths)} on {device.type}, T={T})"
            seen.exact(what, padding_mask(given, T))
            seen.exact(f"{what}: lengths after the call (it must not be changed in place)", given)
    return seen


def _random_mask(shape, g, empty_rows: bool) -> torch.Tensor:
    mask = torch.rand(shape, generator=g) < float(torch.empty(1).uniform_(0.3, 0.9, generator=g))
    if empty_rows and shape[-2] > 1:
        mask[..., 0, :] = False
    return mask


def _causal(T_q: int, T_k: int) -> torch.Tensor:
    """A causal mask as an input (built here, not by the student's causal_mask); empty rows when T_k < T_q."""
    return torch.ones(T_q, T_k, dtype=torch.bool).tril(T_k - T_q)


def _padding(lengths: list[int], T: int, batch_axes: int = 1) -> torch.Tensor:
    """A padding mask of shape (B, 1, ..., 1, T) as an input, with one axis of size 1 for every further batch axis
    and for the queries."""
    real = torch.arange(T) < torch.tensor(lengths)[:, None]
    return real.reshape(len(lengths), *(1,) * batch_axes, T)


def _masked_attention_cases(g: torch.Generator, trials: int) -> list[tuple]:
    """(batch, T_q, T_k, d_k, d_v, mask, what the mask is, spread of Q and K): fixed edge cases, then random ones."""
    cases = [((2,), 6, 3, 4, 2, _causal(6, 3), "causal mask (6, 3): its first 3 queries may read nothing", 1.5),
             ((2,), 2, 7, 3, 3, _causal(2, 7), "causal mask (2, 7) of the last 2 queries", 1.5),
             ((), 1, 1, 2, 1, torch.ones(1, 1, dtype=torch.bool), "mask (1, 1)", 1.0),
             ((3,), 4, 1, 2, 3, torch.tensor([True, False, True]).reshape(3, 1, 1), "mask (3, 1, 1), one row empty", 1.0),
             ((3,), 4, 4, 5, 2, _padding([4, 0, 2], 4), "padding mask (3, 1, 4), lengths [4, 0, 2]", 1.5),
             ((2, 1, 3, 2), 3, 5, 4, 2, _padding([0, 4], 5, batch_axes=4), "padding mask (2, 1, 1, 1, 1, 5), lengths "
              "[0, 4], on four batch axes", 1.5),
             # Scores in the hundreds overflow exp() in float32, and float32 rounding still stays within tolerance.
             ((2,), 5, 7, 16, 3, _causal(5, 7), "causal mask (5, 7), large scores (Q and K times 8)", 8.0),
             ((2,), 4, 6, 16, 3, None, "no mask, large scores (Q and K times 8)", 8.0),
             # A masked key whose score is far above the others': a large finite fill (-100) lets it through.
             ((2,), 6, 6, 16, 3, _random_mask((2, 6, 6), generator(3031), empty_rows=False),
              "random mask (2, 6, 6), large scores (Q and K times 8)", 8.0)]
    for trial in range(trials):
        batch = tuple(torch.randint(1, 4, (int(torch.randint(0, 3, (1,), generator=g)),), generator=g).tolist())
        T_q, T_k, d_k, d_v = (int(v) for v in torch.randint(1, 11, (4,), generator=g))
        kind = trial % 5
        if kind == 0:
            mask = None
        elif kind == 1:  # shared by the batch
            mask = _causal(T_q, T_k)
        elif kind == 2:
            mask = _random_mask(batch + (T_q, T_k), g, empty_rows=True)
        elif kind == 3:
            mask = _random_mask(batch[:1] + (1,) * max(len(batch) - 1, 0) + (1, T_k), g, empty_rows=False)
        else:
            mask = _random_mask((T_q, T_k), g, empty_rows=True)
        if mask is None:
            about = "no mask"
        else:
            about = f"{'causal mask' if kind == 1 else 'mask'} {tuple(mask.shape)}"
            about += "" if mask.any(-1).all() else " with fully masked rows"
        cases.append((batch, T_q, T_k, d_k, d_v, mask, about, float(torch.empty(1).uniform_(0.5, 3.0, generator=g))))
    return cases


def _pair(result, case: str):
    if not (isinstance(result, tuple) and len(result) == 2):
        raise HiddenTestFailed(f"{case}: expected a tuple (output, weights)")
    return result


def observe_masked_attention(masked_attention, trials: int = 10, seed: int = 303) -> Observations:
    seen = Observations()
    g = generator(seed)
    for batch, T_q, T_k, d_k, d_v, mask, about, spread in _masked_attention_cases(g, trials):
        Q = spread * torch.randn(*batch, T_q, d_k, generator=g, dtype=torch.float64)
        K = spread * torch.randn(*batch, T_k, d_k, generator=g, dtype=torch.float64)
        V = torch.randn(*batch, T_k, d_v, generator=g, dtype=torch.float64)
        what = f"Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}, {about}"
        for device, dtype in grid():
            q, k, v = (t.to(device, dtype, copy=True) for t in (Q, K, V))  # copies: a change in place stays here
            m = None if mask is None else mask.to(device, copy=True)
            case = f"{what} ({device.type}, {dtype})"
            output, weights = _pair(masked_attention(q, k, v, m), case)
            seen.close(f"weights for {case}", weights, dtype)
            seen.close(f"output for {case}", output, dtype)
            for name, tensor in zip(("Q", "K", "V", "mask"), (q, k, v, m)):
                if tensor is not None:
                    seen.exact(f"{case}: input {name} after the call (it must not be changed in place)", tensor)
    # Gradients through fully masked rows: finite, and equal to the reference's.
    mask = _causal(5, 3)
    Q, K, V = (torch.randn(2, T, 4, generator=g, dtype=torch.float64).requires_grad_() for T in (5, 3, 3))
    upstream = torch.randn(2, 5, 4, generator=g, dtype=torch.float64)
    case = f"gradients for Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}, causal mask (5, 3)"
    output, _ = _pair(masked_attention(Q, K, V, mask), case)
    (output * upstream).sum().backward()
    for name, tensor in zip("QKV", (Q, K, V)):
        seen.close(f"{case}: the gradient reaching {name}", tensor.grad, torch.float64)
    return seen


test_causal_mask = hidden_test(observe_causal_mask)
test_padding_mask = hidden_test(observe_padding_mask)
test_masked_attention = hidden_test(observe_masked_attention)
