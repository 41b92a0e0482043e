"""nbgrader_config.py: the stderr filter drops harmless noise only, and the settings PyTorch needs are set."""
import re

from traitlets.config import Config

from autograder.paths import ROOT


def load_config() -> Config:
    config = Config()
    exec((ROOT / "nbgrader_config.py").read_text(), {"get_config": lambda: config, "__file__": str(ROOT / "x")})
    return config


def test_settings_for_pytorch():
    c = load_config()
    assert c.Execute.kernel_name == "python3"
    assert c.Execute.timeout >= 60
    assert c.OverwriteCells.add_missing_cells is True
    assert c.IgnorePattern.enabled is True


def _dropped(text: str) -> bool:
    """True when nbgrader's IgnorePattern would drop this stderr output (it uses re.search)."""
    return bool(re.search(load_config().IgnorePattern.pattern, text))


def test_harmless_stderr_is_dropped():
    assert _dropped("/x/torch/nn/modules/module.py:12: UserWarning: something is deprecated\n  warnings.warn(\n")
    assert _dropped("training:  40%|████      | 4/10 [00:01<00:02]\r")
    assert _dropped("Matplotlib is building the font cache; this may take a moment.\n")


def test_real_stderr_is_kept():
    assert not _dropped("Traceback (most recent call last):\n  File 'x', line 1\n")
    assert not _dropped("my debugging output\n")
    assert not _dropped("/x/y.py:3: UserWarning: fine\nbut then something else went wrong\n")
