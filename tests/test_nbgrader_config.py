"""nbgrader_config.py: the settings PyTorch needs are set, and no stderr filter is left to disagree with Validate.
(What a student's code writes to stderr never decides a grade: tests/test_graded_output.py.)"""
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


def test_no_stderr_filter_that_validate_would_not_apply():
    """nbgrader's IgnorePattern runs in `autograde` but not in `validate`: a filter there would let the grade and the
    Validate button disagree. The kernel shows stderr as stdout under both instead."""
    assert "IgnorePattern" not in load_config()
