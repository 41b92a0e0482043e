"""The similarity screen (issue 31) on a corpus of honest solutions and copies (tests/similarity_corpus.py).

Hand-ins are written with nbformat into a scratch folder laid out as grading lays them out; nothing is graded. The
corpus proves the ranking (every copy above every honest pair, no honest pair flagged, a copy of public code named
after its file) and that the shared-code safeguard is what keeps honest pairs unflagged; the command line runs
twice under different hash seeds and must write the same files.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.paths import notebook_path
from autograder.similarity import collect
from autograder.similarity.scoring import FLAG_EVIDENCE, ExerciseMatch, PairEvidence
from autograder.similarity.screen import screen
from autograder.similarity.table import NOT_A_VERDICT
from course.about import NOTEBOOKS
from tests import similarity_corpus as corpus
from tests.conftest import copy_course

ASSIGNMENTS = list(NOTEBOOKS)


@pytest.fixture(scope="module")
def corpus_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("similarity") / "course"
    root.mkdir()
    copies = corpus.build_class(root)
    references = corpus.write_references(root.parent)
    return root, copies, references


@pytest.fixture(scope="module")
def screened(corpus_class):
    root, copies, references = corpus_class
    return screen(root, ASSIGNMENTS, [references], jobs=2), copies


def _honest(pair, copies) -> bool:
    return not corpus.is_copy_pair(pair.first, pair.second, copies)


def test_every_copy_ranks_above_every_honest_pair_and_no_honest_pair_is_flagged(screened):
    found, copies = screened
    ranked = {(p.first, p.second): p for p in found.pairs}
    for copier, original in copies.items():
        pair = ranked.get(tuple(sorted((copier, original))))
        assert pair is not None and pair.flagged, f"{copier} (a copy of {original}) is not flagged"
    copy_pairs = [p for p in found.pairs if not _honest(p, copies)]
    honest_pairs = [p for p in found.pairs if _honest(p, copies)]
    assert len(copy_pairs) == len(copies) and len(honest_pairs) > 50
    assert min(p.evidence for p in copy_pairs) > 2 * max(p.evidence for p in honest_pairs)
    assert found.pairs[:len(copy_pairs)] == sorted(copy_pairs, key=PairEvidence.sort_key)
    assert [f"{p.first}-{p.second}" for p in honest_pairs if p.flagged] == []


def test_a_copy_of_public_code_is_attributed_to_its_file(screened):
    found, copies = screened
    best = {}
    for match in found.references:  # ranked: the first match of a student is its strongest
        best.setdefault(match.first, match)
    assert best["copy_of_public"].second == "public/nanogpt.py" and best["copy_of_public"].flagged
    for match in found.references:
        assert match.flagged == corpus.is_copied_from(match.first, match.second, copies), (
            f"{match.first} against {match.second}: evidence {match.evidence:.1f}, flagged {match.flagged}")
    assert not any(m.flagged for m in found.references if m.first in ("loops", "copy_renamed"))  # not public code
    assert sum(m.flagged for m in found.references) == 12  # the six public sources and their six copies


def test_without_setting_shared_code_aside_honest_pairs_would_be_flagged(corpus_class, screened):
    root, copies, references = corpus_class
    found, _ = screened
    assert sum(found.set_aside.values()) > 0
    plain = screen(root, ASSIGNMENTS, set_aside_shared=False, jobs=2)
    assert sum(plain.set_aside.values()) == 0
    wrongly = [p for p in plain.pairs if p.flagged and _honest(p, copies)]
    assert len(wrongly) >= 10, "the corpus no longer shows what the shared-code safeguard is for"


def test_a_short_cell_is_marked_and_never_flags_a_pair_alone(screened):
    found, _ = screened
    attention = found.cells[("02_attention", "attention")]
    assert attention["nanogpt"].hash_idx and len(attention["nanogpt"].hash_idx) < 40
    marks = {m.short for p in found.pairs for m in p.matches if m.exercise == "attention" and "nanogpt" in
             (p.first, p.second)}
    assert marks == {True}
    short = ExerciseMatch("02_attention", "attention", 2 * FLAG_EVIDENCE, 30, 1.0, short=True)
    judged = ExerciseMatch("03_masking", "masked_attention", 2 * FLAG_EVIDENCE, 60, 1.0, short=False)
    assert not PairEvidence("a", "b", "students", [short]).flagged
    assert PairEvidence("a", "b", "students", [judged]).flagged
    assert PairEvidence("a", "b", "students", [short, ExerciseMatch("02_attention", "x", 5, 5, 1.0, True)]).flagged


def _hand_in(root: Path, student: str, assignment: str, cells: dict[str, str]) -> Path:
    notebook = nbformat.read(notebook_path(root / "release", assignment), as_version=4)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") in cells:
            cell.source = cells[cell.metadata["nbgrader"]["grade_id"]]
    target = notebook_path(root / "submitted" / student, assignment)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return target


def test_release_code_counts_for_nothing_and_links_are_never_followed(tmp_path):
    shutil.copytree(corpus.RELEASE, tmp_path / "release")
    honest = corpus.honest_cells()
    code = {g: honest["d2l"][g] for g in ("multi_head_attention", "transformer_block", "feed_forward")}
    for student in ("untouched_a", "untouched_b"):  # the release notebook handed back as given
        _hand_in(tmp_path, student, "04_attention_block", {})
    original = _hand_in(tmp_path, "writer", "04_attention_block", code)
    linked = tmp_path / "submitted" / "linker" / "04_attention_block"
    linked.mkdir(parents=True)
    (linked / "04_attention_block.ipynb").symlink_to(original)  # the classmate's notebook, as a link
    (tmp_path / "submitted" / "folder_linker").symlink_to(tmp_path / "submitted" / "writer")
    found = screen(tmp_path, ["04_attention_block"])
    assert found.pairs == []
    assert {s for cells in found.cells.values() for s in cells} == {"writer"}
    assert any("folder_linker" in note and "link" in note for note in found.notes)
    solutions, _ = collect.class_solutions(tmp_path, ["04_attention_block"])
    assert {s.student for s in solutions} == {"untouched_a", "untouched_b", "writer"}


def _run(root: Path, seed: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONHASHSEED=seed)
    return subprocess.Popen([sys.executable, "-m", "autograder", "similarity", *args], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_command_ranks_the_same_under_any_hash_seed_and_writes_offline_pages(corpus_class, tmp_path):
    source, copies, references = corpus_class
    root = copy_course(tmp_path / "course")
    shutil.copytree(source / "submitted", root / "submitted")
    runs = [_run(root, seed, "--reference", str(references), "--jobs", "1", "--out", str(tmp_path / seed))
            for seed in ("1", "2")]
    outputs = [run.communicate(timeout=300) for run in runs]
    for run, (stdout, stderr) in zip(runs, outputs):
        assert run.returncode == 0, stdout[-2000:] + stderr[-3000:]
    first, second = tmp_path / "1", tmp_path / "2"
    for name in ("similarity.csv", "references.csv"):
        assert (first / name).read_text() == (second / name).read_text()
    pages = sorted(p.relative_to(first) for p in first.glob("*/*.html"))
    assert pages == sorted(p.relative_to(second) for p in second.glob("*/*.html"))
    flagged = [row for name in ("similarity.csv", "references.csv")
               for row in (first / name).read_text().splitlines() if ",yes," in row]
    assert len(pages) == len(flagged) == len(copies) + 12  # a page for each flagged pair: 7 copies, 12 attributions
    stdout = outputs[0][0]
    assert NOT_A_VERDICT in stdout and "FLAGGED" in stdout and "public/nanogpt.py" in stdout
    rows = (first / "similarity.csv").read_text().splitlines()
    assert rows[0].startswith("rank,kind,first,second,evidence,flagged") and len(rows) > 50
    page = (first / "pairs" / "copy_renamed--loops.html").read_text()
    assert NOT_A_VERDICT in page and page.count("<mark>") > 20
    for path in pages:  # nothing a browser would fetch: no script, no stylesheet or image from anywhere
        text = (first / path).read_text().lower()
        assert not any(fetch in text for fetch in ("<script", "<link", "<img", "src=", "url(", "@import")), path
