"""Hidden tests for notebook 03."""
import torch

from autograder.hidden.compare import HiddenTestFailed, assert_equal, assert_matches, generator, grid
from autograder.reference import masking as ref
from course.device import available_devices


def _on(what: str, mask, device, shape) -> None:
    if not isinstance(mask, torch.Tensor) or mask.device.type != torch.device(device).type \
            or mask.dtype != torch.bool or tuple(mask.shape) != tuple(shape):
        got = (f"{tuple(mask.shape)} {mask.dtype} on {mask.device}" if isinstance(mask, torch.Tensor)
               else type(mask).__name__)
        raise HiddenTestFailed(f"{what}: expected a bool tensor of shape {tuple(shape)} on {device}, got {got}")


def test_causal_mask(causal_mask, trials: int = 10, seed: int = 301) -> None:
    g = generator(seed)
    sizes = [(1, None), (1, 1), (1, 6), (4, 1), (7, None)]
    sizes += [tuple(int(v) for v in torch.randint(1, 20, (2,), generator=g)) for _ in range(trials)]
    for T_q, T_k in sizes:
        args = (T_q,) if T_k is None else (T_q, T_k)
        assert_equal(f"causal_mask{args}", causal_mask(*args), ref.causal_mask(*args))
        for device in available_devices():
            assert_equal(f"causal_mask{args} on {device.type}", causal_mask(*args, device=device),
                         ref.causal_mask(*args, device=device))
        _on(f"causal_mask{args} on meta", causal_mask(*args, device="meta"), "meta",
            (T_q, T_q if T_k is None else T_k))
        _on(f"causal_mask{args} with device=torch.device('meta')", causal_mask(*args, device=torch.device("meta")),
            "meta", (T_q, T_q if T_k is None else T_k))


def test_padding_mask(padding_mask, trials: int = 8, seed: int = 302) -> None:
    g = generator(seed)
    for _ in range(trials):
        B, T = (int(v) for v in torch.randint(1, 12, (2,), generator=g))
        lengths = torch.randint(0, T + 1, (B,), generator=g)
        for device in available_devices():
            x = lengths.to(device)
            assert_equal(f"padding_mask for lengths {lengths.tolist()}, T={T} on {device.type}",
                         padding_mask(x, T), ref.padding_mask(x, T))
        _on(f"padding_mask for {B} lengths on meta, T={T}",
            padding_mask(torch.empty(B, dtype=torch.long, device="meta"), T), "meta", (B, 1, T))


def _random_mask(shape, g, empty_rows: bool) -> torch.Tensor:
    mask = torch.rand(shape, generator=g) < float(torch.empty(1).uniform_(0.3, 0.9, generator=g))
    if empty_rows and shape[-2] > 1:
        mask[..., 0, :] = False
    return mask


def test_masked_attention(masked_attention, trials: int = 10, seed: int = 303) -> None:
    g = generator(seed)
    cases = []
    for trial in range(trials):
        batch = tuple(torch.randint(1, 4, (int(torch.randint(0, 3, (1,), generator=g)),), generator=g).tolist())
        T_q, T_k, d_k, d_v = (int(v) for v in torch.randint(1, 11, (4,), generator=g))
        kind = trial % 5
        if kind == 0:
            mask = None
        elif kind == 1:
            mask = ref.causal_mask(T_q, T_k)  # shared by the batch; empty rows when T_k < T_q
        elif kind == 2:
            mask = _random_mask(batch + (T_q, T_k), g, empty_rows=True)
        elif kind == 3:
            mask = _random_mask(batch[:1] + (1,) * max(len(batch) - 1, 0) + (1, T_k), g, empty_rows=False)
        else:
            mask = _random_mask((T_q, T_k), g, empty_rows=True)
        cases.append((batch, T_q, T_k, d_k, d_v, mask))
    for batch, T_q, T_k, d_k, d_v, mask in cases:
        spread = float(torch.empty(1).uniform_(0.5, 3.0, generator=g))
        Q = spread * torch.randn(*batch, T_q, d_k, generator=g, dtype=torch.float64)
        K = spread * torch.randn(*batch, T_k, d_k, generator=g, dtype=torch.float64)
        V = torch.randn(*batch, T_k, d_v, generator=g, dtype=torch.float64)
        what = (f"Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}, "
                f"mask {None if mask is None else tuple(mask.shape)}")
        for device, dtype in grid():
            q, k, v = (t.to(device, dtype) for t in (Q, K, V))
            m = None if mask is None else mask.to(device)
            copies = [t.clone() for t in (q, k, v)]
            given = None if m is None else m.clone()
            result = masked_attention(q, k, v, given)
            if not (isinstance(result, tuple) and len(result) == 2):
                raise HiddenTestFailed(f"{what}: expected a tuple (output, weights)")
            output, weights = result
            expected_output, expected_weights = ref.masked_attention(*copies, m)
            assert_matches(f"weights for {what} ({device.type}, {dtype})", weights, expected_weights, dtype)
            assert_matches(f"output for {what} ({device.type}, {dtype})", output, expected_output, dtype)
            if not all(torch.equal(a, b) for a, b in zip(copies, (q, k, v))) or \
                    (m is not None and not torch.equal(given, m)):
                raise HiddenTestFailed(f"{what}: the inputs were changed in place")
