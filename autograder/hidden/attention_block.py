"""Hidden tests for notebook 04. Fresh sizes, weights and masks; the student's module and the reference
hold the same weights (loaded by name, strictly) and are compared on every device and dtype."""
import torch
from torch import nn

from autograder.hidden.compare import HiddenTestFailed, assert_matches, assert_raises, generator, grid
from autograder.reference import attention_block as ref


def _random_state(module: nn.Module, g: torch.Generator, spread: float = 1.0) -> dict:
    state = {}
    for key, value in module.state_dict().items():
        fresh = torch.randn(value.shape, generator=g, dtype=torch.float64)
        if key.endswith("weight") and value.dim() == 1:  # a layer norm's scale: around 1
            state[key] = 1 + 0.5 * fresh
        else:
            state[key] = spread * fresh / max(value.shape[-1], 1) ** 0.5
    return state


def _load(module: nn.Module, state: dict, what: str) -> None:
    try:
        result = module.load_state_dict(state, strict=False)
    except RuntimeError as exc:
        raise HiddenTestFailed(f"{what}: the weights do not fit ({str(exc).splitlines()[-1].strip()})") from None
    if result.missing_keys or result.unexpected_keys:
        raise HiddenTestFailed(f"{what}: load_state_dict(strict=True) fails; missing {result.missing_keys}, "
                               f"unexpected {result.unexpected_keys}")


def _pair(student_cls, reference_cls, init: dict, g: torch.Generator, spread: float = 1.0):
    """The student's module and the reference's, both holding the same fresh random weights."""
    expected = reference_cls(**init)
    state = _random_state(expected, g, spread)
    expected.load_state_dict(state)
    student = student_cls(**init)
    what = f"{student_cls.__name__}({', '.join(f'{k}={v}' for k, v in init.items())})"
    _load(student, state, what)
    return student, expected, what


def _mask(shape, g, keep_first: bool = True) -> torch.Tensor:
    mask = torch.rand(shape, generator=g) < float(torch.empty(1).uniform_(0.3, 0.9, generator=g))
    if keep_first:
        mask[..., 0] = True
    return mask


def _sizes(g, low, high, n):
    return [int(v) for v in torch.randint(low, high, (n,), generator=g)]


def test_multi_head_attention(MultiHeadAttention, trials: int = 8, seed: int = 401) -> None:
    g = generator(seed)
    assert_raises("MultiHeadAttention(12, 5)", ValueError, lambda: MultiHeadAttention(12, 5))
    assert_raises("MultiHeadAttention(6, 4)", ValueError, lambda: MultiHeadAttention(6, 4))
    for trial in range(trials):
        n_heads, d_head, B, T_q, T_k = _sizes(g, 1, 6, 5)
        d_model = n_heads * d_head
        cross = trial % 2 == 1
        if not cross:
            T_k = T_q
        kind = trial % 4 if trial < 4 else int(torch.randint(0, 5, (1,), generator=g))
        mask = [None,
                torch.ones(T_q, T_k, dtype=torch.bool).tril(T_k - T_q) | (torch.arange(T_k) == 0),
                _mask((B, T_q, T_k), g),
                _mask((B, n_heads, T_q, T_k), g),
                _mask((B, 1, T_k), g)][kind]
        student, expected, what = _pair(MultiHeadAttention, ref.MultiHeadAttention,
                                        {"d_model": d_model, "n_heads": n_heads}, g, spread=2.0)
        x_q = torch.randn(B, T_q, d_model, generator=g, dtype=torch.float64)
        x_kv = torch.randn(B, T_k, d_model, generator=g, dtype=torch.float64) if cross else None
        what += (f" on x_q {tuple(x_q.shape)}, " + (f"x_kv {tuple(x_kv.shape)}" if cross else "x_kv None")
                 + f", mask {None if mask is None else tuple(mask.shape)}")
        for device, dtype in grid():
            s, e = student.to(device, dtype), expected.to(device, dtype)
            q = x_q.to(device, dtype)
            kv = None if x_kv is None else x_kv.to(device, dtype)
            m = None if mask is None else mask.to(device)
            result = s(q, kv, None if m is None else m.clone())
            if not (isinstance(result, tuple) and len(result) == 2):
                raise HiddenTestFailed(f"{what}: expected a tuple (output, weights)")
            with torch.no_grad():
                expected_output, expected_weights = e(q, kv, m)
            assert_matches(f"weights for {what} ({device.type}, {dtype})", result[1], expected_weights, dtype)
            assert_matches(f"output for {what} ({device.type}, {dtype})", result[0], expected_output, dtype)


def test_layer_norm(LayerNorm, trials: int = 8, seed: int = 402) -> None:
    g = generator(seed)
    for trial in range(trials):
        d_model = _sizes(g, 1, 40, 1)[0]
        batch = tuple(_sizes(g, 1, 5, int(torch.randint(0, 4, (1,), generator=g))))
        init = {"d_model": d_model} if trial % 2 == 0 else \
            {"d_model": d_model, "eps": float(10 ** torch.empty(1).uniform_(-6, 0, generator=g))}
        student, expected, what = _pair(LayerNorm, ref.LayerNorm, init, g)
        spread = float(10 ** torch.empty(1).uniform_(-2, 1, generator=g))
        x = spread * torch.randn(*batch, d_model, generator=g, dtype=torch.float64) + float(torch.randn(1, generator=g))
        if trial == 0:
            x[..., :] = 2.5  # constant vectors: variance 0
        _compare_everywhere(student, expected, x, what)


def _compare_everywhere(student: nn.Module, expected: nn.Module, x: torch.Tensor, what: str) -> None:
    """The student's module and the reference, same weights, on `x` on every device and dtype."""
    for device, dtype in grid():
        s, e = student.to(device, dtype), expected.to(device, dtype)
        xs = x.to(device, dtype)
        with torch.no_grad():
            wanted = e(xs)
        assert_matches(f"{what} on an input of shape {tuple(x.shape)} ({device.type}, {dtype})", s(xs.clone()),
                       wanted, dtype)


def test_feed_forward(FeedForward, trials: int = 6, seed: int = 403) -> None:
    g = generator(seed)
    for _ in range(trials):
        d_model, d_ff = _sizes(g, 1, 33, 2)
        batch = tuple(_sizes(g, 1, 5, int(torch.randint(0, 3, (1,), generator=g))))
        student, expected, what = _pair(FeedForward, ref.FeedForward, {"d_model": d_model, "d_ff": d_ff}, g, 2.0)
        x = torch.randn(*batch, d_model, generator=g, dtype=torch.float64)
        _compare_everywhere(student, expected, x, what)


def _with_reference_parts(block: nn.Module, init: dict) -> nn.Module:
    """The student's block with the reference attention, feed-forward and norms inside: this test grades
    how the block joins them, so a mistake in those parts costs points in their own tests only."""
    d_model, n_heads, d_ff = init["d_model"], init["n_heads"], init["d_ff"]
    block.attn = ref.MultiHeadAttention(d_model, n_heads)
    block.ff = ref.FeedForward(d_model, d_ff)
    block.norm1 = ref.LayerNorm(d_model)
    block.norm2 = ref.LayerNorm(d_model)
    return block


def test_transformer_block(TransformerBlock, trials: int = 8, seed: int = 404) -> None:
    g = generator(seed)
    default = TransformerBlock(8, 2, 16)
    explicit = TransformerBlock(8, 2, 16, norm_first=False)
    _load(explicit, default.state_dict(), "TransformerBlock(8, 2, 16, norm_first=False)")
    x = torch.randn(2, 5, 8, generator=g)
    with torch.no_grad():
        by_default, post_norm = default(x), explicit(x)
    if not isinstance(post_norm, torch.Tensor):
        raise HiddenTestFailed("TransformerBlock.forward should return one tensor")
    assert_matches("TransformerBlock(8, 2, 16) against the same with norm_first=False", by_default, post_norm,
                   torch.float32)
    for trial in range(trials):
        n_heads, d_head, B, T = _sizes(g, 1, 5, 4)
        d_ff = _sizes(g, 1, 33, 1)[0]
        init = {"d_model": n_heads * d_head, "n_heads": n_heads, "d_ff": d_ff, "norm_first": trial % 2 == 1}
        reference = ref.TransformerBlock(**init)
        state = _random_state(reference, g, spread=2.0)
        reference.load_state_dict(state)
        student = TransformerBlock(**init)
        what = f"TransformerBlock({', '.join(f'{k}={v}' for k, v in init.items())})"
        _load(student, state, what)  # the student's own parts take the same weights by name
        student = _with_reference_parts(student, init)
        _load(student, state, what)
        kind = (trial // 2) % 3
        mask = [None, torch.ones(T, T, dtype=torch.bool).tril(), _mask((B, 1, T), g)][kind]
        x = 2 * torch.randn(B, T, init["d_model"], generator=g, dtype=torch.float64)
        what += f" on x {tuple(x.shape)}, mask {None if mask is None else tuple(mask.shape)}"
        for device, dtype in grid():
            s, e = student.to(device, dtype), reference.to(device, dtype)
            xs = x.to(device, dtype)
            m = None if mask is None else mask.to(device)
            with torch.no_grad():
                wanted = e(xs, m)
            assert_matches(f"{what} ({device.type}, {dtype})", s(xs.clone(), None if m is None else m.clone()),
                           wanted, dtype)
