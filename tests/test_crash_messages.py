"""When the student's code raises, the visible check and the hidden test say which call raised (with its
arguments: tensors by dtype, shape and device, numbers as written), the error (type and message) and the
student's line; in a notebook the error's traceback follows, from the student's call on.

The crashing implementations below are defined in this file, which stands for the student's notebook: code
outside the course and grader packages, Python's library and installed packages is the student's.
"""
from __future__ import annotations

import re

import nbformat
import pytest
import torch

from autograder.authoring.hidden.observe import HiddenTestFailed
from autograder.authoring.reference import attention_block as reference_block
from course.checks.crash import describe_call, describe_crash, describe_crash_in_check, describe_value
from course.checks.report import CheckFailed
from tests.exercises import hidden_test, visible_check
from tests.notebooks import ROOT


def positional_encoding(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    return position @ torch.ones(max_len, d_model)  # (max_len, 1) @ (max_len, d_model): a shape error


def attention(Q, K, V):
    weights = torch.softmax(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, dim=-1)
    return weights @ V[..., 1:, :], weights  # one value row short


def masked_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V[..., 1:, :], weights  # one value row short


class MultiHeadAttention(reference_block.MultiHeadAttention):
    def forward(self, x_q, x_kv=None, mask=None):
        return x_q @ self.W_q.weight[1:], None  # (..., d_model) @ (d_model - 1, d_model): a shape error


def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    logits = model(prompt)
    return torch.cat([prompt, logits[:, -1].argmax(-1)], dim=1)  # (B, T) and (B,): a shape error


# (notebook, exercise, implementation, the call that raised as a regular expression, the student's line)
CRASHES = [
    ("positional_encoding", "positional_encoding", positional_encoding,
     r"positional_encoding\(max_len=\d+, d_model=\d+\)", "return position @ torch.ones(max_len, d_model)"),
    ("attention", "attention", attention,
     r"attention\(Q=<float(32|64) tensor of shape \([\d, ]+\) on cpu>, K=<float(32|64) tensor of shape \([\d, ]+\) "
     r"on cpu>, V=<float(32|64) tensor of shape \([\d, ]+\) on cpu>\)", "return weights @ V[..., 1:, :], weights"),
    ("masking", "masked_attention", masked_attention,
     r"masked_attention\(Q=<float(32|64) tensor of shape \([\d, ]+\) on cpu>, K=<.*>, V=<.*>, "
     r"mask=(None|<bool tensor of shape \([\d, ]+\) on cpu>)\)", "return weights @ V[..., 1:, :], weights"),
    ("attention_block", "MultiHeadAttention", MultiHeadAttention,
     r"MultiHeadAttention\.forward\(x_q=<float(32|64) tensor of shape \(\d+, \d+, \d+\) on cpu>, x_kv=.*, mask=.*\)",
     "return x_q @ self.W_q.weight[1:], None"),
    ("transformer", "generate", generate,
     r"generate\(model=<\w+ module>, prompt=<int64 tensor of shape \(\d+, \d+\) on \w+>, max_new_tokens=\d+, "
     r"temperature=[\d.]+, top_k=(None|\d+), generator=(None|<Generator>)\)",
     "return torch.cat([prompt, logits[:, -1].argmax(-1)], dim=1)"),
]
CASES = [pytest.param(*case, id=case[1]) for case in CRASHES]


def where(line: str) -> str:
    """The student's line as a failure quotes it (a regular expression)."""
    return r"at line \d+ of test_crash_messages\.py, in [\w.]+: " + re.escape(line)


@pytest.mark.parametrize("notebook, exercise, impl, call, line", CASES)
def test_the_visible_check_names_the_call_that_raised(notebook, exercise, impl, call, line, capsys):
    with pytest.raises(CheckFailed) as failure:
        visible_check(exercise)(impl)
    first, *rest = failure.value.args[0].splitlines()
    assert re.match(rf"{exercise}: .+: RuntimeError: \S", first), first
    assert re.match(rf"  {call} raised it, {where(line)}", rest[-1]), rest
    assert isinstance(failure.value.__cause__, RuntimeError), "the student's error is kept for debugging"


@pytest.mark.parametrize("notebook, exercise, impl, call, line", CASES)
def test_the_hidden_test_names_the_call_that_raised(notebook, exercise, impl, call, line, capsys):
    with pytest.raises(HiddenTestFailed) as failure:
        hidden_test(notebook, exercise)(impl)
    assert re.search(rf"^{call} raised RuntimeError: \S", str(failure.value)), failure.value
    assert re.search(rf"\n  {where(line)}", str(failure.value)), failure.value
    assert isinstance(failure.value.__cause__, RuntimeError)


def test_a_hidden_test_that_records_errors_says_the_students_code_raised(capsys):
    def chunk(ids, seq_len):
        n = len(ids) // seq_len
        return ids[: n * seq_len].view(n, seq_len + 1)  # one token too many per window

    with pytest.raises(HiddenTestFailed, match=r"^chunk\(.*\): your code raised RuntimeError where the reference "
                                               "returns a result$"):
        hidden_test("shakespeare", "chunk")(chunk)


def test_the_rendered_failure_shows_the_traceback_from_the_students_call_on():
    with pytest.raises(CheckFailed) as failure:
        visible_check("attention")(attention)
    rendered = "\n".join(failure.value._render_traceback_())
    first = rendered.splitlines()[0]
    assert first.startswith("\x1b[1;31m✘ attention: ") and ": RuntimeError: " in first and "raised it" in rendered
    traceback = rendered.split("The traceback of that error", 1)[1]
    assert "return weights @ V[..., 1:, :], weights" in traceback and "RuntimeError" in traceback
    assert "course/checks" not in traceback, "the traceback starts at the student's call, not in the check"


def test_an_error_outside_the_students_lines_says_so():
    with pytest.raises(CheckFailed) as failure:
        visible_check("positional_encoding")(torch.zeros)  # a torch function as the answer: no line of theirs runs
    assert "The check stopped on an error outside your own code" in failure.value.args[0]
    assert "TypeError" in failure.value.args[0]


def test_an_assertion_in_the_students_code_is_explained_too():
    def positional_encoding(max_len, d_model):
        assert max_len <= 10, "at most 10 positions"
        return torch.zeros(max_len, d_model)

    with pytest.raises(CheckFailed, match=r"AssertionError: at most 10 positions(\n  .*)*\n  "
                                          r"positional_encoding\(max_len=\d+, d_model=\d+\) raised it"):
        visible_check("positional_encoding")(positional_encoding)


def test_arguments_are_described_by_what_matters():
    assert describe_value(torch.zeros(2, 5, 8)) == "<float32 tensor of shape (2, 5, 8) on cpu>"
    assert describe_value(torch.ones(2, 1, 5, 5, dtype=torch.bool)) == "<bool tensor of shape (2, 1, 5, 5) on cpu>"
    assert describe_value(torch.nn.Linear(2, 3)) == "<Linear module>"
    assert [describe_value(v) for v in (7, 0.5, None, True, "abc")] == ["7", "0.5", "None", "True", "'abc'"]
    assert describe_value([torch.zeros(1), torch.zeros(2)]) == "<list of 2 Tensors>"
    assert describe_value(torch.Generator()) == "<Generator>"


def test_a_call_is_written_as_the_student_would_write_it():
    import sys

    class Block(torch.nn.Module):
        def __init__(self, d_model, *sizes, scale=1.0):
            super().__init__()
            self.frame = sys._getframe()

        def forward(self, x, mask=None):
            return sys._getframe()

    block = Block(8, 2, 3, scale=0.5)
    assert describe_call(block.frame) == "Block(d_model=8, 2, 3, scale=0.5)"
    assert describe_call(block(torch.zeros(2, 5, 8))) == "Block.forward(x=<float32 tensor of shape (2, 5, 8) on cpu>, mask=None)"


def test_in_a_notebook_the_message_comes_first_then_the_students_traceback(tmp_path):
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import torch\nfrom course.checks import check_positional_encoding"),
        nbformat.v4.new_code_cell("def positional_encoding(max_len, d_model):\n"
                                  "    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)\n"
                                  "    return position @ torch.ones(max_len, d_model)\n"),
        nbformat.v4.new_code_cell("check_positional_encoding(positional_encoding)"),
    ])
    import os

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NBGRADER_EXECUTION", None)
    NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
    (error,) = [o for o in notebook.cells[2].outputs if o.output_type == "error"]
    assert error.ename == "CheckFailed"
    plain = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))
    assert plain.startswith("✘ positional_encoding: matches the stored values")
    assert re.search(r"d_model=16: RuntimeError: mat1 and mat2 shapes cannot be multiplied \(50x1 and 50x16\)\n  "
                     r"positional_encoding\(max_len=50, d_model=16\) raised it, at line 3 of your cell, in "
                     r"positional_encoding: return position @ torch.ones\(max_len, d_model\)", plain), plain
    debugging = plain.split("The traceback of that error", 1)[1]
    assert "Cell In[2], line 3" in debugging and "course/checks" not in debugging, debugging


# A second device for the tests below: "meta" tensors stand in for CUDA ones (these tests build the message, they
# never feed meta tensors to a check). PyTorch words a mix of devices in one operation in a few ways.
def mask_left_on_another_device(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5
    allowed = torch.ones(scores.shape[-2:], dtype=torch.bool, device="meta")
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ V, scores


class EmbeddingWithPlainAttribute(torch.nn.Module):  # a plain attribute: `.to(device)` leaves it where it was
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.pe = torch.zeros(8, 4, device="meta")

    def forward(self, tokens):
        return self.embed(tokens) + self.pe[: tokens.shape[-1]]


def as_on_cuda(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1)
    allowed = torch.ones(scores.shape[-2:], dtype=torch.bool, device="meta")
    raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and "
                       "cpu!") if allowed.device != scores.device else None


@pytest.mark.parametrize("crash", [lambda: mask_left_on_another_device(*torch.randn(3, 2, 4, 5)),
                                   lambda: as_on_cuda(*torch.randn(3, 2, 4, 5))], ids=["torch's words", "cuda's words"])
def test_a_mix_of_devices_names_each_tensor_of_the_line_by_device(crash):
    with pytest.raises(RuntimeError) as raised:
        crash()
    for message in (describe_crash(raised.value), describe_crash_in_check(raised.value)):
        assert "`scores` is on cpu" in message and "`allowed` is on meta" in message, message
        assert "`device=x.device`" in message and "never call `.cpu()`" in message, message


def test_a_plain_attribute_left_behind_is_named_with_its_module():
    with pytest.raises(RuntimeError) as raised:
        EmbeddingWithPlainAttribute()(torch.tensor([[1, 2, 3]]))
    message = describe_crash(raised.value)
    assert "`self.pe` is on meta" in message and "`tokens` is on cpu" in message, message
    assert "self.register_buffer" in message, message


def test_other_errors_say_nothing_of_devices():
    with pytest.raises(RuntimeError) as raised:
        positional_encoding(4, 3)
    assert "device" not in describe_crash(raised.value).split("\n  ", 1)[1], describe_crash(raised.value)
