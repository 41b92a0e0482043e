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


@pytest.fixture(scope="session")
def reversal_states(tmp_path_factory, request) -> dict[str, dict]:
    """Notebook 06's two trained models' state_dicts (tests/plots/trained_reversal.py), trained once per run on one
    thread: under pytest-xdist the first worker to ask trains them in the run's shared temporary folder while another
    waits on its lock, then reads them. The file is named after the CPU kernels that trained it, so a run under other
    kernels (tests/test_every_cpu.py's, which has a temporary folder of its own besides) never reads it."""
    from filelock import FileLock

    from tests.plots import trained_reversal

    shared = tmp_path_factory.getbasetemp()
    if hasattr(request.config, "workerinput"):  # an xdist worker: the folder its siblings' folders are in
        shared = shared.parent
    saved = shared / f"reversal-06-{torch.backends.cpu.get_cpu_capability()}.pt"
    with FileLock(str(shared / "reversal-06.lock")):
        if not saved.exists():
            threads = torch.get_num_threads()
            torch.set_num_threads(1)  # as `one_thread`: on a busy two-core machine torch's threads fight
            try:
                torch.save(trained_reversal.train_both(), saved)
            finally:
                torch.set_num_threads(threads)
    return torch.load(saved)
