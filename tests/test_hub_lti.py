"""Login from the LMS (issue 41, item 2): a real class hub with `login = "lti"` (jupyterhub-ltiauthenticator's LTI 1.3
login, autograder/hub/hooks.py) and a real LTI 1.3 platform on loopback (tests/lti_launch.py: the lti1p3platform
package with a course page, the OIDC authorisation endpoint and its keys). A student follows the course's link and
lands in their own JupyterLab, as their own Unix account, recorded in the gradebook under the LMS's id for them before
the launch answers (issue 58, item 6: also when grading holds the gradebook's lock, and with a page that says so when
the gradebook cannot be written), `lms push` sends their grade to that id, and a later launch that sends less leaves
the rest as it was; an instructor
reaches formgrader, a learner does not; a forged, foreign, misaddressed, expired or replayed launch, a launch from
another course or another deployment of the tool (an instructor's too), a username that cannot be an account, and a
username that names an account the hub did not make for the class (root, a system account, the grader, a person's
account from before the class, another LMS person's) are refused with a page that says why (issue 47, items 1, 2
and 8). One hub for the module."""
from __future__ import annotations

import html
import json
import pwd
import re
import shutil
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from nbgrader.api import Gradebook

from autograder.hub.accounts import ClassAccounts, own_tree
from autograder.hub.hooks import CONTEXT_CLAIM, DEPLOYMENT_CLAIM
from autograder.hub.settings import LtiLogin
from tests.browser import VIEWPORT, browser  # noqa: F401 (a fixture)
from tests.class_accounts import machine_account
from tests.hub import Kernel, home_of, open_server, running_hub
from tests.test_on_submit import hand_in, solved, wait_for
from tests.lti_launch import CLIENT_ID, CONTEXT_ID, DEPLOYMENT_ID, INSTRUCTOR, ISSUER, LaunchPlatform, Person, \
    form_of, new_key
from tests.test_lti_push import fill_in, run
from autograder.paths import ROOT

ARTIFACTS = ROOT / "tests" / "artifacts" / "hub-lti"
PEOPLE = {
    "lti-ada": Person("lms-user-7f3a9c", "lti-ada", given_name="Ada", family_name="Lovelace", email="ada@uni.example"),
    "lti-grace": Person("lms-user-51b2", "lti-grace", given_name="Grace", family_name="Hopper"),
    "lti-teacher": Person("lms-user-1", "lti-teacher", [INSTRUCTOR], "The", "Instructor"),
    "spaced": Person("lms-user-88", "Ada Lovelace", given_name="Ada", family_name="Lovelace"),
    "silent": Person("lms-user-89", None, given_name="No", family_name="Username"),
    "lti-mary": Person("lms-user-60", "lti-mary", given_name="Mary", family_name="Fairfax", email="mary@uni.example"),
    "JaneDoe": Person("lms-user-61", "JaneDoe", given_name="Jane", family_name="Doe"),
    "janedoe": Person("lms-user-62", "janedoe", given_name="Another", family_name="Jane"),
    "root": Person("lms-user-90", "root"),
    "daemon": Person("lms-user-91", "daemon"),
    "lti-prior": Person("lms-user-92", "lti-prior", given_name="Prior", family_name="Account"),
    "lti-lou": Person("lms-user-63", "lti-lou", given_name="Lou", family_name="Lim", email="lou@uni.example"),
    "lti-nell": Person("lms-user-64", "lti-nell", given_name="Nell", family_name="Noether"),
}
PRIOR = "lti-prior"  # a person's account on the machine from before the class: its LMS login has the same name
SUBMITTED = "03_masking"  # handed in through the hub and graded at submission
QUIZ = "lti-quiz"  # an assignment written into the hub's gradebook with nbgrader's API, for `lms push`


@pytest.fixture(scope="module")
def lms(tmp_path_factory):
    """The platform, its tool registration holding the key set `lms keys` made, and the hub launched from it:
    (platform, hub settings, the `lms push` config)."""
    config = tmp_path_factory.mktemp("lti-tool") / "lti.toml"
    code, said = run("lms", "keys", "--config", str(config))
    assert code == 0, said
    key_set = json.loads((config.parent / "lti-keyset.json").read_text())
    with LaunchPlatform(key_set, dict(PEOPLE)) as platform, machine_account(PRIOR):
        # The LMS is another site than the hub (localhost, the hub 127.0.0.1), as it is in a class: its form's POST
        # to the hub is cross-site, and a browser sends the hub's state cookie with it only where it may.
        login = LtiLogin(issuer=ISSUER, client_id=CLIENT_ID, jwks_endpoint=platform.jwks_url,
                         authorize_url=platform.authorize_url.replace("127.0.0.1", "localhost"),
                         deployment_ids=[DEPLOYMENT_ID], context_ids=[CONTEXT_ID])
        # 03 graded at submission, each graded hand-in's score sent to the LMS (issue 51, item 3)
        with running_hub("lti", [], [], [SUBMITTED], login="lti", lti=login,
                         on_submit={"default": {"to_lms": "each"}}) as hub:
            platform.register_tool(hub.url)
            platform.people["the-grader"] = Person("lms-user-93", hub.grader)  # an LMS login named as the grader
            fill_in(config, platform)
            yield platform, hub, config


def follow_link(platform: LaunchPlatform, session: requests.Session, user: str) -> tuple[str, dict]:
    """The person clicks the hub's link in the LMS: the platform's login initiation, the hub's authentication
    request, the platform's answer; returns the launch form a browser would post (action, fields)."""
    page = session.get(f"{platform.url}/launch", params={"user": user})
    assert page.status_code == 200, (page.status_code, page.url, page.text[:500])
    return form_of(page.text)


def launch(platform: LaunchPlatform, user: str, session: requests.Session | None = None) -> requests.Response:
    """The whole launch as a browser makes it (the form submits itself): the hub's answer, redirects followed."""
    session = session or requests.Session()
    action, fields = follow_link(platform, session, user)
    answer = session.post(action, data=fields)
    answer.session = session
    return answer


def page_says(answer: requests.Response) -> str:
    """The words of the hub's error page: its heading and its message, as a person reads them."""
    found = re.search(r'<div class="error">(.*?)</div>', answer.text, re.S)
    assert found, answer.text[:2000]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found[1])).split())


def logged_in(hub, session: requests.Session) -> str | None:
    """Who the hub takes this session for (its own API, as the browser's page asks it), or None."""
    answer = session.get(f"{hub.url}/hub/api/user", headers={"Referer": f"{hub.url}/hub/home"})
    return answer.json()["name"] if answer.status_code == 200 else None


def test_a_student_follows_the_link_and_lands_in_their_own_jupyterlab(lms):
    platform, hub, _ = lms
    answer = launch(platform, "lti-ada")
    assert answer.status_code == 200, (answer.status_code, answer.url, answer.text[:800])
    assert platform.refused == [], platform.refused
    assert logged_in(hub, answer.session) == "lti-ada"
    session = open_server(hub, answer.session, "lti-ada")
    assert session.get(f"{hub.url}/user/lti-ada/lab").url == f"{hub.url}/user/lti-ada/lab"
    written = session.put(f"{hub.url}/user/lti-ada/api/contents/mine.txt",
                          json={"type": "file", "format": "text", "content": "hello"})
    assert written.status_code == 201, written.text
    owner = (home_of(hub, "lti-ada") / "mine.txt").stat().st_uid
    assert pwd.getpwuid(owner).pw_name == "lti-ada", "the server runs as the student's own Unix account"
    made = ClassAccounts(hub).names()["lti-ada"]  # an account the hub made for her, in the class's range, hers alone
    assert hub.first_uid <= owner == made["uid"] <= hub.last_uid, made
    assert made["lms"] == {"issuer": ISSUER, "sub": "lms-user-7f3a9c"}, made
    groups = answer.session.get(f"{hub.url}/hub/api/user", headers={"Referer": f"{hub.url}/hub/home"}).json()
    assert groups["groups"] == [hub.student_group], groups


def student_in(gradebook: Path, name: str) -> tuple | None:
    """The student's (lms_user_id, first name, last name, email) as the gradebook holds them now, or None. Read as
    soon as a launch has answered, and never waited for: the launch answers once the hub has written them."""
    if not gradebook.exists():
        return None
    with Gradebook(f"sqlite:///{gradebook}") as gb:
        return {s.id: (s.lms_user_id, s.first_name, s.last_name, s.email) for s in gb.students}.get(name)


def test_the_hub_user_is_the_gradebook_student_under_the_lms_id_and_lms_push_reaches_them(lms):
    platform, hub, config = lms
    assert launch(platform, "lti-ada").status_code == 200
    gradebook = hub.course_dir / "gradebook.db"
    recorded = student_in(gradebook, "lti-ada")  # written before her launch answered
    assert recorded == ("lms-user-7f3a9c", "Ada", "Lovelace", "ada@uni.example"), recorded
    with Gradebook(f"sqlite:///{gradebook}") as gb:
        gb.add_assignment(QUIZ)
        gb.add_notebook(QUIZ, QUIZ)
        gb.add_grade_cell("q1", QUIZ, QUIZ, max_score=5, cell_type="code")
        with gb.db.no_autoflush:
            gb.add_submission(QUIZ, "lti-ada")
        grade = gb.find_grade("q1", QUIZ, QUIZ, "lti-ada")
        grade.auto_score, grade.needs_manual_grade = 4, False
        gb.db.commit()
    # The roster shows no emails (an LMS's privacy setting): only the launch's `sub` links the student to the LMS.
    assert all("email" not in member for member in platform.store.members)
    code, said = run("lms", "push", "--config", str(config), "--gradebook", str(gradebook), "--assignment", QUIZ)
    assert code == 0, said
    (taken,) = platform.store.scores.values()
    assert set(taken) == {"lms-user-7f3a9c"}, said
    assert taken["lms-user-7f3a9c"]["scoreGiven"] == 4 and taken["lms-user-7f3a9c"]["scoreMaximum"] == 5


def test_a_hand_in_graded_at_submission_reaches_the_lms_once(lms):
    """Grading at submission with the policy's to_lms "each" (autograder/on_submit): lti-ada hands in 03 from her own
    server and nobody else acts; the service grades it and sends her score through `lms push` and its ledger, with
    her written answer marked as not graded yet; a later push by the instructor sends nothing again."""
    platform, hub, config = lms
    folder = hub.course_dir / "lms"  # where `lms push` finds its config in the course directory
    folder.mkdir(exist_ok=True)
    for name in ("lti.toml", "lti-private-key.pem"):
        shutil.copy(config.parent / name, folder / name)
    own_tree(folder, hub.grader)
    before = len(platform.scores_posted())
    kernel = Kernel(hub, "lti-ada", session=launch(platform, "lti-ada").session)
    try:
        hand_in(kernel, hub.course_id, SUBMITTED, solved(SUBMITTED))
        mine = wait_for(hub, kernel.session, "lti-ada", 1)
    finally:
        kernel.shut_down()
    assert mine[0]["state"] == "graded" and mine[0]["score"].startswith("9/11"), mine
    posted = [r["json"] for r in platform.scores_posted()[before:]]
    assert [(p["userId"], p["scoreGiven"], p["scoreMaximum"], p["gradingProgress"]) for p in posted] == \
        [("lms-user-7f3a9c", 9, 11, "PendingManual")], posted
    code, said = run("lms", "push", "--config", str(folder / "lti.toml"), "--gradebook",
                     str(hub.course_dir / "gradebook.db"), "--assignment", SUBMITTED)
    assert code == 0, said
    assert len(platform.scores_posted()) == before + 1, f"sent twice: {said}"


def test_an_instructor_reaches_formgrader_and_a_learner_gets_403(lms):
    platform, hub, _ = lms
    teacher = launch(platform, "lti-teacher").session
    answer = teacher.get(f"{hub.url}/services/{hub.course_id}/formgrader")
    assert answer.status_code == 200 and "formgrader" in answer.text.lower(), (answer.status_code, answer.url)
    learner = launch(platform, "lti-grace").session
    assert logged_in(hub, learner) == "lti-grace"
    answer = learner.get(f"{hub.url}/services/{hub.course_id}/formgrader")
    assert answer.status_code == 403, (answer.status_code, answer.url)
    gradebook = hub.course_dir / "gradebook.db"
    assert student_in(gradebook, "lti-grace") is not None  # recorded before her launch answered
    with Gradebook(f"sqlite:///{gradebook}") as gb:
        assert "lti-teacher" not in {s.id for s in gb.students}, "an instructor is not one of the students"


def forged(platform):
    platform.forge = new_key()


def tampering(**claims):
    def tamper(platform):
        platform.tamper = lambda signed: {**signed, **claims}
    return tamper


ANOTHER_COURSE = {CONTEXT_CLAIM: {"id": "course-bw-101", "label": "BW", "title": "Basket Weaving"}}


def expired(platform):
    platform.tamper = lambda signed: {**signed, "iat": signed["iat"] - 900, "exp": signed["iat"] - 300}


REFUSALS = {  # case: (what the platform does to the next launch, who, status, what the page says)
    "forged": (forged, "lti-grace", 400, "could not verify that this login came from your LMS"),
    "wrong-issuer": (tampering(iss="https://other-lms.example"), "lti-grace", 400,
                     "a platform this hub does not take logins from ('https://other-lms.example'"),
    "wrong-client-id": (tampering(aud="20000000000099", azp="20000000000099"), "lti-grace", 401,
                        "made for another tool in your LMS (client id '20000000000099')"),
    "expired": (expired, "lti-grace", 400, "has expired"),
    "not-an-account-name": (None, "spaced", 403,
                            "gave the username 'Ada Lovelace', which cannot be an account on this hub"),
    "no-username": (None, "silent", 403, "did not say your username"),
    "another-course": (tampering(**ANOTHER_COURSE), "lti-grace", 403,
                       "came from a course this hub does not serve (the LMS course 'Basket Weaving', id "
                       "'course-bw-101')"),
    "another-course-instructor": (tampering(**ANOTHER_COURSE), "lti-teacher", 403,
                                  "a role in another course, an instructor's too, counts for nothing here"),
    "no-course": (tampering(**{CONTEXT_CLAIM: None}), "lti-grace", 403, "does not say which course it came from"),
    "another-deployment": (tampering(**{DEPLOYMENT_CLAIM: "2:elsewhere"}), "lti-teacher", 403,
                           "an installation of the tool that this hub does not take logins from (deployment id "
                           "'2:elsewhere'"),
    "root": (None, "root", 403, "cannot let you in as 'root': it is one of this machine's own accounts"),
    "daemon": (None, "daemon", 403, "cannot let you in as 'daemon': it is one of this machine's own accounts"),
    "the-grader": (None, "the-grader", 403, "it is the account that grades the class"),
    "account-from-before": (None, PRIOR, 403, "cannot let you in as 'lti-prior': it is an account this machine had "
                                              "before the class"),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_a_bad_launch_is_refused_with_a_page_that_says_why(lms, case):
    platform, hub, _ = lms
    change, user, status, says = REFUSALS[case]
    if change:
        change(platform)
    account = passwd(platform.people[user].username)
    answer = launch(platform, user)
    assert platform.tamper is None and platform.forge is None, "the launch was signed"
    assert (answer.status_code, answer.url) == (status, f"{hub.url}/hub/lti13/oauth_callback"), answer.text[:600]
    said = page_says(answer)
    assert said.startswith(f"{status} : The hub could not log you in") and says in said, said
    print(case, said, sep=": ")
    assert logged_in(hub, answer.session) is None
    formgrader = answer.session.get(f"{hub.url}/services/{hub.course_id}/formgrader")
    assert not formgrader.url.startswith(f"{hub.url}/services/"), (formgrader.status_code, formgrader.url)
    assert passwd(platform.people[user].username) == account, "the account was changed (its home moved?)"


def passwd(name: str | None):
    """The Unix account `name`, or None."""
    try:
        return pwd.getpwnam(name or "")
    except KeyError:
        return None


def test_a_username_in_capitals_is_the_lower_case_account_of_the_first_lms_person_who_used_it(lms):
    """JaneDoe logs in as janedoe (LMSs match login names in any case; JupyterHub folds them); a second LMS person
    whose username folds to the same name (another `sub`) is refused, and cannot reach the first one's account."""
    platform, hub, _ = lms
    answer = launch(platform, "JaneDoe")
    assert answer.status_code == 200 and logged_in(hub, answer.session) == "janedoe", answer.url
    again = launch(platform, "janedoe")
    assert logged_in(hub, again.session) is None
    said = page_says(again)
    assert again.status_code == 403 and "is already the account of another person in the LMS" in said, said
    print("janedoe, another LMS person", said, sep=": ")
    assert ClassAccounts(hub).names()["janedoe"]["lms"]["sub"] == "lms-user-61"


def test_a_later_launch_that_sends_less_leaves_the_gradebook_as_it_was(lms):
    """Mary's first launch sends her name and email; a later one (privacy settings changed in the LMS) sends only
    her new family name: the gradebook takes the new name and keeps what was not sent."""
    platform, hub, _ = lms
    gradebook = hub.course_dir / "gradebook.db"
    assert launch(platform, "lti-mary").status_code == 200
    assert student_in(gradebook, "lti-mary") == ("lms-user-60", "Mary", "Fairfax", "mary@uni.example")
    platform.tamper = lambda signed: {**{k: v for k, v in signed.items() if k not in ("given_name", "name", "email")},
                                      "family_name": "Somerville"}
    assert launch(platform, "lti-mary").status_code == 200
    assert "email" not in platform.launched[-1] and "given_name" not in platform.launched[-1]
    assert student_in(gradebook, "lti-mary") == ("lms-user-60", "Mary", "Somerville", "mary@uni.example")


def waiting_for_the_lock(name: str) -> bool:
    """Whether the hub's gradebook write for `name` (`python -m autograder.hub.hooks NAME`, the grader's process) is
    asleep in SQLite's busy handler, which sleeps between tries for a lock another connection holds."""
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0") if proc.name.isdigit() else []
            if b"autograder.hub.hooks" in argv and name.encode() in argv:
                return (proc / "wchan").read_text() in ("hrtimer_nanosleep", "do_nanosleep")
        except OSError:  # gone meanwhile
            pass
    return False


def test_a_launch_that_meets_grading_at_the_gradebook_waits_for_it_and_answers_with_the_student_in_it(lms):
    """Grading writes the gradebook too: a launch whose write meets its lock (held here a while past Python's default
    5 s wait for an SQLite lock, as a grading merge on a loaded machine may) waits for it and then answers, the
    student in the gradebook."""
    platform, hub, _ = lms
    gradebook = hub.course_dir / "gradebook.db"
    holder = sqlite3.connect(gradebook, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, as grading's merge of a hand-in takes it
    launching = ThreadPoolExecutor(1).submit(launch, platform, "lti-lou")
    try:
        while not waiting_for_the_lock("lti-lou"):
            assert not launching.done(), f"the launch answered before the gradebook took her: {launching.result()}"
            time.sleep(0.1)
        time.sleep(6)  # holding the lock past Python's default wait of 5 s
    finally:
        holder.rollback()
        holder.close()
    answer = launching.result(timeout=300)
    assert answer.status_code == 200, (answer.status_code, answer.url, answer.text[:800])
    assert student_in(gradebook, "lti-lou") == ("lms-user-63", "Lou", "Lim", "lou@uni.example")


def test_a_launch_the_gradebook_cannot_take_says_so_and_the_next_one_goes_through(lms):
    """A gradebook the grader cannot write (read-only here; a full disk or a broken file alike): the launch answers
    with a page that says what happened and what to do, and does not log the student in; once the gradebook can be
    written, the same student's next launch goes through with them in it."""
    platform, hub, _ = lms
    gradebook = hub.course_dir / "gradebook.db"
    mode = gradebook.stat().st_mode
    gradebook.chmod(0o444)
    try:
        refused = launch(platform, "lti-nell")
    finally:
        gradebook.chmod(mode)
    said = page_says(refused)
    assert refused.status_code == 503 and "could not add you to your class's gradebook" in said, said
    assert "click the hub's link again" in said and "tell your instructor" in said, said
    print("gradebook not writable", said, sep=": ")
    assert logged_in(hub, refused.session) is None
    assert student_in(gradebook, "lti-nell") is None
    assert launch(platform, "lti-nell").status_code == 200
    assert student_in(gradebook, "lti-nell") == ("lms-user-64", "Nell", "Noether", None)


def test_a_replayed_launch_is_refused(lms):
    platform, hub, _ = lms
    session = requests.Session()
    action, fields = follow_link(platform, session, "lti-grace")
    cookies = session.cookies.copy()  # what a copied launch would carry: the form and the browser's cookies
    assert session.post(action, data=fields).status_code == 200
    again = session.post(action, data=fields)  # the same browser posts the form twice
    assert again.status_code == 400 and "was already used" in page_says(again), page_says(again)
    stolen = requests.Session()
    stolen.cookies = cookies
    replayed = stolen.post(action, data=fields)
    assert replayed.status_code == 400 and "has been used already" in page_says(replayed), page_says(replayed)
    assert logged_in(hub, stolen) is None


def test_in_chromium_the_course_page_link_opens_jupyterlab(lms, browser):  # noqa: F811
    """A fresh browser (no hub cookie) clicks the link on the LMS's course page and ends in the student's
    JupyterLab, the server the first test started."""
    platform, hub, _ = lms
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        page.goto(f"{platform.url.replace('127.0.0.1', 'localhost')}/course?user=lti-ada")
        page.screenshot(path=ARTIFACTS / "1-lms-course-page.png")
        page.click("#hub-link")
        page.wait_for_url(f"{hub.url}/user/lti-ada/lab**")
        page.wait_for_selector("#jp-main-dock-panel")
        page.wait_for_selector(".jp-DirListing-content")
        page.wait_for_selector(".jp-DirListing-item[title*='mine.txt']")  # the file the first test wrote
        page.screenshot(path=ARTIFACTS / "2-jupyterlab.png")
    finally:
        context.close()
    context = browser.new_context(viewport=VIEWPORT)  # someone whose LMS login cannot be an account here
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        page.goto(f"{platform.url.replace('127.0.0.1', 'localhost')}/course?user=spaced")
        page.click("#hub-link")
        page.wait_for_url(f"{hub.url}/hub/lti13/oauth_callback")
        assert "which cannot be an account on this hub" in page.inner_text(".error")
        page.screenshot(path=ARTIFACTS / "3-refused-username.png")
    finally:
        context.close()
