"""Visible checks for notebook 03: `causal_mask`, `padding_mask` and `masked_attention`."""
from __future__ import annotations

import math

import torch

from course.checks.attention import call_attention, expect_finite_for_large_scores, expect_stored_result
from course.checks.compare import expect_tensor, expect_values, is_close, known_mistake, with_reason
from course.checks.report import CheckFailed, assert_written, fail, run_steps
from course.device import available_devices, supported_dtypes
from course.fixtures import load


def expect_mask(what: str, actual, expected: torch.Tensor, mistakes: dict, meaning) -> None:
    """Fail unless `actual` is the bool mask `expected`; say what the first wrong entry means and name a
    known mistake (shape mistakes included) when the output matches one. `meaning(index, allowed)`
    describes an entry in words."""
    expect_tensor(what, actual)
    named = known_mistake(actual, mistakes, torch.float64)
    if tuple(actual.shape) != tuple(expected.shape):
        message = f"{what} should have shape {tuple(expected.shape)}, but it has shape {tuple(actual.shape)}."
    elif not is_close(actual, expected, torch.float64):
        wrong = actual.detach().to("cpu", torch.float64) != expected.to(torch.float64)
        index = tuple(int(i) for i in torch.nonzero(wrong)[0])
        allowed = bool(expected[index])
        message = (f"{what}{list(index)} should be {allowed} ({meaning(index, allowed)}), "
                   f"but it is {actual[index].item()}.")
    elif actual.dtype != torch.bool:
        message = (f"{what} has the right values but dtype {actual.dtype}; a mask is a torch.bool tensor "
                   "(comparisons such as `a <= b` give one).")
    else:
        return
    if named:
        message += f"\n  This is a known mistake: {named}"
    fail(message)


def _expect_on(what: str, actual, device) -> None:
    device = torch.device(device)
    expect_tensor(what, actual)
    if actual.device.type != device.type:
        fail(f"{what} is on {actual.device.type}, but it should be on {device.type}. Create it there: pass "
             "`device=...` to torch.arange or torch.ones.")


# ---------------------------------------------------------------- causal_mask

def check_causal_mask(causal_mask) -> None:
    """Stored masks (naming known mistakes), the default T_k, dtype, and the requested device (each one here)."""
    fixture = load("masking")["causal_mask"]

    def case(c):
        def step():
            args = {k: v for k, v in c["args"].items() if v is not None}
            T_q = c["args"]["T_q"]
            T_k = c["args"]["T_k"] or T_q

            def meaning(index, allowed):
                i, j = index
                position = i + T_k - T_q
                if allowed:
                    return f"query {i} sits at position {position} and may see key {j}, which is not later"
                return f"query {i} sits at position {position}; key {j} comes later and must stay hidden"
            expect_mask(f"causal_mask({', '.join(map(str, args.values()))})", causal_mask(**args), c["expected"],
                        c["mistakes"], meaning)
        return step

    def default_t_k():
        mask, square = causal_mask(5), causal_mask(5, 5)
        expect_tensor("causal_mask(5)", mask, shape=(5, 5), dtype=torch.bool)
        if not torch.equal(mask, square):
            fail("causal_mask(5) differs from causal_mask(5, 5): T_k defaults to T_q.")

    def on_device(device):
        def step():
            mask = causal_mask(4, 6, device=device)
            _expect_on(f"causal_mask(4, 6, device=torch.device({device.type!r}))", mask, device)
            expect_tensor(f"causal_mask(4, 6, device=torch.device({device.type!r}))", mask, shape=(4, 6),
                          dtype=torch.bool)
            _expect_on(f"causal_mask(3, device={device.type!r})", causal_mask(3, device=device.type), device)
        return step

    def default_device():
        _expect_on("causal_mask(3) (no device given)", causal_mask(3), torch.empty(0).device)

    steps = [(f"matches causal_mask({c['args']['T_q']}" + (f", {c['args']['T_k']}" if c["args"]["T_k"] else "") + ")",
              case(c)) for c in fixture["cases"]]
    steps += [("T_k defaults to T_q", default_t_k)]
    steps += [(f"is created on {d.type} when asked", on_device(d)) for d in available_devices()]
    steps += [("is created on the default device when no device is given", default_device)]
    run_steps("causal_mask", steps)


# ---------------------------------------------------------------- padding_mask

def check_padding_mask(padding_mask) -> None:
    """Stored masks (naming known mistakes), shape (B, 1, T), dtype bool, and lengths.device (each one here)."""
    fixture = load("masking")["padding_mask"]

    def case(c):
        def step():
            lengths, T = c["lengths"].clone(), c["T"]

            def meaning(index, allowed):
                b, _, t = index
                kind = "a real token" if allowed else "padding"
                return f"sequence {b} has length {int(c['lengths'][b])}, so position {t} is {kind}"
            expect_mask(f"padding_mask({lengths.tolist()}, T={T})", padding_mask(lengths, T), c["expected"],
                        c["mistakes"], meaning)
            if not torch.equal(lengths, c["lengths"]):
                fail("`padding_mask` changed `lengths` in place; leave its input as it is.")
        return step

    def on_device(device):
        def step():
            lengths = torch.tensor([3, 1], device=device)
            mask = padding_mask(lengths, 4)
            _expect_on(f"The mask for lengths on {device.type}", mask, device)
            expect_tensor("The mask", mask, shape=(2, 1, 4), dtype=torch.bool)
        return step

    def broadcasts():
        lengths = torch.tensor([4, 2])
        mask = padding_mask(lengths, 4)
        expect_tensor("padding_mask(lengths, 4)", mask, shape=(2, 1, 4))
        combined = mask & fixture["causal_4"].clone()
        if not torch.equal(combined[1], torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0]]).bool()):
            fail("Combined with a causal mask by `&`, sequence 1 (length 2) should let every query read keys 0 and 1 "
                 "(up to its own position) and nothing after them.")

    steps = [(f"matches padding_mask({c['lengths'].tolist()}, T={c['T']})", case(c)) for c in fixture["cases"]]
    steps += [(f"is created on lengths.device ({d.type})", on_device(d)) for d in available_devices()]
    steps += [("combines with a causal mask by broadcasting over the queries", broadcasts)]
    run_steps("padding_mask", steps)


# ---------------------------------------------------------------- masked_attention

def _random(*shape, generator, dtype=torch.float64):
    return torch.randn(*shape, generator=generator, dtype=dtype)


def check_masked_attention(masked_attention) -> None:
    """Stored values on every device and dtype (naming known mistakes), then the properties of masking."""
    fixture = load("masking")["masked_attention"]

    def call(Q, K, V, mask, copies=True):
        """The student's function on copies of its inputs (unless told otherwise): a step reads its tensors again
        after the call, and an input changed in place is named by its own step, not mistaken for another mistake."""
        if copies:
            Q, K, V = Q.clone(), K.clone(), V.clone()
            mask = None if mask is None else mask.clone()
        return call_attention(lambda q, k, v: masked_attention(q, k, v, mask), Q, K, V, name="masked_attention")

    def values_on(device: torch.device, dtype: torch.dtype):
        def step():
            for c in fixture["cases"]:
                Q, K, V = (c[n].to(device, dtype, copy=True) for n in "QKV")  # copies: the fixture is shared
                mask = None if c["mask"] is None else c["mask"].to(device, copy=True)
                described = "no mask" if mask is None else f"a mask of shape {tuple(mask.shape)}"
                try:
                    output, weights = call(Q, K, V, mask)
                    expect_stored_result(output, weights, c, device, dtype)
                except CheckFailed as exc:
                    fail(with_reason(f"with Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)} and "
                                     f"{described}: {exc.args[0]}", property_steps))
        return step

    g = torch.Generator().manual_seed(31)

    def masked_are_zero():
        Q, K, V = 3 * _random(2, 5, 4, generator=g), 3 * _random(2, 7, 4, generator=g), _random(2, 7, 3, generator=g)
        mask = torch.rand(2, 5, 7, generator=g) < 0.5
        mask[..., 0] = True  # every query may read at least one key
        _, weights = call(Q, K, V, mask)
        expect_tensor("The weights", weights, shape=(2, 5, 7))
        w = weights.detach().to("cpu", torch.float64)
        allowed, hidden = w.nan_to_num(0.0)[mask], w.nan_to_num(0.0)[~mask]
        if allowed.abs().max() < 1e-6 and hidden.abs().max() > 1e-6:
            fail("The keys the mask allows (True) got no weight, and the masked ones (False) got it all: the mask is "
                 "used the wrong way round. In this course True means the query MAY attend to that key, so hide "
                 "the keys where the mask is False (`~mask`).")
        by_key, by_query = w.nan_to_num(0.0).sum(-1), w.nan_to_num(0.0).sum(-2)[mask.any(-2)]
        if not torch.allclose(by_key, torch.ones_like(by_key), atol=1e-6) and \
                torch.allclose(by_query, torch.ones_like(by_query), atol=1e-6):
            fail("The weights sum to 1 over the queries (down each column), not over the keys: the softmax "
                 "should run over the keys, the last axis (dim=-1).")
        if torch.isnan(w).any():
            where = [int(i) for i in torch.nonzero(torch.isnan(w))[0]]
            fail(f"Weight {where} is NaN, although every query here may read at least one key (key 0 is always "
                 "allowed): somewhere on the way a 0/0 or an inf - inf was computed.")
        if (hidden != 0).any():
            fail(f"A masked key got weight {hidden.abs().max().item():.3g}; it must be exactly 0. Fill the masked "
                 "scores with -inf (exp(-inf) = 0) before the softmax; a finite fill value must be so negative that its "
                 "exp is exactly 0 (0 itself is far from enough: exp(0) = 1).")
        if not torch.allclose(by_key, torch.ones_like(by_key), atol=1e-9):
            told = (f"Each query's weights over its allowed keys should sum to 1; row sums range from "
                    f"{by_key.min().item():.4g} to {by_key.max().item():.4g}.")
            if by_key.max() > 1 + 1e-6:  # no softmax, masked after it or not, gives a row more than 1
                fail(f"{told} A row above 1 was never divided by its sum: a softmax divides each exp(score) by "
                     "the sum of the row's exp(score) over the allowed keys.")
            fail(f"{told} Mask the scores before the softmax, not the weights after it.")

    def empty_row():
        Q, K, V = _random(2, 4, 3, generator=g), _random(2, 5, 3, generator=g), _random(2, 5, 2, generator=g)
        mask = torch.ones(2, 4, 5, dtype=torch.bool)
        mask[0, 2] = False  # query 2 of sequence 0 may read nothing
        mask[1] = False  # nor may any query of sequence 1
        output, weights = call(Q, K, V, mask)
        if torch.isnan(weights).any() or torch.isnan(output).any():
            fail("A query with no allowed key gave NaN: the softmax of a row of -inf is 0/0. Such a row must give "
                 "weights 0 and output 0.")
        if weights.detach()[0, 2].abs().max() != 0 or output.detach()[0, 2].abs().max() != 0 or \
                weights.detach()[1].abs().max() != 0 or output.detach()[1].abs().max() != 0:
            fail("A query with no allowed key should get weights 0 and output 0, and it did not (if each of its keys "
                 "got the same weight, your large negative fill value left a uniform softmax: zero those rows).")

    def causality():
        T, changed = 7, 4
        x = _random(2, T, 6, generator=g)
        W_q, W_k, W_v = (_random(6, 6, generator=g) for _ in range(3))
        y = x.clone()
        y[:, changed] = _random(2, 6, generator=g)
        causal = fixture["masks"]["causal_7"]
        before, _ = call(x @ W_q, x @ W_k, x @ W_v, causal.clone())
        after, _ = call(y @ W_q, y @ W_k, y @ W_v, causal.clone())
        moved = (after - before).detach().abs().amax(dim=(0, 2))
        if moved[:changed].max() > 1e-9:
            first = int(torch.nonzero(moved[:changed] > 1e-9)[0])
            fail(f"With a causal mask, changing token {changed} changed the output at position {first} (by "
                 f"{moved[first].item():.3g}): information leaks from the future. Masked keys must not take "
                 "part in the softmax at all: mask the scores before it.")
        if moved[changed:].max() == 0:
            fail(f"Changing token {changed} changed no output at all, not even its own: is the mask the right way "
                 "round (True = may attend)?")

    def no_mask():
        Q, K, V = _random(3, 4, generator=g), _random(5, 4, generator=g), _random(5, 2, generator=g)
        expected_output, expected_weights = call(Q, K, V, None)
        output, weights = call(Q, K, V, torch.ones(3, 5, dtype=torch.bool))
        if not (torch.allclose(output, expected_output, atol=1e-9) and torch.allclose(weights, expected_weights, atol=1e-9)):
            fail("A mask that allows every key should give the same result as mask=None.")

    def scaled_by_sqrt_d_k():
        own = torch.Generator().manual_seed(37)  # its own numbers: the other steps keep theirs
        Q, K, V = _random(2, 4, 9, generator=own), _random(2, 7, 9, generator=own), _random(2, 7, 3, generator=own)
        _, weights = call(Q, K, V, None)
        expect_tensor("The weights", weights, shape=(2, 4, 7))
        w = weights.detach().to("cpu", torch.float64)
        if not (w > 0).all() or not torch.isfinite(w).all():
            return  # no softmax to read a scale from; the steps before say what is wrong
        # log(weight) = score / divisor + a constant per row: fit the divisor on the values centred row by row.
        scores, logs = Q @ K.transpose(-2, -1), w.log()
        scores, logs = scores - scores.mean(-1, keepdim=True), logs - logs.mean(-1, keepdim=True)
        divisor = ((scores * scores).sum() / (scores * logs).sum()).item()
        if not (math.isfinite(divisor) and divisor > 0 and
                (scores - divisor * logs).abs().max() <= 1e-6 * scores.abs().max()):
            return  # not a softmax of scaled scores at all: the steps before say what is wrong
        if abs(divisor - 3.0) > 1e-4 * 3.0:
            sources = {math.sqrt(2): "sqrt(2), from the batch size Q.shape[0]",
                       2.0: "sqrt(4), from the number of queries Q.shape[-2]",
                       math.sqrt(7): "sqrt(7), from the number of keys K.shape[-2]",
                       math.sqrt(3): "sqrt(3), from V.shape[-1]", 9.0: "d_k = 9 itself, not its square root"}
            said = next((f"divided by {text}" for value, text in sources.items()
                         if abs(divisor - value) < 1e-4 * value), f"divided by {divisor:.4g}")
            if abs(divisor - 1.0) < 1e-4:
                said = "not scaled at all"
            fail(f"With Q {tuple(Q.shape)}, K {tuple(K.shape)} and V {tuple(V.shape)}, the scores were {said}, but "
                 "they should be divided by sqrt(d_k) = sqrt(9) = 3, where d_k is the size of the last axis of Q and K "
                 "(Q.shape[-1]).")

    def broadcasting():
        Q, K, V = _random(2, 4, 3, generator=g), _random(2, 6, 3, generator=g), _random(2, 6, 2, generator=g)
        masks = {"a (T_q, T_k) causal mask shared by the batch": fixture["masks"]["causal_4_6"].clone(),
                 "a (B, 1, T_k) padding mask shared by the queries": fixture["masks"]["padding_6_3"].clone()}
        for described, mask in masks.items():
            output, weights = call(Q, K, V, mask)
            full_output, full_weights = call(Q, K, V, mask.expand(2, 4, 6).clone())
            if tuple(weights.shape) != (2, 4, 6) or not torch.allclose(weights, full_weights, atol=1e-9) \
                    or not torch.allclose(output, full_output, atol=1e-9):
                fail(f"With {described}, the result differs from the same mask expanded to (2, 4, 6): the mask "
                     "should broadcast against the scores (..., T_q, T_k).")

    def inputs_unchanged():
        Q, K, V = _random(2, 3, 4, generator=g), _random(2, 5, 4, generator=g), _random(2, 5, 3, generator=g)
        mask = torch.rand(2, 3, 5, generator=g) < 0.6
        copies = [t.clone() for t in (Q, K, V, mask)]
        call(Q, K, V, mask, copies=False)
        for name, before, after in zip(["Q", "K", "V", "mask"], copies, (Q, K, V, mask)):
            if not torch.equal(before, after):
                fail(f"`masked_attention` changed its input {name} in place; compute new tensors instead "
                     "(e.g. `masked_fill` rather than `masked_fill_`).")

    def gradients():
        Q, K, V = (_random(2, 3, 4, generator=g).requires_grad_(), _random(2, 5, 4, generator=g).requires_grad_(),
                   _random(2, 5, 3, generator=g).requires_grad_())
        mask = torch.rand(2, 3, 5, generator=g) < 0.6
        mask[..., 0] = True
        mask[1, 0] = False  # a query with no allowed key
        output, _ = call(Q, K, V, mask)
        if not output.requires_grad:
            fail("The output is not connected to Q, K and V for backpropagation: stay with torch operations.")
        output.sum().backward()
        for name, t in zip("QKV", (Q, K, V)):
            if t.grad is None or not torch.isfinite(t.grad).all():
                fail(f"The gradient reaching {name} contains NaN or inf when one query has no allowed key: make sure "
                     "no NaN is created on the way (or that it is replaced with torch.where, not multiplied by 0).")

    property_steps = [("masked keys get weight exactly 0; the rest sum to 1", masked_are_zero),
                      ("a query with no allowed key gives zeros, not NaN", empty_row),
                      ("changing a later token changes no earlier output (causal mask)", causality),
                      ("an all-True mask gives the same result as mask=None", no_mask),
                      ("broadcasts (T_q, T_k) and (B, 1, T_k) masks", broadcasting),
                      ("divides the scores by sqrt(d_k)", scaled_by_sqrt_d_k),
                      ("stays finite for large scores", lambda: expect_finite_for_large_scores(
                          lambda Q, K, V: call(Q, K, V, fixture["masks"]["causal_4_6"].clone()))),
                      ("leaves Q, K, V and the mask unchanged", inputs_unchanged),
                      ("keeps gradients finite when a query has no allowed key", gradients)]
    steps = [(f"matches the stored values on {d.type} in {str(t).removeprefix('torch.')}", values_on(d, t))
             for d in available_devices() for t in supported_dtypes(d)]
    run_steps("masked_attention", steps + property_steps)


def written_causal_mask(causal_mask) -> None:
    assert_written("causal_mask", lambda: causal_mask(2))


def written_padding_mask(padding_mask) -> None:
    assert_written("padding_mask", lambda: padding_mask(torch.tensor([1]), 2))


def written_masked_attention(masked_attention) -> None:
    assert_written("masked_attention",
                   lambda: masked_attention(torch.zeros(1, 2), torch.zeros(1, 2), torch.zeros(1, 2), None))
