"""What the hub does as people log in and their servers start.

- `prepare_account`: before a server starts, its person's Unix account and private home (made the first time).
- `login_hook`: after an LTI 1.3 launch, the person's groups from their LTI role (an instructor grades, everyone else
  is a student), and their LMS identity written to nbgrader's gradebook (`Student.lms_user_id`, with their name and
  email), so that `python -m autograder lms push` sends their grade to the person who logged in.
"""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

from autograder.hub.accounts import ensure_account
from autograder.hub.settings import SETTINGS_VARIABLE, HubSettings

ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
TEACHING_ROLES = ("#Instructor", "#TeachingAssistant", "#ContentDeveloper", "#Administrator")


def _settings() -> HubSettings:
    return HubSettings.load(Path(os.environ[SETTINGS_VARIABLE]))


def prepare_account(spawner) -> None:
    """JupyterHub's pre-spawn hook: the account and home of the person whose server starts."""
    settings = _settings()
    ensure_account(spawner.user.name, settings.homes / spawner.user.name)


def teaches(roles: list[str]) -> bool:
    """Whether an LTI launch's roles (full URIs, as LTI 1.3 sends them) make the person one of the course's staff."""
    return any(role.endswith(TEACHING_ROLES) and "/membership" in role for role in roles)


async def login_hook(authenticator, handler, authentication: dict) -> dict:
    """JupyterHub's post-auth hook for LTI logins: the person's groups, and their identity in the gradebook."""
    settings = _settings()
    claims = authentication.get("auth_state") or {}
    staff = teaches(claims.get(ROLES_CLAIM, []))
    authentication["groups"] = [settings.formgrader_group if staff else settings.student_group]
    if not staff:
        await record_student(settings, authentication["name"], claims)
    return authentication


async def record_student(settings: HubSettings, name: str, claims: dict) -> None:
    """`nbgrader db student add` in the course directory, as the grader: the student's LMS user id (the launch's
    `sub`, the id the LMS's grade service knows), name and email."""
    from autograder.hub.layout import grader_environment
    argv = [f"{settings.python}/bin/nbgrader", "db", "student", "add", name, f"--lms-user-id={claims.get('sub', '')}",
            f"--first-name={claims.get('given_name', '')}", f"--last-name={claims.get('family_name', '')}",
            f"--email={claims.get('email', '')}"]
    process = await asyncio.create_subprocess_exec(
        "setpriv", f"--reuid={settings.grader}", f"--regid={settings.grader}", "--clear-groups", *argv,
        cwd=settings.course_dir, env=grader_environment(settings),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    output, _ = await process.communicate()
    if process.returncode != 0:
        authenticator_log = __import__("logging").getLogger("JupyterHub")
        authenticator_log.error("could not record %s in the gradebook: %s", name, output.decode()[-1000:])
