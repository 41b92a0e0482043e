"""Every setting of a class hub, with what it means. `python -m autograder hub start` writes them to the hub's
folder as `settings.json`; `jupyterhub_config.py` reads them from there (its path in `TFS_HUB_SETTINGS`)."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from autograder.paths import ROOT

SETTINGS_VARIABLE = "TFS_HUB_SETTINGS"
COURSE_ID = "transformers-from-scratch"
PROXY = ROOT / "deploy" / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy"  # make setup's npm ci puts it there
GRADE_NOTICE = ROOT / "deploy" / "grade-notice" / "labextension"  # JupyterLab's notice of a graded hand-in (make hub)


def setting(meaning: str, default=None, factory=None):
    """A setting with its meaning, which `--help` and the guide print."""
    if factory is not None:
        return field(default_factory=factory, metadata={"meaning": meaning})
    return field(default=default, metadata={"meaning": meaning})


@dataclass
class LtiLogin:
    """The learning platform students log in from (LTI 1.3): the values its tool registration shows."""
    issuer: str = setting("the platform's issuer, e.g. https://canvas.instructure.com", "")
    client_id: str = setting("the tool's client id on the platform (Canvas: the developer key's number)", "")
    authorize_url: str = setting("the platform's OIDC authorisation endpoint", "")
    jwks_endpoint: str = setting("the platform's public keys (JWKS)", "")
    username_key: str = setting(
        "the LTI claim that names a person; custom_username reads the tool's custom field `username` (Canvas: "
        "username=$Canvas.user.loginId, Moodle: username=$User.username), a login name, which is then also the "
        "Unix account, the hub user and the nbgrader student (capitals taken as lower case)", "custom_username")
    deployment_ids: list[str] = setting(
        "the tool's deployments that may launch the hub: only their launches are taken (Canvas: the app's "
        "Deployment Id in the course's Settings > Apps; Moodle: the tool's Deployment ID in its configuration "
        "details; a refused launch's page shows the one it carried)", factory=list)
    context_ids: list[str] = setting(
        "the LMS courses this class is (the launch's context id): a launch from any other course is refused, an "
        "instructor there too (a refused launch's page shows the course id it carried)", factory=list)


@dataclass
class HubSettings:
    root: str = setting("the hub's folder: the grader's course directory, the exchange, the homes, the hub's state")
    ip: str = setting('where the hub listens: loopback unless deployed behind TLS', "127.0.0.1")
    port: int = setting("the proxy's public port: students open http://ip:port/", 8000)
    hub_port: int = setting("the hub's own API, on loopback", 8081)
    proxy_api_port: int = setting("the proxy's API, on loopback", 8001)
    formgrader_port: int = setting('formgrader, a hub-managed service, on loopback', 9911)
    course_id: str = setting("nbgrader's course id: the exchange's folder and the hub's groups", COURSE_ID)
    grader: str = setting('the Unix account that owns the course directory and runs formgrader', "tfs-grader")
    assignments: list[str] = setting('released into the exchange at start; [] = none', factory=list)
    login: str = setting('"lti": people log in from the learning platform (see lti.*); "shared-password": the '
                         "demo's accounts log in with one password, on loopback only", "shared-password")
    password: str = setting("shared-password only: the password (8 characters or more)", "")
    students: list[str] = setting('shared-password only: who may log in as a student', factory=list)
    instructors: list[str] = setting('shared-password only: who may grade', factory=list)
    lti: LtiLogin = setting("lti only: the platform (the lti.* lines)", factory=LtiLogin)
    first_uid: int = setting("the class's accounts are made with user ids from first_uid to last_uid, and the hub "
                             "lets people use only the accounts it made (its record: state/accounts.json)", 30000)
    last_uid: int = setting("the last user id of the class's accounts", 39999)
    idle_timeout: int = setting('a server idle this many seconds is stopped (its files stay)', 3600)
    cull_every: int = setting('how often the idle culler looks, in seconds', 300)
    python: str = setting("the environment every account runs: the course's .venv", sys.prefix)
    proxy: str = setting("configurable-http-proxy, from npm (make setup installs it under deploy/proxy/node_modules)",
                         str(PROXY))
    memory_mb: int = setting("each student's memory, all their kernels, terminals and /tmp files together (MiB); "
                             "a cell asking for more fails with a message, past it their kernel is restarted", 3072)
    processes: int = setting("how many processes and threads one student may run at once", 1024)
    cpu_cores: float = setting("the most CPU cores one student may use; 0 = no cap (each student gets an equal "
                               "share whenever the machine is busy)", 0)
    home_mb: int = setting("each student's home: a file system of this many MiB of their own (0 = a plain folder, "
                           "no bound)", 2048)
    tmp_mb: int = setting("each student's private /tmp, /dev/shm and /run, MiB each (counted in memory_mb)", 512)
    on_submit: dict = setting('grading at submission, per assignment: {"default": {...}, "03_masking": {...}} with the '
                              "keys the guide lists (on_submit.*); {} grades every hand-in as it arrives and shows its "
                              "score", factory=dict)
    on_submit_port: int = setting("grading at submission's pages, a hub-managed service on loopback (0: a free port)", 0)
    grading_jobs: int = setting("notebooks graded at once at submission (default: one per core; the students keep "
                                "at least half the CPU time while they work, their cgroups' share)", os.cpu_count() or 1)

    @property
    def folder(self) -> Path:
        return Path(self.root)

    @property
    def course_dir(self) -> Path:
        return self.folder / "grader" / "course"

    @property
    def exchange(self) -> Path:
        return self.folder / "exchange"

    @property
    def homes(self) -> Path:
        return self.folder / "homes"

    @property
    def software(self) -> Path:
        """The student package, `course`, alone: what every student's kernel imports."""
        return self.folder / "software"

    @property
    def code(self) -> Path:
        """The hub's own copy of the course's packages, root's alone to change: what root runs (JupyterHub, its
        configuration, the idle culler), never the course directory's copy, which the grader may change."""
        return self.folder / "code"

    @property
    def student_config(self) -> Path:
        return self.folder / "etc" / "student"

    @property
    def student_data(self) -> Path:
        """Students' Jupyter data (JUPYTER_PATH): the kernel spec that holds a kernel to the student's memory."""
        return self.folder / "etc" / "student-data"

    @property
    def grader_config(self) -> Path:
        return self.folder / "etc" / "grader"

    @property
    def state(self) -> Path:
        """The hub's own files (its database, cookie secret, tokens, log): root's alone."""
        return self.folder / "state"

    @property
    def cgroups_record(self) -> Path:
        """Where the hub's cgroup tree is (autograder.box.cgroups), written at each start."""
        return self.state / "cgroups.json"

    @property
    def url(self) -> str:
        return f"http://{self.ip}:{self.port}"

    @property
    def formgrader_group(self) -> str:
        return f"formgrade-{self.course_id}"

    @property
    def student_group(self) -> str:
        return f"nbgrader-{self.course_id}"

    def save(self) -> Path:
        path = self.folder / "settings.json"
        path.write_text(json.dumps(dataclasses.asdict(self), indent=2) + "\n")
        return path

    @classmethod
    def load(cls, path: Path) -> "HubSettings":
        values = json.loads(Path(path).read_text())
        values["lti"] = LtiLogin(**values.get("lti", {}))
        return cls(**values)


def describe() -> str:
    """Every setting, a line each: for `python -m autograder hub --help` and the guide."""
    lines = []
    for prefix, cls in (("", HubSettings), ("lti.", LtiLogin)):
        for item in dataclasses.fields(cls):
            if "meaning" in item.metadata:
                lines.append(f"  {prefix + item.name:<20} {item.metadata['meaning']}")
    return "\n".join(lines)
