"""`python -m autograder release-feedback ASSIGNMENT...`: every feedback page that the exchange can deliver released
through it, and a list of the others to send by hand (issue 27.5).

`nbgrader release_feedback` releases a page under a name made from the hand-in's `timestamp.txt` (what
`nbgrader submit` wrote), so `nbgrader fetch_feedback` finds it from the student's own copy. A hand-in collected with
zip_collect or copied in by hand has no timestamp.txt, and one such page stops nbgrader's whole command with a
traceback: no student gets feedback. Here nbgrader's own command runs once, told to leave out
(`CourseDirectory.student_id_exclude`) every student whose page lacks timestamp.txt or submission_secret.txt; those
pages are listed with their paths, to send by hand or on the learning platform.

No page is released, or listed to send, while one of them says other than the gradebook (a written answer graded in
formgrader since the page was made: autograder.results.feedback_page.stale_pages): the command says which pages and
what to run, `python -m autograder grade ASSIGNMENT`, which regrades nothing unchanged and writes them anew.
"""
from __future__ import annotations

from pathlib import Path

from autograder.handins.handin import FROM_SUBMIT
from autograder.nbgrader_run import nbgrader
from autograder.results.feedback_page import stale_pages


def stale_refusal(root: Path, assignment: str, student: str | None = None) -> str:
    """Why `assignment`'s feedback (`student`'s, when given) may not go out yet: its pages that the gradebook no longer
    matches, and the command that writes them anew; "" when every page says what the gradebook holds."""
    stale = stale_pages(root, [assignment], student)
    if not stale:
        return ""
    return ("nothing released: these feedback pages no longer say what the gradebook holds (grades or comments "
            "changed since they were made, in formgrader say):\n" + "\n".join(f"  {s.line(root)}" for s in stale)
            + f"\nRun `python -m autograder grade {assignment}` (it regrades nothing unchanged and writes these pages "
            "anew), then release again.")


def release_feedback(root: Path, assignment: str, student: str | None = None) -> tuple[list[str], list[str], str]:
    """Release `assignment`'s feedback through the exchange (only `student`'s, when given): (students released, pages
    to send by hand, each with the files its folder lacks, why nothing was released: a page the gradebook no longer
    matches (`stale_refusal`) or nbgrader's last error line when its command failed, else "")."""
    stale = stale_refusal(root, assignment, student)
    if stale:
        return [], [], stale
    released, by_hand, excluded = [], [], []
    folder = root / "feedback"
    everyone = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    for who in [name for name in everyone if student is None or name == student]:
        pages = sorted((folder / who / assignment).glob("*.html"))
        if not pages:
            continue
        lacks = [name for name in FROM_SUBMIT if not (folder / who / assignment / name).is_file()]
        if not lacks:
            released.append(who)
        else:
            excluded.append(who)
            by_hand += [f"{page.relative_to(root).as_posix()} (no {' or '.join(lacks)})" for page in pages]
    if not released:
        return released, by_hand, ""
    only = [f"--student={released[0]}"] if student is not None else []
    result = nbgrader("release_feedback", assignment, *only,
                      f"--CourseDirectory.student_id_exclude={','.join(excluded)}", root=root, check=False, quiet=True)
    if result.returncode != 0:
        errors = [line.strip() for line in (result.stderr or "").splitlines()
                  if ("ERROR" in line or "CRITICAL" in line) and not line.rstrip().endswith("release_feedback failed")]
        return [], by_hand, "nbgrader release_feedback failed: " + (" ".join(errors[-2:])[-400:] or "no message")
    return released, by_hand, ""
