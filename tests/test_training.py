"""course.training.train_language_model never ends worse than its best, and stops early when asked (issue 16); on a
GPU neither it nor notebook 06's reference reversal loop makes the CPU wait for the GPU at every step.

A run is made to overfit on the CPU in about a second: a tiny model, four training windows and 64 distinct
validation windows drawn from one Markov chain (each token has three equally likely successors, so the best
possible loss is ln 3 = 1.10 nats and a model that knows nothing scores ln 32 = 3.47). At lr 1e-2 the model
first learns the chain (validation falls to about 2.30 at step 20) and then memorises its four windows
(validation climbs past 4.5 by step 150): the best weights are far from the last ones.
"""
import math

import pytest
import torch

from autograder.authoring.reference.shakespeare import evaluate
from autograder.authoring.reference.transformer import DecoderOnlyTransformer
from course.training import train_language_model

VOCAB, SEQ_LEN = 32, 33
SAME = 1e-9  # the restored weights score the best validation exactly: same weights, same windows, same arithmetic


def markov_windows(n: int, seed: int) -> torch.Tensor:
    """n windows (n, SEQ_LEN) of one fixed Markov chain: each token is followed by one of its 3 successors."""
    successors = torch.stack([torch.randperm(VOCAB, generator=torch.Generator().manual_seed(t))[:3]
                              for t in range(VOCAB)])  # (VOCAB, 3)
    draw = torch.Generator().manual_seed(seed)
    windows = torch.empty(n, SEQ_LEN, dtype=torch.long)
    windows[:, 0] = torch.randint(VOCAB, (n,), generator=draw)
    for t in range(1, SEQ_LEN):
        windows[:, t] = successors[windows[:, t - 1], torch.randint(3, (n,), generator=draw)]
    return windows


FEW_TRAIN, VAL, MANY_TRAIN = markov_windows(4, seed=1), markov_windows(64, seed=2), markov_windows(1024, seed=3)


@pytest.fixture(autouse=True)
def one_thread():
    """Torch on one thread: on a busy two-core machine its threads fight and training runs ten times slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_model() -> DecoderOnlyTransformer:
    torch.manual_seed(0)
    return DecoderOnlyTransformer(VOCAB, d_model=32, n_heads=2, d_ff=64, n_layers=2, max_len=SEQ_LEN)


def overfit(model, **kwargs) -> dict:
    """Four training windows at lr 1e-2, validated every 5 steps on all 64 validation windows."""
    settings = dict(max_steps=150, batch_size=4, lr=1e-2, warmup_steps=1, eval_every=5, eval_windows=len(VAL),
                    weight_decay=0.0)
    return train_language_model(model, FEW_TRAIN, VAL, evaluate, **{**settings, **kwargs})


def score(model, batch_size: int = 4) -> float:
    """The model's validation score, in batches of the size the training validated with (the same sums in the same
    order, so an equal score is equal to the last digit)."""
    return evaluate(model, VAL, batch_size)


def test_an_overfitting_run_ends_with_its_best_weights(capsys):
    model = tiny_model()
    history = overfit(model)
    last = history["val"][-1]  # the last step's weights, scored before the best ones came back
    assert history["best_val"] == min(history["val"])
    assert history["best_step"] == history["eval_step"][history["val"].index(min(history["val"]))]
    assert last > history["best_val"] + 1.0, f"the run must overfit for this test to mean anything ({history['val']})"
    assert history["restored"] and not history["stopped_early"]
    assert history["step"][-1] == 150 and history["eval_step"][-1] == 150
    now = score(model)
    assert now == pytest.approx(history["best_val"], abs=SAME), \
        f"the model scores {now:.6f}, not the best validation {history['best_val']:.6f}: the best weights were not restored"
    assert now < last - 1.0, f"the model scores {now:.3f}, no better than the last step's {last:.3f}"
    out = capsys.readouterr().out
    assert f"Kept the best weights, from step {history['best_step']}" in out and f"{last:.3f}" in out
    assert model.training, "training leaves the model in training mode"


def test_without_keep_best_the_last_weights_stay():
    model = tiny_model()
    history = overfit(model, keep_best=False)
    assert not history["restored"] and history["best_val"] < history["val"][-1] - 1.0
    assert score(model) == pytest.approx(history["val"][-1], abs=SAME)


def test_patience_stops_the_run_and_says_so(capsys):
    model = tiny_model()
    history = overfit(model, patience=3)
    assert history["stopped_early"] and history["restored"]
    assert history["step"][-1] < 150, "patience 3 should end the run long before its 150 steps"
    assert history["eval_step"][-1] == history["best_step"] + 3 * 5, "three validations without improvement, no more"
    assert all(v > history["best_val"] for v in history["val"][-3:])
    assert score(model) == pytest.approx(history["best_val"], abs=SAME)
    out = capsys.readouterr().out
    assert f"Stopped early after {history['step'][-1]} of the 150 planned steps" in out
    assert "not improved for 3 evaluations" in out


@pytest.mark.every_cpu
def test_an_interrupted_run_ends_with_its_best_weights_and_says_how_many_steps_ran(capsys):
    """The stop button (a KeyboardInterrupt) ends training, not the function: the run is validated, its best
    weights come back, and one line says how many of the planned steps ran."""
    def stop_at_step_100(step: int, seconds: float) -> None:
        if step == 100:
            raise KeyboardInterrupt

    model = tiny_model()
    history = overfit(model, after_step=stop_at_step_100)
    assert history["interrupted"] and history["planned_steps"] == 150 and not history["stopped_early"]
    assert history["step"] == list(range(1, 101)) and len(history["train"]) == 100
    assert history["eval_step"][-1] == 100 and history["restored"]
    assert score(model) == pytest.approx(history["best_val"], abs=SAME)
    assert "Interrupted after 100 of the 150 planned steps" in capsys.readouterr().out


def test_the_time_budget_says_how_many_of_the_planned_steps_ran(monkeypatch, capsys):
    """A run stopped by `minutes` says so, with the planned steps; one that ends at its last step within the
    budget says nothing of the kind."""
    import course.training

    clock = iter(range(0, 10**6, 10))  # every reading of the clock is 10 s later than the one before
    monkeypatch.setattr(course.training.time, "perf_counter", lambda: next(clock))
    history = overfit(tiny_model(), minutes=2)
    assert history["step"][-1] < 150 and not history["interrupted"]
    assert f"Stopped after {history['step'][-1]} of the 150 planned steps: the 2-minute budget is spent." in \
        capsys.readouterr().out
    monkeypatch.undo()
    overfit(tiny_model(), max_steps=10, minutes=60)
    assert "budget" not in capsys.readouterr().out


def test_the_first_steps_give_an_estimate_of_the_whole_run(monkeypatch, capsys):
    """After estimate_after steps one line says how long they took and what all the planned steps will take at
    that pace (validation excluded): with the clock a quarter of a second later at each reading, 20 steps take
    about 10 s and 150 steps 7.5 times as long; a run of fewer steps prints none."""
    import re

    import course.training

    clock = iter(x / 4 for x in range(10**6))
    monkeypatch.setattr(course.training.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(course.training, "READ_EVERY_SECONDS", math.inf)  # a few readings of the clock a step
    overfit(tiny_model(), estimate_after=20, eval_every=1000)
    took, total = re.search(r"The first 20 steps took (\d+) s: at this pace the 150 planned steps take about "
                            r"(\d+) seconds on this machine, validation not counted", capsys.readouterr().out).groups()
    assert 8 <= int(took) <= 20 and abs(int(total) - 7.5 * int(took)) <= 7.5 * 0.5 + 1, (took, total)
    overfit(tiny_model(), max_steps=20, estimate_after=20)
    assert "The first" not in capsys.readouterr().out


def test_durations_read_as_a_person_says_them():
    from course.training import _duration

    assert [_duration(s) for s in (0.2, 40, 89, 90, 600, 89 * 60, 90 * 60, 5400 + 1800)] == \
        ["1 second", "40 seconds", "89 seconds", "2 minutes", "10 minutes", "89 minutes", "1.5 hours", "2.0 hours"]


def test_a_run_that_never_overfits_keeps_its_last_weights(capsys):
    """Plenty of training windows and a gentle rate: validation improves at every evaluation."""
    model = tiny_model()
    history = train_language_model(model, MANY_TRAIN, VAL, evaluate, max_steps=60, batch_size=8, lr=3e-3,
                                   warmup_steps=1, eval_every=5, eval_windows=len(VAL), weight_decay=0.0, patience=2)
    assert all(b < a for a, b in zip(history["val"], history["val"][1:])), history["val"]
    assert history["best_step"] == 60 and not history["restored"] and not history["stopped_early"]
    assert score(model, batch_size=8) == pytest.approx(history["val"][-1], abs=SAME)
    assert "Kept the best" not in capsys.readouterr().out


def test_weight_decay_is_a_knob():
    """AdamW's decay shrinks every weight by lr * weight_decay a step: a large one leaves visibly smaller weights."""
    norms = {}
    for weight_decay in (0.0, 10.0):
        model = tiny_model()
        train_language_model(model, MANY_TRAIN, VAL, evaluate, max_steps=20, batch_size=8, lr=1e-2, warmup_steps=1,
                             eval_windows=4, weight_decay=weight_decay)
        norms[weight_decay] = math.sqrt(sum(p.detach().pow(2).sum().item() for p in model.parameters()))
    assert norms[10.0] < 0.5 * norms[0.0], norms


def test_patience_must_be_positive():
    with pytest.raises(ValueError, match="patience"):
        train_language_model(tiny_model(), FEW_TRAIN, VAL, evaluate, max_steps=1, patience=0)


def test_losses_read_in_groups_are_every_steps_loss(monkeypatch):
    """Losses kept on the device and read together at the end are the same floats, one per step, as losses read
    after every step."""
    import course.training

    def run(read_every: float) -> dict:
        monkeypatch.setattr(course.training, "READ_EVERY_SECONDS", read_every)
        return train_language_model(tiny_model(), MANY_TRAIN, VAL, evaluate, max_steps=40, batch_size=4, lr=3e-3,
                                    eval_every=1000, eval_windows=8)

    each_step, at_the_end = run(0.0), run(math.inf)
    assert len(at_the_end["train"]) == 40 and all(type(x) is float for x in at_the_end["train"])
    assert at_the_end["train"] == each_step["train"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: counts the waits for the GPU (none on a CPU)")
def test_a_gpu_run_does_not_wait_for_the_gpu_at_every_step(monkeypatch):
    """On CUDA, 200 steps make the CPU wait for the GPU a few times (the grouped loss reads, the one validation), not
    once or twice a step as a per-step `.item()` and a copy from ordinary memory do. PyTorch's sync debug mode warns
    at every such wait."""
    import warnings

    import course.training

    monkeypatch.setattr(course.training, "READ_EVERY_SECONDS", math.inf)
    model = tiny_model()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            history = train_language_model(model, MANY_TRAIN, VAL, evaluate, max_steps=200, batch_size=8, lr=3e-3,
                                           eval_every=1000, eval_windows=8, device=torch.device("cuda"))
        finally:
            torch.cuda.set_sync_debug_mode("default")
    waits = [w for w in seen if "synchroniz" in str(w.message).lower()]
    assert len(history["train"]) == 200
    assert len(waits) < 50, f"{len(waits)} waits for the GPU in 200 steps; the first: {waits[0].message}"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: counts the waits for the GPU (none on a CPU)")
def test_the_reference_reversal_loop_does_not_wait_for_the_gpu_at_every_step():
    """Notebook 06's own loop (the reference train_reversal, which its text recommends) reads its losses every 50
    steps and copies its batches from page-locked memory: 200 steps make the CPU wait a few times, not 400."""
    import warnings

    from autograder.authoring.reference import reversal as ref

    torch.manual_seed(0)
    model = ref.DecoderOnlyTransformer(vocab_size=10, d_model=32, n_heads=4, d_ff=64, n_layers=2, max_len=12)
    model.to("cuda")  # copying the 38 weights and buffers waits once each: that is set-up, not the loop's steps
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            losses = ref.train_reversal(model, 200, 1024, 6, 10, 1e-2, device=torch.device("cuda"))
        finally:
            torch.cuda.set_sync_debug_mode("default")
    waits = [w for w in seen if "synchroniz" in str(w.message).lower()]
    assert len(losses) == 200 and all(type(x) is float for x in losses)
    assert len(waits) < 20, f"{len(waits)} waits for the GPU in 200 steps; the first: {waits[0].message}"


def test_the_progress_bar_shows_no_validation_loss_before_there_is_one(monkeypatch, capsys):
    """07's graded run validates only at its end: its bar shows the training loss alone, never `val=nan`."""
    import course.training
    from course import progress_bar

    monkeypatch.setattr(course.training, "READ_EVERY_SECONDS", 0.0)  # the bar's values are refreshed every step
    monkeypatch.setattr(course.training, "progress", lambda n, what: progress_bar.progress(n, what, mininterval=0))
    overfit(tiny_model(), max_steps=6, eval_every=4)
    shown = capsys.readouterr().out
    assert "train=" in shown and "nan" not in shown
    assert "val=" in shown  # from step 4 on, when there is one
