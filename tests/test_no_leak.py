"""No reference solution reaches a student: not in release/, not in the course package, not in its wheel."""
from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.paths import REFERENCE, RELEASE, ROOT
from course.about import NOTEBOOKS

MIN_LENGTH = 24  # shorter lines (`if T_k is None:`) say nothing about a solution
# Lines the exercise text itself gives the student, because they are the fixed API.
PUBLIC_API = {"self.embed = nn.Embedding(vocab_size, d_model)"}


def reference_lines() -> dict[str, str]:
    """Each non-trivial line of a reference function body (docstrings left out) -> the module it is from."""
    lines = {}
    for module in NOTEBOOKS.values():
        path = REFERENCE / f"{module}.py"
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef):
                body = node.body[1:] if ast.get_docstring(node) else node.body
                for statement in body:
                    for line in ast.get_source_segment(text, statement, padded=False).splitlines():
                        code = line.split("  #", 1)[0].strip()
                        if len(code) >= MIN_LENGTH and code not in PUBLIC_API:
                            lines[code] = module
    return lines


def student_texts(wheel: Path | None = None) -> dict[str, str]:
    """Everything a student receives: release notebook cells and the course package's files."""
    texts = {}
    for path in RELEASE.glob("*/*.ipynb"):
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            texts[f"{path.name} cell {i}"] = cell.source
    for path in (ROOT / "course").rglob("*.py"):
        texts[str(path.relative_to(ROOT))] = path.read_text()
    return texts


def _leaks(texts: dict[str, str]) -> list[str]:
    found = []
    for line, module in reference_lines().items():
        for where, text in texts.items():
            if line in text:
                found.append(f"{module}: {line!r} in {where}")
    return found


def test_reference_lines_are_found_at_all():
    """The leak scan must see the reference; an empty scan would pass anything."""
    lines = reference_lines()
    assert len(lines) >= 10
    assert _leaks({"a planted copy": "\n".join(lines)}), "the scan does not find a planted copy"


def test_no_reference_line_in_release_or_course_package():
    assert _leaks(student_texts()) == []


@pytest.mark.parametrize("marker", ["BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "autograder"])
def test_release_notebooks_carry_no_markers_or_hidden_tests(marker):
    for path in RELEASE.glob("*/*.ipynb"):
        assert marker not in path.read_text(), f"{marker!r} in {path}"


def test_course_package_never_imports_the_autograder():
    for path in (ROOT / "course").rglob("*.py"):
        tree = ast.parse(path.read_text())
        imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if m and m.split(".")[0] == "autograder"], path


def test_built_wheel_holds_the_course_package_only(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        texts = {n: archive.read(n).decode() for n in names if n.endswith(".py")}
    assert any(n.startswith("course/fixtures/") and n.endswith(".pt") for n in names), "fixtures missing from the wheel"
    assert not [n for n in names if n.startswith(("autograder/", "tests/", "source/"))]
    assert _leaks(texts) == []
