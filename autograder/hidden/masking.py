"""Hidden tests for notebook 03: fresh sizes on every device and on the meta device (where a mask has only a
device, a dtype and a shape); masked attention with no mask, causal, random and broadcast masks and fully
masked rows, on every device and dtype."""
import torch

from autograder.hidden.observe import HiddenTestFailed, Observations, generator, grid, hidden_test
from course.device import available_devices


def _placement(seen: Observations, what: str, mask) -> None:
    """Record the device, dtype and shape of `mask`, made on the meta device: it has no values to compare."""
    if not isinstance(mask, torch.Tensor):
        raise HiddenTestFailed(f"{what}: expected a tensor, got {type(mask).__name__}")
    seen.exact(f"{what}: device", mask.device.type, show=True)
    seen.exact(f"{what}: dtype", str(mask.dtype), show=True)
    seen.exact(f"{what}: shape", tuple(mask.shape), show=True)


def observe_causal_mask(causal_mask, trials: int = 10, seed: int = 301) -> Observations:
    seen = Observations()
    g = generator(seed)
    sizes = [(1, None), (1, 1), (1, 6), (4, 1), (7, None)]
    sizes += [tuple(int(v) for v in torch.randint(1, 20, (2,), generator=g)) for _ in range(trials)]
    for T_q, T_k in dict.fromkeys(sizes):  # a repeated size would repeat a name
        args = (T_q,) if T_k is None else (T_q, T_k)
        call = "causal_mask(" + ", ".join(str(a) for a in args)
        seen.exact(f"{call})", causal_mask(*args))
        for device in available_devices():
            seen.exact(f"{call}, device=torch.device({device.type!r}))", causal_mask(*args, device=device))
        _placement(seen, f"{call}, device='meta')", causal_mask(*args, device="meta"))
        _placement(seen, f"{call}, device=torch.device('meta'))", causal_mask(*args, device=torch.device("meta")))
    return seen


def observe_padding_mask(padding_mask, trials: int = 8, seed: int = 302) -> Observations:
    seen = Observations()
    g = generator(seed)
    cases = []
    for _ in range(trials):
        B, T = (int(v) for v in torch.randint(1, 12, (2,), generator=g))
        cases.append((tuple(torch.randint(0, T + 1, (B,), generator=g).tolist()), T))
    cases = list(dict.fromkeys(cases))  # a repeated case would repeat a name
    for lengths, T in cases:
        for device in available_devices():
            seen.exact(f"padding_mask(lengths {list(lengths)} on {device.type}, T={T})",
                       padding_mask(torch.tensor(lengths, dtype=torch.long, device=device), T))
    for B, T in dict.fromkeys((len(lengths), T) for lengths, T in cases):
        _placement(seen, f"padding_mask(lengths of shape ({B},) on meta, T={T})",
                   padding_mask(torch.empty(B, dtype=torch.long, device="meta"), T))
    return seen


def _random_mask(shape, g, empty_rows: bool) -> torch.Tensor:
    mask = torch.rand(shape, generator=g) < float(torch.empty(1).uniform_(0.3, 0.9, generator=g))
    if empty_rows and shape[-2] > 1:
        mask[..., 0, :] = False
    return mask


def observe_masked_attention(masked_attention, trials: int = 10, seed: int = 303) -> Observations:
    seen = Observations()
    g = generator(seed)
    cases = []
    for trial in range(trials):
        batch = tuple(torch.randint(1, 4, (int(torch.randint(0, 3, (1,), generator=g)),), generator=g).tolist())
        T_q, T_k, d_k, d_v = (int(v) for v in torch.randint(1, 11, (4,), generator=g))
        kind = trial % 5
        if kind == 0:
            mask = None
        elif kind == 1:  # causal, shared by the batch; empty rows when T_k < T_q (an input, built here)
            mask = torch.ones(T_q, T_k, dtype=torch.bool).tril(T_k - T_q)
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
        cases.append((batch, T_q, T_k, d_k, d_v, mask, about))
    for batch, T_q, T_k, d_k, d_v, mask, about in cases:
        spread = float(torch.empty(1).uniform_(0.5, 3.0, generator=g))
        Q = spread * torch.randn(*batch, T_q, d_k, generator=g, dtype=torch.float64)
        K = spread * torch.randn(*batch, T_k, d_k, generator=g, dtype=torch.float64)
        V = torch.randn(*batch, T_k, d_v, generator=g, dtype=torch.float64)
        what = f"Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}, {about}"
        for device, dtype in grid():
            q, k, v = (t.to(device, dtype, copy=True) for t in (Q, K, V))  # copies: a change in place stays here
            m = None if mask is None else mask.to(device, copy=True)
            case = f"{what} ({device.type}, {dtype})"
            result = masked_attention(q, k, v, m)
            if not (isinstance(result, tuple) and len(result) == 2):
                raise HiddenTestFailed(f"{case}: expected a tuple (output, weights)")
            output, weights = result
            seen.close(f"weights for {case}", weights, dtype)
            seen.close(f"output for {case}", output, dtype)
            for name, tensor in zip(("Q", "K", "V", "mask"), (q, k, v, m)):
                if tensor is not None:
                    seen.exact(f"{case}: input {name} after the call (it must not be changed in place)", tensor)
    return seen


test_causal_mask = hidden_test(observe_causal_mask)
test_padding_mask = hidden_test(observe_padding_mask)
test_masked_attention = hidden_test(observe_masked_attention)
