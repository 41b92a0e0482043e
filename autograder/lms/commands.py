"""`python -m autograder lms ...`: the command line of grades back to the LMS."""
from __future__ import annotations

import os
import warnings
from pathlib import Path

from autograder.paths import ROOT

LMS_DIR = ROOT / "lms"  # the instructor's LMS files: rosters, uploads, the LTI config and key (ignored by git)
DEFAULT_CONFIG = LMS_DIR / "lti.toml"


def _pairs(values: list[str], option: str) -> dict[str, str]:
    found = {}
    for value in values or []:
        assignment, sep, target = value.partition("=")
        if not sep or not assignment or not target:
            raise SystemExit(f"{option} {value!r}: write it as ASSIGNMENT=VALUE, e.g. {option} 03_masking=12345.")
        found[assignment.strip()] = target.strip()
    return found


def _gradebook(args):
    """nbgrader's gradebook; its `alembic` subprocess found in this environment (see autograder.nbgrader_run)."""
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    from autograder.nbgrader_run import environment
    os.environ["PATH"] = environment()["PATH"]
    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's own queries for a hand-in that is missing
    path = Path(args.gradebook)
    if not path.exists():
        raise SystemExit(f"There is no gradebook at {path}: grade the class first (python -m autograder grade), "
                         "or point --gradebook at it.")
    return Gradebook(f"sqlite:///{path}")


def _export(args) -> None:
    """Write the upload; when it is refused, remove an earlier upload at the same path, whose numbers are not
    these."""
    if Path(args.output).resolve() == Path(args.roster).resolve():
        raise SystemExit(f"-o {args.output} is the roster itself: write the upload to another file (the default is "
                         f"lms/{args.lms}-upload.csv).")
    try:
        _write_export(args)
    except SystemExit as refusal:
        if isinstance(refusal.code, str) and Path(args.output).exists():
            Path(args.output).unlink()
            raise SystemExit(f"{refusal.code}\nRemoved the earlier upload {args.output}, so that no file with old "
                             "numbers is uploaded by mistake.") from None
        raise


def _write_export(args) -> None:
    from autograder.lms import canvas, moodle
    from autograder.lms.columns import Kept, Question, ask, columns_file
    from autograder.lms.csv_files import write_table
    from autograder.lms.marks import marks_of, maximum_problems, pending_lines, refuse_pending
    from autograder.lms.roster import advice, match, refuse_unreadable_rule, report

    lms = canvas if args.lms == "canvas" else moodle
    rules = lms.RULES
    rule = rules[args.match or ("canvas-id" if args.lms == "canvas" else "name")]
    roster = canvas.read_roster(args.roster) if args.lms == "canvas" else moodle.read_roster(args.roster, args.identity)
    refuse_unreadable_rule(rule, rules, str(args.roster), roster.table.header, roster.students)
    wanted = _pairs(args.column, "--column")
    given_maxima = _pairs(getattr(args, "item_max", None), "--item-max")
    maxima = {a: _points(v, a) for a, v in given_maxima.items()}
    stray = [a for a in {**wanted, **maxima} if a not in args.assignments]
    if stray:
        raise SystemExit(f"--column or --item-max names {', '.join(stray)}, which this command does not export: add "
                         f"{' '.join(stray)} to the assignments, or leave its option out.")
    kept = Kept.read(columns_file(args.gradebook))
    with _gradebook(args) as gb:
        marks = marks_of(gb, args.assignments, Path(args.gradebook).resolve().parent, "Nothing written")
        for assignment, points in maxima.items():
            if points <= 0:
                top = marks_top(marks, assignment)
                raise SystemExit(f"--item-max {assignment}={given_maxima[assignment]}: a grade item out of "
                                 f"{points:g} takes no points; the item must be out of more than 0 ({assignment} is "
                                 f"out of {top:g}): --item-max {assignment}={top:g}, with the item's Maximum grade "
                                 f"{top:g} in Moodle.")
        refuse_pending(marks, args.pending, "--pending blank (leave those cells blank: no change in the LMS) or "
                       "--pending mark (export the score so far, noted where the LMS takes a note)")
        students = list(gb.students)
        matching = match(rule, roster.students, students)
        problems = report(matching, roster.students, lms.shown, rule)
        if problems and not args.allow_unmatched:
            raise SystemExit("Not written, some students are not matched:\n" + "\n".join(f"  {p}" for p in problems)
                             + "\n" + advice(rule, ", ".join(rules)))
        if not matching.pairs:
            raise SystemExit(f"Not written: --match {rule.name} ({rule.says}) matches no student of the gradebook "
                             f"with anyone in {args.roster}, so an upload would change nothing"
                             + (" (--allow-unmatched leaves out the unmatched, here everyone)" if args.allow_unmatched
                                else "") + f". Choose the rule your students' nbgrader ids follow with --match: "
                             f"{', '.join(rules)}.")
        found = {a: (roster.target(a, wanted.get(a), kept.get(args.lms, a)) if args.lms == "canvas" else
                     roster.target(a, wanted.get(a), kept.get(args.lms, a), maxima.get(a)))
                 for a in args.assignments}
        questions = {a: q for a, q in found.items() if isinstance(q, Question)}
        if questions and args.lms == "moodle" and roster.not_in_points() and not roster.items():
            raise SystemExit("Not written: this Moodle export gives its grade items only as "
                             + "; ".join(roster.not_in_points()) + ", not in points, and Moodle's import reads "
                             "only points: export the grades again with the grade export display type Real (Export "
                             "format options), and run this again.")
        if questions:
            columns = list(roster.assignments()) if args.lms == "canvas" else roster.items()
            extra = ""
            if args.lms == "moodle" and roster.not_in_points():
                extra = ("\nThis export gives " + "; ".join(roster.not_in_points()) + " not in points, which Moodle's "
                         "import does not read: export the grades again with the grade export display type Real.")
            raise SystemExit(ask(questions, args.lms.title(), columns, kept.path, extra))
        targets = dict(found)
        blockers = []
        for assignment, target in targets.items():
            if args.lms == "canvas":
                unreadable = canvas.points_problem(roster, assignment, target)
                where, fix = f"Canvas's {target.header}", canvas.fix_points(target, marks_top(marks, assignment))
            else:
                unreadable = (moodle.scale_problem(roster, assignment, target)
                              or moodle.maximum_unknown(assignment, target))
                where, fix = (f"the Moodle item {target.header}",
                              moodle.fix_maximum(assignment, marks_top(marks, assignment)))
            written = roster.points_of(target.header) if args.lms == "canvas" and not target.new else ""
            blockers += [unreadable] if unreadable else maximum_problems(assignment, where, target.maximum, marks, fix,
                                                                         written)
        if blockers:
            raise SystemExit("Not written:\n" + "\n".join(f"  {b}" for b in blockers))
        if args.lms == "canvas":
            table, held = canvas.upload(roster, targets, matching.pairs, marks, args.missing, args.pending)
        else:
            table, held = moodle.upload(roster, args.identity, targets, matching.pairs, marks, args.missing,
                                        args.pending, args.feedback)
        write_table(args.output, table)
        pending = pending_lines({k: m for k, m in marks.items() if k[0] in matching.pairs})
    for assignment, target in targets.items():
        kept.keep(args.lms, assignment, target.keep)
    kept.save()
    for line in problems:
        print(f"left out (--allow-unmatched): {line}")
    for note in getattr(roster, "skipped", []):
        print(f"skipped {note}")
    if pending:
        print(("Left blank" if args.pending == "blank" else "Exported with the score so far") + " (--pending "
              f"{args.pending}), written answers not graded yet:\n" + "\n".join(f"  {line}" for line in pending))
    if held:
        print("Kept the score the LMS holds, where a blank would have erased it:\n"
              + "\n".join(f"  {line}" for line in held))
    for assignment, target in targets.items():
        print(f"{assignment} -> {target.shown}" + _how(target, kept.path))
    print(f"Wrote {args.output}: {len(matching.pairs)} students, {len(targets)} assignment(s), scores after the late "
          f"penalty, a missing hand-in {'0' if args.missing == 'zero' else 'blank (no change in the LMS)'}. "
          + ("Upload it in Canvas: Grades > Import." if args.lms == "canvas" else
             "Upload it in Moodle: Grades > Import > CSV file."))


def _how(target, path: Path) -> str:
    """How the course knows a column, said beside it: `(confirmed now; kept in lms/columns.json for the next
    exports)`, `(kept)`."""
    if target.how == "confirmed now":
        return f" (confirmed now; kept in {path} for the next exports)"
    return f" ({target.how})" if target.how else ""


def marks_top(marks, assignment: str) -> float:
    """The notebook's points, as the gradebook gives them."""
    return next(m.max_score for (s, a), m in marks.items() if a == assignment)


def _points(value: str, assignment: str) -> float:
    from autograder.lms.csv_files import read_number
    points = read_number(value)
    if points is None:
        raise SystemExit(f"--item-max {assignment}={value}: write the grade item's Maximum grade as a number, e.g. "
                         f"--item-max {assignment}=11.")
    return points


def _keys(args) -> None:
    from autograder.lms.keys import make_keys
    print(make_keys(Path(args.config), force=args.force))


def _push(args) -> None:
    from autograder.lms.lti_config import read_config
    from autograder.lms.lti_push import push
    config = read_config(Path(args.config))
    with _gradebook(args) as gb:
        outcome = push(gb, config, args.assignment, dry_run=args.dry_run, missing=args.missing, pending=args.pending,
                       comment=not args.no_comment, course=Path(args.gradebook).resolve().parent,
                       students=set(args.student) if args.student else None)
    print(outcome.text())
    if outcome.failed:
        raise SystemExit(1)


def add_parser(commands) -> None:
    """The `lms` command group, under the autograder's own subcommands."""
    lms = commands.add_parser("lms", help="grades back to the LMS: a Canvas or Moodle upload, or LTI 1.3 passback")
    groups = lms.add_subparsers(dest="lms_command", required=True)
    export = groups.add_parser("export", help="a CSV file the LMS's grade import takes, from its own roster export")
    kinds = export.add_subparsers(dest="lms", required=True)
    for name, rules, default, roster in (
            ("canvas", "canvas-id, sis-login, sis-id, email, name", "canvas-id", "Canvas gradebook export"),
            ("moodle", "name, email, username, idnumber", "name", "Moodle grade export (plain text file)")):
        kind = kinds.add_parser(name, help=f"an upload for {name.title()}'s grade import")
        kind.add_argument("assignments", nargs="+", metavar="ASSIGNMENT")
        kind.add_argument("--roster", required=True, type=Path, metavar="CSV", help=f"the {roster}, as downloaded")
        kind.add_argument("-o", "--output", type=Path, default=LMS_DIR / f"{name}-upload.csv", metavar="CSV",
                          help=f"where to write the upload (default: lms/{name}-upload.csv)")
        kind.add_argument("--match", choices=rules.split(", "), default=None,
                          help=f"how nbgrader's students are found in the roster: {rules} (default: {default})")
        kind.add_argument("--column", action="append", metavar="ASSIGNMENT=COLUMN",
                          help="the LMS's column for an assignment, said once and kept in lms/columns.json (Canvas: "
                               "its id, the number in brackets, or new; Moodle: the grade item's header); the first "
                               "export of an assignment without it shows the candidates and writes nothing")
        kind.add_argument("--missing", choices=("blank", "zero"), default="blank",
                          help="a missing hand-in: blank (no change in the LMS; default) or 0")
        kind.add_argument("--pending", choices=("refuse", "blank", "mark"), default="refuse",
                          help="written answers not graded yet: refuse to export (default), blank (no change in the "
                               "LMS: a score it holds is kept), or export the score so far (marked in Moodle's "
                               "feedback)")
        kind.add_argument("--allow-unmatched", action="store_true",
                          help="write the upload although some students are unmatched (they are listed, left out)")
        kind.add_argument("--gradebook", default=str(ROOT / "gradebook.db"), metavar="DB",
                          help="nbgrader's gradebook (default: gradebook.db)")
        if name == "moodle":
            kind.add_argument("--identity", choices=tuple(("email", "username", "idnumber")), default="email",
                              help="the column that identifies each user on Moodle's import screen (default: email)")
            kind.add_argument("--feedback", action="store_true",
                              help="a feedback column beside each grade: the score as nbgrader gives it, with its notes")
            kind.add_argument("--item-max", action="append", metavar="ASSIGNMENT=POINTS",
                              help="the Moodle grade item's Maximum grade, which Moodle's export does not say: said "
                                   "once and kept with the column; an item out of other points than the notebook is "
                                   "refused")
        kind.set_defaults(run=_export)
    keys = groups.add_parser("keys", help="make the tool's key pair; print what the LMS administrator registers")
    keys.add_argument("--config", default=str(DEFAULT_CONFIG), metavar="TOML",
                      help="the LTI config whose key_file to write (default: lms/lti.toml)")
    keys.add_argument("--force", action="store_true", help="replace an existing key (the LMS must get the new one)")
    keys.set_defaults(run=_keys)
    push = groups.add_parser("push", help="post the scores to the LMS over LTI 1.3 Assignment and Grade Services")
    push.add_argument("--config", default=str(DEFAULT_CONFIG), metavar="TOML",
                      help="the platform's addresses and the tool's key (default: lms/lti.toml)")
    push.add_argument("--assignment", required=True, metavar="ASSIGNMENT")
    push.add_argument("--student", action="append", metavar="STUDENT",
                      help="send only this student's score (again for more; default: every student's)")
    push.add_argument("--dry-run", action="store_true", help="show what would be sent, send nothing")
    push.add_argument("--missing", choices=("skip", "zero"), default="skip",
                      help="a missing hand-in: send nothing (default) or 0")
    push.add_argument("--pending", choices=("refuse", "skip", "mark"), default="mark",
                      help="written answers not graded yet: send the score so far as PendingManual (default), "
                           "send nothing for them, or refuse to push")
    push.add_argument("--no-comment", action="store_true", help="send no comment with each score")
    push.add_argument("--gradebook", default=str(ROOT / "gradebook.db"), metavar="DB",
                      help="nbgrader's gradebook (default: gradebook.db)")
    push.set_defaults(run=_push)
