"""Mutants and variants for notebook 07 (the named mistakes are in autograder/authoring/mistakes/shakespeare.py)."""
import math
import re
from collections import Counter

import torch
from torch.nn import functional as F

from autograder.authoring.mistakes import for_exercise
from autograder.authoring.mistakes import shakespeare as known
from autograder.authoring.mistakes.shakespeare import _Vocab
from autograder.authoring.reference import shakespeare as ref
from tests.mutants.reversal import beside, unwritten

# ---------------------------------------------------------------- tokenize


def splits_on_spaces_only(text):  # punctuation glued to words
    return [piece for piece in re.split(r"( +)", text) if piece]


def lowercased(text):
    return [piece for piece in re.split(r"\b", text.lower()) if piece]


def characters(text):  # a character-level tokenizer: round-trips, but it is not the spec
    return list(text)


def findall_variant(text):  # VARIANT: runs of word characters and runs of the rest
    return re.findall(r"\w+|\W+", text)


def loop_variant(text):  # VARIANT: a loop over re.split
    tokens = []
    for piece in re.split(r"\b", text):
        if len(piece) > 0:
            tokens.append(piece)
    return tokens


def character_loop(text):  # VARIANT: no regular expression, runs of word / other characters, char by char
    tokens = []
    for ch in text:
        word = ch.isalnum() or ch == "_"
        if tokens and (tokens[-1][-1].isalnum() or tokens[-1][-1] == "_") == word:
            tokens[-1] += ch
        else:
            tokens.append(ch)
    return tokens


# ---------------------------------------------------------------- Vocab

class _Base(_Vocab):
    @classmethod
    def build(cls, tokens, min_freq=1):
        return cls([cls.UNK] + [t for t, c in Counter(tokens).most_common() if c >= min_freq])


class EncodeRaisesOnUnknown(_Base):
    def encode(self, tokens):
        return [self.id_of[t] for t in tokens]


class LenWithoutUnk(_Base):
    def __len__(self):
        return len(self.tokens_by_id) - 1


class LeastFrequentFirst(_Base):
    @classmethod
    def build(cls, tokens, min_freq=1):
        return cls([cls.UNK] + [t for t, c in reversed(Counter(tokens).most_common()) if c >= min_freq])


class DecodeJoins(_Base):  # returns a string
    def decode(self, ids):
        return "".join(self.tokens_by_id[int(i)] for i in ids)


class EncodeTensor(_Base):  # returns a tensor, not a list of ints
    def encode(self, tokens):
        return torch.tensor([self.id_of.get(t, 0) for t in tokens], dtype=torch.long)


class UnpacksKeptPairs(_Base):  # zip(*...) of the kept pairs fails when min_freq keeps no token
    @classmethod
    def build(cls, tokens, min_freq=1):
        if not tokens:
            return cls([cls.UNK])
        kept, _ = zip(*[(t, c) for t, c in Counter(tokens).most_common() if c >= min_freq])
        return cls([cls.UNK] + list(kept))


class ListsVariant(_Base):  # VARIANT: counts in a plain dict, ids of a tensor read with .tolist()
    @classmethod
    def build(cls, tokens, min_freq=1):
        counts = {}
        for t in tokens:
            counts[t] = counts.get(t, 0) + 1
        order = sorted(counts, key=lambda t: -counts[t])  # sorted is stable: ties keep their first appearance
        return cls([cls.UNK] + [t for t in order if counts[t] >= min_freq])

    def decode(self, ids):
        values = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        return [self.tokens_by_id[i] for i in values]


class SortedVariant(_Base):  # VARIANT: an explicit sort with a first-appearance key
    @classmethod
    def build(cls, tokens, min_freq=1):
        counts, first = Counter(), {}
        for i, t in enumerate(tokens):
            counts[t] += 1
            first.setdefault(t, i)
        kept = sorted((t for t in counts if counts[t] >= min_freq), key=lambda t: (-counts[t], first[t]))
        return cls(["<unk>"] + kept)


# ---------------------------------------------------------------- chunk


def windows_one_longer(ids, seq_len):  # seq_len + 1 ids per window
    n = len(ids) // (seq_len + 1)
    return ids[: n * (seq_len + 1)].reshape(n, seq_len + 1)


def one_window_short(ids, seq_len):  # N - 1 windows
    n = len(ids) // seq_len - 1
    return ids[: max(n, 0) * seq_len].reshape(max(n, 0), seq_len)


def tail_kept(ids, seq_len):  # the leftover is dropped from the start
    n = len(ids) // seq_len
    return ids[len(ids) - n * seq_len:].reshape(n, seq_len)


def reshape_minus_one(ids, seq_len):  # .view(n, -1) cannot infer -1 from no ids: fails with fewer ids than seq_len
    n = len(ids) // seq_len
    return ids[: n * seq_len].view(n, -1)


def float_windows(ids, seq_len):
    n = len(ids) // seq_len
    return ids[: n * seq_len].reshape(n, seq_len).float()


def stack_variant(ids, seq_len):  # VARIANT: a list of slices, stacked
    n = len(ids) // seq_len
    if n == 0:
        return ids.new_empty((0, seq_len))
    return torch.stack([ids[i * seq_len: (i + 1) * seq_len] for i in range(n)])


def unfolded(ids, seq_len):  # unfold with a step of seq_len: fails with fewer ids than seq_len
    return ids.unfold(0, seq_len, seq_len)


def list_windows(ids, seq_len):  # VARIANT: plain lists via .tolist(), sizes with int()
    n, width = int(ids.numel()) // int(seq_len), int(seq_len)
    values = ids.tolist()
    rows = [values[i * width: (i + 1) * width] for i in range(n)]
    return torch.tensor(rows, dtype=ids.dtype, device=ids.device).reshape(n, width)


def narrowed(ids, seq_len):  # VARIANT: narrow and view
    n = ids.shape[0] // seq_len
    return ids.narrow(0, 0, n * seq_len).view(n, seq_len)


# ---------------------------------------------------------------- train_val_split


def first_windows_for_validation_and_overlap(chunks, val_fraction=0.1):  # val also the first windows of train
    n_val = round(val_fraction * len(chunks))
    return chunks[: len(chunks) - n_val + 1], chunks[len(chunks) - n_val:]


def val_one_too_many(chunks, val_fraction=0.1):
    n_val = round(val_fraction * len(chunks)) + 2
    return chunks[: len(chunks) - n_val], chunks[len(chunks) - n_val:]


def reversed_order(chunks, val_fraction=0.1):
    n_val = round(val_fraction * len(chunks))
    return chunks[: len(chunks) - n_val].flip(0), chunks[len(chunks) - n_val:].flip(0)


def leaks_random_windows(chunks, val_fraction=0.1):  # a shuffled split whose val windows also go to training
    n_val = round(val_fraction * len(chunks))
    order = torch.randperm(len(chunks))
    return chunks[order[: len(chunks) - n_val // 2]], chunks[order[len(chunks) - n_val:]]


def rounds_half_up(chunks, val_fraction=0.1):  # int(x + 0.5): 4.5 gives 5, but round(4.5) is 4
    n_val = int(val_fraction * len(chunks) + 0.5)
    return chunks[: len(chunks) - n_val], chunks[len(chunks) - n_val:]


def rounds_up(chunks, val_fraction=0.1):
    n_val = math.ceil(val_fraction * len(chunks))
    return chunks[: len(chunks) - n_val], chunks[len(chunks) - n_val:]


def n_val_truncated(chunks, val_fraction=0.1):  # issue 25.5's n_val = int(len(chunks) * val_fraction)
    n_val = int(len(chunks) * val_fraction)
    return chunks[: len(chunks) - n_val], chunks[len(chunks) - n_val:]


def boundary_truncated(chunks, val_fraction=0.1):  # the boundary at int() of the training share
    boundary = int((1 - val_fraction) * chunks.shape[0])
    return chunks[:boundary], chunks[boundary:]


def validation_first(chunks, val_fraction=0.1):  # one contiguous block, but at the start
    n_val = round(val_fraction * len(chunks))
    return chunks[n_val:], chunks[:n_val]


def split_variant(chunks, val_fraction=0.1):  # VARIANT: torch.split
    n_val = round(val_fraction * len(chunks))
    train, val = torch.split(chunks, [len(chunks) - n_val, n_val])
    return train, val


def index_list_variant(chunks, val_fraction=0.1):  # VARIANT: Python lists of row numbers, the size from .shape
    n = int(chunks.shape[0])
    boundary = n - round(val_fraction * n)
    rows = list(range(n))
    pick = lambda numbers: chunks[torch.tensor(numbers, dtype=torch.long, device=chunks.device)]  # noqa: E731
    return pick(rows[:boundary]), pick(rows[boundary:])


# ---------------------------------------------------------------- evaluate

def _loop(model, chunks, batch_size, score):
    was = model.training
    model.eval()
    where = next(model.parameters()).device
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(chunks), batch_size):
            w = chunks[i: i + batch_size].to(where)
            nats, n = score(model, w)
            total, count = total + nats, count + n
    model.train(was)
    return total / count


def predicts_two_ahead(model, chunks, batch_size):
    def score(m, w):
        logits = m(w[:, :-2])
        return F.cross_entropy(logits.flatten(0, 1), w[:, 2:].flatten(), reduction="sum").item(), w[:, 2:].numel()
    return _loop(model, chunks, batch_size, score)


def first_batch_only(model, chunks, batch_size):
    return ref.evaluate(model, chunks[:batch_size], batch_size)


def returns_tensor(model, chunks, batch_size):
    return torch.tensor(ref.evaluate(model, chunks, batch_size))


def counts_every_position(model, chunks, batch_size):  # divides by N * seq_len
    value = ref.evaluate(model, chunks, batch_size)
    return value * (chunks.shape[1] - 1) / chunks.shape[1]


def no_no_grad(model, chunks, batch_size):
    was = model.training
    model.eval()
    where = next(model.parameters()).device
    total, count = 0.0, 0
    for i in range(0, len(chunks), batch_size):
        w = chunks[i: i + batch_size].to(where)
        total += F.cross_entropy(model(w[:, :-1]).flatten(0, 1), w[:, 1:].flatten(), reduction="sum").item()
        count += w[:, 1:].numel()
    model.train(was)
    return total / count


def whole_window_variant(model, chunks, batch_size):  # VARIANT: the whole window in, the last logits dropped
    def score(m, w):
        logits = m(w)[:, :-1]
        return F.cross_entropy(logits.transpose(1, 2), w[:, 1:], reduction="sum").item(), w[:, 1:].numel()
    return _loop(model, chunks, batch_size, score)


def position_loop_variant(model, chunks, batch_size):  # VARIANT: a Python loop over positions, sizes via int()
    def score(m, w):
        logits, nats = m(w[:, :-1]), 0.0
        for t in range(int(w.shape[1]) - 1):
            nats += F.cross_entropy(logits[:, t], w[:, t + 1], reduction="sum").item()
        return nats, int(w.shape[0]) * (int(w.shape[1]) - 1)
    return _loop(model, chunks, batch_size, score)


def weighted_means_variant(model, chunks, batch_size):  # VARIANT: batch means weighted by their token counts
    def score(m, w):
        logits = m(w[:, :-1]).log_softmax(-1)
        picked = logits.gather(-1, w[:, 1:, None]).squeeze(-1)
        return -picked.mean().item() * picked.numel(), picked.numel()
    return _loop(model, chunks, batch_size, score)


# ---------------------------------------------------------------- sample

def _generated(model, vocab, prompt, n_tokens, **kwargs):
    where = next(model.parameters()).device
    ids = torch.tensor([vocab.encode(ref.tokenize(prompt))], device=where)
    return ids, ref.generate(model, ids, n_tokens, **kwargs)


def argmax_always(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    _, out = _generated(model, vocab, prompt, n_tokens, temperature=0)
    return prompt + "".join(vocab.decode(out[0, -n_tokens:].tolist() if n_tokens else []))


def one_token_short(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    ids, out = _generated(model, vocab, prompt, max(n_tokens - 1, 0), temperature=temperature, top_k=top_k,
                          generator=generator)
    return prompt + "".join(vocab.decode(out[0, ids.shape[1]:].tolist()))


def greedy_drawn_at_half_temperature(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    t = temperature if temperature > 0 else 0.5  # "avoid dividing by 0": temperature passed on, greedy lost
    ids, out = _generated(model, vocab, prompt, n_tokens, temperature=t, top_k=top_k, generator=generator)
    return prompt + "".join(vocab.decode(out[0, ids.shape[1]:].tolist()))


def temperature_multiplied(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    t = temperature if temperature == 0 else 1.0 / temperature
    ids, out = _generated(model, vocab, prompt, n_tokens, temperature=t, top_k=top_k, generator=generator)
    return prompt + "".join(vocab.decode(out[0, ids.shape[1]:].tolist()))


def _own_loop(model, vocab, prompt, n_tokens, temperature, top_k, keep, draw):
    """A sampling loop of its own: keep(top_k) logits are kept, draw(logits) picks the next token."""
    where = next(model.parameters()).device
    ids = torch.tensor([vocab.encode(ref.tokenize(prompt))], device=where)
    model.eval()
    with torch.no_grad():
        for _ in range(n_tokens):
            logits = model(ids[:, -model.embedding.max_len:])[:, -1]
            if temperature == 0:
                nxt = logits.argmax(-1, keepdim=True)
            else:
                logits = logits / temperature
                if top_k is not None and top_k < logits.shape[-1]:
                    kth = logits.topk(min(keep(top_k), logits.shape[-1]), dim=-1).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                nxt = draw(logits)
            ids = torch.cat([ids, nxt], dim=1)
    n0 = len(ref.tokenize(prompt))
    return prompt + "".join(vocab.decode(ids[0, n0:].tolist()))


def own_top_k_plus_one(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    """Its own sampling loop, whose top-k keeps k + 1 tokens."""
    return _own_loop(model, vocab, prompt, n_tokens, temperature, top_k, lambda k: k + 1,
                     lambda logits: torch.multinomial(logits.softmax(-1), 1, generator=generator))


tokenize, generate = ref.tokenize, ref.generate  # the notebook's earlier pieces, as notebook_sample reads them


def notebook_sample(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    """VARIANT beside wrong pieces: reads `tokenize` and `generate` from its notebook's globals; sizes with int(),
    the new ids with .tolist(), decoded one by one."""
    where = next(model.parameters()).device
    prompt_ids = torch.tensor([vocab.encode(tokenize(prompt))], dtype=torch.long, device=where)
    written = generate(model, prompt_ids, n_tokens, temperature=temperature, top_k=top_k, generator=generator)
    new_ids = written[0].tolist()[int(prompt_ids.shape[1]):]
    return prompt + "".join(vocab.decode([i])[0] for i in new_ids)


def gumbel_variant(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    """VARIANT: its own loop, Gumbel-max sampling."""
    def draw(logits):
        u = torch.rand(logits.shape, generator=generator, device=logits.device, dtype=logits.dtype)
        return (logits - torch.log(-torch.log(u.clamp_min(1e-12)))).argmax(-1, keepdim=True)
    return _own_loop(model, vocab, prompt, n_tokens, temperature, top_k, lambda k: k, draw)


def windows_left_on_the_cpu(model, chunks, batch_size):  # never moves the windows to the model's device
    def score(m, w):
        w = w.cpu()
        logits = m(w[:, :-1])
        return F.cross_entropy(logits.flatten(0, 1), w[:, 1:].flatten(), reduction="sum").item(), w[:, 1:].numel()
    return _loop(model, chunks, batch_size, score)


def prompt_on_default_device(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    prompt_ids = torch.tensor([vocab.encode(tokenize(prompt))], dtype=torch.long)  # no device=: the CPU
    written = generate(model, prompt_ids, n_tokens, temperature=temperature, top_k=top_k, generator=generator)
    return prompt + "".join(vocab.decode(written[0, prompt_ids.shape[1]:].tolist()))


# ---------------------------------------------------------------- parameter_groups

def one_group(model, weight_decay):  # AdamW's default: one group, all decayed
    return [{"params": list(model.parameters()), "weight_decay": weight_decay}]


def generator_params(model, weight_decay):  # the params of the second group are in both
    return [{"params": list(model.parameters()), "weight_decay": weight_decay},
            {"params": [p for p in model.parameters() if p.dim() < 2], "weight_decay": 0.0}]


def decays_only_linear_weights(model, weight_decay):  # the embedding and the head's weight by name: the embedding spared
    decayed = [p for n, p in model.named_parameters() if n.endswith("weight") and p.dim() >= 2 and "embed" not in n]
    return [{"params": decayed, "weight_decay": weight_decay},
            {"params": [p for p in model.parameters() if all(p is not q for q in decayed)], "weight_decay": 0.0}]


def by_name_variant(model, weight_decay):  # VARIANT: the biases and the norms by name
    quiet = [p for n, p in model.named_parameters() if n.endswith("bias") or "norm" in n]
    loud = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "norm" in n)]
    return [{"params": loud, "weight_decay": weight_decay}, {"params": quiet, "weight_decay": 0.0}]


def undecayed_first_variant(model, weight_decay):  # VARIANT: the groups the other way round, by ndim
    groups = {0.0: [], weight_decay: []}
    for p in model.parameters():
        groups[weight_decay if p.ndim >= 2 else 0.0].append(p)
    return [{"params": params, "weight_decay": decay} for decay, params in groups.items()]


# ---------------------------------------------------------------- learning_rate

def warmup_one_late(step, max_lr, warmup_steps, total_steps, min_lr=0.0):  # nanoGPT's (it + 1) / (warmup + 1)
    if step < warmup_steps:
        return max_lr * (step + 1) / (warmup_steps + 1)
    return ref.learning_rate(step, max_lr, warmup_steps, total_steps, min_lr)


def cosine_without_pi(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + (max_lr - min_lr) * (1 + math.cos(progress)) / 2


def returns_tensor_rate(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    return torch.tensor(ref.learning_rate(step, max_lr, warmup_steps, total_steps, min_lr))


def torch_cos_variant(step, max_lr, warmup_steps, total_steps, min_lr=0.0):  # VARIANT: torch.cos, min() for the warmup
    if step < warmup_steps:
        return max_lr * min(1.0, (step + 1) / warmup_steps)
    progress = torch.tensor((step - warmup_steps) / (total_steps - warmup_steps), dtype=torch.float64)
    return float(min_lr + 0.5 * (max_lr - min_lr) * (1 + torch.cos(torch.pi * progress)))


def sine_squared_variant(step, max_lr, warmup_steps, total_steps, min_lr=0.0):  # VARIANT: (1 + cos x) / 2 = cos²(x/2)
    if step < warmup_steps:
        return (step + 1) * max_lr / warmup_steps
    half_angle = math.pi * (step - warmup_steps) / (total_steps - warmup_steps) / 2
    return min_lr + (max_lr - min_lr) * math.cos(half_angle) ** 2


# ---------------------------------------------------------------- train_model

parameter_groups, learning_rate, evaluate = ref.parameter_groups, ref.learning_rate, ref.evaluate  # as a notebook's


def _training_loop(model, train_windows, val_windows, steps, batch_size, max_lr, warmup_steps, weight_decay, max_grad_norm=1.0,
          eval_every=100, eval_windows=200, generator=None, *, copy=lambda m: {n: v.detach().clone() for n, v in
                                                                                   m.state_dict().items()},
          loss_sum=False, clip_value=False, eval_first=False, batch_on_cpu=False, set_to_none=True,
          zero_grad_at_end=False):
    where = next(model.parameters()).device
    optimizer = torch.optim.AdamW(parameter_groups(model, weight_decay), lr=max_lr)
    history = {"step": [], "train": [], "eval_step": [], "val": [], "best_step": None, "best_val": math.inf}
    best = None
    model.train()
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, max_lr, warmup_steps, steps)
        batch = train_windows[torch.randint(len(train_windows), (batch_size,), generator=generator)]
        batch = batch if batch_on_cpu else batch.to(where)
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten(), reduction="sum" if loss_sum else "mean")
        if not zero_grad_at_end:
            optimizer.zero_grad(set_to_none=set_to_none)
        loss.backward()
        if clip_value:
            torch.nn.utils.clip_grad_value_(model.parameters(), max_grad_norm)
        else:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        if zero_grad_at_end:
            model.zero_grad()
        history["step"].append(step + 1)
        history["train"].append(loss.item())
        due = step % eval_every == 0 if eval_first else (step + 1) % eval_every == 0 or step + 1 == steps
        if due:
            score = evaluate(model, val_windows[:eval_windows], batch_size)
            history["eval_step"].append(step + 1)
            history["val"].append(score)
            if score < history["best_val"]:
                history["best_step"], history["best_val"], best = step + 1, score, copy(model)
    model.load_state_dict(best)
    return history


def best_not_copied(*args, **kwargs):  # state_dict() kept as it is: it follows the model
    return _training_loop(*args, **kwargs, copy=lambda m: m.state_dict())


def summed_loss(*args, **kwargs):  # reduction="sum": the loss and its gradient batch_size * (seq_len - 1) times larger
    return _training_loop(*args, **kwargs, loss_sum=True)


def clips_each_value(*args, **kwargs):  # clip_grad_value_: each entry capped, not the length
    return _training_loop(*args, **kwargs, clip_value=True)


def validates_before_training(*args, **kwargs):  # step % eval_every == 0: after updates 1, 1 + eval_every, ...
    return _training_loop(*args, **kwargs, eval_first=True)


def batch_left_on_the_cpu(*args, **kwargs):
    return _training_loop(*args, **kwargs, batch_on_cpu=True)


def no_clipping(model, train_windows, val_windows, steps, batch_size, max_lr, warmup_steps, weight_decay,
                max_grad_norm=1.0, **kwargs):
    return _training_loop(model, train_windows, val_windows, steps, batch_size, max_lr, warmup_steps, weight_decay, 1e30,
                 **kwargs)


def zero_grad_after_step_variant(*args, **kwargs):  # VARIANT: model.zero_grad() after each update
    return _training_loop(*args, **kwargs, zero_grad_at_end=True)


def zeros_not_none_variant(*args, **kwargs):  # VARIANT: zero_grad(set_to_none=False), deepcopy of the state
    import copy
    return _training_loop(*args, **kwargs, set_to_none=False, copy=lambda m: copy.deepcopy(m.state_dict()))


def best_on_cpu_variant(*args, **kwargs):  # VARIANT: the best weights kept on the CPU
    return _training_loop(*args, **kwargs, copy=lambda m: {n: v.detach().cpu().clone() for n, v in m.state_dict().items()})


MUTANTS = [
    ("tokenize", splits_on_spaces_only), ("tokenize", lowercased), ("tokenize", characters),
    ("Vocab", EncodeRaisesOnUnknown), ("Vocab", LenWithoutUnk), ("Vocab", LeastFrequentFirst), ("Vocab", DecodeJoins),
    ("Vocab", EncodeTensor), ("Vocab", UnpacksKeptPairs),
    ("chunk", windows_one_longer), ("chunk", one_window_short), ("chunk", tail_kept), ("chunk", float_windows),
    ("chunk", reshape_minus_one), ("chunk", unfolded),
    ("train_val_split", first_windows_for_validation_and_overlap), ("train_val_split", val_one_too_many),
    ("train_val_split", reversed_order), ("train_val_split", leaks_random_windows),
    ("train_val_split", rounds_half_up), ("train_val_split", rounds_up), ("train_val_split", n_val_truncated),
    ("train_val_split", boundary_truncated), ("train_val_split", validation_first),
    ("evaluate", predicts_two_ahead), ("evaluate", first_batch_only), ("evaluate", returns_tensor),
    ("evaluate", counts_every_position), ("evaluate", no_no_grad),
    ("evaluate", windows_left_on_the_cpu), ("sample", prompt_on_default_device),
    ("sample", argmax_always), ("sample", one_token_short), ("sample", temperature_multiplied),
    ("sample", own_top_k_plus_one), ("sample", greedy_drawn_at_half_temperature),
    ("parameter_groups", one_group), ("parameter_groups", generator_params),
    ("parameter_groups", decays_only_linear_weights),
    ("learning_rate", warmup_one_late), ("learning_rate", cosine_without_pi), ("learning_rate", returns_tensor_rate),
    ("train_model", best_not_copied), ("train_model", summed_loss), ("train_model", clips_each_value),
    ("train_model", validates_before_training), ("train_model", batch_left_on_the_cpu), ("train_model", no_clipping),
]

# What the visible check's feedback names each of these mutants: the id of a known mistake, or None for no name at
# all (a name is right or absent: tests/test_mistake_names.py).
NAMED_AS = {
    first_windows_for_validation_and_overlap: None,  # some windows in both, but not all of them in training
    reversed_order: None,  # out of order, but not shuffled
    rounds_half_up: None,  # only an exact .5 goes the wrong way
    rounds_up: "validation_rounded_up",
    n_val_truncated: "rounds_down",
    boundary_truncated: "validation_rounded_up",
    validation_first: None,  # one block, but not every k-th window
    greedy_drawn_at_half_temperature: None,  # random at temperature 0, yet the temperature is passed on
    one_group: "decays_everything",
    generator_params: None,  # parameters in two groups
    decays_only_linear_weights: "spares_the_embedding",
    warmup_one_late: None,
    cosine_without_pi: None,
    returns_tensor_rate: None,
    best_not_copied: "keeps_last_weights",
    summed_loss: None,
    clips_each_value: None,
    validates_before_training: None,
    no_clipping: "clips_after_step",
}

# A correct sample beside a wrong or unwritten tokenize or Vocab: the checks tokenize its prompts with stand-ins.
WRONG_TOKENIZERS = [unwritten, *(m.impl for m in for_exercise("tokenize")), splits_on_spaces_only, lowercased,
                    characters]
WRONG_VOCABS = [unwritten, known.no_unk, known.merges_case, EncodeRaisesOnUnknown]

VARIANTS = [
    ("tokenize", findall_variant), ("tokenize", loop_variant), ("tokenize", character_loop),
    ("Vocab", SortedVariant), ("Vocab", ListsVariant),
    ("chunk", stack_variant), ("chunk", list_windows), ("chunk", narrowed),
    ("train_val_split", split_variant), ("train_val_split", index_list_variant),
    ("evaluate", whole_window_variant), ("evaluate", weighted_means_variant), ("evaluate", position_loop_variant),
    ("sample", gumbel_variant), ("sample", notebook_sample),
    *[("sample", beside(notebook_sample, tokenize=wrong)) for wrong in WRONG_TOKENIZERS],
    *[("sample", beside(notebook_sample, Vocab=wrong)) for wrong in WRONG_VOCABS],
    ("parameter_groups", by_name_variant), ("parameter_groups", undecayed_first_variant),
    ("learning_rate", torch_cos_variant), ("learning_rate", sine_squared_variant),
    ("train_model", zero_grad_after_step_variant), ("train_model", zeros_not_none_variant),
    ("train_model", best_on_cpu_variant),
    *[("train_model", beside(ref.train_model, **{name: unwritten})) for name in ("parameter_groups", "learning_rate",
                                                                                 "evaluate")],
]

# Mutants that differ from a correct implementation only on a second real device (tests/test_mutants.py skips them
# where the CPU is the only device, saying so).
NEEDS_SECOND_DEVICE = {windows_left_on_the_cpu, prompt_on_default_device, batch_left_on_the_cpu}
