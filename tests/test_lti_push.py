"""`python -m autograder lms push` end to end against a real LTI 1.3 platform (the lti1p3platform package) on
127.0.0.1 (tests/lti_platform.py), on the demo class's students written with nbgrader's Gradebook API
(tests/lms_class.py): the token by the client-credentials grant with the key `lms keys` made, the roster by Names and
Role Provisioning, the line item found or created, each Score as AGS 2.0 defines it, then read back. What the
platform received is checked against the specs where the package does not check it."""
from __future__ import annotations

import contextlib
import io
import json
import shutil
from datetime import datetime
from pathlib import Path

import jwt
import pytest
from nbgrader.api import Gradebook

from autograder.cli import main
from tests.lms_class import A, B, EXPECTED, STUDENTS, class_gradebook, in_course
from tests.lti_platform import CLIENT_ID, INSTRUCTOR, LEARNER, MIXED_CASE, LtiPlatform

SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"  # AGS 2.0, section 3.4: the Score media type
ACTIVITY = {"Initialized", "Started", "InProgress", "Submitted", "Completed"}  # AGS 2.0, 3.4.6
GRADING = {"FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"}  # AGS 2.0, 3.4.7
IN_ROSTER = ("demo_perfect", "demo_partial", "demo_empty", "demo_broken")  # demo_invalid is not in the LMS
USER_IDS = {student: f"lti-user-{n}" for n, student in enumerate(STUDENTS, start=101)}


def members() -> list[dict]:
    """The course in the LMS: four of the demo class as learners, a learner nbgrader never saw, the instructor."""
    found = [{"user_id": USER_IDS[s], "roles": [LEARNER], "status": "Active", "name": f"{STUDENTS[s][0]} "
              f"{STUDENTS[s][1]}", "given_name": STUDENTS[s][0], "family_name": STUDENTS[s][1],
              "email": STUDENTS[s][2].upper() if s == "demo_empty" else STUDENTS[s][2]} for s in IN_ROSTER]
    found.append({"user_id": "lti-user-900", "roles": [LEARNER], "name": "Charles Babbage",
                  "email": "charles@uni.example"})
    found.append({"user_id": "lti-user-1", "roles": [INSTRUCTOR], "name": "The Instructor",
                  "email": "teacher@uni.example"})
    return found


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = main(list(args))
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
            if isinstance(stop.code, str):
                out.write(stop.code)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    return class_gradebook(tmp_path_factory, "gradebook.db")


def tool_files(graded: Path, tmp_path: Path) -> tuple[Path, Path, tuple[str, ...]]:
    """The tool's key made by `lms keys` and a fresh copy of the gradebook: (config, gradebook, push arguments)."""
    config = tmp_path / "lms" / "lti.toml"
    code, said = run("lms", "keys", "--config", str(config))
    assert code == 0 and "Public JWK" in said, said
    gradebook = in_course(Path(shutil.copy(graded, tmp_path / "gradebook.db")))
    return config, gradebook, ("lms", "push", "--config", str(config), "--gradebook", str(gradebook), "--assignment",
                               A)


def fill_in(config: Path, platform: LtiPlatform) -> None:
    """The tool's config (as `lms keys` wrote it) filled in with `platform`'s ids and addresses."""
    text = config.read_text()
    for name, value in (("client_id", CLIENT_ID), ("deployment_id", "1:course-tfs-2026"),
                        ("token_url", platform.token_url), ("lineitems_url", f"{platform.url}/lineitems"),
                        ("memberships_url", f"{platform.url}/memberships")):
        text = text.replace(f'{name} = ""', f'{name} = "{value}"', 1)
    config.write_text(text)


@contextlib.contextmanager
def serving(config: Path, course: list[dict]):
    """The platform with the tool's key set registered, serving `course`; the config filled in with its addresses."""
    key_set = json.loads((config.parent / "lti-keyset.json").read_text())
    with LtiPlatform(key_set, course) as platform:
        fill_in(config, platform)
        yield platform


@pytest.fixture()
def tool(graded, tmp_path):
    """The platform serving the course, the tool's config and a copy of the gradebook: (platform, config path,
    gradebook path, push arguments)."""
    config, gradebook, push = tool_files(graded, tmp_path)
    with serving(config, members()) as platform:
        yield platform, config, gradebook, push


def accepted(platform) -> list[dict]:
    return platform.scores_posted(200) + platform.scores_posted(201)


def test_push_posts_every_score_as_the_spec_says_then_a_rerun_sends_nothing(tool):
    platform, config, gradebook, push = tool
    code, said = run(*push)
    assert code == 0, said
    (item,) = platform.store.line_items.values()
    assert item["tag"] == A and item["label"] == A and item["scoreMaximum"] == 9, "created with the assignment's max"
    taken = platform.store.scores["1"]
    assert set(taken) == {USER_IDS[s] for s in IN_ROSTER}, "only the matched students, never demo_invalid"
    for student in IN_ROSTER:
        score = taken[USER_IDS[student]]
        assert score["scoreGiven"] == EXPECTED[student, A] and score["scoreMaximum"] == 9, student
        assert score["gradingProgress"] == ("PendingManual" if student == "demo_broken" else "FullyGraded")
        assert score["activityProgress"] == "Submitted"
    assert taken[USER_IDS["demo_partial"]]["comment"] == "3/9 (late: -2)"
    for request in accepted(platform):  # AGS 2.0, 3.4: what the package takes without looking
        score = request["json"]
        assert request["headers"]["Content-Type"] == SCORE_TYPE
        assert request["headers"]["Authorization"].startswith("Bearer ")
        assert isinstance(score["userId"], str) and 0 <= score["scoreGiven"] <= score["scoreMaximum"]
        assert score["activityProgress"] in ACTIVITY and score["gradingProgress"] in GRADING
        assert datetime.fromisoformat(score["timestamp"]).utcoffset() is not None, "ISO 8601 with its offset"
    for request in [r for r in platform.requests if r["path"] == "/token"]:  # IMS Security Framework 1.0, 4.1
        form = request["form"]
        assert form["grant_type"] == "client_credentials"
        assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        claims = jwt.decode(form["client_assertion"], options={"verify_signature": False})
        assert claims["iss"] == claims["sub"] == CLIENT_ID and claims["aud"] == platform.token_url
        assert claims["exp"] > claims["iat"] and claims["jti"]
    assert "demo_invalid: not among the course's learners in the LMS (by email)" in said
    assert "Charles Babbage" in said and "The Instructor" not in said
    assert "Read back: the LMS holds all 4 score(s) as sent." in said
    with Gradebook(f"sqlite:///{gradebook}") as gb:  # the mapping is kept in nbgrader's own table
        assert {s.id: s.lms_user_id for s in gb.students} == {**{s: USER_IDS[s] for s in IN_ROSTER},
                                                               "demo_invalid": None}

    posted = len(platform.scores_posted())
    code, said = run(*push)
    assert code == 0, said
    assert len(platform.scores_posted()) == posted, "a rerun sends nothing already sent"
    assert "sent 0 score(s); 4 unchanged since the last push" in said
    assert len(platform.store.line_items) == 1, "the line item is found by its tag, not made again"


def test_dry_run_sends_nothing(tool):
    platform, config, gradebook, push = tool
    code, said = run(*push, "--dry-run")
    assert code == 0, said
    assert not [r for r in platform.requests if r["method"] == "POST" and r["path"] != "/token"]
    assert "would create the line item '03_masking'" in said and said.count("would send demo_") == 4
    assert "'gradingProgress': 'PendingManual'" in said
    other = (*push[:-1], B, "--dry-run")
    code, said = run(*other)
    assert code == 0 and "demo_empty: not handed in (--missing zero sends 0)" in said, said
    code, said = run(*other, "--missing", "zero")
    assert "would send demo_empty (LMS user lti-user-103): {'userId': 'lti-user-103', 'scoreGiven': 0.0" in said
    assert "'activityProgress': 'Initialized'" in said, "a missing hand-in is no submitted activity"
    assert not [r for r in platform.requests if r["method"] == "POST" and r["path"] != "/token"]


def test_an_inactive_student_is_named_and_not_sent(graded, tmp_path):
    """A student whose enrolment the LMS lists as inactive (dropped, concluded) is said to be so, and not sent."""
    gone = [dict(m, status="Inactive") if m["user_id"] == USER_IDS["demo_perfect"] else m for m in members()]
    config, gradebook, push = tool_files(graded, tmp_path)
    with serving(config, gone) as platform:
        code, said = run(*push, "--pending", "skip")
        assert code == 0, said
        assert "demo_perfect: inactive in the LMS (Inactive)" in said
        assert "demo_broken: written answers not graded yet (--pending skip)" in said
        assert set(platform.store.scores["1"]) == {USER_IDS["demo_partial"], USER_IDS["demo_empty"]}


def test_a_wrong_key_is_refused(tool):
    platform, config, gradebook, push = tool
    code, said = run("lms", "keys", "--config", str(config), "--force")  # a key the LMS was never given
    assert code == 0, said
    code, said = run(*push)
    assert code == 1
    assert "The LMS refused the tool's token request (HTTP 401" in said and "lms keys" in said
    assert not platform.scores_posted() and not platform.store.line_items


def test_an_expired_token_is_renewed(tool):
    platform, config, gradebook, push = tool
    # A token's `exp` is a whole second (int(time.time()) + lifetime): it lives between lifetime - 1 and lifetime
    # seconds. A pause longer than the lifetime expires the first one for certain; a renewed one lives at least 3 s,
    # more than the retried request needs, however loaded the machine.
    platform.platform.registration.token_lifetime = 4
    platform.pause_before_scores = 4.1  # the token for the grades expires before the first score arrives
    code, said = run(*push)
    assert code == 0, said
    assert platform.scores_posted(401), "the platform refused the expired token"
    assert len(platform.store.scores["1"]) == 4, "after a new token every score was taken"
    assert len([r for r in platform.requests if r["path"] == "/token" and r["status"] == 200]) >= 3


def test_a_push_cut_off_halfway_resumes(tool):
    platform, config, gradebook, push = tool
    platform.fail_scores_after = 2
    code, said = run(*push)
    assert code == 1
    assert "Stopped: The LMS refused to take the score of user" in said and "run the same command again" in said
    assert len(json.loads((config.parent / "lti-sent.json").read_text())[f"{platform.url}/lineitems/1"]) == 2
    platform.fail_scores_after = None
    code, said = run(*push)
    assert code == 0, said
    assert "sent 2 score(s); 2 unchanged" in said
    users = [r["json"]["userId"] for r in accepted(platform)]
    assert sorted(users) == sorted(USER_IDS[s] for s in IN_ROSTER), "each student's score taken exactly once"


def test_a_read_back_that_differs_fails_and_is_sent_again(tool):
    """The LMS reports another score than it took (a rule of its own, a grade overridden there): the push fails, and
    the score is not counted as sent, so the next run sends it again."""
    platform, config, gradebook, push = tool
    platform.store.altered = {USER_IDS["demo_perfect"]: 5}
    code, said = run(*push)
    assert code == 1, said
    assert f"demo_perfect (LMS user {USER_IDS['demo_perfect']}): the LMS shows 5/9, it was sent 9/9" in said, said
    assert "sent 3 score(s)" in said and "not counted as sent, and the next run sends them again" in said
    assert "sent demo_perfect" not in said, "a score the LMS does not hold as sent is not said to be sent"
    assert said.count("\nsent demo_") == 3, said
    ledger = json.loads((config.parent / "lti-sent.json").read_text())[f"{platform.url}/lineitems/1"]
    assert USER_IDS["demo_perfect"] not in ledger and len(ledger) == 3
    platform.store.altered = {}
    code, said = run(*push)
    assert code == 0, said
    assert "sent 1 score(s); 3 unchanged" in said and "Read back: the LMS holds all 4 score(s) as sent." in said


def test_pages_named_in_mixed_case_are_followed_as_written(tool):
    """Members, line items and results come two to a page, each next page at an address with capitals (Moodle's
    `CourseSection`, `lineItems`), named by the Link header; the course already has three other line items."""
    platform, config, gradebook, push = tool
    for n, tag in enumerate(("01_tokenizer", "02_embeddings", "05_training"), start=1):
        platform.store.line_items[str(n)] = {"id": f"{platform.url}/lineitems/{n}", "tag": tag, "label": tag,
                                             "scoreMaximum": 10}
    platform.page_size = 2
    code, said = run(*push)
    assert code == 0, said
    assert len(platform.store.line_items) == 4 and set(platform.store.scores["4"]) == {USER_IDS[s] for s in IN_ROSTER}
    assert "Read back: the LMS holds all 4 score(s) as sent." in said
    followed = {r["path"] for r in platform.requests if r["path"].startswith(MIXED_CASE)}
    assert followed == {f"{MIXED_CASE}/memberships", f"{MIXED_CASE}/lineItems", f"{MIXED_CASE}/lineItems/4/results"}
    code, said = run(*push, "--dry-run")
    assert code == 0 and "03_masking -> the LMS's line item '03_masking' (tag '03_masking', out of 9)" in said, said
    code, said = run(*push)
    assert code == 0 and "sent 0 score(s); 4 unchanged" in said, "the line item on page 2 is found, not made again"


def test_a_stale_late_penalty_is_not_pushed(tool):
    """Issue 48: `lms push` read the same stale penalty as the export. An extension granted after grading, then a
    push before `python -m autograder grade`: nothing is sent, and the command to run is named."""
    from autograder.results.extension import grant_extension
    platform, config, gradebook, push = tool
    grant_extension(gradebook, A, "demo_partial", days=3)
    code, said = run(*push)
    assert code != 0, said
    assert "Nothing sent: the gradebook's late penalties are not yet those of the grades as they stand" in said
    assert "demo_partial / 03_masking: late penalty 2 in the gradebook, 0 now" in said, said
    assert "Run `python -m autograder grade 03_masking`" in said
    assert not platform.scores_posted() and not platform.store.line_items


def test_a_line_item_out_of_other_points_is_refused(tool):
    """The LMS says the line item's maximum: out of other points than the notebook, nothing is sent (the LMS would
    scale every score to its own points)."""
    platform, config, gradebook, push = tool
    platform.store.line_items["1"] = {"id": f"{platform.url}/lineitems/1", "tag": A, "label": "Masking",
                                      "scoreMaximum": 10}
    code, said = run(*push)
    assert code != 0, said
    assert "Nothing sent:\n  03_masking is out of 9 points here, but the LMS's line item 'Masking' is out of 10: set " \
        "its maximum to 9 in the LMS and push again" in said, said
    assert not platform.scores_posted()


def test_a_push_of_some_students_sends_only_theirs(tool):
    """Grading at submission sends each student's score when their own due date passes (issue 59): `--student`
    sends only theirs and says nothing of the others; a name that is no student is refused."""
    platform, config, gradebook, push = tool
    code, said = run(*push, "--student", "demo_perfect", "--student", "demo_invalid")
    assert code == 0, said
    assert set(platform.store.scores["1"]) == {USER_IDS["demo_perfect"]}, said
    assert "demo_invalid: not among the course's learners in the LMS (by email)" in said
    assert "demo_partial" not in said and "Charles Babbage" not in said, said
    assert "sent 1 score(s)" in said, said
    code, said = run(*push, "--student", "nobody")
    assert code != 0 and "Nothing sent: --student nobody is no student of the gradebook." in said, said
    assert set(platform.store.scores["1"]) == {USER_IDS["demo_perfect"]}


def test_grading_at_submission_sends_each_students_score_at_their_own_due_date(graded, tmp_path):
    """Issue 59: with `to_lms: "after_due"` the whole assignment went to the LMS when the first due date passed, the
    score so far of a student with an extension with it. Each student's goes once their own due date has passed:
    demo_broken's at the due date, demo_perfect's (an extension of two days) only once hers has."""
    import json as json_
    import time
    from datetime import timedelta

    from autograder.on_submit.queue import HandedIn
    from autograder.on_submit.service import Service, utc_now
    from tests.lms_class import DUE

    config, gradebook, _ = tool_files(graded, tmp_path)  # the course directory: tmp_path (lms/lti.toml beside it)
    shift = (utc_now() - timedelta(hours=1)) - DUE  # the class as it was, its due date an hour ago
    with Gradebook(f"sqlite:///{gradebook}") as gb:
        gb.find_assignment(A).duedate = DUE + shift
        for submission in gb.find_assignment(A).submissions:
            submission.timestamp = submission.timestamp + shift
        gb.db.commit()
        gb.grant_extension(A, "demo_perfect", days=2)
    (tmp_path / "inbound").mkdir()
    service = Service(tmp_path, tmp_path / "inbound", {"default": {"to_lms": "after_due"}}, lti=True)
    for student in ("demo_perfect", "demo_broken"):
        service.queue.add(HandedIn(f"{student}+{A}+2026-12-01 10:00:00.000000 UTC+x", student, A,
                                   "2026-12-01 10:00:00.000000 UTC", time.time(), state="graded",
                                   shown=json_.dumps({"score": "", "page": False})))
    with serving(config, members()) as platform:
        assert service.at_due_dates() == [("demo_broken", A)]
        assert set(platform.store.scores.get("1", {})) == {USER_IDS["demo_broken"]}, platform.store.scores
        with Gradebook(f"sqlite:///{gradebook}") as gb:
            gb.grant_extension(A, "demo_perfect", days=0)  # taken back: her due date has passed too
        assert service.at_due_dates() == [("demo_perfect", A)]
        assert set(platform.store.scores["1"]) == {USER_IDS["demo_broken"], USER_IDS["demo_perfect"]}
        assert platform.store.scores["1"][USER_IDS["demo_perfect"]]["scoreGiven"] == EXPECTED["demo_perfect", A]
        assert service.at_due_dates() == [], "once each"
