"""The similarity screen (issues 31, 40 and 52) on two corpora of honest solutions and copies:
tests/similarity_corpus.py and tests/similarity_corpus_b.py (a class built apart, with its own sources and
disguises). tests/test_similarity_rewrites.py has the third corpus, of copies rewritten by hand.

Hand-ins are written with nbformat into a scratch folder laid out as grading lays them out; nothing is graded. The
corpora prove the ranking and the flags (every copy flagged, as a pair or against the public file it came from; at
least 9 in 10 flagged pairs real copies; the partial copy flagged; the idiom students and the pair who used one
public tutorial not flagged) and that the shared-code safeguard is what keeps honest pairs unflagged; the command
line runs twice under different hash seeds and must write the same files.
"""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.paths import notebook_path
from autograder.similarity import collect
from autograder.similarity.fingerprints import Fingerprint, fingerprint
from autograder.similarity import scoring
from autograder.similarity.scoring import CORROBORATED, exercise_evidence, is_short, length_weight, student_pairs
from autograder.similarity.screen import screen
from autograder.similarity.table import NOT_A_VERDICT
from course.about import NOTEBOOKS
from tests import similarity_corpus as corpus
from tests import similarity_corpus_b as corpus_b
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


@pytest.fixture(scope="module")
def screened_b(tmp_path_factory):
    """Corpus B drawn from seed 7 (bench/README.md gives seeds 7 and 11), screened with its public files."""
    root = tmp_path_factory.mktemp("similarity_b") / "course"
    root.mkdir()
    copies = corpus_b.build_class(root, seed=7)
    references = corpus_b.write_references(root.parent)
    return screen(root, ASSIGNMENTS, [references], jobs=2), copies


def _honest(pair, copies) -> bool:
    return not corpus.is_copy_pair(pair.first, pair.second, copies)


def _flagged_against(found, student: str) -> set[str]:
    return {m.second for m in found.references if m.first == student and m.flagged}


def test_every_copy_is_flagged_as_a_pair_or_against_its_public_file_and_no_honest_pair_is_flagged(screened):
    found, copies = screened
    ranked = {(p.first, p.second): p for p in found.pairs}
    for copier, original in copies.items():
        pair = ranked.get(tuple(sorted((copier, original))))
        public = f"public/{original}.py"
        if original in corpus.PUBLIC:  # both hand in a public file's code: it is attributed to the file
            assert public in _flagged_against(found, copier) & _flagged_against(found, original), copier
        else:
            assert pair is not None and pair.flagged, f"{copier} (a copy of {original}) is not flagged"
    honest_pairs = [p for p in found.pairs if _honest(p, copies)]
    assert len(found.students) == 14
    assert [f"{p.first}-{p.second}" for p in honest_pairs if p.flagged or p.worth_a_look] == []
    assert found.pairs[0].first == "copy_renamed" and found.pairs[0].second == "loops"
    assert found.pairs[0].evidence > 4 * found.pairs[0].threshold


def _copy_pair_b(pair, copies) -> bool:
    return corpus_b.is_copy_pair(pair.first, pair.second, copies)


def test_on_a_class_it_was_not_tuned_on_every_copy_is_flagged_and_nine_in_ten_flags_are_copies(screened_b):
    found, copies = screened_b
    ranked = {(p.first, p.second): p for p in found.pairs}
    for copier, original in copies.items():
        pair = ranked[tuple(sorted((copier, original)))]
        assert pair.flagged, f"{copier} (a copy of {original}): evidence {pair.evidence:.2f} < {pair.threshold:.2f}"
    flagged = [p for p in found.pairs if p.flagged]
    copies_flagged = [p for p in flagged if _copy_pair_b(p, copies)]
    assert len(copies_flagged) / len(flagged) >= 0.9, [f"{p.first}-{p.second} {p.evidence:.2f}" for p in flagged]
    partial = ranked[tuple(sorted(("copy_partial", copies["copy_partial"])))]
    copied = {"masked_attention", "multi_head_attention", "evaluate"}
    assert copied <= {m.exercise for m in partial.matched[:4]}, partial.matched
    most = scoring.exercise_evidence(scoring.MAX_EXERCISE, scoring.LENGTH_FULL)
    assert all(m.evidence <= most < p.threshold for p in found.pairs for m in p.matches)  # one exercise never flags
    assert all(m.evidence <= 1 for p in found.pairs if not _copy_pair_b(p, copies) for m in p.matches)  # no long
    # passage of rare code is shared but by copies


def test_the_idiom_students_and_the_pair_who_used_one_tutorial_are_not_flagged(screened_b):
    found, copies = screened_b
    idiom = [p for p in found.pairs if p.first.startswith("idiom_") and p.second.startswith("idiom_")]
    assert len(idiom) >= 5  # most of the 10 pairs of idiom students share something ...
    assert not [f"{p.first}-{p.second} {p.evidence:.2f}" for p in idiom if p.flagged]  # ... and none is flagged
    short = [m for p in idiom for m in p.matches if m.exercise in corpus_b.SHORT_EXERCISES]
    assert short and all(m.evidence < 0.5 for m in short)
    tutorial = {(p.first, p.second): p for p in found.pairs}.get(("tutorial_a", "tutorial_b"))
    assert tutorial is None or not tutorial.flagged
    assert tutorial is None or "layer_norm" not in {m.exercise for m in tutorial.matched}  # it is the file's
    for student in ("tutorial_a", "tutorial_b"):
        layer = [m for p in found.references if p.first == student and p.second == "public/layers_tutorial.py"
                 for m in p.matches if m.exercise == "layer_norm"]
        assert layer and layer[0].overlap > 0.8, student
    assert {(m.first, m.second) for m in found.references if m.flagged} == {
        (corpus_b.PUBLIC_COPIER, "public/minimal_gpt.py")}


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


def test_the_tutorial_layer_counts_for_the_pair_only_when_the_tutorial_is_not_given(screened_b):
    found, _ = screened_b
    without_references = {(p.first, p.second): p for p in student_pairs(found.cells)}
    layer = [m for m in without_references[("tutorial_a", "tutorial_b")].matches if m.exercise == "layer_norm"]
    assert layer and layer[0].overlap > 0.8


def test_short_is_measured_in_what_the_student_wrote_and_one_exercise_never_flags_a_pair(screened):
    found, _ = screened
    stub = corpus_b.stubs()["chunk"][1]
    plain = corpus_b.fill(stub, ["n = len(ids) // seq_len\nreturn ids[: n * seq_len].view(n, seq_len)"])
    padded = corpus_b.fill(stub, ['n = len(ids) // seq_len\n# how many windows fit\nprint("windows:", n)\n'
                                  'print("ids shape", ids.shape, "seq_len", seq_len)\n\n'
                                  'return ids[: n * seq_len].view(n, seq_len)'])
    short, printed = fingerprint(plain, "a", stub=stub), fingerprint(padded, "b", stub=stub)
    assert printed.hashes == short.hashes and printed.surface.hashes == short.surface.hashes  # prints add nothing
    assert printed.written == short.written and is_short(printed.written)  # ... to what the student wrote either
    assert length_weight(short.written) < 0.5
    assert exercise_evidence(1.0, short.written) < 0.5  # a whole short cell shared weighs little
    most = exercise_evidence(scoring.MAX_EXERCISE, scoring.LENGTH_FULL)  # a long passage of rare code, whole
    assert 1.0 < max(m.evidence for p in found.pairs for m in p.matches) <= most < CORROBORATED


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
    rows = [row for name in ("similarity.csv", "references.csv")
            for row in csv.DictReader((first / name).read_text().splitlines())]
    flagged = [row for row in rows if row["flagged"] == "yes"]
    look = [row for row in rows if row["worth_a_look"] == "yes"]
    assert len(flagged) == 1 + 12  # the copy of loops, and the six public sources and their copies against them
    assert len(pages) == len(flagged) + len(look) and {row["page"] for row in flagged + look} == {
        p.as_posix() for p in pages}  # a page for each flagged pair and each pair worth a look
    stdout = outputs[0][0]
    assert NOT_A_VERDICT in stdout and "FLAGGED" in stdout and "public/nanogpt.py" in stdout
    rows = list(csv.DictReader((first / "similarity.csv").read_text().splitlines()))
    evidence = [float(row["evidence"]) for row in rows]
    assert (rows[0]["first"], rows[0]["second"]) == ("copy_renamed", "loops") and evidence == sorted(evidence)[::-1]
    assert min(evidence) > 0  # every pair with any evidence, and only those
    page = (first / "pairs" / "copy_renamed--loops.html").read_text()
    assert NOT_A_VERDICT in page and page.count("<mark>") > 20
    for path in pages:  # nothing a browser would fetch: no script, no stylesheet or image from anywhere
        text = (first / path).read_text().lower()
        assert not any(fetch in text for fetch in ("<script", "<link", "<img", "src=", "url(", "@import")), path


def test_a_pairs_own_twins_do_not_raise_what_is_expected_of_it():
    """Two students who wrote the same canonical answer in every exercise, and nobody else alike: their expected
    twins come from their other classmates (none), not from each other, so every twin corroborates."""
    def cell(hashes: set[int]) -> Fingerprint:
        return Fingerprint("cell", "", {}, (), set(hashes), written=200)
    cells = {}
    for number in range(6):
        shared = set(range(1000 * number, 1000 * number + 30))
        cells[("01", f"exercise_{number}")] = {
            "ada": cell(shared), "bob": cell(shared),
            **{f"other_{k}": cell(set(range(10 ** 6 * (k + 1) + 100 * number, 10 ** 6 * (k + 1) + 100 * number + 30)))
               for k in range(4)}}
    pair = {(p.first, p.second): p for p in student_pairs(cells)}[("ada", "bob")]
    assert pair.twins == 6 and pair.expected_twins == 0.0
    assert pair.corroboration == scoring.TWIN_WORTH * (6 - 1)
