"""Hidden tests for notebook 06: the properties and distribution of `reversal_batch` on fresh sizes and seeds; the
student's `train_reversal` on the exact stand-in model and then training the reference model from a fixed seed
(with the reference batches); `per_position_accuracy` against the reference on fresh reference models."""
import math

import torch

from autograder.hidden.models import random_state
from autograder.hidden.compare import HiddenTestFailed, assert_matches, generator, reference_globals
from autograder.reference import reversal as ref
from course.checks.reversal import ReversalOracle, oracle_loss
from course.device import available_devices


def _int(g, low, high) -> int:
    return int(torch.randint(low, high, (1,), generator=g))


def test_reversal_batch(reversal_batch, trials: int = 4, seed: int = 601) -> None:
    g = generator(seed)
    for _ in range(trials):
        B, n, V = _int(g, 1, 9), _int(g, 1, 9), _int(g, 2, 40)
        s = _int(g, 0, 10_000)
        what = f"reversal_batch({B}, {n}, {V})"
        torch.manual_seed(s + 1)
        out = reversal_batch(B, n, V, generator=torch.Generator().manual_seed(s))
        torch.manual_seed(s + 2)
        again = reversal_batch(B, n, V, generator=torch.Generator().manual_seed(s))
        if not isinstance(out, torch.Tensor) or out.dtype != torch.long or tuple(out.shape) != (B, 2 * n) \
                or out.device.type != "cpu":
            raise HiddenTestFailed(f"{what}: expected a CPU LongTensor of shape {(B, 2 * n)}")
        if not torch.equal(out, again):
            raise HiddenTestFailed(f"{what}: the same seeded generator gave different batches")
        if not torch.equal(out[:, n:], out[:, :n].flip(dims=[1])):
            raise HiddenTestFailed(f"{what}: the second half is not the first half reversed")
        if out.min() < 0 or out.max() >= V:
            raise HiddenTestFailed(f"{what}: tokens outside 0 .. {V - 1}")
    # The distribution: every token at every first-half position with frequency 1/V.
    for B, n, V in [(6000, 3, 5), (4000, 2, 13)]:
        out = reversal_batch(B, n, V, generator=torch.Generator().manual_seed(_int(g, 0, 10_000)))
        first = out[:, :n]
        freq = torch.stack([torch.bincount(first[:, p], minlength=V) for p in range(n)]).double() / B
        bound = 5 * math.sqrt((1 / V) * (1 - 1 / V) / B)
        if freq.shape[1] != V or (freq - 1 / V).abs().max() > bound:
            raise HiddenTestFailed(f"reversal_batch({B}, {n}, {V}): the tokens are not uniform over 0 .. {V - 1}")
        pairs = (first[:, 0] * V + first[:, -1]).bincount(minlength=V * V).double() / B if n > 1 else None
        if pairs is not None and (pairs - 1 / V ** 2).abs().max() > 5 * math.sqrt(1 / V ** 2 / B):
            raise HiddenTestFailed(f"reversal_batch({B}, {n}, {V}): the first-half tokens are not independent")
    a = reversal_batch(64, 4, 10, generator=torch.Generator().manual_seed(5))
    b = reversal_batch(64, 4, 10, generator=torch.Generator().manual_seed(6))
    if torch.equal(a, b):
        raise HiddenTestFailed("reversal_batch: different seeds gave the same batch")


TRAIN = dict(vocab_size=6, half_len=4, d_model=32, n_heads=4, d_ff=64, n_layers=2, steps=600, batch_size=64, lr=1e-2)


def test_train_reversal(train_reversal, seed: int = 602) -> None:
    with reference_globals(train_reversal, reversal_batch=ref.reversal_batch):  # a batch mistake costs once
        # The exact part: a stand-in model whose loss does not depend on the random tokens.
        for V, n, c in [(50, 3, 1.5), (9, 5, 0.5)]:
            torch.manual_seed(seed)
            model = ReversalOracle(V, c)
            losses = train_reversal(model, 3, 8, n, V, 0.05)
            if not isinstance(losses, list) or len(losses) != 3 or not all(isinstance(x, float) for x in losses):
                raise HiddenTestFailed("train_reversal: expected a list of one Python float per step")
            if abs(losses[0] - oracle_loss(V, n, c)) > 1e-4:
                raise HiddenTestFailed(f"train_reversal (V={V}, n={n}): the first loss is not the next-token "
                                       "cross-entropy of the model before training")
            if not losses[2] < losses[1] < losses[0]:
                raise HiddenTestFailed("train_reversal: the loss does not fall on a model that can only improve")
        # The real part: the reference model trained by the student's loop, from a fixed seed.
        t = TRAIN
        V, n = t["vocab_size"], t["half_len"]
        torch.manual_seed(seed)
        model = ref.DecoderOnlyTransformer(V, t["d_model"], t["n_heads"], t["d_ff"], t["n_layers"], 2 * n)
        losses = train_reversal(model, t["steps"], t["batch_size"], n, V, t["lr"], device=torch.device("cpu"))
    if len(losses) != t["steps"]:
        raise HiddenTestFailed("train_reversal: expected one loss per step")
    batch = ref.reversal_batch(2000, n, V, generator=generator(seed))
    accuracy = ref.per_position_accuracy(model.cpu(), batch)
    second, first = accuracy[n - 1:].mean().item(), accuracy[: n - 1].mean().item()
    if second < 0.6:
        raise HiddenTestFailed(f"after {t['steps']} steps of train_reversal the reference model predicts the second "
                               f"half with accuracy {second:.2f}; a correct loop reaches more than 0.6")
    if abs(first - 1 / V) > 0.06:
        raise HiddenTestFailed(f"after training, the first-half accuracy is {first:.2f}, not chance ({1 / V:.2f})")
    floor = (n - 1) / (2 * n - 1) * math.log(V)
    if sum(losses[-20:]) / 20 < floor - 0.05:
        raise HiddenTestFailed("the training loss went below the floor of the task")


def test_per_position_accuracy(per_position_accuracy, trials: int = 3, seed: int = 603) -> None:
    g = generator(seed)
    for trial in range(trials):
        V, n = _int(g, 2, 12), _int(g, 1, 6)
        config = dict(vocab_size=V, d_model=8, n_heads=2, d_ff=16, n_layers=_int(g, 1, 3), max_len=2 * n + 1,
                      dropout=0.5 if trial == 0 else 0.0)
        model = ref.DecoderOnlyTransformer(**config)
        model.load_state_dict({k: v.float() for k, v in random_state(model, g).items()}, strict=True)
        with torch.no_grad():
            model.lm_head.weight.mul_(4.0)
        T = 2 * n if trial != 2 else 2 * n + 1  # any length works, odd too
        batch = torch.randint(0, V, (_int(g, 1, 60), T), generator=g)
        for device in available_devices():
            m = model.to(device).train(trial == 0)
            expected = ref.per_position_accuracy(m, batch.to(device))
            m.train(trial == 0)
            out = per_position_accuracy(m, batch.to(device))
            if isinstance(out, torch.Tensor) and out.is_floating_point():
                out = out.float()
            assert_matches(f"per_position_accuracy, {config}, batch {tuple(batch.shape)} ({device.type})", out,
                           expected, torch.float32)
            if isinstance(out, torch.Tensor) and out.requires_grad:
                raise HiddenTestFailed("per_position_accuracy: the result carries a gradient")
