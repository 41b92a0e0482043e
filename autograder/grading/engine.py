"""Grade what is in `submitted/` with nbgrader, in parallel, and make sure every submission ends with a grade.

nbgrader stays the system of record: `autograde`, `generate_feedback` and `export` do the work and
`gradebook.db` holds the result. Around them: one `nbgrader autograde` process per student and notebook,
several at a time, each writing a private gradebook that this process alone merges into `gradebook.db`;
a ledger that makes a killed run resumable; a submission nbgrader cannot read (invalid JSON, say) still
gets a zero grade row and a readable reason, and no submission stops the others.
"""
from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.utils import parse_utc
from sqlalchemy.exc import SAWarning
from tqdm import tqdm

from autograder.box.check import check
from autograder.grading import autograde_process
from autograder.grading.gradebook_merge import merge_submission, snapshot, worker_gradebook
from autograder.grading.job import TRY_AGAIN, Job, Limits, autograde_one
from autograder.grading.ledger import Entry, Ledger, release_fingerprint
from autograder.grading.lock import grading_lock
from autograder.grading.verify import prepare
from autograder.handins import handin, preflight
from autograder.handins.handin import HandIn, not_a_student, students_in, submitted_folders
from autograder.nbgrader_run import environment
from autograder.paths import HIDDEN, REFERENCE, notebook_path
from autograder.results.extension import grant_waiting_extensions
from autograder.results.feedback_page import gradebook_state, is_refusal_page, refusal_page, stale_pages
from autograder.results.report import write_report
from autograder.results.scores import Score, duration, late_policy, penalty_now, policy_name, score_of
from course.about import NOTEBOOKS


GRADING_DIR = "grading"  # under the course root: the ledger, and the private gradebooks of running jobs


@dataclass
class Outcome:
    student: str
    assignment: str
    score: float  # autograded points
    max_score: float  # autograded points available
    written: float  # points of the written answers, graded by hand in formgrader
    reason: str  # "" when nothing needs the instructor's attention
    seconds: float = 0.0  # wall time of its `nbgrader autograde`
    # "graded" (this run), "unchanged" (graded before, skipped) or "refused" (no gradable notebook: 0 with its reason,
    # this run or an earlier one)
    status: str = "graded"
    points: Score | None = None  # the student's score for the assignment, as every output gives it (autograder.results.scores)
    recomputed: list[str] = field(default_factory=list)  # what this run recomputed of a grade kept (a late penalty...)


def gradebook(root: Path) -> Gradebook:
    return Gradebook(f"sqlite:///{root / 'gradebook.db'}")


def stray_folders(root: Path) -> list[str]:
    """Folders under submitted/ that grading skips, each with why ("submitted/__MACOSX (a Mac's zip metadata)")."""
    return [f"submitted/{name} ({not_a_student(name)})" for name in submitted_folders(root) if not_a_student(name)]


def released_assignments(root: Path) -> list[str]:
    """The assignments the gradebook knows (what `python -m autograder release` put there)."""
    if not (root / "gradebook.db").exists():
        return []
    with gradebook(root) as gb:
        return sorted(a.name for a in gb.assignments)


def _closest(name: str, released: list[str]) -> str:
    """The released assignment `name` most likely meant ("" when none is close): `3_masking`, `masking` or
    `03_Masking` mean 03_masking."""
    import difflib
    stem = name.removesuffix(".ipynb")
    for assignment in released:
        number, _, title = assignment.partition("_")
        if stem.lower() in (assignment.lower(), title.lower(), assignment.lstrip("0").lower()) \
                or stem.lstrip("0").lower() == assignment.lstrip("0").lower():
            return assignment
    found = difflib.get_close_matches(stem.lower(), [a.lower() for a in released], n=1, cutoff=0.6)
    return next((a for a in released if found and a.lower() == found[0]), "")


def misplaced(root: Path, released: list[str] | None = None) -> list[str]:
    """Everything under submitted/ that is no hand-in of a released assignment and so is not graded, each with what to
    do: a misspelled assignment folder, a notebook or file directly in a student's folder or in submitted/, an empty
    student folder. (Zip metadata and hidden folders are `stray_folders`.)"""
    submitted = root / "submitted"
    released = released_assignments(root) if released is None else released
    found = []
    if not submitted.is_dir():
        return found
    for entry in sorted(submitted.iterdir()):
        if entry.name.startswith(".") or not_a_student(entry.name):
            continue
        where = f"submitted/{entry.name}"
        if not entry.is_dir() or handin.is_link(entry):
            if not handin.is_link(entry):
                meant = _closest(entry.name, released) or "<assignment>"
                found.append(f"{where}: a file directly in submitted/, not graded; move it to "
                             f"submitted/<student>/{meant}/{meant}.ipynb and grade again")
            continue
        inside = [p for p in sorted(entry.iterdir()) if not p.name.startswith(".") and not not_a_student(p.name)]
        if not inside:
            found.append(f"{where}: an empty student folder; nothing to grade")
        for path in inside:
            here = f"{where}/{path.name}"
            if path.name in released:
                continue
            meant = _closest(path.name, released)
            target = f"submitted/{entry.name}/{meant}/" if meant else f"submitted/{entry.name}/<assignment>/"
            if path.is_dir() and not handin.is_link(path):
                found.append(f"{here}/: no assignment is named {path.name}, not graded; "
                             + (f"if it is {meant}, rename the folder to {target} and grade again" if meant else
                                f"the assignments are {', '.join(released)}: rename it to one and grade again"))
            elif handin.is_real_file(path):
                found.append(f"{here}: a file directly in the student's folder, not graded; move it into {target}"
                             + (f" as {meant}.ipynb" if meant and path.suffix == ".ipynb" else "") + " and grade again")
    return found


def record_zero(gb: Gradebook, assignment: str, student: str, reason: str, timestamp: str = "") -> None:
    """Zero autograded points, with the reason as the autograder's comment, for a submission nbgrader could not
    grade, at the hand-in's time (`timestamp`, as nbgrader submit wrote it; "" when it has none). What the
    instructor wrote by hand (manual scores, comments, extra credit) stays: it is the same submission, and a readable
    re-upload is graded again."""
    gb.update_or_create_student(student)
    with warnings.catch_warnings():  # nbgrader's add_submission trips SQLAlchemy's autoflush notice
        warnings.simplefilter("ignore", SAWarning)
        submission = gb.update_or_create_submission(assignment, student,
                                                    timestamp=parse_utc(timestamp) if timestamp else None)
    for notebook in submission.notebooks:
        notebook.late_submission_penalty = None
        for grade in notebook.grades:
            grade.auto_score = 0
            grade.needs_manual_grade = grade.manual_score is not None  # as nbgrader does: a hand-in changed under it
        for comment in notebook.comments:
            comment.auto_comment = reason
    gb.db.commit()


def _finished(root: Path, ledger: Ledger, jobs: list[Job]) -> set[tuple[str, str]]:
    """The (assignment, student) pairs the ledger says are graded, for the notebook handed in now, and still so."""
    entries = ledger.entries()
    done = set()
    with gradebook(root) as gb:
        for job in jobs:
            entry = entries.get((job.assignment, job.student))
            if (entry is None or (entry.sha256, entry.release) != (job.sha256, job.release)
                    or TRY_AGAIN in entry.reason):
                continue
            try:
                gb.find_submission(job.assignment, job.student)
            except MissingEntry:
                continue
            autograded = notebook_path(root / "autograded" / job.student, job.assignment)
            if entry.reason or autograded.exists():
                done.add((job.assignment, job.student))
    return done


def run_here(root: Path, todo: list[Job], template: Path, jobs: int, limits: Limits,
             say=lambda doing: None) -> Iterator[Job]:
    """Autograde `todo` on this machine, `jobs` nbgrader processes at a time, each into a private gradebook copied
    from `template`; yield each job as it finishes. `say` is told what it does before the first job can finish
    (minutes, on a slow machine), and "" once it grades."""
    threads = max(1, (os.cpu_count() or 1) // max(1, jobs))
    for assignment in sorted({job.assignment for job in todo}):  # the reference's side of every hidden test
        say(f"the reference's side of {assignment}'s hidden tests")
        prepare([assignment])
    say(f"{min(jobs, len(todo))} at a time" if todo else "")
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        running, unread = [], []
        for job in todo:
            job.database = worker_gradebook(template, template.parent, job.assignment, job.student)
            job.submitted = template.parent / "handed-in" / f"{job.assignment}--{job.student}"
            try:
                handin.stage(job.handed_in or notebook_path(root / "submitted" / job.student, job.assignment).parent,
                             notebook_path(job.submitted / job.student, job.assignment).parent)
            except OSError as exc:  # changed or unreadable since preflight: this hand-in alone
                job.reason = f"its files could not be read ({exc}); graded 0; {TRY_AGAIN}"
                unread.append(job)
                continue
            running.append(pool.submit(autograde_one, root, job, threads, limits))
        yield from unread
        for future in as_completed(running):
            yield future.result()


def cell_points(gb: Gradebook, assignment: str) -> dict[str, float]:
    """Each graded cell of `assignment` and its points, as the release in `gb` gives them."""
    return {cell.name: float(cell.max_score) for notebook in gb.find_assignment(assignment).notebooks
            for cell in notebook.grade_cells}


def stale_overrides(gb: Gradebook, assignment: str, student: str, before: dict | None) -> list[str]:
    """Check every manual override of the student's grade against the cells' points now, where they changed since
    it was last graded (`before`): an override above the new points, or one that gave the old full points (it meant
    "all of it", which is now more), is dropped and the autograder's score counts; any other is kept. Either way a
    note says so."""
    if not before:
        return []
    try:
        submission = gb.find_submission(assignment, student)
    except MissingEntry:
        return []
    notes, now = [], cell_points(gb, assignment)
    for notebook in submission.notebooks:
        for grade in notebook.grades:
            old, new = before.get(grade.name), now.get(grade.name)
            if grade.manual_score is None or old is None or new is None or old == new:
                continue
            given = float(grade.manual_score)
            if given > new or (given == old and new > old):
                grade.manual_score = None
                notes.append(f"manual grade {given:g} of '{grade.name}' dropped: the cell is worth {new:g} points now, "
                             f"{old:g} when you gave it; the autograder's score counts (grade it again in formgrader "
                             "if you meant to override it)")
            else:
                notes.append(f"manual grade {given:g} of '{grade.name}' kept: the cell is worth {new:g} points now, "
                             f"{old:g} when you gave it; change it in formgrader if it no longer holds")
    gb.db.commit()
    return notes


def record(gb: Gradebook, ledger: Ledger, root: Path, job: Job) -> None:
    """Write one finished job into the class gradebook (its merged grade, or a zero with its reason) and then
    its ledger line; remove its private gradebook."""
    job.notes += stale_overrides(gb, job.assignment, job.student, job.points_before)
    summary = job.summary(root)  # reads the autograded notebook once
    if job.reason:
        record_zero(gb, job.assignment, job.student, summary, job.hand.timestamp if job.hand else "")
    else:
        merge_submission(job.database, gb, job.assignment, job.student)
    ledger.append(Entry(job.assignment, job.student, job.sha256, summary, job.seconds, job.release,
                        cell_points(gb, job.assignment)))
    if job.database is not None:
        job.database.unlink(missing_ok=True)


def job_for(root: Path, hand: HandIn, release: str, staging: Path) -> Job:
    """The grading job of one hand-in: preflight checks (and repairs) a copy of its real files under `staging`,
    nothing under submitted/ is ever written (issue 27.4). A link is never read through: a zero, and the instructor
    reads where it pointed."""
    assignment, student = hand.assignment, hand.student
    try:
        fingerprint = hand.fingerprint()
    except OSError as exc:
        return Job(assignment, student, "", release, reason=f"its files could not be read ({exc}); graded 0; "
                                                            f"{TRY_AGAIN}", hand=hand)
    if hand.link:
        return Job(assignment, student, fingerprint, release, reason=f"{hand.link}; graded 0", hand=hand)
    notes = handin.links(hand.folder) + handin.shadows(hand.folder)
    copy = notebook_path(staging / f"{assignment}--{student}" / student, assignment).parent
    try:
        handin.stage(hand.folder, copy)
    except OSError as exc:
        return Job(assignment, student, "", release, notes=notes, hand=hand,
                   reason=f"its files could not be read ({exc}); graded 0; {TRY_AGAIN}")
    found = preflight.check(copy, f"{assignment}.ipynb", notebook_path(root / "release", assignment))
    return Job(assignment, student, fingerprint, release, reason=found.fatal, notes=notes + found.notes,
               handed_in=copy, hand=hand)


def grade(root: Path, assignments: list[str], jobs: int = 1, quiet: bool = True, show_progress: bool = True,
          feedback: bool = True, limits: Limits = Limits(), scheduler: str | None = None,
          only: set[tuple[str, str]] | None = None, report: bool = True) -> list[Outcome]:
    """Autograde every submission of `assignments` under `root` with `jobs` nbgrader processes at a time (or, with
    `scheduler`, as tasks on that Dask cluster: autograder.grading.cluster), then generate feedback (and, of any
    assignment, every other page the gradebook no longer matches: `refresh_stale_pages`) and export. Resumable: what
    the ledger records as graded is not graded again. With `only`, just those (assignment, student) hand-ins and their
    feedback pages (grading at submission: autograder.on_submit); with `report` False, no grades.csv and no class
    report (which read the whole class). One grading at a time in `root` (autograder.grading.lock): a second waits,
    saying for whom."""
    if limits.boxed:
        check()  # BoxUnavailable at once, with what to do, where this machine cannot box a notebook
    client = None
    if scheduler:
        from autograder.grading import cluster
        client = cluster.connect(scheduler)  # before anything is written, the lock too: a wrong address fails at once
        if limits.boxed:
            cluster.refuse_workers_that_cannot_box(cluster.how_workers_box(client))
    with grading_lock(root, "python -m autograder grade", say=tqdm.write):
        return _grade(root, assignments, jobs, quiet, show_progress, feedback, limits, client, only, report)


def _grade(root: Path, assignments: list[str], jobs: int, quiet: bool, show_progress: bool, feedback: bool,
           limits: Limits, client, only: set[tuple[str, str]] | None, report: bool) -> list[Outcome]:
    ledger = Ledger(root / GRADING_DIR / "ledger.jsonl")
    with gradebook(root) as gb:
        releases = {a: release_fingerprint(gb, a, judged_by(a)) for a in assignments}
    wanted, students = [], students_in(root)
    staging = root / GRADING_DIR / "handed-in"  # each hand-in's real files, copied: what preflight and nbgrader read
    shutil.rmtree(staging, ignore_errors=True)
    for hand in handin.hand_ins(root, assignments):
        if only is None or (hand.assignment, hand.student) in only:
            wanted.append(job_for(root, hand, releases[hand.assignment], staging))
    done = _finished(root, ledger, wanted)
    before = ledger.entries()
    for job in wanted:
        entry = before.get((job.assignment, job.student))
        job.points_before = entry.points if entry else None
    todo = [job for job in wanted if (job.assignment, job.student) not in done]
    workspace = root / GRADING_DIR / "jobs"
    shutil.rmtree(workspace, ignore_errors=True)
    template = snapshot(root / "gradebook.db", workspace / "template.db")
    bar = progress(len(todo), "autograding", "notebook", disable=not show_progress or not todo)
    with gradebook(root) as gb:
        for job in [j for j in todo if j.reason]:  # nbgrader cannot read these: a zero row, at once
            record(gb, ledger, root, job)
            # this hand-in counts now: an earlier one's autograded notebook would make its feedback page again
            shutil.rmtree(notebook_path(root / "autograded" / job.student, job.assignment).parent, ignore_errors=True)
            if _refused(job):
                stand_in(root, job)
            bar.update()
        gradable = [j for j in todo if not j.reason]
        if client is None:
            finished = run_here(root, gradable, template, jobs, limits, say=bar.set_postfix_str)
        else:
            from autograder.grading import cluster
            finished = cluster.run_on_cluster(client, root, gradable, template, limits)
        warned = False
        for job in finished:  # only this thread writes gradebook.db
            if job.network and not warned:
                tqdm.write(f"warning: {job.network}; the guard still refuses Python's sockets")
                warned = True
            record(gb, ledger, root, job)
            bar.update()
    bar.close()
    shutil.rmtree(workspace, ignore_errors=True)
    shutil.rmtree(staging, ignore_errors=True)
    grant_waiting_extensions(root / "gradebook.db")  # extensions given before these hand-ins, now theirs
    recomputed = apply_late_policy(root, assignments)
    entries = ledger.entries()
    graded = outcomes(root, wanted, entries)
    for outcome in graded:
        key = (outcome.assignment, outcome.student)
        job = next(j for j in wanted if (j.assignment, j.student) == key)
        if key in done:  # a grade kept from an earlier run: what changed of it since is said
            mine = f"{outcome.student} / {outcome.assignment}:"
            outcome.recomputed += [line for line in recomputed if line.startswith(mine)]
        if _refused(job):  # refused now or in an earlier run: either way, no gradable notebook
            outcome.status = "refused"
        elif key in done:
            outcome.status = "unchanged"
    with gradebook(root) as gb:  # a student with a folder under submitted/ is in the class, hand-in or not
        for student in students:
            gb.update_or_create_student(student)
    if feedback:
        for assignment in progress(assignments, "feedback pages", "assignment", disable=not show_progress):
            if only is None:
                forked_nbgrader(root, "generate_feedback", assignment, "--force", quiet=quiet, check=False)
            for student in sorted(s for a, s in only or () if a == assignment):
                forked_nbgrader(root, "generate_feedback", assignment, f"--student={student}", "--force", quiet=quiet,
                                check=False)
        jobs_of = {(job.assignment, job.student): job for job in wanted}
        for outcome in graded:  # nbgrader made no page for what it could not grade: a page that says why
            job = jobs_of.get((outcome.assignment, outcome.student))
            if outcome.status in ("refused", "unchanged") and outcome.reason and job and _refused(job):
                refusal_pages(root, outcome, job.hand)
        if only is None:
            for stale in refresh_stale_pages(root, entries, quiet=quiet):
                tqdm.write(f"warning: {stale.line(root)}; it could not be written anew, and release-feedback will "
                           "not send it until it is")
        if report:
            class_outputs(root, entries, quiet=quiet)
    return graded


def refresh_stale_pages(root: Path, entries: dict, quiet: bool = True) -> list:
    """Every feedback page, of any assignment, that the gradebook no longer matches (a written answer graded in
    formgrader since its assignment was last graded, say) written anew: nbgrader's page by `generate_feedback`, a
    refusal page in place with the reason its ledger entry (`entries`) records. Returns those still stale
    (autograder.results.feedback_page.Stale), which release-feedback refuses to send."""
    stale = stale_pages(root)
    for assignment, student in sorted({(s.assignment, s.student) for s in stale if not is_refusal_page(s.page)}):
        forked_nbgrader(root, "generate_feedback", assignment, f"--student={student}", "--force", quiet=quiet,
                        check=False)
    refusals = [s for s in stale if is_refusal_page(s.page) and (s.assignment, s.student) in entries]
    if refusals:
        with gradebook(root) as gb:
            for page in refusals:
                score = score_of(gb, page.assignment, page.student)
                if score is not None:
                    refusal_page(page.page, page.assignment, page.student, f"{score.total:g} / {score.max_score:g}",
                                 entries[page.assignment, page.student].reason,
                                 gradebook_state(gb, page.assignment, page.student), score.text())
    return stale_pages(root) if stale else []


def class_outputs(root: Path, entries: dict, quiet: bool = True, check: bool = True) -> None:
    """What the instructor reads of the whole class: grades.csv (nbgrader's export) and the class report, from the
    ledger's `entries` (Ledger.entries())."""
    forked_nbgrader(root, "export", f"--to={root / 'grades.csv'}", quiet=quiet, check=check)
    write_report(root, {key: entry.reason for key, entry in entries.items()}, misplaced(root))


def progress(work, desc: str, unit: str, disable: bool = False) -> tqdm:
    """A progress bar that draws every step as it is made (`work`: a count, or what to iterate over). tqdm's default
    draws only after `miniters` more steps, a number it learns from the pace of the steps it drew: the refused
    hand-ins, recorded a few hundredths of a second apart, teach it to wait for several more, and the next steps are
    notebooks minutes apart (the demo's bar sat at 7/35 while the ledger grew: issue 48). A step is a notebook here:
    drawing each costs nothing."""
    total, iterable = (work, None) if isinstance(work, int) else (None, work)
    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=disable, miniters=1, mininterval=0)


def stand_in(root: Path, job: Job) -> Path:
    """In place of the autograded notebook nbgrader never wrote for a refused hand-in: a notebook that says why it
    scores 0. Formgrader counts a hand-in as autograded only when its autograded folder exists: without one it showed
    the refusal as `needs autograding` and 0.0 / 0.0 (issue 48). nbgrader's feedback page of it is replaced by
    `refusal_pages`."""
    path = notebook_path(root / "autograded" / job.student, job.assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        f"**This hand-in could not be graded**, so it scores 0: {job.reason}.\n\n"
        "(Written by `python -m autograder grade` in place of an autograded notebook.)")]), path)
    return path


def forked_nbgrader(root: Path, *args: str, quiet: bool = True, check: bool = True) -> None:
    """`nbgrader <args>` for the course at `root`, forked from the grading server, where nbgrader is imported
    already (autograder.grading.autograde_process.command): for the commands that run no notebook."""
    log = root / GRADING_DIR / "command.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    finished = autograde_process.command([*args, f"--CourseDirectory.root={root}"], root, environment(), log)
    if not quiet:
        print(finished.log, end="")
    if check and finished.returncode != 0:
        raise RuntimeError(f"`nbgrader {' '.join(args)}` failed with exit code {finished.returncode}\n"
                           f"{finished.log[-3000:]}")


def apply_late_policy(root: Path, assignments: list[str]) -> list[str]:
    """Every hand-in's late penalty as the policy stands now: the due date, the student's extension and the penalty
    method or plugin of nbgrader_config.py, set or changed after grading, and the points as they stand after manual
    grading. It is nbgrader's own computation (autograder.results.scores.penalty_now), which plain autograde makes once, when
    it grades. Returns a line per penalty it changed."""
    assigner, changed = late_policy(root), []
    with gradebook(root) as gb:
        for assignment in assignments:
            try:
                submissions = gb.find_assignment(assignment).submissions
            except MissingEntry:
                continue
            for submission in submissions:
                for notebook in submission.notebooks:
                    penalty, before = penalty_now(assigner, submission, notebook), notebook.late_submission_penalty
                    if (before or 0.0) != (penalty or 0.0):
                        changed.append(f"{submission.student.id} / {assignment}: late penalty {before or 0:g} -> "
                                       f"{penalty or 0:g} ({lateness(submission)}, under {policy_name(assigner)})")
                    notebook.late_submission_penalty = penalty
        gb.db.commit()
    return changed


def lateness(submission) -> str:
    """How late a hand-in is against its due date: `1 min 21 s late; due 2026-12-04 17:00:00`, `on time; due
    2026-12-06 17:00:00 with an extension of 2 days`."""
    late, extension = submission.total_seconds_late, submission.extension
    due = f"due {submission.duedate or 'never'}" + (f" with an extension of {duration(extension.total_seconds())}"
                                                   if extension else "")
    return f"{duration(late)} late; {due}" if late > 0 else f"on time; {due}"


def refusal_pages(root: Path, outcome: Outcome, hand: HandIn) -> None:
    """The feedback of a hand-in that could not be graded, in place of any earlier hand-in's: a page under each name
    the student handed a notebook in under (nbgrader's exchange delivers a page only under such a name), with the
    hand-in's own timestamp.txt and submission_secret.txt beside it, so `release-feedback` files it under this
    hand-in, never an earlier one."""
    folder = notebook_path(root / "feedback" / outcome.student, outcome.assignment).parent
    shutil.rmtree(folder, ignore_errors=True)
    with gradebook(root) as gb:
        state = gradebook_state(gb, outcome.assignment, outcome.student)
    for name in hand.notebook_names():
        refusal_page(folder / f"{name}.html", outcome.assignment, outcome.student,
                     f"{outcome.points.total:g} / {outcome.points.max_score:g}", outcome.reason, state,
                     outcome.points.text())
    hand.file_submit_records(folder)


def _refused(job: Job) -> bool:
    """Whether `job`'s hand-in could not be graded at all (no gradable notebook, a link: a zero)."""
    return bool(job.reason) and not job.reason.endswith(TRY_AGAIN)


def judged_by(assignment: str) -> list[Path]:
    """The files whose change regrades `assignment`: its reference solution and its hidden tests' verdicts."""
    module = NOTEBOOKS[assignment]
    return [REFERENCE / f"{module}.py", HIDDEN / f"{module}.py"]


def outcomes(root: Path, jobs: list[Job], entries: dict[tuple[str, str], Entry]) -> list[Outcome]:
    """What the gradebook holds for each job, with the reason and time its ledger entry (`entries`) recorded."""
    found = []
    with gradebook(root) as gb:
        for job in jobs:
            submission = gb.find_submission(job.assignment, job.student)
            entry = entries.get((job.assignment, job.student))
            found.append(Outcome(job.student, job.assignment, submission.code_score, submission.max_code_score,
                                 submission.max_written_score, entry.reason if entry else "",
                                 entry.seconds if entry else 0.0, points=score_of(gb, job.assignment, job.student)))
    return found


