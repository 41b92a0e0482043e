"""Visible checks for notebook 06: `reversal_batch`, `train_reversal`, `per_position_accuracy`."""
from __future__ import annotations

import math

import torch
from torch import nn

from course.checks.compare import expect_tensor, is_close, known_mistake
from course.checks.report import assert_written, fail, run_steps
from course.checks.stand_ins import earlier_pieces_replaced, notebook_globals
from course.checks.transformer import expect_evaluation_mode, toy_model
from course.device import available_devices
from course.fixtures import load


# ---------------------------------------------------------------- reversal_batch

def _named(actual: torch.Tensor, mistakes: dict) -> str | None:
    return known_mistake(actual.detach().to("cpu", torch.float64), mistakes, torch.float64)


def check_reversal_batch(reversal_batch) -> None:
    """Shape, dtype and device; known mistakes from stored batches; the range and distribution of the tokens; the
    second half is the reverse; a seeded generator makes batches reproducible."""
    fixture = load("reversal")["reversal_batch"]
    messages = fixture["messages"]

    def seeded(case):
        B, n, V = case["args"]
        return reversal_batch(B, n, V, generator=torch.Generator().manual_seed(case["seed"]))

    def shape():
        for case in fixture["cases"]:
            B, n, V = case["args"]
            out = seeded(case)
            if isinstance(out, torch.Tensor) and tuple(out.shape) != (B, 2 * n):
                named = _named(out, case["mistakes"])
                if named:
                    fail(f"reversal_batch({B}, {n}, {V}) has shape {tuple(out.shape)}, expected {(B, 2 * n)}.\n"
                         f"  This is a known mistake: {named}")
            expect_tensor(f"reversal_batch({B}, {n}, {V})", out, shape=(B, 2 * n), device="cpu")
            if out.dtype != torch.long:
                fail(f"reversal_batch should return token ids as a LongTensor (torch.long), not {out.dtype}.")

    def known():
        for case in fixture["cases"]:
            out = seeded(case)
            if torch.equal(out, case["expected"]):
                continue
            named = _named(out, case["mistakes"])
            if named:  # a batch unlike the stored one is fine if drawn differently; one like a known mistake is not
                B, n, V = case["args"]
                fail(f"reversal_batch({B}, {n}, {V}) with a seeded generator gave the batch a known mistake gives.\n"
                     f"  This is a known mistake: {named}")

    def reversed_():
        out = reversal_batch(50, 5, 7, generator=torch.Generator().manual_seed(1))
        first, second = out[:, :5], out[:, 5:]
        if torch.equal(second, first):
            fail(f"The second half equals the first half.\n  This is a known mistake: {messages['copied_not_reversed']}")
        if not torch.equal(second, first.flip(dims=[1])):
            b = int(torch.nonzero((second != first.flip(dims=[1])).any(1))[0])
            fail(f"The second half of row {b} is {second[b].tolist()}, but its first half reversed is "
                 f"{first[b].flip(0).tolist()}.")

    def tokens():
        V = 6
        out = reversal_batch(3000, 4, V, generator=torch.Generator().manual_seed(2))
        low, high = int(out.min()), int(out.max())
        if low < 0 or high > V - 1:
            hint = f"\n  This is a known mistake: {messages['tokens_from_one']}" if low == 1 and high == V else ""
            fail(f"With vocab_size={V} the tokens should lie in 0 .. {V - 1}, but they run from {low} to {high}.{hint}")
        if high < V - 1:
            fail(f"With vocab_size={V} no token {V - 1} was drawn in 12000 tokens.\n"
                 f"  This is a known mistake: {messages['high_too_low']}")
        first = out[:, :4]
        if (first == first[:1]).all():
            fail(f"Every row has the same first half.\n  This is a known mistake: {messages['fixed_first_half']}")
        freq = torch.stack([torch.bincount(first[:, p], minlength=V) for p in range(4)]).double() / first.shape[0]
        worst = (freq - 1 / V).abs().max().item()
        if worst > 0.05:
            fail(f"The first-half tokens should be uniform (each with frequency 1/{V} = {1 / V:.3f} at every "
                 f"position); a frequency is off by {worst:.3f}. Draw them with torch.randint.")

    def reproducible():
        runs = [reversal_batch(8, 5, 9, generator=torch.Generator().manual_seed(s)) for s in (3, 3, 4)]
        if not torch.equal(runs[0], runs[1]):
            fail(f"Two generators seeded alike gave different batches.\n  This is a known mistake: "
                 f"{messages['ignores_generator']}")
        if torch.equal(runs[0], runs[2]):
            fail("Generators with different seeds gave the same batch: is the first half drawn at random?")
        torch.manual_seed(0)
        unseeded = reversal_batch(4, 3, 5)
        expect_tensor("reversal_batch without a generator", unseeded, shape=(4, 6))

    run_steps("reversal_batch", [
        ("returns a LongTensor (batch_size, 2 * half_len) on the CPU", shape),
        ("matches no known mistake on stored seeds", known),
        ("the second half is the first half reversed", reversed_),
        ("tokens are uniform over 0 .. vocab_size - 1 and differ between rows", tokens),
        ("a seeded generator gives the same batch again", reproducible),
    ])


# ---------------------------------------------------------------- train_reversal

class ReversalOracle(nn.Module):
    """A stand-in model that already knows the reversal rule, with one trainable number: its confidence.

    At the positions whose next token is determined (from n - 1 on) it adds `confidence` to the logit of that
    token; elsewhere its logits are 0 (a uniform guess). So the loss of a batch depends only on the confidence,
    never on which random tokens were drawn, and training raises the confidence. It records each call's mode,
    whether gradients were on, the device and shape of its input, and the input's first half (which batch it was).
    """

    def __init__(self, vocab_size: int, confidence: float):
        super().__init__()
        self.vocab_size = vocab_size
        self.confidence = nn.Parameter(torch.tensor(float(confidence)))
        self.calls: list[dict] = []

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        B, T = tokens.shape
        n = (T + 1) // 2  # a whole sequence (2n) or one without its last token (2n - 1)
        self.calls.append({"training": self.training, "grad": torch.is_grad_enabled(), "device": tokens.device,
                           "shape": tuple(tokens.shape), "first_half": tuple(tokens[:, :n].flatten().tolist())})
        logits = torch.zeros(B, T, self.vocab_size, device=tokens.device, dtype=self.confidence.dtype)
        known = nn.functional.one_hot(tokens[:, :n].flip(dims=[1]), self.vocab_size).to(logits.dtype)  # (B, n, V)
        extra = torch.zeros_like(logits)
        extra[:, n - 1: 2 * n - 1] = known[:, : T - n + 1]
        return logits + self.confidence * extra


def oracle_loss(vocab_size: int, half_len: int, confidence: float) -> float:
    """The loss of ReversalOracle on any reversal batch: n - 1 uniform guesses and n determined ones."""
    V, n = vocab_size, half_len
    sure = math.log1p((V - 1) * math.exp(-confidence))
    return ((n - 1) * math.log(V) + n * sure) / (2 * n - 1)


class StoredBatches:
    """Stands in for the notebook's `reversal_batch` while `train_reversal` is checked: it hands out a stored batch of
    the size asked for, so that a mistake in `reversal_batch` costs points only in its own check. Each call rolls the
    batch's rows by one more place, so a loop that draws a batch per step sees a new one each time, as with the real
    function. A size it does not hold goes to `fallback` (the notebook's own)."""

    def __init__(self, stored: list[torch.Tensor], fallback=None):
        self.stored = {tuple(batch.shape): batch for batch in stored}
        self.fallback = fallback
        self.handed_out = 0

    def __call__(self, batch_size, half_len, vocab_size, generator=None):
        batch = self.stored.get((int(batch_size), 2 * int(half_len)))
        if batch is None or int(batch.max()) >= vocab_size:
            return self.fallback(batch_size, half_len, vocab_size, generator=generator)
        self.handed_out += 1
        return batch.roll(self.handed_out - 1, dims=0)


def _run_oracle(train_reversal, spec: dict, steps: int, device=None, seed: int = 0, batches=()):
    """ReversalOracle(spec) trained by `train_reversal` for `steps` steps; with `batches`, the notebook's
    `reversal_batch` is replaced by StoredBatches of them. Returns (model, losses)."""
    torch.manual_seed(seed)
    model = ReversalOracle(spec["vocab_size"], spec["confidence"])
    batch_stand_in = StoredBatches(list(batches), notebook_globals(train_reversal).get("reversal_batch"))
    with earlier_pieces_replaced(train_reversal, reversal_batch=batch_stand_in):
        losses = train_reversal(model, steps, spec["batch_size"], spec["half_len"], spec["vocab_size"], spec["lr"],
                                device=device)
    return model, losses


def check_train_reversal(train_reversal) -> None:
    """On a stand-in model whose loss does not depend on the random batch (and stored batches in place of the
    notebook's `reversal_batch`): one float per step, the first loss against the exact value (naming known mistakes),
    a step of size lr, a falling loss, one Adam optimizer for the whole run, training on the device."""
    fixture = load("reversal")["train_reversal"]
    spec, mistakes = fixture["spec"], fixture["mistakes"]
    messages = fixture["messages"]
    runs = {}

    def oracle(spec: dict, steps: int, device=None):
        return _run_oracle(train_reversal, spec, steps, device=device, batches=fixture["batches"])

    def run():
        if "losses" not in runs:
            runs["model"], runs["losses"] = oracle(spec, spec["steps"])
        return runs["losses"]

    def floats():
        losses = run()
        if not isinstance(losses, (list, tuple)):
            fail(f"train_reversal should return a list of the losses, but it returned a {type(losses).__name__}.")
        if any(isinstance(x, torch.Tensor) for x in losses):
            fail(f"The losses are tensors.\n  This is a known mistake: {messages['returns_tensors']}")
        if len(losses) != spec["steps"]:
            fail(f"With steps={spec['steps']} train_reversal returned {len(losses)} losses; expected one per step.")
        if not all(isinstance(x, float) for x in losses):
            fail("Every loss should be a Python float (loss.item()).")

    def first_loss():
        losses = run()
        expected = fixture["expected"][0].item()
        got = losses[0]
        if abs(got - expected) <= 1e-4 * max(1.0, abs(expected)):
            return
        message = (f"On a model whose next-token cross-entropy on any reversal batch is exactly {expected:.4f} "
                   f"(half_len={spec['half_len']}, vocab_size={spec['vocab_size']}), the first loss was {got:.4f}.")
        for m in mistakes.values():
            if m["output"].numel() and abs(got - m["output"][0].item()) <= fixture["naming_tolerance"]:
                message += f"\n  This is a known mistake: {m['message']}"
                break
        else:
            message += ("\n  The loss is F.cross_entropy of logits[:, :-1] flattened to (B * (2n - 1), V) against "
                        "batch[:, 1:] flattened to (B * (2n - 1),), averaged.")
        fail(message)

    def learns():
        losses = run()
        if len(set(losses)) == 1:
            fail(f"The loss stayed at {losses[0]:.4f} for {len(losses)} steps.\n  This is a known mistake: "
                 f"{messages['never_steps']}")
        expected = fixture["expected"][1].item()
        if abs(losses[1] - expected) > 0.01:
            fail(f"After one step with lr={spec['lr']} the loss should be about {expected:.4f} (one Adam step moves "
                 f"each weight by about lr), but it is {losses[1]:.4f}. Use torch.optim.Adam(model.parameters(), "
                 "lr=lr), and zero the gradients before each backward pass.")
        if not all(b < a for a, b in zip(losses, losses[1:])):
            fail(f"The losses should fall step by step on this model, but they are {[round(x, 4) for x in losses]}.")
        model = runs["model"]
        if not all(c["training"] and c["grad"] for c in model.calls):
            fail("The model should run in training mode with gradients on while it trains (model.train()).")
        shapes = {c["shape"] for c in model.calls}
        expected_shapes = {(spec["batch_size"], 2 * spec["half_len"]), (spec["batch_size"], 2 * spec["half_len"] - 1)}
        if not shapes <= expected_shapes:
            fail(f"The model was called on inputs of shape {sorted(shapes)}; expected batches of shape "
                 f"({spec['batch_size']}, {2 * spec['half_len']}) from reversal_batch.")

    def fresh_batches():
        run()
        seen = {c["first_half"] for c in runs["model"].calls}
        if len(seen) < spec["steps"]:
            fail(f"In {spec['steps']} steps the model saw {len(seen)} different batch(es). Draw a fresh batch with "
                 "reversal_batch inside the loop, once per step: a model trained on one batch learns those "
                 f"{spec['batch_size']} sequences, not the rule.")

    def one_optimizer():
        long = fixture["long_run"]
        model, losses = oracle(long["spec"], long["spec"]["steps"])
        got, expected = model.confidence.item(), long["confidence"]
        if abs(got - expected) <= long["tolerance"]:
            return
        steps, lr = long["spec"]["steps"], long["spec"]["lr"]
        message = (f"After {steps} steps with lr={lr} on a model whose gradient shrinks as it learns, its one weight "
                   f"should be about {expected:.2f}, but it is {got:.2f}.")
        if abs(got - (long["spec"]["confidence"] + steps * lr)) <= long["tolerance"]:
            message += f"\n  This is a known mistake: {messages['optimizer_in_loop']}"
        fail(message)

    def on_device(device):
        def step():
            model, losses = oracle(spec, 2, device=device)
            where = model.confidence.device
            if where.type != device.type:
                fail(f"With device={device.type!r} the model should be moved there (model.to(device)); its weights "
                     f"are on {where}.")
            seen = {c["device"].type for c in model.calls}
            if seen != {device.type}:
                fail(f"The batches reached the model on {sorted(seen)}; move each batch to the model's device.")
            if not all(isinstance(x, float) for x in losses):
                fail("Every loss should be a Python float (loss.item()).")
        return step

    steps = [("returns one Python float per step", floats),
             ("the first loss is the next-token cross-entropy, logits[:, :-1] against batch[:, 1:]", first_loss),
             ("takes Adam steps of size lr, and the loss falls", learns),
             ("draws a fresh batch at every step", fresh_batches),
             ("keeps one Adam optimizer, and its running averages, for the whole run", one_optimizer)]
    steps += [(f"moves the model to device={d.type!r} and trains it there", on_device(d)) for d in available_devices()]
    run_steps("train_reversal", steps)


# ---------------------------------------------------------------- per_position_accuracy

def check_per_position_accuracy(per_position_accuracy) -> None:
    """Stored accuracies of a hand-made model on stored batches, on every device (naming known mistakes); values in
    [0, 1]; eval mode and no gradients."""
    fixture = load("reversal")["per_position_accuracy"]

    def values_on(device):
        def step():
            for case in fixture["cases"]:
                model = toy_model(fixture["toy"], device, dropout=0.0)
                batch = case["batch"].to(device)
                out = per_position_accuracy(model, batch)
                expected = case["expected"]
                T = batch.shape[1]
                if not isinstance(out, torch.Tensor):
                    fail(f"per_position_accuracy should return a tensor, but it returned a {type(out).__name__}.")
                if not is_close(out.detach().to("cpu", torch.float64), expected, torch.float32):
                    named = _named(out, case["mistakes"])
                    if tuple(out.shape) != tuple(expected.shape):
                        message = (f"For a batch of shape {tuple(batch.shape)} the result should have shape ({T - 1},): "
                                   f"one accuracy per predicted position. It has shape {tuple(out.shape)}.")
                    else:
                        diff = (out.detach().cpu().double() - expected).abs()
                        i = int(diff.argmax())
                        message = (f"For a batch of shape {tuple(batch.shape)} the accuracy at position {i} should be "
                                   f"{expected[i].item():.4f}, but it is {out[i].item():.4f}.")
                    if named:
                        message += f"\n  This is a known mistake: {named}"
                    fail(message)
                expect_tensor("The accuracy", out, device=device)
                if not out.is_floating_point():
                    fail(f"The accuracy should be a float tensor (fractions), not {out.dtype}.")
        return step

    def modes():
        case = fixture["cases"][0]
        outputs = expect_evaluation_mode(
            "per_position_accuracy", lambda m: per_position_accuracy(m, case["batch"]),
            toy_model(fixture["toy"], dropout=0.5),
            f"\n  This is a known mistake: {fixture['messages']['training_mode']}", None)
        if any(out.requires_grad for out in outputs):
            fail("The result should carry no gradient.")

    def bounded():
        g = torch.Generator().manual_seed(61)
        model = toy_model(fixture["toy"])
        V = fixture["toy"]["follow"].shape[0]
        batch = torch.randint(0, V, (7, fixture["toy"]["max_len"]), generator=g)
        out = per_position_accuracy(model, batch)
        if out.min() < 0 or out.max() > 1:
            fail(f"Accuracies are fractions between 0 and 1, but the result runs from {out.min().item():.3g} to "
                 f"{out.max().item():.3g}.")
        one = per_position_accuracy(model, batch[:1])
        expect_tensor("For a batch of one sequence the accuracy", one, shape=(batch.shape[1] - 1,))

    steps = [(f"gives the stored accuracies on {d.type}", values_on(d)) for d in available_devices()]
    steps += [("values lie in [0, 1], one per predicted position for a batch of one too", bounded),
              ("runs the model in eval mode without gradients", modes)]
    run_steps("per_position_accuracy", steps)


# ---------------------------------------------------------------- written_*

def written_reversal_batch(reversal_batch) -> None:
    assert_written("reversal_batch", lambda: reversal_batch(1, 1, 2))


def written_train_reversal(train_reversal) -> None:
    assert_written("train_reversal", lambda: train_reversal(ReversalOracle(3, 1.0), 0, 1, 1, 3, 0.1))


def written_per_position_accuracy(per_position_accuracy) -> None:
    fixture = load("reversal")["per_position_accuracy"]
    assert_written("per_position_accuracy",
                   lambda: per_position_accuracy(toy_model(fixture["toy"]), fixture["cases"][0]["batch"]))
