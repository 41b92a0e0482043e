"""Hidden tests for notebook 06: the properties and distribution of `reversal_batch` on fresh sizes and seeds; the
student's `train_reversal` on the exact stand-in model and then training a notebook-05 model from a fixed seed (with
a stand-in batch function, so that a batch mistake costs once); `per_position_accuracy` on fresh notebook-05 models.

The batches and the trained weights are recorded as data; whether they have the required properties is judged by the
rules below, in the grader's process (`autograder.authoring.hidden.observe`)."""
import math
from dataclasses import dataclass

import torch

from autograder.authoring.hidden.models import random_state
from autograder.authoring.hidden.observe import HiddenTestFailed, Observations, Rule, generator, hidden_test, tensor_of
from autograder.authoring.reference.transformer import DecoderOnlyTransformer
from course.checks.reversal import ReversalOracle, oracle_loss
from course.checks.stand_ins import earlier_pieces_replaced
from course.device import available_devices


def _int(g, low, high) -> int:
    return int(torch.randint(low, high, (1,), generator=g))


def _floats(value, count: int) -> bool:
    return isinstance(value, list) and len(value) == count and all(type(x) is float for x in value)


# ---------------------------------------------------------------- reversal_batch

@dataclass(frozen=True)
class ReversalBatchTwice(Rule):
    """[batch, again], two calls with generators seeded alike: CPU LongTensors (B, 2n), equal, the second half the
    first half reversed, tokens in 0 .. V - 1."""
    batch_size: int
    half_len: int
    vocab_size: int

    def judge(self, what, student, reference):
        B, n, V = self.batch_size, self.half_len, self.vocab_size
        pair = student if isinstance(student, list) and len(student) == 2 else [None, None]
        out, again = (tensor_of(v) for v in pair)
        if out is None or out.dtype != torch.long or tuple(out.shape) != (B, 2 * n) or pair[0].get("device") != "cpu":
            return f"{what}: expected a CPU LongTensor of shape {(B, 2 * n)}"
        if again is None or again.dtype != out.dtype or not torch.equal(out, again):
            return f"{what}: the same seeded generator gave different batches"
        if not torch.equal(out[:, n:], out[:, :n].flip(dims=[1])):
            return f"{what}: the second half is not the first half reversed"
        if out.numel() and (out.min() < 0 or out.max() >= V):
            return f"{what}: tokens outside 0 .. {V - 1}"
        return None


@dataclass(frozen=True)
class UniformFirstHalf(Rule):
    """A large batch whose first-half tokens are uniform over 0 .. V - 1 at every position (within 5 standard errors)
    and independent (the pair of the first and last first-half token, likewise)."""
    batch_size: int
    half_len: int
    vocab_size: int

    def judge(self, what, student, reference):
        B, n, V = self.batch_size, self.half_len, self.vocab_size
        out = tensor_of(student)
        if out is None or out.dtype != torch.long or tuple(out.shape) != (B, 2 * n):
            return f"{what}: expected a LongTensor of shape {(B, 2 * n)}"
        first = out[:, :n]
        if first.min() < 0 or first.max() >= V:
            return f"{what}: the tokens are not uniform over 0 .. {V - 1}"
        freq = torch.stack([torch.bincount(first[:, p], minlength=V) for p in range(n)]).double() / B
        if (freq - 1 / V).abs().max() > 5 * math.sqrt((1 / V) * (1 - 1 / V) / B):
            return f"{what}: the tokens are not uniform over 0 .. {V - 1}"
        if n > 1:
            pairs = (first[:, 0] * V + first[:, -1]).bincount(minlength=V * V).double() / B
            if (pairs - 1 / V ** 2).abs().max() > 5 * math.sqrt(1 / V ** 2 / B):
                return f"{what}: the first-half tokens are not independent"
        return None


@dataclass(frozen=True)
class Different(Rule):
    """[a, b]: two tensors that differ."""

    def judge(self, what, student, reference):
        a, b = (tensor_of(v) for v in (student if isinstance(student, list) and len(student) == 2 else [None, None]))
        if a is None or b is None:
            return f"{what}: expected two tensors"
        return what if a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b) else None


def observe_reversal_batch(reversal_batch, trials: int = 4, seed: int = 601) -> Observations:
    seen = Observations()
    g = generator(seed)
    for trial in range(trials):
        B, n, V = _int(g, 1, 9), _int(g, 1, 9), _int(g, 2, 40)
        s = _int(g, 0, 10_000)
        torch.manual_seed(s + 1)  # a batch drawn without the generator differs between the two calls
        out = reversal_batch(B, n, V, generator=torch.Generator().manual_seed(s))
        torch.manual_seed(s + 2)
        again = reversal_batch(B, n, V, generator=torch.Generator().manual_seed(s))
        seen.judged_by(f"reversal_batch({B}, {n}, {V}) (case {trial + 1})", [out, again], ReversalBatchTwice(B, n, V))
    # The distribution: every token at every first-half position with frequency 1/V.
    for B, n, V in [(6000, 3, 5), (4000, 2, 13)]:
        out = reversal_batch(B, n, V, generator=torch.Generator().manual_seed(_int(g, 0, 10_000)))
        seen.judged_by(f"reversal_batch({B}, {n}, {V})", out, UniformFirstHalf(B, n, V))
    a = reversal_batch(64, 4, 10, generator=torch.Generator().manual_seed(5))
    b = reversal_batch(64, 4, 10, generator=torch.Generator().manual_seed(6))
    seen.judged_by("reversal_batch: different seeds gave the same batch", [a, b], Different())
    return seen


# ---------------------------------------------------------------- train_reversal

@dataclass(frozen=True)
class OracleLosses(Rule):
    """The losses of `steps` steps on ReversalOracle(V, confidence): one Python float per step, the first the exact
    next-token cross-entropy of the untrained stand-in, falling, and each within `tolerance` of the reference's
    (the stand-in's loss does not depend on the random batches, so a correct loop gives the same numbers)."""
    vocab_size: int
    half_len: int
    confidence: float
    steps: int
    tolerance: float = 5e-3

    def judge(self, what, student, reference):
        V, n = self.vocab_size, self.half_len
        if not _floats(student, self.steps):
            return "train_reversal: expected a list of one Python float per step"
        if abs(student[0] - oracle_loss(V, n, self.confidence)) > 1e-4:
            return (f"train_reversal (V={V}, n={n}): the first loss is not the next-token cross-entropy of the model "
                    "before training")
        if not all(b < a for a, b in zip(student, student[1:])):
            return "train_reversal: the loss does not fall on a model that can only improve"
        if not _floats(reference, self.steps) or \
                any(not abs(s - r) <= self.tolerance for s, r in zip(student, reference)):
            return (f"train_reversal (V={V}, n={n}): after the first step the losses are not those of Adam steps of "
                    "size lr on a model whose loss depends on one weight")
        return None


@dataclass(frozen=True)
class KeepsAdamState(Rule):
    """[losses, weight] after `steps` large steps on ReversalOracle(V, confidence), whose gradient shrinks as it
    learns: losses that start right and fall, and the one weight within `tolerance` of the reference's. Adam's
    running averages shorten the late steps; an optimizer created at every step, or gradients that pile up, keep them
    at the full lr."""
    vocab_size: int
    half_len: int
    confidence: float
    steps: int
    tolerance: float = 1.0

    def judge(self, what, student, reference):
        pair = student if isinstance(student, list) and len(student) == 2 else [None, None]
        # Any loss trace that starts right and falls: the weight says whether the optimizer kept its state.
        losses = OracleLosses(self.vocab_size, self.half_len, self.confidence, self.steps, tolerance=math.inf)
        found = losses.judge(what, pair[0], reference[0])
        if found:
            return found
        if type(pair[1]) is not float or not abs(pair[1] - reference[1]) <= self.tolerance:
            return (f"{what}: after {self.steps} steps the weight is not where one Adam optimizer, kept for the whole "
                    "run and with the gradients zeroed before each backward pass, takes it")
        return None


TRAIN = dict(vocab_size=6, half_len=4, d_model=32, n_heads=4, d_ff=64, n_layers=2, steps=200, batch_size=64, lr=1e-2)


@dataclass(frozen=True)
class TrainsTheModel(Rule):
    """{"losses", "state"} after training a DecoderOnlyTransformer with the TRAIN configuration: one float per step,
    the second half then predicted with accuracy above 0.6 and the first half at chance (on 2000 fresh batches, with
    the reference's batches and accuracy, here in the grader's process), the loss never below the task's floor."""
    seed: int

    def judge(self, what, student, reference):
        from autograder.authoring.reference import reversal as ref  # the grader's process only: never in observe

        t = TRAIN
        V, n, steps = t["vocab_size"], t["half_len"], t["steps"]
        losses = student.get("losses") if isinstance(student, dict) else None
        if not _floats(losses, steps):
            return "train_reversal: expected one loss per step, each a Python float"
        state = student.get("state") if isinstance(student, dict) else None
        weights = {k: tensor_of(v) for k, v in state.items()} if isinstance(state, dict) else {}
        with torch.random.fork_rng(devices=[]):  # the grader's own random state stays as it was
            model = DecoderOnlyTransformer(V, t["d_model"], t["n_heads"], t["d_ff"], t["n_layers"], 2 * n)
        try:
            if any(w is None for w in weights.values()):
                raise ValueError("not a tensor")
            model.load_state_dict(weights, strict=True)
        except (RuntimeError, ValueError):
            return "train_reversal: the trained model's weights are not those of the model it was given"
        batch = ref.reversal_batch(2000, n, V, generator=generator(self.seed))
        accuracy = ref.per_position_accuracy(model, batch)
        second, first = accuracy[n - 1:].mean().item(), accuracy[: n - 1].mean().item()
        if not second >= 0.6:
            return (f"after {steps} steps of train_reversal the model predicts the second half with accuracy "
                    f"{second:.2f}; a correct loop reaches more than 0.6")
        if not abs(first - 1 / V) <= 0.06:
            return f"after training, the first-half accuracy is {first:.2f}, not chance ({1 / V:.2f})"
        floor = (n - 1) / (2 * n - 1) * math.log(V)
        if not sum(losses[-20:]) / 20 >= floor - 0.05:
            return "the training loss went below the floor of the task"
        return None


def _losses(losses, steps: int) -> list:
    if not (isinstance(losses, list) and len(losses) == steps and all(isinstance(x, float) for x in losses)):
        raise HiddenTestFailed("train_reversal: expected a list of one Python float per step")
    return [float(x) for x in losses]


def observe_train_reversal(train_reversal, seed: int = 602) -> Observations:
    seen = Observations()

    def reversal_batch(batch_size, half_len, vocab_size, generator=None):
        """Stands in for the notebook's own (observed in its own cell), so that a batch mistake costs once."""
        first = torch.randint(0, vocab_size, (batch_size, half_len), generator=generator)
        return torch.cat([first, first.flip(dims=[1])], dim=1)

    with earlier_pieces_replaced(train_reversal, reversal_batch=reversal_batch):
        # The exact part: a stand-in model whose loss does not depend on the random tokens.
        for V, n, c in [(50, 3, 1.5), (9, 5, 0.5)]:
            torch.manual_seed(seed)
            losses = _losses(train_reversal(ReversalOracle(V, c), 3, 8, n, V, 0.05), 3)
            seen.judged_by(f"train_reversal(<a stand-in model>, 3, 8, {n}, {V}, 0.05)", losses,
                           OracleLosses(V, n, c, 3))
        # Optimizer state across many steps: large steps on the stand-in, whose gradient then shrinks.
        for V, n, c, lr, steps in [(10, 2, 0.0, 2.0, 8), (20, 3, 0.0, 1.0, 10)]:
            torch.manual_seed(seed)
            oracle = ReversalOracle(V, c)
            losses = _losses(train_reversal(oracle, steps, 8, n, V, lr), steps)
            seen.judged_by(f"train_reversal(<a stand-in model>, {steps}, 8, {n}, {V}, {lr})",
                           [losses, float(oracle.confidence.detach().cpu())], KeepsAdamState(V, n, c, steps))
        # On every other device (CUDA, MPS; none on a CPU-only machine): the model goes there, and every batch too.
        for device in available_devices()[1:]:
            torch.manual_seed(seed)
            oracle = ReversalOracle(10, 0.5)
            _losses(train_reversal(oracle, 3, 8, 3, 10, 0.05, device=device), 3)
            seen.claim(f"train_reversal(..., device={device.type!r}) must move the model to {device.type}",
                       oracle.confidence.device.type == device.type)
            seen.claim(f"train_reversal(..., device={device.type!r}): every batch must be on the model's device "
                       f"({device.type}), not made there on the CPU and left behind",
                       all(call["device"].type == device.type for call in oracle.calls))
        # The real part: a notebook-05 model trained by the student's loop, from a fixed seed.
        t = TRAIN
        V, n = t["vocab_size"], t["half_len"]
        torch.manual_seed(seed)
        model = DecoderOnlyTransformer(V, t["d_model"], t["n_heads"], t["d_ff"], t["n_layers"], 2 * n)
        losses = _losses(train_reversal(model, t["steps"], t["batch_size"], n, V, t["lr"], device=torch.device("cpu")),
                         t["steps"])
    seen.judged_by(f"train_reversal(<a DecoderOnlyTransformer>, {t['steps']}, {t['batch_size']}, {n}, {V}, {t['lr']})",
                   {"losses": losses, "state": dict(model.state_dict())}, TrainsTheModel(seed))
    return seen


# ---------------------------------------------------------------- per_position_accuracy

def observe_per_position_accuracy(per_position_accuracy, trials: int = 4, seed: int = 603) -> Observations:
    seen = Observations()
    g = generator(seed)
    for trial in range(trials):
        V, n = _int(g, 2, 12), _int(g, 1, 6)
        B = 1 if trial == 1 else _int(g, 2, 60)  # a batch of one sequence too
        config = dict(vocab_size=V, d_model=8, n_heads=2, d_ff=16, n_layers=_int(g, 1, 3), max_len=2 * n + 1,
                      dropout=0.5 if trial == 0 else 0.0)
        model = DecoderOnlyTransformer(**config)
        model.load_state_dict({k: v.float() for k, v in random_state(model, g).items()}, strict=True)
        with torch.no_grad():
            model.lm_head.weight.mul_(4.0)
        T = 2 * n if trial != 2 else 2 * n + 1  # any length works, odd too
        batch = torch.randint(0, V, (B, T), generator=g)
        for device in available_devices():
            m = model.to(device).train(trial == 0)  # the first model in training mode, with dropout
            what = f"per_position_accuracy (case {trial + 1}), {config}, batch {tuple(batch.shape)} ({device.type})"
            out = per_position_accuracy(m, batch.to(device))
            seen.claim(f"{what}: the result carries a gradient", not getattr(out, "requires_grad", False))
            if isinstance(out, torch.Tensor) and out.is_floating_point():
                out = out.float()  # any floating dtype will do
            seen.close(what, out)
    return seen


test_reversal_batch = hidden_test(observe_reversal_batch)
test_train_reversal = hidden_test(observe_train_reversal)
test_per_position_accuracy = hidden_test(observe_per_position_accuracy)
