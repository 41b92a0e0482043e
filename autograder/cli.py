"""`python -m autograder <command>`: the instructor's command line."""
from __future__ import annotations

import argparse
import os
import time

from autograder.hub.cli import add_parser as add_hub_parser
from autograder.lms.commands import add_parser as add_lms_parser


def _reference(args) -> None:
    from autograder.authoring.build_reference import write_references
    for path in write_references():
        print(f"wrote {path}")


def _fixtures(args) -> None:
    from autograder.authoring.fixtures import write_fixtures
    for path in write_fixtures():
        print(f"wrote {path}")


def _release(args) -> None:
    from autograder.authoring.release import release
    for path in release(assignments=_known(args.assignments)):
        print(f"released {path}")


def _known(assignments: list[str]) -> list[str]:
    from course.about import NOTEBOOKS
    unknown = [a for a in assignments if a not in NOTEBOOKS]
    if unknown:
        raise SystemExit(f"No assignment {', '.join(unknown)}; the assignments are {', '.join(NOTEBOOKS)}.")
    return assignments


def _demo(args) -> None:
    from autograder.demo import run_demo
    run_demo(jobs=args.jobs)


def _grade(args) -> None:
    from autograder.grading.engine import grade, misplaced, stray_folders, students_in
    from autograder.grading.job import NOTEBOOK_TIME_LIMIT, Limits
    from autograder.paths import ROOT
    from autograder.results.report import needs_a_look, read_term, score_table
    from course.about import NOTEBOOKS
    refuse_others_code_as_root(ROOT)
    assignments = _known(args.assignments) or [a for a in NOTEBOOKS if any((ROOT / "submitted").glob(f"*/{a}"))]
    if not (ROOT / "gradebook.db").exists():
        raise SystemExit(f"There is no gradebook at {ROOT / 'gradebook.db'}: release the assignments first "
                         "(python -m autograder release), then collect the submissions into submitted/.")
    if not assignments:
        raise SystemExit(f"Nothing is handed in under {ROOT / 'submitted'}: collect the submissions first "
                         "(nbgrader collect, or copy them to submitted/<student>/<assignment>/).")
    for stray in stray_folders(ROOT):
        print(f"skipped {stray}: not a student")
    unplaced = misplaced(ROOT)
    if unplaced:
        print("Not graded: under submitted/ but not a hand-in of a released assignment:")
        print("\n".join(f"  {line}" for line in unplaced))
    if not any((ROOT / "submitted" / student / a).exists() or (ROOT / "submitted" / student).is_symlink()
               for a in assignments for student in students_in(ROOT)):
        raise SystemExit(f"Nothing is handed in under {ROOT / 'submitted'} for {', '.join(assignments)}: collect the "
                         "submissions first (nbgrader collect, or copy them to submitted/<student>/<assignment>/).")
    boxed = not args.student_code_runs_as_me
    if boxed:
        print(f"Each notebook runs {box_or_exit().describe()}.")
    else:
        print(f"warning: {UNBOXED_FLAG}: each hand-in's code runs as you, able to read and change all you can (the "
              "solutions, the gradebook, every hand-in); the guard, a Python audit hook, is its only fence")
    limits = Limits(args.cell_timeout, args.notebook_timeout or NOTEBOOK_TIME_LIMIT, boxed=boxed)
    outcomes = grade(ROOT, assignments, jobs=args.jobs, quiet=True, limits=limits, scheduler=args.scheduler)
    print(score_table(read_term(ROOT / "gradebook.db"), needs_a_look(outcomes)))
    recomputed = [line for o in outcomes for line in o.recomputed]
    if recomputed:
        print("\nRecomputed (the policy or the grades they depend on changed since they were graded):")
        print("\n".join(f"  {line}" for line in recomputed))
    print(run_summary(outcomes, len(unplaced)) + f"; into {ROOT / 'gradebook.db'}; feedback in {ROOT / 'feedback'}.")


UNBOXED_FLAG = "--student-code-runs-as-me"


def refuse_others_code_as_root(root) -> None:
    """As root, grade only a course directory that root alone can change: nbgrader runs its nbgrader_config.py, and
    this command its package. A SystemExit that names the first file another account could change."""
    import os
    import pwd
    if os.geteuid() != 0:
        return
    for path in (root, root / "nbgrader_config.py", root / "autograder", *(root / "autograder").rglob("*.py")):
        info = path.lstat()
        if info.st_uid != 0 or info.st_mode & 0o022:
            try:
                whose = f"{pwd.getpwuid(info.st_uid).pw_name}'s" if info.st_uid else "writable by its group or everyone"
            except KeyError:
                whose = f"user id {info.st_uid}'s"
            raise SystemExit(f"{path} is {whose}: as root, grading would run what another account can change. Grade "
                             "as the account that owns the course directory (sudo -u ACCOUNT python -m autograder "
                             "grade), or make it root's alone.")


def box_or_exit():
    """Who this machine's boxes are (autograder.box.check), or a SystemExit that says why it has none and what to do."""
    from autograder.box.check import check
    from autograder.box.who import BoxUnavailable
    try:
        return check()
    except BoxUnavailable as why:
        raise SystemExit(
            "Grading runs each hand-in's code in a box of its own, where it reads no other file of the course and "
            f"changes nothing (docs/instructor-guide.md, Security). This machine cannot make one: {why}.\nInstall "
            f"it and grade again; or, to grade with each hand-in's code running as you, able to read and change "
            f"everything you can (the solutions, the gradebook, every hand-in), add {UNBOXED_FLAG}.") from None


def run_summary(outcomes, unplaced: int) -> str:
    """What a grading run did, counted: `3 graded, 2 skipped as unchanged since the last run, ...`; a count whose
    items are listed above says so only when there are some."""
    count = {status: sum(1 for o in outcomes if o.status == status) for status in ("graded", "unchanged", "refused")}
    look = sum(1 for o in outcomes if o.reason)
    return ", ".join([
        f"{count['graded']} graded",
        f"{count['unchanged']} skipped as unchanged since the last run",
        f"{count['refused']} refused" + (" (no gradable notebook: 0, with the reason under Needs a look)"
                                         if count["refused"] else ""),
        f"{unplaced} under submitted/ not graded" + (" (listed above)" if unplaced else ""),
        f"{look} need{'s' if look == 1 else ''} a look"])


def _extend(args) -> None:
    from autograder.results.extension import grant_extension
    from autograder.paths import ROOT
    if not (ROOT / "gradebook.db").exists():
        raise SystemExit(f"There is no gradebook at {ROOT / 'gradebook.db'}: release and grade the assignment first.")
    print(grant_extension(ROOT / "gradebook.db", _known([args.assignment])[0], args.student, args.days, args.hours))


def _release_feedback(args) -> None:
    from autograder.paths import ROOT
    from autograder.results.release_feedback import release_feedback
    for assignment in _known(args.assignments):
        released, by_hand, failed = release_feedback(ROOT, assignment)
        print(f"{assignment}: released through the exchange for {len(released)} students"
              + (f" ({', '.join(released)})" if released else ""))
        if by_hand:
            print("  not handed in with nbgrader submit (what its folder lacks is named), send these pages yourself:")
            print("\n".join(f"    {page}" for page in by_hand))
        if failed:
            raise SystemExit(f"{assignment}: {failed}")


def _similarity(args) -> None:
    from pathlib import Path

    from autograder.paths import ROOT
    from autograder.similarity.screen import OUTPUT, screen, summary, write
    from course.about import NOTEBOOKS
    assignments = _known(args.assignments) or [a for a in NOTEBOOKS if any((ROOT / "submitted").glob(f"*/{a}"))]
    if not assignments:
        raise SystemExit(f"Nothing is handed in under {ROOT / 'submitted'}: collect the submissions first "
                         "(nbgrader collect, or copy them to submitted/<student>/<assignment>/).")
    folders = [Path(folder).resolve() for folder in args.reference]
    missing = [str(folder) for folder in folders if not folder.is_dir()]
    if missing:
        raise SystemExit(f"--reference: no folder {', '.join(missing)}")
    out = Path(args.out).resolve() if args.out else ROOT / OUTPUT
    found = screen(ROOT, assignments, folders, jobs=args.jobs)
    print(summary(found, write(found, out), out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("reference", help="regenerate autograder/authoring/reference/ from the source notebooks' solutions"
                        ).set_defaults(run=_reference)
    commands.add_parser("fixtures", help="regenerate course/fixtures/ from the reference and the known mistakes"
                        ).set_defaults(run=_fixtures)
    releasing = commands.add_parser("release", help="nbgrader generate_assignment for every notebook (or those "
                                    "named), then validate --invert")
    releasing.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: every one")
    releasing.set_defaults(run=_release)
    demo = commands.add_parser("demo", help="build a demo class, grade it with nbgrader, print the scores")
    demo.add_argument("--jobs", type=int, default=None, help="notebooks graded at a time (default: one per core)")
    demo.set_defaults(run=_demo)
    grading = commands.add_parser("grade", help="autograde every submission under submitted/ in parallel, resumably; "
                                  "then feedback and export")
    grading.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: every one handed in")
    grading.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="notebooks graded at a time "
                         "(default: one per core)")
    grading.add_argument("--scheduler", metavar="ADDRESS", default=None, help="grade on a Dask cluster: its "
                         "scheduler's address (tcp://HOST:8786); the workers' threads decide how many notebooks run "
                         "at once, and --jobs is not used (default: grade on this machine)")
    grading.add_argument("--cell-timeout", type=float, default=None, help="seconds per cell (default: "
                         "nbgrader_config.py's Execute.timeout)")
    grading.add_argument("--notebook-timeout", type=float, default=None, help="seconds per whole notebook, after "
                         "which its processes are killed and it gets 0 with a reason (default: 900)")
    grading.add_argument(UNBOXED_FLAG, action="store_true", help="grade where this machine cannot box a notebook "
                         "(no bubblewrap, not Linux): each hand-in's code then runs as you, and can read and change "
                         "everything you can")
    grading.set_defaults(run=_grade)
    extending = commands.add_parser("extend", help="give a student more time for an assignment (nbgrader's extension), "
                                    "before or after their hand-in: the next grade run works the late penalty out "
                                    "again")
    extending.add_argument("assignment", metavar="ASSIGNMENT")
    extending.add_argument("--student", required=True, help="the student's id, as in the gradebook")
    extending.add_argument("--days", type=float, default=0, help="days more (default 0)")
    extending.add_argument("--hours", type=float, default=0, help="hours more (default 0; with --days 0: take the "
                           "extension back)")
    extending.set_defaults(run=_extend)
    releasing_feedback = commands.add_parser("release-feedback", help="nbgrader release_feedback for every student "
                                             "whose hand-in came through the exchange; lists the pages to send by hand")
    releasing_feedback.add_argument("assignments", nargs="+", metavar="ASSIGNMENT")
    releasing_feedback.set_defaults(run=_release_feedback)
    add_lms_parser(commands)
    similarity = commands.add_parser("similarity", help="screen the hand-ins for code copied from each other or from "
                                     "public implementations: a ranked table, CSV and a page per flagged pair, "
                                     "evidence for a person to review, never a verdict")
    similarity.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: every one handed in")
    similarity.add_argument("--reference", nargs="+", action="extend", default=[], metavar="DIR", help="folders of public "
                            "implementations (.py files and notebooks) to match the hand-ins against too")
    similarity.add_argument("--out", metavar="DIR", default=None, help="where the CSV files and pages go (default: "
                            "reports/similarity)")
    similarity.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes that fingerprint "
                            "(default: one per core)")
    similarity.set_defaults(run=_similarity)
    add_hub_parser(commands)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    args.run(args)
    print(f"({args.command} took {time.perf_counter() - started:.0f} s)")
    return 0
