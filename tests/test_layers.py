"""The instructor package's architecture holds (issue 50): pyproject.toml's import contracts, checked by import-linter
on the code as it is, and each contract shown to fail on a copy of the code that breaks it."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.paths import ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """`lint-imports` on the packages under `root`, with `root`'s pyproject.toml."""
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo", str(root / "pyproject.toml")], cwd=root,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                          timeout=300)


def test_every_import_contract_is_kept():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "0 broken" in result.stdout and "3 kept" in result.stdout, result.stdout[-3000:]


@pytest.mark.parametrize("module, line, broken", [
    # results reading the engine's verdicts: an upward import
    ("autograder/results/report.py", "from autograder.grading.verify import verify", "only the layers below it"),
    # two applications built side by side must not lean on each other
    ("autograder/lms/marks.py", "import autograder.similarity", "only the layers below it"),
    # the two halves of the engine importing each other, as engine and cluster once did
    ("autograder/grading/job.py", "from autograder.grading import cluster", "no import cycles"),
    # the student package reaching for the reference
    ("course/about.py", "import autograder.authoring.reference", "never imports the instructor's"),
])
def test_an_import_that_breaks_the_architecture_fails(tmp_path, module, line, broken):
    for part in ("autograder", "course", "pyproject.toml"):
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__", "*.pt"))
        else:
            shutil.copy(source, tmp_path / part)
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{line}  # planted by tests/test_layers.py\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0, result.stdout[-3000:]
    broken_contracts = result.stdout.split("Broken contracts", 1)[-1]
    assert broken in broken_contracts, result.stdout[-3000:]
