"""Known mistakes in notebook 07. Each uses the reference for every part it does not get wrong."""
import math
import re
from collections import Counter

import torch
from torch.nn import functional as F

from autograder.authoring.mistakes import mistake
from autograder.authoring.reference import shakespeare as ref

# ---------------------------------------------------------------- tokenize


@mistake("tokenize", "the whitespace tokens are dropped, so the model could never learn to write a space or a line "
         "break, and \"\".join(tokens) no longer gives back the text. Keep every non-empty piece: only the empty "
         "strings go.")
def drops_whitespace(text):
    return [piece for piece in re.split(r"\b", text) if piece.strip()]


@mistake("tokenize", "the empty strings that re.split gives where the text starts or ends with a word are kept; "
         "they are not tokens. Leave out every piece that is \"\".")
def keeps_empty_strings(text):
    return re.split(r"\b", text)


@mistake("tokenize", "the text is split on whitespace (str.split), so punctuation sticks to its word (\"me,\") and "
         "the spaces and line breaks are lost. Split at word boundaries: re.split(r\"\\b\", text).")
def split_on_whitespace(text):
    return text.split()


@mistake("tokenize", "only the words are kept (re.findall(r\"\\w+\", ...)): the punctuation, spaces and line breaks "
         "between them are tokens too. Use re.split(r\"\\b\", text) and drop only the empty strings.")
def words_only(text):
    return re.findall(r"\w+", text)


@mistake("tokenize", "each token is stripped of its spaces, so \" \" and \", \" become \"\" and \",\". Keep the "
         "pieces exactly as re.split gives them; only drop the empty ones.")
def strips_tokens(text):
    return [piece.strip() for piece in re.split(r"\b", text) if piece]


# ---------------------------------------------------------------- Vocab

class _Vocab:
    """A vocabulary from a list of tokens by id, with the reference's encode, decode and len."""

    UNK = "<unk>"

    def __init__(self, tokens_by_id):
        self.tokens_by_id = list(tokens_by_id)
        self.id_of = {t: i for i, t in enumerate(self.tokens_by_id)}

    def __len__(self):
        return len(self.tokens_by_id)

    def encode(self, tokens):
        return [self.id_of.get(t, 0) for t in tokens]

    def decode(self, ids):
        return [self.tokens_by_id[int(i)] for i in ids]


@mistake("Vocab", "the ids are in alphabetical order (sorted(set(tokens))); they should go from the most to the least "
         "frequent token, ties in order of first appearance: Counter(tokens).most_common().")
class alphabetical_ids(_Vocab):
    @classmethod
    def build(cls, tokens, min_freq=1):
        counts = Counter(tokens)
        return cls([cls.UNK] + sorted(t for t in counts if counts[t] >= min_freq))


@mistake("Vocab", "the ids follow the order in which the tokens first appear; they should go from the most to the "
         "least frequent token (Counter(tokens).most_common()), so id 1 is the most common token.")
class first_appearance_ids(_Vocab):
    @classmethod
    def build(cls, tokens, min_freq=1):
        counts = Counter(tokens)
        return cls([cls.UNK] + [t for t in counts if counts[t] >= min_freq])


@mistake("Vocab", "a token seen exactly min_freq times is left out; min_freq keeps every token seen AT LEAST min_freq "
         "times (count >= min_freq).")
class min_freq_exclusive(_Vocab):
    @classmethod
    def build(cls, tokens, min_freq=1):
        return cls([cls.UNK] + [t for t, c in Counter(tokens).most_common() if c > min_freq])


@mistake("Vocab", "<unk> has no id of its own: the first token got id 0. Id 0 is \"<unk>\", and the tokens start at "
         "id 1.")
class no_unk(_Vocab):
    @classmethod
    def build(cls, tokens, min_freq=1):
        return cls([t for t, c in Counter(tokens).most_common() if c >= min_freq])


@mistake("Vocab", "<unk> is the last id instead of id 0. Put \"<unk>\" first, so that unknown tokens encode to 0.")
class unk_last(_Vocab):
    @classmethod
    def build(cls, tokens, min_freq=1):
        return cls([t for t, c in Counter(tokens).most_common() if c >= min_freq] + [cls.UNK])

    def encode(self, tokens):
        return [self.id_of.get(t, len(self) - 1) for t in tokens]


@mistake("Vocab", "tokens that differ only in case (\"The\" and \"the\") share one id: the tokens were lower-cased. A "
         "token is its exact text, so keep the case: the model has to learn to write capitals too.")
class merges_case(_Vocab):
    @classmethod
    def build(cls, tokens, min_freq=1):
        return cls([cls.UNK] + [t for t, c in Counter(t.lower() for t in tokens).most_common() if c >= min_freq])

    def encode(self, tokens):
        return [self.id_of.get(t.lower(), 0) for t in tokens]


# ---------------------------------------------------------------- chunk


@mistake("chunk", "the windows overlap: one starts at every position. Each token then appears in seq_len windows, "
         "so the model sees every passage seq_len times per pass and memorises it. Cut the ids into consecutive "
         "windows that do not overlap: ids[:N * seq_len].reshape(N, seq_len).")
def overlapping_windows(ids, seq_len):
    return ids.unfold(0, seq_len, 1)


@mistake("chunk", "each window starts on the last id of the one before (windows overlap by one id). The shift "
         "between input and target happens inside a window (w[:-1] -> w[1:]); the windows themselves do not "
         "overlap.")
def overlap_by_one(ids, seq_len):
    return ids.unfold(0, seq_len, seq_len - 1)


@mistake("chunk", "the rows are not consecutive ids: the ids were laid out in seq_len rows and then transposed, so "
         "each window takes every N-th id. Reshape straight to (N, seq_len).")
def strided_windows(ids, seq_len):
    n = len(ids) // seq_len
    return ids[: n * seq_len].reshape(seq_len, n).T


@mistake("chunk", "the leftover ids at the end are padded into a last, shorter window with zeros. N is "
         "len(ids) // seq_len: drop the leftover ids instead.")
def pads_last_window(ids, seq_len):
    n = -(-len(ids) // seq_len)
    padded = torch.zeros(n * seq_len, dtype=ids.dtype)
    padded[: len(ids)] = ids
    return padded.reshape(n, seq_len)


# ---------------------------------------------------------------- train_val_split


@mistake("train_val_split", "the windows were shuffled before the split, so almost every validation window has its "
         "neighbours (the same scene, the same speech) in the training set, and the validation loss rewards "
         "memorising. Split without shuffling: the last windows for validation.")
def shuffled_split(chunks, val_fraction=0.1):
    order = torch.randperm(len(chunks), generator=torch.Generator().manual_seed(0))
    n_val = round(val_fraction * len(chunks))
    return chunks[order[: len(chunks) - n_val]], chunks[order[len(chunks) - n_val:]]


@mistake("train_val_split", "the training set is all the windows, so the validation windows are in it too: the "
         "model is judged on text it trained on. Training gets only the windows before the validation ones.")
def validation_also_trained_on(chunks, val_fraction=0.1):
    n_val = round(val_fraction * len(chunks))
    return chunks, chunks[len(chunks) - n_val:]


@mistake("train_val_split", "the fractions are swapped: val_fraction is the share of the windows that goes to "
         "VALIDATION (0.1 means 10%).")
def fractions_swapped(chunks, val_fraction=0.1):
    n_train = round(val_fraction * len(chunks))
    return chunks[:n_train], chunks[n_train:]


@mistake("train_val_split", "every k-th window goes to validation, so each one sits between two training windows "
         "of the same passage. Keep validation in one contiguous block: the last windows.")
def interleaved_split(chunks, val_fraction=0.1):
    step = max(1, round(1 / val_fraction)) if val_fraction > 0 else len(chunks) + 1
    picked = torch.zeros(len(chunks), dtype=torch.bool)
    picked[step - 1::step] = True
    return chunks[~picked], chunks[picked]


@mistake("train_val_split", "when round(val_fraction * N) is 0, every window went to validation and none to training: "
         "chunks[-0:] is the whole tensor, because -0 is 0. Slice at the boundary len(chunks) - n_val instead: "
         "chunks[:boundary], chunks[boundary:].")
def negative_zero_index(chunks, val_fraction=0.1):
    n_val = round(val_fraction * len(chunks))
    return chunks[:-n_val], chunks[-n_val:]


@mistake("train_val_split", "the number of validation windows is rounded down (int() cuts off the fraction: int(3.75) "
         "is 3); it should be round(val_fraction * N), the nearest whole number.")
def rounds_down(chunks, val_fraction=0.1):
    n_val = int(val_fraction * len(chunks))
    return chunks[: len(chunks) - n_val], chunks[len(chunks) - n_val:]


@mistake("train_val_split", "the number of validation windows is rounded up: int() on the training share, "
         "int(N * (1 - val_fraction)), cuts off its fraction and leaves that window to validation "
         "(math.ceil(val_fraction * N) does the same). Count n_val = round(val_fraction * N) first and give training "
         "the rest.")
def validation_rounded_up(chunks, val_fraction=0.1):  # nanoGPT's data[:int(n * 0.9)]
    n_train = int(len(chunks) * (1 - val_fraction))
    return chunks[:n_train], chunks[n_train:]


# ---------------------------------------------------------------- evaluate

def _scores(model, chunks, batch_size, loss_of, *, eval_mode=True, restore=True, per_batch_mean=False):
    was_training = model.training
    if eval_mode:
        model.eval()
    where = next(model.parameters()).device
    total, count, means = 0.0, 0, []
    with torch.no_grad():
        for first in range(0, len(chunks), batch_size):
            windows = chunks[first: first + batch_size].to(where)
            nats, n = loss_of(model, windows)
            total, count = total + nats, count + n
            means.append(nats / n)
    if restore:
        model.train(was_training)
    return sum(means) / len(means) if per_batch_mean else total / count


def _next_token(model, windows):
    logits = model(windows[:, :-1])
    return F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten(), reduction="sum").item(), \
        windows[:, 1:].numel()


@mistake("evaluate", "each prediction is scored against the token at its own position (windows[:, :-1]); the logits "
         "at position t predict the NEXT token, so the targets are windows[:, 1:].")
def same_position_targets(model, chunks, batch_size):
    def loss_of(m, w):
        logits = m(w[:, :-1])
        return F.cross_entropy(logits.flatten(0, 1), w[:, :-1].flatten(), reduction="sum").item(), w[:, 1:].numel()
    return _scores(model, chunks, batch_size, loss_of)


@mistake("evaluate", "the result is the mean of the batch means, which gives the tokens of a smaller last batch "
         "more weight. Add up the losses of all tokens (reduction=\"sum\") and divide by the number of tokens.")
def mean_of_batch_means(model, chunks, batch_size):
    return _scores(model, chunks, batch_size, _next_token, per_batch_mean=True)


@mistake("evaluate", "the model ran in training mode, so dropout changed its predictions: call model.eval() "
         "before measuring (and put it back in its mode afterwards).")
def training_mode(model, chunks, batch_size):
    return _scores(model, chunks, batch_size, _next_token, eval_mode=False)


@mistake("evaluate", "the result is in bits (log base 2); report nats, the natural log that F.cross_entropy uses.")
def returns_bits(model, chunks, batch_size):
    return _scores(model, chunks, batch_size, _next_token) / torch.log(torch.tensor(2.0)).item()


@mistake("evaluate", "the result is the perplexity, exp(loss); return the loss itself in nats per token (the "
         "notebook turns it into a perplexity where it needs one).")
def returns_perplexity(model, chunks, batch_size):
    return float(torch.tensor(_scores(model, chunks, batch_size, _next_token)).exp())


@mistake("evaluate", "the model was left in eval mode. Training goes on after each evaluation, so put the model back "
         "in the mode it was in: model.train(was_training).")
def leaves_eval_mode(model, chunks, batch_size):
    return _scores(model, chunks, batch_size, _next_token, restore=False)


# ---------------------------------------------------------------- sample

def _new_ids(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    where = next(model.parameters()).device
    prompt_ids = torch.tensor([vocab.encode(ref.tokenize(prompt))], dtype=torch.long, device=where)
    written = ref.generate(model, prompt_ids, n_tokens, temperature=temperature, top_k=top_k, generator=generator)
    return prompt_ids, written[0, prompt_ids.shape[1]:].tolist()


@mistake("sample", "the temperature is not passed on, so every sample is drawn at temperature 1. Give generate "
         "temperature=temperature.")
def ignores_temperature(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    _, new = _new_ids(model, vocab, prompt, n_tokens, 1.0, top_k, generator)
    return prompt + "".join(vocab.decode(new))


@mistake("sample", "top_k keeps one token too many (k + 1). With top_k=k only the k most likely tokens may be drawn.")
def top_k_keeps_one_more(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    _, new = _new_ids(model, vocab, prompt, n_tokens, temperature, None if top_k is None else top_k + 1, generator)
    return prompt + "".join(vocab.decode(new))


@mistake("sample", "the result is only the new text; it should be the prompt followed by the new text.")
def drops_prompt(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    _, new = _new_ids(model, vocab, prompt, n_tokens, temperature, top_k, generator)
    return "".join(vocab.decode(new))


@mistake("sample", "the tokens are joined with spaces; the spaces are tokens of their own, so join with \"\" "
         "(\"\".join(...)).")
def joined_with_spaces(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    _, new = _new_ids(model, vocab, prompt, n_tokens, temperature, top_k, generator)
    return " ".join([prompt] + vocab.decode(new))


@mistake("sample", "the prompt is decoded from its ids, so a word the vocabulary does not know comes back as "
         "<unk>. Keep the prompt string as it was given and add the decoded new tokens to it.")
def prompt_decoded(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    prompt_ids, new = _new_ids(model, vocab, prompt, n_tokens, temperature, top_k, generator)
    return "".join(vocab.decode(prompt_ids[0].tolist() + new))


@mistake("sample", "the new tokens were taken as written[0, -n_tokens:], which for n_tokens=0 is the whole sequence "
         "(-0 is 0), so the prompt came back twice. Take the new tokens from the prompt's length on: "
         "written[0, T0:].")
def new_tokens_by_negative_index(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    where = next(model.parameters()).device
    prompt_ids = torch.tensor([vocab.encode(ref.tokenize(prompt))], dtype=torch.long, device=where)
    written = ref.generate(model, prompt_ids, n_tokens, temperature=temperature, top_k=top_k, generator=generator)
    return prompt + "".join(vocab.decode(written[0, -n_tokens:].tolist()))


@mistake("sample", "the generator is not passed on, so the same seed gives different text. Give generate "
         "generator=generator.")
def ignores_generator(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    _, new = _new_ids(model, vocab, prompt, n_tokens, temperature, top_k, None)
    return prompt + "".join(vocab.decode(new))


# ---------------------------------------------------------------- parameter_groups

def _split(model, weight_decay, decayed):
    named = list(model.named_parameters())
    return [{"params": [p for n, p in named if decayed(n, p)], "weight_decay": weight_decay},
            {"params": [p for n, p in named if not decayed(n, p)], "weight_decay": 0.0}]


@mistake("parameter_groups", "every parameter is decayed, the biases and the LayerNorm weights too. Weight decay pulls "
         "each weight towards 0: right for the weight matrices, but a LayerNorm weight at 0 switches its feature off "
         "and a bias has no reason to be 0. Put the parameters with p.dim() < 2 in the group with weight_decay 0.0.")
def decays_everything(model, weight_decay):
    return _split(model, weight_decay, lambda n, p: True)


@mistake("parameter_groups", "the groups are the wrong way round: the biases and LayerNorm weights are decayed and the "
         "matrices are not. The matrices (p.dim() >= 2) get weight_decay, the rest 0.0.")
def decays_the_vectors(model, weight_decay):
    return _split(model, weight_decay, lambda n, p: p.dim() < 2)


@mistake("parameter_groups", "only the parameters named \"bias\" are kept from decay, so the LayerNorm weights are "
         "decayed. Tell them apart by shape: every parameter with p.dim() < 2 (biases and LayerNorm weights) goes in "
         "the group with weight_decay 0.0.")
def decays_the_norm_weights(model, weight_decay):
    return _split(model, weight_decay, lambda n, p: not n.endswith("bias"))


@mistake("parameter_groups", "the embedding table is kept from decay. It is a matrix like the others (one row per "
         "token) and is decayed with them: only the parameters with p.dim() < 2 go in the group with weight_decay "
         "0.0.")
def spares_the_embedding(model, weight_decay):
    return _split(model, weight_decay, lambda n, p: p.dim() >= 2 and "embed" not in n)


# ---------------------------------------------------------------- learning_rate

def _rate(step, max_lr, warmup_steps, total_steps, min_lr, *, warmup_from=1, decay_from=None, shape="cosine",
          floor=True):
    if step < warmup_steps:
        return max_lr * (step + warmup_from) / warmup_steps
    start = warmup_steps if decay_from is None else decay_from
    progress = (step - start) / (total_steps - start)
    low = min_lr if floor else 0.0
    if shape == "constant":
        return max_lr
    if shape == "linear":
        return low + (max_lr - low) * (1 - progress)
    return low + (max_lr - low) * (1 + math.cos(math.pi * progress)) / 2


@mistake("learning_rate", "the warmup starts at 0: max_lr * step / warmup_steps makes the first update a step of size "
         "0, wasted, and reaches max_lr one update late. Count the update being made: max_lr * (step + 1) / "
         "warmup_steps.")
def warmup_from_zero(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    return _rate(step, max_lr, warmup_steps, total_steps, min_lr, warmup_from=0)


@mistake("learning_rate", "the cosine starts at step 0 instead of at the end of the warmup, so the decay has already "
         "gone part of the way when it begins. progress = (step - warmup_steps) / (total_steps - warmup_steps).")
def decay_from_step_zero(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    return _rate(step, max_lr, warmup_steps, total_steps, min_lr, decay_from=0)


@mistake("learning_rate", "after the warmup the rate stays at max_lr: there is no decay. Follow the cosine from max_lr "
         "down to min_lr: min_lr + (max_lr - min_lr) * (1 + cos(pi * progress)) / 2.")
def no_decay(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    return _rate(step, max_lr, warmup_steps, total_steps, min_lr, shape="constant")


@mistake("learning_rate", "the decay is a straight line, not the cosine. The cosine stays near max_lr for longer and "
         "flattens out near min_lr: (1 + cos(pi * progress)) / 2 goes from 1 to 0 along half a cosine wave.")
def linear_decay(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    return _rate(step, max_lr, warmup_steps, total_steps, min_lr, shape="linear")


@mistake("learning_rate", "the decay ends at 0, not at min_lr: the cosine's part is (max_lr - min_lr) * (1 + "
         "cos(pi * progress)) / 2, added to min_lr.")
def decays_to_zero(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    return _rate(step, max_lr, warmup_steps, total_steps, min_lr, floor=False)


# ---------------------------------------------------------------- train_model

from autograder.authoring.reference.shakespeare import evaluate, learning_rate, parameter_groups  # noqa: E402
# (the names a training loop reads from its notebook: the checks put stand-ins in their place)


def _train(model, train_windows, val_windows, steps, batch_size, max_lr, warmup_steps, weight_decay,
           max_grad_norm=1.0, eval_every=100, eval_windows=200, generator=None, *, zero_grad=True, clip="before",
           rate_of=lambda step: step, rate_after_step=False, groups=True, keep_best=True, train_mode=True,
           inline_validation=None):
    where = next(model.parameters()).device
    optimizer = torch.optim.AdamW(parameter_groups(model, weight_decay) if groups else model.parameters(), lr=max_lr,
                                  weight_decay=weight_decay)
    history = {"step": [], "train": [], "eval_step": [], "val": [], "best_step": None, "best_val": math.inf}
    best = None
    if train_mode:
        model.train()

    def set_rate(step):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(rate_of(step), max_lr, warmup_steps, steps)

    for step in range(steps):
        if not rate_after_step:
            set_rate(step)
        batch = train_windows[torch.randint(len(train_windows), (batch_size,), generator=generator)].to(where)
        loss = F.cross_entropy(model(batch[:, :-1]).flatten(0, 1), batch[:, 1:].flatten())
        if zero_grad:
            optimizer.zero_grad()
        loss.backward()
        if clip == "before":
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        if clip == "after":
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        if rate_after_step:
            set_rate(step)
        history["step"].append(step + 1)
        history["train"].append(loss.item())
        if (step + 1) % eval_every == 0 or step + 1 == steps:
            if inline_validation is None:
                score = evaluate(model, val_windows[:eval_windows], batch_size)
            else:
                score = inline_validation(model, val_windows[:eval_windows].to(where))
            history["eval_step"].append(step + 1)
            history["val"].append(score)
            if score < history["best_val"]:
                history["best_step"], history["best_val"] = step + 1, score
                best = {n: v.detach().clone() for n, v in model.state_dict().items()}
    if keep_best and best is not None:
        model.load_state_dict(best)
    return history


def _scored_in(training: bool, gradients: bool):
    def score(model, windows):
        model.train(training)
        with torch.set_grad_enabled(gradients):
            logits = model(windows[:, :-1])
            value = F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten()).item()
        model.train()
        return value
    return score


@mistake("train_model", "the gradients are never cleared, so each update adds its gradient to all the ones before: "
         "loss.backward() accumulates into .grad. Call optimizer.zero_grad() before each loss.backward().")
def no_zero_grad(*args, **kwargs):
    return _train(*args, **kwargs, zero_grad=False)


@mistake("train_model", "the gradients are not clipped before the update. Clipping after optimizer.step() changes "
         "nothing (the update has been made, and the next step clears the gradients): call "
         "torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm) between loss.backward() and "
         "optimizer.step().")
def clips_after_step(*args, **kwargs):
    return _train(*args, **kwargs, clip="after")


@mistake("train_model", "the learning rate of each update is the schedule's rate for the next one: "
         "learning_rate(step + 1, ...) where update `step` (from 0) needs learning_rate(step, ...).")
def schedule_one_step_late(*args, **kwargs):
    return _train(*args, **kwargs, rate_of=lambda step: step + 1)


@mistake("train_model", "the learning rate is set after optimizer.step(), so every update runs at the rate meant for "
         "the one before (and the first at max_lr, skipping the warmup). Set the rate of update `step` before its "
         "optimizer.step().")
def rate_set_after_step(*args, **kwargs):
    return _train(*args, **kwargs, rate_after_step=True)


@mistake("train_model", "the optimizer is made from model.parameters(), so parameter_groups is not used and every "
         "parameter is decayed. Make it from parameter_groups(model, weight_decay).")
def ignores_groups(*args, **kwargs):
    return _train(*args, **kwargs, groups=False)


@mistake("train_model", "the model ends with the weights of its last update, not those of its best validation score. "
         "Copy the weights when a score is the best so far ({name: value.detach().clone() for name, value in "
         "model.state_dict().items()}: state_dict() alone gives tensors that later updates change) and "
         "model.load_state_dict(...) them at the end.")
def keeps_last_weights(*args, **kwargs):
    return _train(*args, **kwargs, keep_best=False)


@mistake("train_model", "the model was never put in training mode, and it arrived in eval mode, so dropout stayed off "
         "while it trained. Call model.train() before the first update.")
def trains_in_eval_mode(*args, **kwargs):
    return _train(*args, **kwargs, train_mode=False)


@mistake("train_model", "the validation windows were scored in training mode (dropout on), which makes the score "
         "noisier and worse than the model is. evaluate(model, val_windows[:eval_windows], batch_size) runs the model "
         "in eval mode.")
def validates_in_training_mode(*args, **kwargs):
    return _train(*args, **kwargs, inline_validation=_scored_in(training=True, gradients=False))


@mistake("train_model", "the validation windows were scored with gradients on: PyTorch kept every activation for a "
         "backward pass that never comes, memory for nothing. evaluate(model, val_windows[:eval_windows], batch_size) "
         "runs the model without gradients.")
def validates_with_gradients(*args, **kwargs):
    return _train(*args, **kwargs, inline_validation=_scored_in(training=False, gradients=True))
