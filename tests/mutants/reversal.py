"""Mutants and variants for notebook 06."""
import torch
from torch.nn import functional as F

from autograder.reference import reversal as ref

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


MUTANTS = [
    ("reversal_batch", second_half_shuffled), ("reversal_batch", float_tokens),
    ("reversal_batch", same_row_repeated), ("reversal_batch", skewed_tokens),
    ("train_reversal", no_zero_grad), ("train_reversal", predicts_two_ahead),
    ("train_reversal", ignores_lr), ("train_reversal", one_fixed_batch), ("train_reversal", mse_on_probabilities),
    ("per_position_accuracy", no_no_grad), ("per_position_accuracy", overall_accuracy),
    ("per_position_accuracy", argmin_predictions), ("per_position_accuracy", two_ahead),
]

VARIANTS = [
    ("reversal_batch", loop_batch), ("reversal_batch", transposed_draw),
    ("train_reversal", permuted_logits), ("train_reversal", adamw_loop), ("train_reversal", log_softmax_gather),
    ("per_position_accuracy", loop_accuracy), ("per_position_accuracy", softmax_then_argmax),
]
