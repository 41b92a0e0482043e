"""Known mistakes in notebook 06. `train_reversal` mistakes draw their batches from the reference `reversal_batch`."""
import torch
from torch.nn import functional as F

from autograder.authoring.mistakes import mistake
from autograder.authoring.reference import reversal as ref

# ---------------------------------------------------------------- reversal_batch


@mistake("reversal_batch", "the second half repeats the first half in the same order; it should be the first half "
         "reversed (torch.flip along the sequence dimension, dims=[1]).")
def copied_not_reversed(batch_size, half_len, vocab_size, generator=None):
    first = torch.randint(0, vocab_size, (batch_size, half_len), generator=generator)
    return torch.cat([first, first], dim=1)


@mistake("reversal_batch", "the first half is flipped along the batch dimension (dim 0), so each row ends with the "
         "tokens of another row; reverse along the sequence dimension, dims=[1].")
def flipped_along_batch(batch_size, half_len, vocab_size, generator=None):
    first = torch.randint(0, vocab_size, (batch_size, half_len), generator=generator)
    return torch.cat([first, first.flip(dims=[0])], dim=1)


@mistake("reversal_batch", "the tokens never reach vocab_size - 1: torch.randint's upper bound is already exclusive, "
         "so torch.randint(0, vocab_size, ...) draws from 0 .. vocab_size - 1.")
def high_too_low(batch_size, half_len, vocab_size, generator=None):
    first = torch.randint(0, vocab_size - 1, (batch_size, half_len), generator=generator)
    return torch.cat([first, first.flip(dims=[1])], dim=1)


@mistake("reversal_batch", "the tokens run from 1 to vocab_size; they should run from 0 to vocab_size - 1 "
         "(token ids index the embedding table).")
def tokens_from_one(batch_size, half_len, vocab_size, generator=None):
    first = torch.randint(1, vocab_size + 1, (batch_size, half_len), generator=generator)
    return torch.cat([first, first.flip(dims=[1])], dim=1)


@mistake("reversal_batch", "the sequence has 2 * half_len - 1 tokens: the middle token is not repeated. The second "
         "half is the whole first half reversed, so the sequence has 2 * half_len tokens.")
def middle_not_repeated(batch_size, half_len, vocab_size, generator=None):
    first = torch.randint(0, vocab_size, (batch_size, half_len), generator=generator)
    return torch.cat([first, first.flip(dims=[1])[:, 1:]], dim=1)


@mistake("reversal_batch", "the first half is not random: every row starts with the same tokens. Draw them with "
         "torch.randint(0, vocab_size, (batch_size, half_len), generator=generator).")
def fixed_first_half(batch_size, half_len, vocab_size, generator=None):
    first = (torch.arange(half_len) % vocab_size).expand(batch_size, half_len)
    return torch.cat([first, first.flip(dims=[1])], dim=1)


@mistake("reversal_batch", "the generator is not used: the same seeded generator gave different batches. Pass it to "
         "torch.randint(..., generator=generator).")
def ignores_generator(batch_size, half_len, vocab_size, generator=None):
    first = torch.randint(0, vocab_size, (batch_size, half_len))
    return torch.cat([first, first.flip(dims=[1])], dim=1)


# ---------------------------------------------------------------- train_reversal

def _loop(model, steps, batch_size, half_len, vocab_size, lr, device, loss_of, *, zero_grad=True, step=True,
          as_float=True, optimizer_per_step=False):
    if device is not None:
        model.to(device)
    model.train()
    where = next(model.parameters()).device
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    out = []
    for _ in range(steps):
        if optimizer_per_step:
            optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        batch = ref.reversal_batch(batch_size, half_len, vocab_size).to(where)
        loss = loss_of(model(batch), batch, vocab_size)
        if zero_grad:
            optimizer.zero_grad()
        loss.backward()
        if step:
            optimizer.step()
        out.append(loss.item() if as_float else loss.detach())
    return out


def _right(logits, batch, V):
    return F.cross_entropy(logits[:, :-1].reshape(-1, V), batch[:, 1:].reshape(-1))


@mistake("train_reversal", "the targets are the tokens at the same positions (logits[:, :-1] against batch[:, :-1]): "
         "the model learns to repeat the token it reads. The logits at position t predict token t + 1, so the "
         "targets are batch[:, 1:].")
def same_position_targets(model, steps, batch_size, half_len, vocab_size, lr, device=None):
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device,
                 lambda lo, b, V: F.cross_entropy(lo[:, :-1].reshape(-1, V), b[:, :-1].reshape(-1)))


@mistake("train_reversal", "the loss covers only the second half of each sequence. Train on every next-token "
         "prediction, logits[:, :-1] against batch[:, 1:]: the first half is part of the sequence too (and its "
         "unpredictable tokens are what make the loss floor).")
def second_half_only(model, steps, batch_size, half_len, vocab_size, lr, device=None):
    n = half_len
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device,
                 lambda lo, b, V: F.cross_entropy(lo[:, n - 1:-1].reshape(-1, V), b[:, n:].reshape(-1)))


@mistake("train_reversal", "the loss is summed over the batch and the positions instead of averaged, so it grows with "
         "the batch size (and so does every step). Use F.cross_entropy's default, reduction='mean'.")
def summed_loss(model, steps, batch_size, half_len, vocab_size, lr, device=None):
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device,
                 lambda lo, b, V: F.cross_entropy(lo[:, :-1].reshape(-1, V), b[:, 1:].reshape(-1), reduction="sum"))


@mistake("train_reversal", "the losses are tensors; return Python floats (loss.item()), which also lets each step's "
         "graph be freed.")
def returns_tensors(model, steps, batch_size, half_len, vocab_size, lr, device=None):
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device, _right, as_float=False)


@mistake("train_reversal", "the loss never changed, so the weights never did: call optimizer.step() after "
         "loss.backward() in every step.")
def never_steps(model, steps, batch_size, half_len, vocab_size, lr, device=None):
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device, _right, step=False)


@mistake("train_reversal", "every step moved the weights by the full lr, as the first step of a brand-new Adam does: "
         "the optimizer is created inside the loop, so its running averages of the gradients start over at every "
         "step. Create it once, before the loop. (Gradients that are never zeroed pile up and look the same: call "
         "optimizer.zero_grad() before each loss.backward().)")
def optimizer_in_loop(model, steps, batch_size, half_len, vocab_size, lr, device=None):
    return _loop(model, steps, batch_size, half_len, vocab_size, lr, device, _right, optimizer_per_step=True)


# ---------------------------------------------------------------- per_position_accuracy

def _logits(model, batch):
    model.eval()
    with torch.no_grad():
        return model(batch)


@mistake("per_position_accuracy", "each prediction is compared with the token at its own position; the logits at "
         "position i predict the NEXT token, so compare logits[:, :-1].argmax(-1) with batch[:, 1:].")
def compares_own_token(model, batch):
    return (_logits(model, batch)[:, :-1].argmax(-1) == batch[:, :-1]).float().mean(0)


@mistake("per_position_accuracy", "the result has one value per token (2n), the last comparing the final prediction "
         "with the first token of the sequence; the last position predicts nothing, so there are 2n - 1 values.")
def wraps_around(model, batch):
    return (_logits(model, batch).argmax(-1) == batch.roll(-1, dims=1)).float().mean(0)


@mistake("per_position_accuracy", "the accuracy is averaged over the positions of each sequence; average over the "
         "batch instead (dim 0), keeping one value per position.")
def averaged_over_positions(model, batch):
    return (_logits(model, batch)[:, :-1].argmax(-1) == batch[:, 1:]).float().mean(1)


@mistake("per_position_accuracy", "the result counts the correct predictions; divide by the batch size to get a "
         "fraction between 0 and 1 (.float().mean(dim=0)).")
def counts_not_fractions(model, batch):
    return (_logits(model, batch)[:, :-1].argmax(-1) == batch[:, 1:]).float().sum(0)


@mistake("per_position_accuracy", "the model ran in training mode, so dropout changed its predictions: call "
         "model.eval() before measuring.")
def training_mode(model, batch):
    with torch.no_grad():
        logits = model(batch)
    return (logits[:, :-1].argmax(-1) == batch[:, 1:]).float().mean(0)
