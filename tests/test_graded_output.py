"""What a student's code writes to stderr never decides a grade (course/graded_output.py), and nbgrader's own
Validate agrees with the grade, with the settings a student's Validate has on the class hub, which wait on the kernel
as long as grading does (autograder/grading/execute_timeouts.py: on a loaded machine too).

nbgrader scores a graded cell with any stderr output as failed, in `autograde` and `validate` alike. Under nbgrader
the set-up cell has the kernel show stderr as stdout: every kind of stderr output is still shown, an error still
fails its cell, and working interactively stderr stays stderr. The whole class of a correct solution that writes to
stderr in every exercise is graded end to end in tests/test_wild_corpus.py (the `noisy` student).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from autograder.grading.execute_timeouts import EXECUTE_TIMEOUTS
from autograder.hub.layout import write_jupyter_settings
from autograder.hub.settings import HubSettings
from autograder.nbgrader_run import environment
from autograder.paths import RELEASE, ROOT, notebook_path
from tests.notebooks import execute

# One cell per way text reaches stderr, each printing a marker the test looks for.
NOISE = {
    "print": "print('debug: table (4, 4)', file=sys.stderr)",
    "logging": "logging.basicConfig(level=logging.INFO, force=True)\nlogging.getLogger('student').info('logged: step 1')",
    "tqdm": "from tqdm import tqdm\nfor _ in tqdm(range(3), desc='tqdm bar'): pass",
    "warning": "warnings.warn('warned: careful')",
}
MARKERS = {"print": "debug: table", "logging": "logged: step 1", "tqdm": "tqdm bar", "warning": "warned: careful"}


def _noisy_notebook(path: Path) -> Path:
    cells = [new_code_cell("import logging, sys, warnings\nfrom course import setup_notebook\n"
                           "device = setup_notebook()")]
    cells += [new_code_cell(source) for source in NOISE.values()]
    cells.append(new_code_cell("raise ValueError('a real error')"))
    nbformat.write(new_notebook(cells=cells), path)
    return path


def _streams(cell) -> dict[str, str]:
    shown: dict[str, str] = {}
    for output in cell.outputs:
        if output.output_type == "stream":
            shown[output.name] = shown.get(output.name, "") + output.text
    return shown


@pytest.fixture(scope="module")
def noisy_runs(tmp_path_factory):
    path = _noisy_notebook(tmp_path_factory.mktemp("noisy") / "noisy.ipynb")
    return {grading: execute(path, grading=grading, allow_errors=True)[0] for grading in (True, False)}


@pytest.mark.parametrize("kind", NOISE)
def test_under_nbgrader_stderr_is_shown_as_stdout(noisy_runs, kind):
    streams = _streams(noisy_runs[True].cells[1 + list(NOISE).index(kind)])
    assert "stderr" not in streams, f"{kind}: still on stderr under nbgrader: {streams['stderr']!r}"
    assert MARKERS[kind] in streams.get("stdout", ""), f"{kind}: the student no longer sees it: {streams}"


@pytest.mark.parametrize("kind", NOISE)
def test_working_interactively_stderr_stays_stderr(noisy_runs, kind):
    cell = noisy_runs[False].cells[1 + list(NOISE).index(kind)]
    assert MARKERS[kind] in _streams(cell).get("stderr", ""), cell.outputs


@pytest.mark.parametrize("grading", [True, False])
def test_an_error_still_fails_its_cell(noisy_runs, grading):
    last = noisy_runs[grading].cells[-1]
    assert [o.output_type for o in last.outputs] == ["error"] and last.outputs[0].evalue == "a real error"


# ---------------------------------------------------------------- nbgrader validate

NOISY_ATTENTION = textwrap.dedent('''
    import logging
    import sys

    from tqdm import tqdm

    logging.basicConfig(level=logging.DEBUG, force=True)
    log = logging.getLogger("attention")


    def attention(Q, K, V):
        print(f"debug: table {tuple(Q.shape)}", file=sys.stderr)
        log.debug("shapes %s %s %s", Q.shape, K.shape, V.shape)
        for _ in tqdm(range(1), desc="scores"):
            scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
        weights = torch.softmax(scores, dim=-1)
        return weights @ V, weights
''')


def _students_settings(folder: Path) -> Path:
    """The folder of the nbgrader and Jupyter settings the class hub gives its students' servers (JUPYTER_CONFIG_PATH
    there), written as `python -m autograder hub` writes it."""
    settings = HubSettings(root=str(folder))
    write_jupyter_settings(settings)
    return settings.student_config


def _execute_settings(config_file: Path) -> dict:
    """The Execute settings an nbgrader_config.py sets."""
    config = Config()
    exec(config_file.read_text(), {"get_config": lambda: config, "__file__": str(config_file)})
    return {name: value for name, value in config.Execute.items() if name in EXECUTE_TIMEOUTS}


def _validate(tmp_path: Path, solution: str) -> subprocess.CompletedProcess:
    """`nbgrader validate` of 02_attention with `solution`, as a student's Validate on the class hub runs it."""
    notebook = nbformat.read(notebook_path(RELEASE, "02_attention"), as_version=4)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "attention":
            cell.source = solution
        elif cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = "A written answer."  # graded by hand: Validate only asks that it is there
    path = tmp_path / "02_attention.ipynb"
    nbformat.write(notebook, path)
    env = environment()
    env.pop("NBGRADER_EXECUTION", None)
    env["JUPYTER_CONFIG_PATH"] = str(_students_settings(tmp_path / "hub"))
    return subprocess.run([sys.executable, "-m", "nbgrader", "validate", str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)


def test_validate_passes_a_correct_notebook_that_writes_to_stderr(tmp_path):
    result = _validate(tmp_path, NOISY_ATTENTION)
    assert "Success! Your notebook passes all the tests." in result.stdout, \
        f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"
    assert "debug: table" not in result.stdout  # no line of the student's own output reported as an error


def test_validate_still_fails_a_wrong_notebook_that_writes_to_stderr(tmp_path):
    wrong = NOISY_ATTENTION.replace(" / math.sqrt(Q.shape[-1])", "")
    result = _validate(tmp_path, wrong)
    assert "VALIDATION FAILED" in result.stdout and "check_attention(attention)" in result.stdout, \
        f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"


def test_a_students_validate_waits_on_the_kernel_as_long_as_grading(tmp_path):
    """Validate on the hub and the grade wait as long for a kernel's start, a cell, and a cell's last output; nbgrader's
    own limits (4 s for that output) fail Validate on a loaded machine (autograder/grading/execute_timeouts.py)."""
    assert _execute_settings(ROOT / "nbgrader_config.py") == EXECUTE_TIMEOUTS
    assert _execute_settings(_students_settings(tmp_path) / "nbgrader_config.py") == EXECUTE_TIMEOUTS
