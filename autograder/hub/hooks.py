"""What the hub does as people log in and their servers start.

- `prepare_account`: before a server starts, its person's Unix account (one the hub made for the class: see
  autograder/hub/accounts.py) and private home.
- `ClassLtiAuthenticator`: jupyterhub-ltiauthenticator's LTI 1.3 login, which also takes only this course's launches
  (its deployment ids and LMS course ids), refuses a launch used before (its nonce, even with the cookies that came
  with it), a username that cannot be an account or names an account the hub did not make for the class, and tells
  the person what went wrong and what to do, in words, instead of the package's "OAuth state mismatch" or "User
  missing or null". Its deliberate differences from the package are listed in the class's docstring.
- `login_hook`: after an LTI 1.3 launch, the person's groups from their LTI role (an instructor grades, everyone else
  is a student), and their LMS identity written to nbgrader's gradebook (`Student.lms_user_id`, with their name and
  email), so that `python -m autograder lms push` sends their grade to the person who logged in. The launch answers
  once that is written (their first page finds them in the gradebook), or with a page that says it could not be.

Run as a program (`python -m autograder.hub.hooks STUDENT --lms-user-id=...`), it is the grader's side of that
write: nbgrader's `db student add`, writing only the fields it is given (`_add_given_student`).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from pathlib import Path

import jwt
from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.constants import LTI13_CUSTOM_CLAIM
from ltiauthenticator.lti13.error import ValidationError
from ltiauthenticator.lti13.handlers import LTI13CallbackHandler
from ltiauthenticator.lti13.validator import LTI13LaunchValidator
from tornado.web import HTTPError
from traitlets import List, Unicode

from autograder.hub.accounts import ANOTHER_PERSON, NAME_RULE, AccountRefused, ClassAccounts, as_account, check_name
from autograder.hub.settings import SETTINGS_VARIABLE, HubSettings

ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
DEPLOYMENT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
CONTEXT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/context"  # the LMS course the launch came from
# The course roles (LTI 1.3, "context roles") that grade: each principal role with its sub-roles, in the full form
# (membership#Instructor), the sub-role form (membership/Instructor#TeachingAssistant) and the simple name.
STAFF_ROLES = ("Instructor", "TeachingAssistant", "ContentDeveloper", "Administrator")
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
AGAIN = "Go back to the course in your LMS and click the hub's link again."
log = logging.getLogger("JupyterHub")


def _settings() -> HubSettings:
    return HubSettings.load(Path(os.environ[SETTINGS_VARIABLE]))


def prepare_account(spawner) -> None:
    """JupyterHub's pre-spawn hook: the account and home of the person whose server starts, an account the hub made
    for the class (made now the first time); AccountRefused, which stops the start, for any other."""
    settings = _settings()
    ClassAccounts(settings).account(spawner.user.name, settings.homes / spawner.user.name)


def teaches(roles: list[str]) -> bool:
    """Whether an LTI launch's roles make the person one of the course's staff: a course role (not an institution or
    system one: a professor elsewhere is a student here) of instructor, teaching assistant, content developer or
    administrator, or any of their sub-roles. Learner sub-roles (membership/Learner#Instructor) do not grade."""
    for role in roles:
        if role in STAFF_ROLES:
            return True
        if role.startswith(f"{MEMBERSHIP}#") and role.removeprefix(f"{MEMBERSHIP}#").split("#")[0] in STAFF_ROLES:
            return True
        if role.startswith(f"{MEMBERSHIP}/") and role.removeprefix(f"{MEMBERSHIP}/").split("#")[0] in STAFF_ROLES:
            return True
    return False


async def login_hook(authenticator, handler, authentication: dict) -> dict:
    """JupyterHub's post-auth hook for LTI logins: the person's groups, and a student's identity in the gradebook,
    written before the launch answers (`record_student`); a refusal page when the gradebook cannot take it."""
    settings = _settings()
    claims = authentication.get("auth_state") or {}
    staff = teaches(claims.get(ROLES_CLAIM, []))
    authentication["groups"] = [settings.formgrader_group if staff else settings.student_group]
    if not staff:
        await record_student(settings, authentication["name"], claims)
    return authentication


RECORDED: set[tuple] = set()  # what this hub wrote to the gradebook since it started: a second login writes nothing
# The gradebook is an SQLite file that grading writes too, in short transactions (one hand-in's merge): a writer waits
# for the lock up to BUSY_TIMEOUT_S, then fails; RECORD_TIMEOUT_S bounds the whole write (nbgrader's start included).
BUSY_TIMEOUT_S = 30
RECORD_TIMEOUT_S = 120
# How many writes at once: each is a Python process of its own, most of its time spent starting; a class launching
# at once shares the cores instead of queueing behind one another.
WRITERS = asyncio.Semaphore(max(2, os.cpu_count() or 2))


class GradebookUnwritable(Exception):
    """The gradebook did not take a student's record (locked past the timeout, not writable, or nbgrader failed)."""


async def record_student(settings: HubSettings, name: str, claims: dict) -> None:
    """The student in the gradebook, written as the grader in the course directory: their LMS user id (the launch's
    `sub`, the id the LMS's grade service knows), and the name and email the launch sent; what a launch did not send
    stays as the gradebook has it. Only what this hub has not written already; a refusal page (503) that says what
    to do when the gradebook cannot be written."""
    given = {"--lms-user-id": claims.get("sub"), "--first-name": claims.get("given_name"),
             "--last-name": claims.get("family_name"), "--email": claims.get("email")}
    record = (name, *given.values())
    if record in RECORDED:
        return
    try:
        async with WRITERS:
            await asyncio.wait_for(_add_student(settings, name, given), RECORD_TIMEOUT_S)
    except (GradebookUnwritable, asyncio.TimeoutError) as error:
        why = str(error) or f"no answer within {RECORD_TIMEOUT_S} s"
        log.error("could not record %s (LMS user %s) in the gradebook: %s", name, given["--lms-user-id"], why)
        raise refusal(503, "The hub could not add you to your class's gradebook just now, so it has not logged you "
                      "in: your grades reach the LMS through that entry. Nothing of yours was lost. In a minute, go "
                      "back to the course in your LMS and click the hub's link again; if this page comes back, tell "
                      "your instructor (the hub's log says why).",
                      f"gradebook not written for {name} (sub {given['--lms-user-id']}): {why[-300:]}") from None
    RECORDED.add(record)


async def _add_student(settings: HubSettings, name: str, given: dict) -> None:
    from autograder.hub.layout import grader_environment
    argv = [f"{settings.python}/bin/python", "-m", __name__, name,
            *(f"{flag}={value}" for flag, value in given.items() if value)]
    process = await asyncio.create_subprocess_exec(
        *as_account(settings.grader, argv), cwd=settings.course_dir, env=grader_environment(settings),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        output, _ = await process.communicate()
    except asyncio.CancelledError:  # past RECORD_TIMEOUT_S: no write goes on after the launch was answered
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise
    if process.returncode != 0:
        raise GradebookUnwritable(f"nbgrader exited with {process.returncode}: "
                                  f"{output.decode(errors='replace')[-1000:]}")


def _add_given_student() -> None:
    """`nbgrader db student add` (its arguments, its course directory and settings) writing only the fields given:
    nbgrader's own writes every field, blanking the name and email that a later launch did not send."""
    from nbgrader.api import Gradebook
    from nbgrader.apps.dbapp import DbStudentAddApp

    class AddGivenStudent(DbStudentAddApp):
        def start(self) -> None:
            super(DbStudentAddApp, self).start()
            if len(self.extra_args) != 1:
                self.fail("No student id provided.")
            given = {field: getattr(self, field) for field in ("first_name", "last_name", "email", "lms_user_id")
                     if getattr(self, field) is not None}
            with Gradebook(busy_waiting(self.coursedir.db_url), self.course_id, self.authenticator) as gradebook:
                gradebook.update_or_create_student(self.extra_args[0], **given)

    AddGivenStudent.launch_instance()


def busy_waiting(db_url: str) -> str:
    """An SQLite gradebook's URL with a lock timeout of BUSY_TIMEOUT_S (Python's default, 5 s, fails a write that
    meets a grading merge on a loaded machine); any other database's as it is."""
    from sqlalchemy.engine import make_url
    url = make_url(db_url)
    if url.get_backend_name() != "sqlite" or "timeout" in url.query:
        return db_url
    return url.update_query_dict({"timeout": str(BUSY_TIMEOUT_S)}).render_as_string(hide_password=False)


def refusal(status: int, message: str, detail: str) -> HTTPError:
    """An HTTPError whose page tells the person `message`; `detail` (the check that failed) goes to the hub's log."""
    error = HTTPError(status, "LTI launch refused: %s", detail, reason="The hub could not log you in")
    error.jupyterhub_message = message
    return error


class ClassLtiCallbackHandler(LTI13CallbackHandler):
    """The launch's last step (the LMS posts the signed id_token here): the package's checks in its order, each
    refusal said in words, a nonce accepted once, and a launch taken only from this class's course. The package keeps
    the nonce only in the browser's cookie, so the same form posted again with the same cookies (a launch copied from a
    shared computer or a proxy's log) would log the person in again; the hub remembers each nonce until its token is
    too old to be taken anyway."""

    used: dict[str, float] = {}  # nonce -> when it may be forgotten (monotonic)
    lock = threading.Lock()

    def decode_and_validate_launch_request(self) -> dict:
        validator = LTI13LaunchValidator(parent=self.app)
        args = {key: values[0].decode() for key, values in self.request.arguments.items()}
        try:
            validator.validate_auth_response(args)
        except ValidationError as error:
            raise refusal(400, f"This page takes a login from your LMS, and what came is not one ({error}). {AGAIN}",
                          str(error))
        try:
            self.check_state()
        except HTTPError as error:
            raise refusal(400, "This login from your LMS was already used, or it began in another browser window "
                          f"(the hub's check: {error.log_message}). {AGAIN}", error.log_message)
        authenticator = self.authenticator
        try:
            id_token = validator.verify_and_decode_jwt(
                encoded_jwt=args["id_token"], issuer=authenticator.issuer, audience=authenticator.client_id,
                jwks_endpoint=authenticator.jwks_endpoint, jwks_algorithms=authenticator.jwks_algorithms)
            validator.validate_id_token(id_token)
            validator.validate_azp_claim(id_token, authenticator.client_id)
        except ValidationError as error:
            raise self._token_refusal(error, args["id_token"]) from error
        try:
            self.check_nonce(id_token)
        except HTTPError as error:
            raise refusal(400, "This login from your LMS does not belong to this browser's sign-in (the hub's check: "
                          f"{error.log_message}). {AGAIN}", error.log_message)
        self._take_once(id_token, validator.max_age)
        self._check_course(id_token)
        return id_token

    def _check_course(self, id_token: dict) -> None:
        """The launch came from this class's course (its LTI context id) through one of the tool's deployments in
        it: a launch from any other course is refused, whatever the person's role there."""
        authenticator = self.authenticator
        deployment = id_token.get(DEPLOYMENT_CLAIM)
        context = id_token.get(CONTEXT_CLAIM) or {}
        course = f"{context.get('title')!r}, id {context.get('id')!r}" if context.get("title") else \
            f"id {context.get('id')!r}"
        if deployment not in authenticator.deployment_ids:
            where = f", in the LMS course {course}" if context.get("id") else ""
            raise refusal(403, f"This login came through an installation of the tool that this hub does not take "
                          f"logins from (deployment id {deployment!r}{where}). Open the hub "
                          "from your class's course in the LMS. If that is where you came from, tell your "
                          f"instructor: the hub's setting lti.deployment_ids must hold {deployment!r}.",
                          f"deployment_id {deployment!r} is not one of {authenticator.deployment_ids} "
                          f"(sub {id_token.get('sub')})")
        if not context.get("id"):
            raise refusal(403, "This login from your LMS does not say which course it came from, and the hub takes "
                          "logins from its own class's course only. Open the hub from your class's course in the LMS. "
                          "If that is where you came from, tell your instructor: the LMS sent no course (LTI's "
                          "context claim) with the launch.", f"no context in the launch of sub {id_token.get('sub')}")
        if context["id"] not in authenticator.context_ids:
            raise refusal(403, f"This login came from a course this hub does not serve (the LMS course {course}): "
                          "the hub takes logins from its own class's course only, and a role in another course, "
                          "an instructor's too, counts for nothing here. Open the hub from your class's course in "
                          "the LMS. If that is where you came from, tell your instructor: the hub's setting "
                          f"lti.context_ids must hold {context.get('id')!r}.",
                          f"context {context.get('id')!r} is not one of {authenticator.context_ids} "
                          f"(sub {id_token.get('sub')}, roles {id_token.get(ROLES_CLAIM)})")

    def _take_once(self, id_token: dict, max_age: int) -> None:
        now = time.monotonic()
        with self.lock:
            for nonce in [n for n, until in self.used.items() if until < now]:
                del self.used[nonce]
            if id_token["nonce"] in self.used:
                raise refusal(400, f"This login from your LMS has been used already: each one logs in once. {AGAIN}",
                              f"nonce {id_token['nonce']} replayed (sub {id_token.get('sub')})")
            self.used[id_token["nonce"]] = now + max_age + 60

    def _token_refusal(self, error: ValidationError, token: str) -> HTTPError:
        """What the person reads when the id_token is refused: the cause in the jwt library's exception."""
        cause, authenticator, status = error.__context__, self.authenticator, 400
        unverified = jwt.decode(token, options={"verify_signature": False}) if token.count(".") == 2 else {}
        if isinstance(cause, jwt.ExpiredSignatureError) or "too long ago" in str(error):
            message = f"This login from your LMS has expired: it is good for a few minutes only. {AGAIN}"
        elif isinstance(cause, jwt.InvalidIssuerError):
            message = (f"This login came from a platform this hub does not take logins from ({unverified.get('iss')!r}"
                       f"; the hub takes them from {authenticator.issuer!r}). Open the course from your own LMS; "
                       "if that is where you came from, tell your instructor (the hub's lti.issuer setting).")
        elif isinstance(cause, jwt.InvalidAudienceError) or "azp" in str(error):
            status = 401  # as the package answers it
            message = (f"This login was made for another tool in your LMS (client id {unverified.get('aud')!r}), "
                       "not for this hub. Use the course's hub link; if you did, tell your instructor (the hub's "
                       "lti.client_id setting).")
        elif isinstance(cause, (jwt.InvalidSignatureError, jwt.PyJWKClientError, jwt.DecodeError)):
            message = ("The hub could not verify that this login came from your LMS: it is not signed with the "
                       f"LMS's keys. {AGAIN} If this keeps happening, tell your instructor (the hub's "
                       "lti.jwks_endpoint setting).")
        else:
            message = f"Your LMS's login is missing something the hub needs ({error}). Tell your instructor."
        return refusal(status, message, f"{type(cause).__name__}: {error}")


class ClassLtiAuthenticator(LTI13Authenticator):
    """LTI 1.3 login for the class: the package's, with the checks and words above, and a username that is an
    account the hub made for the class (or a refusal that says why it cannot be).

    Where it differs from jupyterhub-ltiauthenticator 1.6.3 on purpose. The package's own tests/lti13 (51, from its
    1.6.3 tag, kept in tests/upstream_ltiauthenticator/ and run by tests/test_ltiauthenticator_upstream.py in `make
    test`) pass against these classes but for 6, each failing on one of these rules, named after it:
    - a launch must come from one of `deployment_ids` and from one of `context_ids` (the LMS course): the package
      takes any deployment's and any course's, so an instructor of another course would be this class's instructor;
    - a username comes from `username_key` alone: the package falls back to the launch's `sub`, an LMS id that no
      person and no Unix account is named (test_authenticator_returned_username_with_sub);
    - the username is an account name (capitals taken as lower case, as JupyterHub's normalize_username does): the
      package takes an email address or "jovyan.jupyter" as it comes (test_authenticator_returned_username_ +
      with_sub_and_email, with_sub_email_name and from_custom_claim);
    - the username names an account the hub made for the class (autograder/hub/accounts.py), tied to the LMS person
      who first used it;
    - every refusal is a page in words (`refusal`, an HTTPError), not the package's LoginError or "OAuth state
      mismatch" (test_authenticator_raises_login_error_if_username_key_not_found);
    - a launch's nonce is taken once, which reads the decoded id_token's claims: the package's test of the callback's
      order of checks gives it the string "decoded_abc" for a token
      (test_lti13_callback_handler_decode_and_validate_launch_request_invocation).
    """

    callback_handler = ClassLtiCallbackHandler
    deployment_ids = List(Unicode(), config=True, help="the tool's deployment ids whose launches are taken (the "
                          "lti.deployment_ids setting); none: every launch is refused, its page naming its own")
    context_ids = List(Unicode(), config=True, help="the LMS courses (LTI context ids) whose launches are taken (the "
                       "lti.context_ids setting); none: every launch is refused, its page naming its own")

    async def authenticate(self, handler, data: dict | None = None) -> dict:
        """The package's (the username from the launch), then the person's account: the class's account of that
        name, made now at their first launch and tied to their LMS id; a refusal page for any other."""
        authentication = await super().authenticate(handler, data)
        name, token = authentication["name"], data or {}
        settings = _settings()
        try:
            ClassAccounts(settings).account(name, settings.homes / name,
                                            lms={"issuer": token.get("iss"), "sub": token.get("sub")})
        except AccountRefused as refused:
            field = f"the tool's custom field {self.username_key.removeprefix('custom_')!r}"
            settle = f"Tell your instructor that two people in the LMS have this username; one of them needs " \
                f"another ({field})." if refused.reason == ANOTHER_PERSON else f"Tell your instructor, who can " \
                f"have the LMS send you another username ({field}) or free the name on the hub's machine."
            raise refusal(403, f"Your LMS gave the username {name!r}, and the hub cannot let you in as {name!r}: it "
                          f"{refused.reason}. Nothing on the hub was changed. {settle}",
                          f"{refused} (sub {token.get('sub')})") from None
        return authentication

    def get_username(self, token: dict) -> str:
        key = self.username_key
        sent = (token.get(LTI13_CUSTOM_CLAIM) or {}).get(key.removeprefix("custom_")) if key.startswith("custom_") \
            else token.get(key)
        if not sent:  # the package would fall back to `sub`, an id no person and no Unix account is named
            raise refusal(403, "Your LMS did not say your username, so the hub cannot tell which account is yours. "
                          f"Tell your instructor: the LMS's tool needs the custom field "
                          f"{key.removeprefix('custom_')!r} (lti.username_key = {key!r}).",
                          f"no {key} in the launch of sub {token.get('sub')}")
        name = self.normalize_username(str(sent))  # JaneDoe logs in as janedoe: LMSs match login names in any case
        try:
            check_name(name)
        except ValueError:
            raise refusal(403, f"Your LMS gave the username {sent!r}, which cannot be an account on this hub: "
                          f"{NAME_RULE} (capitals are taken as lower case). Tell your instructor: the LMS's tool "
                          f"must send a login name in its custom field {key.removeprefix('custom_')!r} "
                          "(lti.username_key).", f"username {sent!r} is not an account name") from None
        return name


if __name__ == "__main__":
    _add_given_student()
