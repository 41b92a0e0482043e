"""Visible checks for notebook 02: `attention`."""
from __future__ import annotations

import torch

from course.checks.compare import expect_tensor, expect_values, with_reason
from course.checks.report import CheckFailed, assert_written, fail, run_steps
from course.device import available_devices, supported_dtypes
from course.fixtures import load


def _shapes(*tensors: torch.Tensor) -> str:
    return ", ".join(f"{name} {tuple(t.shape)}" for name, t in zip("QKV", tensors))


def call_attention(attention, Q, K, V, name: str = "attention"):
    """`attention(Q, K, V)`, failing clearly unless it returns a pair of tensors."""
    result = attention(Q, K, V)
    if not (isinstance(result, tuple) and len(result) == 2):
        fail(f"`{name}` should return a tuple `(output, weights)`, but it returned a {type(result).__name__}"
             + (f" of length {len(result)}." if isinstance(result, (tuple, list)) else "."))
    output, weights = result
    expect_tensor("The output", output)
    expect_tensor("The weights", weights)
    return output, weights


def expect_stored_result(output, weights, case: dict, device: torch.device, dtype: torch.dtype) -> None:
    """`output` and `weights` equal a fixture case's, on `device` in `dtype`; known mistakes are named, by their
    values or by a wrong shape their stored output shares."""
    for what, actual, key, mistakes in (("The weights tensor", weights, "weights", "weight_mistakes"),
                                        ("The output", output, "output", "output_mistakes")):
        if isinstance(actual, torch.Tensor) and tuple(actual.shape) != tuple(case[key].shape):
            expect_values(what, actual, case[key], dtype, case[mistakes])  # fails on the shape, naming a mistake
        expect_tensor(what, actual, shape=case[key].shape, dtype=dtype, device=device)
        expect_values(what, actual, case[key], dtype, case[mistakes])


def _random(*shape, generator, dtype=torch.float64):
    return torch.randn(*shape, generator=generator, dtype=dtype)


def expect_finite_for_large_scores(run) -> None:
    """`run(Q, K, V) -> (output, weights)` stays finite, and each query's weights sum to 1, when the scores are in
    the thousands in float32. Q is (2, 4, 16), K (2, 6, 16), V (2, 6, 3); every query may read a key."""
    g = torch.Generator().manual_seed(5)
    Q, K = 40 * torch.randn(2, 4, 16, generator=g), 40 * torch.randn(2, 6, 16, generator=g)
    V = torch.randn(2, 6, 3, generator=g)
    output, weights = run(Q, K, V)
    if not (torch.isfinite(output).all() and torch.isfinite(weights).all()):
        fail("With large scores (in the thousands) in float32 the result contains inf or NaN. exp() of a "
             "large number overflows; softmax(s) equals softmax(s - max(s)), which cannot overflow "
             "(torch.softmax does this for you).")
    if not torch.allclose(weights.detach().double().sum(-1), torch.ones(2, 4, dtype=torch.float64), atol=1e-5):
        fail("With large scores the weights of a query no longer sum to 1.")


def check_attention(attention) -> None:
    """Stored values on every device and dtype (naming known mistakes), then the properties of attention."""
    fixture = load("attention")["attention"]

    def values_on(device: torch.device, dtype: torch.dtype):
        def step():
            for c in fixture["cases"]:
                Q, K, V = (c[n].to(device, dtype, copy=True) for n in "QKV")  # copies: the fixture is shared
                try:
                    output, weights = call_attention(attention, Q, K, V)
                    expect_stored_result(output, weights, c, device, dtype)
                except CheckFailed as exc:
                    fail(with_reason(f"with {_shapes(Q, K, V)}: {exc.args[0]}", property_steps))
        return step

    def rows_sum_to_one():
        g = torch.Generator().manual_seed(2)
        Q, K, V = _random(3, 4, 6, generator=g), _random(3, 7, 6, generator=g), _random(3, 7, 2, generator=g)
        _, weights = call_attention(attention, Q, K, V)
        expect_tensor("The weights", weights, shape=(3, 4, 7))
        w = weights.detach().double()
        if (w < 0).any():
            fail("Some weights are negative; a softmax gives weights between 0 and 1.")
        by_key, by_query = w.sum(-1), w.sum(-2)
        if not torch.allclose(by_key, torch.ones_like(by_key), atol=1e-6):
            hint = ""
            if torch.allclose(by_query, torch.ones_like(by_query), atol=1e-6):
                hint = (" They sum to 1 over the queries instead: the softmax should run over the keys, "
                        "the last axis (dim=-1).")
            fail(f"Each query's weights should sum to 1 over the keys, but row sums range from "
                 f"{by_key.min().item():.4g} to {by_key.max().item():.4g}.{hint}")

    def permutation():
        g = torch.Generator().manual_seed(3)
        Q, K, V = _random(2, 5, 4, generator=g), _random(2, 6, 4, generator=g), _random(2, 6, 3, generator=g)
        order = torch.randperm(6, generator=g)
        output, weights = call_attention(attention, Q, K, V)
        output2, weights2 = call_attention(attention, Q, K[:, order], V[:, order])
        if not torch.allclose(output2.detach().double(), output.detach().double(), atol=1e-9):
            fail("Shuffling the keys, each together with its value, changed the output. Attention is a "
                 "weighted average over key-value pairs: their order must not matter.")
        if not torch.allclose(weights2.detach().double(), weights.detach().double()[..., order], atol=1e-9):
            fail("Shuffling the keys should shuffle the columns of the weights in the same way, and it did not.")

    def shapes():
        g = torch.Generator().manual_seed(4)
        Q, K, V = _random(4, 6, generator=g), _random(7, 6, generator=g), _random(7, 2, generator=g)
        output, weights = call_attention(attention, Q, K, V)
        expect_tensor("Without a batch dimension, the output", output, shape=(4, 2))
        expect_tensor("Without a batch dimension, the weights", weights, shape=(4, 7))
        Qb, Kb, Vb = _random(2, 3, 4, 6, generator=g), _random(2, 3, 7, 6, generator=g), _random(2, 3, 7, 5, generator=g)
        output, weights = call_attention(attention, Qb, Kb, Vb)
        expect_tensor("With batch dimensions (2, 3), the output", output, shape=(2, 3, 4, 5))
        expect_tensor("With batch dimensions (2, 3), the weights", weights, shape=(2, 3, 4, 7))
        one_output, one_weights = call_attention(attention, Qb[1, 2], Kb[1, 2], Vb[1, 2])
        if not (torch.allclose(output[1, 2].detach(), one_output.detach(), atol=1e-9)
                and torch.allclose(weights[1, 2].detach(), one_weights.detach(), atol=1e-9)):
            fail("Batch element [1, 2] gives a different result inside the batch than on its own: each batch "
                 "element must be attended separately (use the last two axes, e.g. K.transpose(-2, -1), not K.T).")

    def inputs_unchanged():
        g = torch.Generator().manual_seed(6)
        Q, K, V = _random(2, 3, 4, generator=g), _random(2, 5, 4, generator=g), _random(2, 5, 3, generator=g)
        copies = [t.clone() for t in (Q, K, V)]
        call_attention(attention, Q, K, V)
        for name, before, after in zip("QKV", copies, (Q, K, V)):
            if not torch.equal(before, after):
                fail(f"`attention` changed its input {name} in place (an operation such as `/=` or `.div_`). "
                     "Compute new tensors instead: the caller still needs its inputs.")

    def gradients():
        g = torch.Generator().manual_seed(7)
        Q, K, V = (_random(2, 3, 4, generator=g).requires_grad_(), _random(2, 5, 4, generator=g).requires_grad_(),
                   _random(2, 5, 3, generator=g).requires_grad_())
        output, _ = call_attention(attention, Q, K, V)
        if not output.requires_grad:
            fail("The output is not connected to Q, K and V for backpropagation: stay with torch operations "
                 "(no .item(), .numpy(), .detach() or torch.no_grad()).")
        (output * torch.randn(output.shape, generator=g, dtype=output.dtype)).sum().backward()
        for name, t in zip("QKV", (Q, K, V)):
            if t.grad is None or not torch.isfinite(t.grad).all() or not t.grad.abs().sum() > 0:
                fail(f"No useful gradient reaches {name}: every weight and value should depend smoothly on it.")

    property_steps = [("each query's weights are positive and sum to 1 over the keys", rows_sum_to_one),
                      ("shuffling keys together with their values changes nothing", permutation),
                      ("works without a batch dimension and with several", shapes),
                      ("stays finite for large scores", lambda: expect_finite_for_large_scores(
                          lambda Q, K, V: call_attention(attention, Q, K, V))),
                      ("leaves Q, K and V unchanged", inputs_unchanged),
                      ("lets gradients flow back to Q, K and V", gradients)]
    steps = [(f"matches the stored values on {d.type} in {str(t).removeprefix('torch.')}", values_on(d, t))
             for d in available_devices() for t in supported_dtypes(d)]
    run_steps("attention", steps + property_steps)


def written_attention(attention) -> None:
    assert_written("attention", lambda: attention(torch.zeros(1, 2), torch.zeros(1, 2), torch.zeros(1, 2)))
