"""Figures are drawn off screen and kept, so a test can look at what a plot would show."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def figures(monkeypatch) -> list:
    """The figures the plots would show, kept instead of shown."""
    shown = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(plt.gcf()))
    yield shown
    plt.close("all")
