"""Figures are drawn off screen and kept, so a test can look at what a plot would show; training runs on one thread."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture
def figures(monkeypatch) -> list:
    """The figures the plots would show, kept instead of shown."""
    shown = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(plt.gcf()))
    yield shown
    plt.close("all")


@pytest.fixture
def one_thread():
    """Torch on one thread: on a busy two-core machine its threads fight and training runs ten times slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
