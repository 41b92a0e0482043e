"""Mutants and variants for notebook 06."""
import types

import torch
from torch.nn import functional as F

from autograder.authoring.mistakes import reversal as known
from autograder.authoring.reference import reversal as ref


def beside(function, **pieces):
    """`function` as if defined in a notebook whose earlier exercises are `pieces` (name -> implementation): a copy
    that reads them from its globals, as notebook code does. A correct `function` beside wrong pieces must still get
    full points: a mistake costs points once, in its own exercise."""
    clone = types.FunctionType(function.__code__, {**function.__globals__, **pieces}, function.__name__,
                               function.__defaults__, function.__closure__)
    named = "_".join(f"{name}_{piece.__name__}" for name, piece in pieces.items())
    clone.__name__ = f"{function.__name__}_beside_{named}"
    return clone


def unwritten(*args, **kwargs):  # an exercise still at its stub
    raise NotImplementedError()

# ---------------------------------------------------------------- reversal_batch


def second_half_shuffled(batch_size, half_len, vocab_size, generator=None):  # a permutation, not the reverse
    first = torch.randint(0, vocab_size, (batch_size, half_len), generator=generator)
    return torch.cat([first, first.roll(1, dims=1)], dim=1)


def float_tokens(batch_size, half_len, vocab_size, generator=None):  # token ids as floats
    first = torch.randint(0, vocab_size, (batch_size, half_len), generator=generator).float()
    return torch.cat([first, first.flip(dims=[1])], dim=1)


def same_row_repeated(batch_size, half_len, vocab_size, generator=None):  # one random row for the whole batch
    first = torch.randint(0, vocab_size, (1, half_len), generator=generator).expand(batch_size, -1)
    return torch.cat([first, first.flip(dims=[1])], dim=1)


def skewed_tokens(batch_size, half_len, vocab_size, generator=None):  # the minimum of two draws: not uniform
    a = torch.randint(0, vocab_size, (batch_size, half_len), generator=generator)
    b = torch.randint(0, vocab_size, (batch_size, half_len), generator=generator)
    first = torch.minimum(a, b)
    return torch.cat([first, first.flip(dims=[1])], dim=1)


def loop_batch(batch_size, half_len, vocab_size, generator=None):  # VARIANT: row by row, index reversal
    rows = []
    for _ in range(batch_size):
        first = torch.randint(0, vocab_size, (half_len,), generator=generator)
        rows.append(torch.cat([first, first[torch.arange(half_len - 1, -1, -1)]]))
    return torch.stack(rows)


def transposed_draw(batch_size, half_len, vocab_size, generator=None):  # VARIANT: drawn (n, B), another order
    first = torch.randint(vocab_size, (half_len, batch_size), generator=generator).T
    return torch.cat([first, torch.fliplr(first)], dim=1)


def list_batch(batch_size, half_len, vocab_size, generator=None):  # VARIANT: plain lists via .tolist(), int sizes
    rows = torch.randint(0, int(vocab_size), (int(batch_size), int(half_len)), generator=generator).tolist()
    return torch.tensor([row + row[::-1] for row in rows], dtype=torch.long).reshape(int(batch_size), 2 * int(half_len))


# ---------------------------------------------------------------- train_reversal

def _loop(model, steps, batch_size, half_len, vocab_size, lr, device, loss_of, *, optimizer_cls=torch.optim.Adam,
          zero_grad=True, move=True, fresh=True):
    if device is not None and move:
        model.to(device)
    model.train()
    where = next(model.parameters()).device
    optimizer = optimizer_cls(model.parameters(), lr=lr)
    losses = []
    batch = ref.reversal_batch(batch_size, half_len, vocab_size).to(where)
    for _ in range(steps):
        if fresh:
            batch = reversal_batch(batch_size, half_len, vocab_size).to(where)
        loss = loss_of(model, batch, vocab_size)
        if zero_grad:
            optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


reversal_batch = ref.reversal_batch  # what the loops call; the hidden test swaps in the reference anyway


def _flat(model, batch, V):
    return F.cross_entropy(model(batch)[:, :-1].reshape(-1, V), batch[:, 1:].reshape(-1))


def no_zero_grad(model, steps, batch_size, half_len, vocab_size, lr, device=None):
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device, _flat, zero_grad=False)


def predicts_two_ahead(model, steps, batch_size, half_len, vocab_size, lr, device=None):
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device,
                 lambda m, b, V: F.cross_entropy(m(b)[:, :-2].reshape(-1, V), b[:, 2:].reshape(-1)))


def ignores_lr(model, steps, batch_size, half_len, vocab_size, lr, device=None):  # Adam's default 1e-3
    return _loop(model, steps, batch_size, half_len, vocab_size, 1e-3, device, _flat)


def one_fixed_batch(model, steps, batch_size, half_len, vocab_size, lr, device=None):  # the same batch every step
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device, _flat, fresh=False)


def mse_on_probabilities(model, steps, batch_size, half_len, vocab_size, lr, device=None):  # not cross-entropy
    def loss(m, b, V):
        p = m(b)[:, :-1].softmax(-1)
        return F.mse_loss(p, F.one_hot(b[:, 1:], V).to(p.dtype))
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device, loss)


def permuted_logits(model, steps, batch_size, half_len, vocab_size, lr, device=None):  # VARIANT: (B, V, T) layout
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device,
                 lambda m, b, V: F.cross_entropy(m(b[:, :-1]).permute(0, 2, 1), b[:, 1:]))


def adamw_loop(model, steps, batch_size, half_len, vocab_size, lr, device=None):  # VARIANT: AdamW, set_to_none
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device, _flat, optimizer_cls=torch.optim.AdamW)


def notebook_train_reversal(model, steps, batch_size, half_len, vocab_size, lr, device=None):
    """VARIANT beside wrong pieces: a correct loop that calls `reversal_batch` from its notebook's globals, a loss
    averaged over the positions in a Python loop, sizes read with int() and .item()."""
    if device is not None:
        model.to(device)
    model.train()
    where = next(model.parameters()).device
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(int(steps)):
        batch = reversal_batch(batch_size, half_len, vocab_size).to(where)
        logits = model(batch)
        predicted = int(batch.shape[1]) - 1
        loss = sum(F.cross_entropy(logits[:, t], batch[:, t + 1]) for t in range(predicted)) / predicted
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.item()))
    return losses


def log_softmax_gather(model, steps, batch_size, half_len, vocab_size, lr, device=None):  # VARIANT: by hand
    def loss(m, b, V):
        logp = m(b).log_softmax(-1)[:, :-1]
        return -logp.gather(-1, b[:, 1:, None]).mean()
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device, loss)


# ---------------------------------------------------------------- per_position_accuracy

def no_no_grad(model, batch):  # eval, but gradients on: the result carries a gradient path? (argmax cuts it)
    model.eval()
    logits = model(batch)
    return (logits[:, :-1].argmax(-1) == batch[:, 1:]).float().mean(0)


def overall_accuracy(model, batch):  # one number for all positions, repeated
    model.eval()
    with torch.no_grad():
        correct = (model(batch)[:, :-1].argmax(-1) == batch[:, 1:]).float()
    return correct.mean().expand(batch.shape[1] - 1)


def argmin_predictions(model, batch):
    model.eval()
    with torch.no_grad():
        return (model(batch)[:, :-1].argmin(-1) == batch[:, 1:]).float().mean(0)


def two_ahead(model, batch):  # compares with the token two steps ahead
    model.eval()
    with torch.no_grad():
        acc = (model(batch)[:, :-2].argmax(-1) == batch[:, 2:]).float().mean(0)
    return torch.cat([acc, acc[-1:]])


def squeezed(model, batch):  # .squeeze() also drops the batch dimension of a batch of one sequence
    model.eval()
    with torch.no_grad():
        correct = model(batch)[:, :-1].argmax(-1) == batch[:, 1:]
    return correct.squeeze().float().mean(0)


def list_accuracy(model, batch):  # VARIANT: plain Python loops over .tolist() values, a tensor on the batch's device
    model.eval()
    with torch.no_grad():
        guesses = model(batch).argmax(-1).tolist()
    rows, n = batch.tolist(), int(batch.shape[0])
    values = [sum(int(g[i] == r[i + 1]) for g, r in zip(guesses, rows)) / n for i in range(len(rows[0]) - 1)]
    return torch.tensor(values, device=batch.device)


def loop_accuracy(model, batch):  # VARIANT: position by position, prefixes fed one at a time
    model.eval()
    with torch.no_grad():
        values = [(model(batch[:, : i + 1])[:, -1].argmax(-1) == batch[:, i + 1]).double().mean()
                  for i in range(batch.shape[1] - 1)]
    return torch.stack(values)


def softmax_then_argmax(model, batch):  # VARIANT: probabilities first, summed then divided
    model.eval()
    with torch.no_grad():
        guess = model(batch).softmax(-1).argmax(-1)[:, :-1]
    return (guess == batch[:, 1:]).sum(0) / batch.shape[0]


def batches_left_on_the_cpu(model, steps, batch_size, half_len, vocab_size, lr, device=None):  # the model moves,
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device, _flat_on_cpu)  # its batches do not


def _flat_on_cpu(model, batch, V):
    return _flat(model, batch.cpu(), V)


def accuracy_to_cpu(model, batch):  # the result moved to the CPU
    return ref.per_position_accuracy(model, batch).cpu()


MUTANTS = [
    ("reversal_batch", second_half_shuffled), ("reversal_batch", float_tokens),
    ("reversal_batch", same_row_repeated), ("reversal_batch", skewed_tokens),
    ("train_reversal", no_zero_grad), ("train_reversal", predicts_two_ahead),
    ("train_reversal", ignores_lr), ("train_reversal", one_fixed_batch), ("train_reversal", mse_on_probabilities),
    ("per_position_accuracy", no_no_grad), ("per_position_accuracy", overall_accuracy),
    ("per_position_accuracy", argmin_predictions), ("per_position_accuracy", two_ahead),
    ("per_position_accuracy", squeezed),
    ("train_reversal", batches_left_on_the_cpu), ("per_position_accuracy", accuracy_to_cpu),
]

# A correct train_reversal beside a wrong or unwritten reversal_batch: the checks hand it stand-in batches.
WRONG_BATCHES = [unwritten, float_tokens, known.tokens_from_one, known.middle_not_repeated, known.copied_not_reversed]

VARIANTS = [
    ("reversal_batch", loop_batch), ("reversal_batch", transposed_draw), ("reversal_batch", list_batch),
    ("train_reversal", permuted_logits), ("train_reversal", adamw_loop), ("train_reversal", log_softmax_gather),
    ("train_reversal", notebook_train_reversal),
    *[("train_reversal", beside(notebook_train_reversal, reversal_batch=wrong)) for wrong in WRONG_BATCHES],
    ("per_position_accuracy", loop_accuracy), ("per_position_accuracy", softmax_then_argmax),
    ("per_position_accuracy", list_accuracy),
]

# Mutants that differ from a correct implementation only on a second real device (tests/test_mutants.py skips them
# where the CPU is the only device, saying so).
NEEDS_SECOND_DEVICE = {batches_left_on_the_cpu, accuracy_to_cpu}
