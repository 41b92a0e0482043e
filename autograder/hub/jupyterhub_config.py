"""The class hub's JupyterHub configuration: `make hub` runs it on loopback, and an instructor deploys the same file
with their own settings.json (`python -m autograder hub --help` lists every setting).

Who can do what:
- every student's server runs as their own Unix account, in their own home, with the course's environment; its API
  token may read the person's own groups, which is how nbgrader's assignment list knows their courses;
- formgrader is a hub-managed service, run by the grader account in the course directory; only the course's
  instructors' group (formgrade-<course>) may open it; it and grading at submission box every notebook they grade;
- the idle culler stops servers idle for `idle_timeout` seconds.
"""
import json
import os
import sys
from pathlib import Path

from autograder.hub.accounts import ACCOUNT_NAME
from autograder.hub.cli import free_ports
from autograder.hub.hooks import login_hook, prepare_account
from autograder.box.cgroups import Tree
from autograder.hub.layout import as_grader_in, grader_environment
from autograder.hub.process import box_environment
from autograder.hub.settings import SETTINGS_VARIABLE, HubSettings
from autograder.hub.spawner import student_path

settings = HubSettings.load(Path(os.environ[SETTINGS_VARIABLE]))
ON_SUBMIT = "autograde"  # the service's name: its pages are /services/autograde/
python = Path(settings.python)
c = get_config()  # noqa: F821 (provided by JupyterHub)

# Where it listens: the proxy in front for people, the hub and the proxy's API on loopback.
c.JupyterHub.ip = settings.ip
c.JupyterHub.port = settings.port
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = settings.hub_port
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{settings.proxy_api_port}"
c.ConfigurableHTTPProxy.command = [settings.proxy]
c.ConfigurableHTTPProxy.pid_file = str(settings.state / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{settings.state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(settings.state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(settings.state / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True
# A student whose server is not running (stopped by the culler, or by a restart of the hub) is taken to a new one by
# the page itself, without a "Launch server" button to find first.
c.JupyterHub.implicit_spawn_seconds = 1

# Each person's server: their own account, home, limits and view of the machine (autograder.hub.spawner), the
# course's environment and the student package.
c.JupyterHub.spawner_class = "autograder.hub.spawner.ClassSpawner"
c.Spawner.cmd = [str(python / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = str(settings.homes / "{username}")
c.Spawner.environment = {
    "PYTHONPATH": str(settings.software),
    "JUPYTER_CONFIG_PATH": str(settings.student_config),
    "JUPYTER_PATH": str(settings.student_data),  # the kernel spec that holds a kernel to the student's memory
    "PATH": student_path(settings),
    "JUPYTER_RUNTIME_DIR": "/run/user",  # in the student's private /run, theirs alone (autograder.hub.spawner)
}
# Kernels talk to their server over Unix sockets, not loopback ports picked and bound seconds later: with a class
# starting kernels at once, a kernel was given a port that another kernel or a starting server then took ("Address
# already in use"; bench/hub_capacity.py, 2 of 10 students failed). A socket's path has at most 107 characters: the
# sockets live in the short /run/user of the student's view.
c.Spawner.args = ["--KernelManager.transport=ipc"]
c.Spawner.pre_spawn_hook = prepare_account
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.LocalProcessSpawner.shell_cmd = []

# Who may log in.
c.Authenticator.username_pattern = ACCOUNT_NAME + r"\Z"  # JupyterHub matches from the start only: the whole name
if settings.login == "lti":
    # jupyterhub-ltiauthenticator's LTI13Authenticator, refusing a replayed launch and a name that cannot be an
    # account, each refusal in words (hooks.ClassLtiAuthenticator)
    c.JupyterHub.authenticator_class = "autograder.hub.hooks.ClassLtiAuthenticator"
    c.ClassLtiAuthenticator.issuer = settings.lti.issuer
    c.ClassLtiAuthenticator.client_id = [settings.lti.client_id]
    c.ClassLtiAuthenticator.authorize_url = settings.lti.authorize_url
    c.ClassLtiAuthenticator.jwks_endpoint = settings.lti.jwks_endpoint
    c.ClassLtiAuthenticator.username_key = settings.lti.username_key
    # The scheme of the tool's URLs as the browser sees it: the first X-Forwarded-Proto, so https behind nginx or
    # Caddy on this machine (ip 127.0.0.1), http on the demo's loopback.
    c.ClassLtiAuthenticator.uri_scheme = "auto"
    c.Authenticator.allow_all = True  # whoever the platform launches is in the class: the platform is the gate
    c.Authenticator.manage_groups = True  # a launch's LTI role decides student or instructor (hooks.login_hook)
    c.Authenticator.post_auth_hook = login_hook
    # Only this course's launches: its deployments of the tool and its LMS courses (hooks.ClassLtiAuthenticator
    # refuses any other with a page that names what the launch carried).
    c.ClassLtiAuthenticator.deployment_ids = settings.lti.deployment_ids
    c.ClassLtiAuthenticator.context_ids = settings.lti.context_ids
else:
    if len(settings.password) < 8:
        raise SystemExit("settings.json: shared-password needs a password of 8 characters or more")
    c.JupyterHub.authenticator_class = "shared-password"
    c.SharedPasswordAuthenticator.user_password = settings.password
    c.Authenticator.allowed_users = set(settings.students) | set(settings.instructors)
    c.JupyterHub.load_groups = {
        settings.student_group: {"users": list(settings.students)},
        settings.formgrader_group: {"users": list(settings.instructors)},
    }

# formgrader and grading at submission: services the hub starts and stops, run by the grader in the course directory,
# each in the grader's own cgroup, where the box of each notebook it grades gets a cgroup of its own (autograder.box).
# Root starts them only to put them there (autograder.hub.layout.as_grader_in) and runs nothing of the course.
tree = Tree.load(settings.cgroups_record)  # None: a hub not started by `python -m autograder hub` (no cgroups)
GRADER_KEYS = ("PYTHONPATH", "JUPYTER_CONFIG_PATH", "PATH", "HOME")
grader_env = {key: grader_environment(settings)[key] for key in GRADER_KEYS} | {
    "USER": settings.grader, "LOGNAME": settings.grader} | (box_environment(tree) if tree else {})


def as_grader(service: str, argv: list[str]) -> dict:
    """A service run as the grader: in its own cgroup of the grader's, where the hub has its tree."""
    if tree is None:
        return {"command": argv, "user": settings.grader}
    return {"command": as_grader_in(settings, tree.grader(service), argv)}


c.JupyterHub.services = [
    {
        "name": settings.course_id,
        "url": f"http://127.0.0.1:{settings.formgrader_port}",
        **as_grader("formgrader", [str(python / "bin" / "jupyterhub-singleuser"),
                                   f"--ServerApp.root_dir={settings.course_dir}"]),
        "cwd": str(settings.course_dir),
        "environment": grader_env | {"JUPYTERHUB_DEFAULT_URL": "/formgrader"},
        "oauth_no_confirm": True,
    },
    {
        "name": "idle-culler",
        "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={settings.idle_timeout}",
                    f"--cull-every={settings.cull_every}"],
    },
    # Grading at submission (autograder.on_submit): its pages behind the hub's login, a student's own results to each
    # student and the whole queue to the instructors.
    {
        "name": ON_SUBMIT,
        "url": f"http://127.0.0.1:{settings.on_submit_port or free_ports(1)[0]}",
        **as_grader("autograde", [
            str(python / "bin" / "python"), "-m", "autograder.on_submit",
            f"--inbound={settings.exchange / settings.course_id / 'inbound'}",
            f"--policies={json.dumps(settings.on_submit)}", f"--jobs={settings.grading_jobs}",
            f"--instructors={settings.formgrader_group}", *(["--lti"] if settings.login == "lti" else [])]),
        "cwd": str(settings.course_dir),
        "environment": grader_env,
        "oauth_no_confirm": True,
        "oauth_client_allowed_scopes": ["read:users:groups!user"],  # who teaches sees the whole queue
    },
]

c.JupyterHub.load_roles = [
    # A server's token: its own activity, its own server, and (for nbgrader's JupyterHubAuthPlugin) its owner's
    # name and groups. Nothing of anyone else.
    {"name": "server", "scopes": ["users:activity!user", "access:servers!server", "read:users:name!user",
                                  "read:users:groups!user"]},
    {"name": "formgrader", "description": "open the course's formgrader",
     "groups": [settings.formgrader_group], "scopes": [f"access:services!service={settings.course_id}"]},
    {"name": "on-submit", "description": "read the results of one's own hand-ins (instructors: the queue)",
     "groups": [settings.student_group, settings.formgrader_group], "scopes": [f"access:services!service={ON_SUBMIT}"]},
    {"name": "idle-culler", "services": ["idle-culler"],
     "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]},
]
